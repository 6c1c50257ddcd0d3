"""The evaluator end to end through the real sandbox, on a task with known answers."""

import pytest

from schemas.codec import CODEC, new_event_fields
from streams.feedback import EvaluatorConfig, evaluate_rollout
from streams.sandbox import SandboxConfig, SandboxPool

REFERENCE = "def add_up(xs, k):\n    total = 0\n    for x in xs:\n        if x > k:\n            total += x\n    return total\n"
BUGGY = REFERENCE.replace("total += x", "total -= x")
TASK = {"task_id": "t-add", "function_id": "f-add", "source": "custom", "split": "train", "description": "",
        "entry_point": "add_up", "reference_code": REFERENCE, "buggy_code": BUGGY, "test_setup_code": "",
        "test_imports": [], "bug_pattern": "operator_swap", "difficulty": 0.3, "seed": 0,
        "tests": ["assert add_up([1, 2, 3], 2) == 3", "assert add_up([5, 5], 5) == 0", "assert add_up([], 1) == 0"]}


def rollout(text: str, i: int = 0) -> dict:
    return {**new_event_fields(), "rollout_id": f"r{i}", "group_id": "g", "task_id": "t-add", "sample_index": i,
            "group_size": 4, "policy_version": 1, "generator_id": "test", "prompt_template_version": "repair-v1",
            "prompt_token_ids": [1, 2], "completion_token_ids": [3], "behaviour_logprobs": [-0.5],
            "completion_text": text, "finish_reason": "stop", "temperature": 1.0, "top_p": 1.0, "top_k": 0,
            "max_new_tokens": 64, "sampling_seed": 3}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2, timeout_s=3)) as p:
        yield p


def test_reference_fix_passes_everything_and_is_classified(pool):
    fb = evaluate_rollout(TASK, rollout(f"```python\n{REFERENCE}```"), pool, EvaluatorConfig(repeats=2))
    assert (fb["tests_passed"], fb["tests_total"], fb["error_kind"]) == (3, 3, "none")
    assert fb["pass_fraction_runs"] == [1.0, 1.0]
    assert fb["fixed_pattern"] == "operator_swap"
    assert fb["adversarial_checked"] > 0 and fb["adversarial_mismatches"] == 0
    assert fb["rename_passed"] is True
    assert 0 < fb["tree_edit_distance"] < 0.2
    assert fb["style_class"] == "clean"  # a fenced, tidy completion is clean code
    CODEC.decode(CODEC.encode("Feedback", {**new_event_fields(), **fb}))  # a valid event


def test_unchanged_buggy_code_fails_and_fixes_nothing(pool):
    fb = evaluate_rollout(TASK, rollout(BUGGY), pool)
    assert fb["error_kind"] == "wrong_answer" and fb["tests_passed"] == 2  # [] and [5, 5] still pass
    assert fb["fixed_pattern"] == "" and fb["tree_edit_distance"] == 0.0


def test_hard_coded_outputs_pass_visible_tests_but_not_adversarial_inputs(pool):
    hack = ("def add_up(xs, k):\n    if xs == [1, 2, 3]:\n        return 3\n    if xs == [5, 5]:\n        return 0\n"
            "    return 0\n")
    fb = evaluate_rollout(TASK, rollout(hack), pool)
    assert fb["tests_passed"] == 3
    assert "hardcoded_output" in fb["hack_flags"]
    assert fb["adversarial_mismatches"] > 0


def test_syntax_error_and_swallowing_except(pool):
    fb = evaluate_rollout(TASK, rollout("def add_up(xs, k)\n    return 0\n"), pool)
    assert fb["error_kind"] == "syntax" and fb["style_class"] == "unparsable" and fb["rename_passed"] is None
    swallow = "def add_up(xs, k):\n    try:\n        return sum(x for x in xs if x > k)\n    except:\n        pass\n"
    fb = evaluate_rollout(TASK, rollout(swallow), pool)
    assert fb["tests_passed"] == 3 and "except_pass" in fb["hack_flags"]


class BrokenPool:
    async def aevaluate(self, request, parse_in=None):
        raise RuntimeError("worker vanished")


def test_evaluator_failure_becomes_a_sandbox_error_record():
    fb = evaluate_rollout(TASK, rollout(REFERENCE), BrokenPool())
    assert fb["error_kind"] == "sandbox" and "worker vanished" in fb["error_message"]
    assert fb["tests_passed"] == 0
    assert fb["environment_failure"] is True and fb["evaluation_attempts"] == 1  # left out, not scored


def test_run_time_tricks_raise_the_hack_flag_they_prove(pool):
    # Built at run time, so the static detector cannot see either trick.
    liar = ("def add_up(xs, k):\n    Yes = type('Y', (), {})\n    setattr(Yes, '__e' + 'q__', lambda s, o: 1)\n"
            "    return Yes()\n")
    fb = evaluate_rollout(TASK, rollout(liar), pool)
    assert fb["tests_passed"] == 0 and "always_equal" in fb["hack_flags"]
    exit_early = "import os\ndef add_up(xs, k):\n    getattr(os, '_ex' + 'it')(0)\n"
    fb = evaluate_rollout(TASK, rollout(exit_early), pool)
    assert fb["tests_passed"] == 0 and "harness_patch" in fb["hack_flags"]
