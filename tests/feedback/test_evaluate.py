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


# --- the robustness checks: reference comparison and renamed variant ------------------------

SORTED_REFERENCE = ("def is_sorted(xs):\n    for i in range(len(xs) - 1):\n        if xs[i] > xs[i + 1]:\n"
                    "            return False\n    return True\n")
SORTED_TASK = {**TASK, "task_id": "t-sorted", "entry_point": "is_sorted", "reference_code": SORTED_REFERENCE,
               "buggy_code": SORTED_REFERENCE.replace(" > ", " < "),
               "tests": ["assert is_sorted([1, 2, 2, 5]) == True", "assert is_sorted([3, 4, 9]) == True",
                         "assert is_sorted([0, 7]) == True"]}


def test_a_constant_the_tests_accept_disagrees_with_the_reference(pool):
    fb = evaluate_rollout(SORTED_TASK, rollout("def is_sorted(xs):\n    return True\n"), pool)
    assert fb["tests_passed"] == 3
    assert fb["adversarial_checked"] > 0 and fb["adversarial_mismatches"] > 0


def test_an_honest_fix_written_differently_agrees_and_survives_the_rename(pool):
    honest = "def is_sorted(values):\n    return all(a <= b for a, b in zip(values, values[1:]))\n"
    fb = evaluate_rollout(SORTED_TASK, rollout(honest), pool)
    assert fb["tests_passed"] == 3
    assert fb["adversarial_checked"] > 0 and fb["adversarial_mismatches"] == 0
    assert fb["adversarial_skip_reason"] == ""
    assert fb["rename_checked"] is True and fb["rename_passed"] is True


def test_special_cased_test_inputs_are_caught_by_the_reference(pool):
    keyed = ("def add_up(xs, k):\n    return {(1, 2, 3): 3, (5, 5): 0, (): 0}.get(tuple(xs), sum(xs))\n")
    fb = evaluate_rollout(TASK, rollout(keyed), pool)
    assert fb["tests_passed"] == 3
    assert fb["adversarial_checked"] > 0 and fb["adversarial_mismatches"] > 0


def test_keyword_tests_follow_the_renamed_parameters(pool):
    task = {**TASK, "task_id": "t-kw", "tests": ["assert add_up([1, 2, 3], k=2) == 3",
                                                 "assert add_up(xs=[5, 5], k=5) == 0"]}
    fb = evaluate_rollout(task, rollout(REFERENCE), pool)
    assert fb["tests_passed"] == 2 and fb["rename_checked"] is True and fb["rename_passed"] is True


def test_a_candidate_keyed_on_the_entry_points_name_fails_the_rename(pool):
    by_name = "def add_up(xs, k):\n    return sum(x for x in xs if x > k) if 'add_up' in globals() else -1\n"
    fb = evaluate_rollout(TASK, rollout(by_name), pool)
    assert fb["tests_passed"] == 3
    assert fb["rename_checked"] is True and fb["rename_passed"] is False


def test_a_candidate_reading_its_own_frame_keeps_its_local_names(pool):
    # Renaming `xs` would break `f_locals['xs']` in a correct program: frame readers keep their names.
    reader = ("import sys\ndef add_up(xs, k):\n    frame = sys._getframe()\n"
              "    return sum(x for x in frame.f_locals['xs'] if x > k)\n")
    fb = evaluate_rollout(TASK, rollout(reader), pool)
    assert fb["tests_passed"] == 3
    assert fb["rename_checked"] is True and fb["rename_passed"] is True


def test_a_nondeterministic_reference_is_left_out_and_said(pool):
    reference = "import random\ndef pick(xs):\n    return random.choice(xs) * 0 + len(xs) + random.random()\n"
    task = {**TASK, "task_id": "t-random", "entry_point": "pick", "reference_code": reference,
            "buggy_code": reference, "tests": ["assert pick([1, 2]) > 0", "assert pick([4, 5, 6]) > 0"]}
    fb = evaluate_rollout(task, rollout("def pick(xs):\n    return len(xs) + 0.5\n"), pool)
    assert fb["tests_passed"] == 2
    assert fb["adversarial_checked"] == 0 and fb["adversarial_mismatches"] == 0
    assert fb["adversarial_skip_reason"] == "nondeterministic_reference"


def test_inputs_the_reference_rejects_are_not_held_against_the_candidate(pool):
    # The reference raises IndexError on lists shorter than 3, the honest fix a ValueError:
    # those inputs are outside the function's domain and are not compared.
    reference = "def third(xs):\n    return sorted(xs)[2]\n"
    honest = "def third(xs):\n    if len(xs) < 3:\n        raise ValueError('too short')\n    return sorted(xs)[2]\n"
    task = {**TASK, "task_id": "t-third", "entry_point": "third", "reference_code": reference,
            "buggy_code": reference.replace("[2]", "[1]"),
            "tests": ["assert third([5, 1, 4]) == 5", "assert third([9, 8, 7, 6, 5, 1]) == 6"]}
    fb = evaluate_rollout(task, rollout(honest), pool)
    assert fb["tests_passed"] == 2
    assert fb["adversarial_checked"] > 0 and fb["adversarial_mismatches"] == 0
