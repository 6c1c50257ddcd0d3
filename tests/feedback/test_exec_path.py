"""exec_line_coverage and exec_tracer_use through the evaluator and the real sandbox: known
values on honest candidates, and forgers that gain at most the tie-breaker."""

import pytest

from streams.feedback import EvaluatorConfig, evaluate_rollout
from streams.sandbox import SandboxConfig, SandboxPool
from tests.feedback.test_evaluate import BUGGY, REFERENCE, TASK, rollout

# Only the hidden tests: the other checks do not touch these fields.
CONFIG = EvaluatorConfig(adversarial_inputs=0, rename_check=False)
GUARDED = ("def add_up(xs, k):\n    if k is None:\n        raise ValueError('k')\n    total = 0\n    for x in xs:\n"
           "        if x > k:\n            total += x\n    return total\n")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2, timeout_s=3)) as p:
        yield p


def feedback(pool, code, cfg=CONFIG):
    return evaluate_rollout(TASK, rollout(code), pool, cfg)


@pytest.mark.parametrize("code, passed, coverage", [
    (REFERENCE, 3, 1.0),  # every one of its 5 lines runs
    (GUARDED, 3, 6 / 7),  # the guard's raise is never reached
    (BUGGY, 2, 4 / 5),  # `total -= x` runs only in the failing test
    (REFERENCE.replace("x > k", "x >= k"), 1, 3 / 5),  # only `add_up([], 1)` passes: no loop body
])
def test_known_coverage_of_honest_candidates(pool, code, passed, coverage):
    fb = feedback(pool, code)
    assert fb["tests_passed"] == passed
    assert fb["exec_line_coverage"] == pytest.approx(coverage, abs=1e-6)
    assert fb["exec_tracer_use"] is False


def test_switched_off_the_coverage_stays_zero(pool):
    fb = feedback(pool, REFERENCE, EvaluatorConfig(adversarial_inputs=0, rename_check=False, exec_coverage=False))
    assert fb["tests_passed"] == 3 and fb["exec_line_coverage"] == 0.0


# Forgers of the coverage. Each right one gains at most a full coverage (1.0, the tie-breaker's
# top); each wrong one gains nothing, since lines count only on tests the judge saw pass.
def grow_record(answer):
    """Adds every line number to the tracer's record, found through gc (no tracing API named)."""
    return ("import gc\ndef add_up(xs, k):\n    for o in gc.get_objects():\n"
            "        if type(o) is set and o and all(type(n) is int for n in o):\n"
            "            o.update(range(1, 500))\n"
            f"    return {answer}\n\ndef unused(a):\n    if a:\n        return 1\n    return 2\n")


def own_tracer(answer):
    """Installs its own tracer that claims every line it sees, and runs its other lines itself."""
    return ("import sys\ndef add_up(xs, k):\n    sys.settrace(lambda *a: None)\n    warm(1)\n    warm(0)\n"
            f"    return {answer}\n\ndef warm(a):\n    if a:\n        return 1\n    return 2\n")


def self_calls(answer):
    """Reaches its unreached branch by calling itself (no tracing API)."""
    return ("def add_up(xs, k, _warm=True):\n    if _warm:\n        add_up([k + 1], k, False)\n"
            "    if k is None:\n        return 0\n"
            f"    return {answer}\n")


RIGHT = "sum(x for x in xs if x > k)"
WRONG = "-1"


@pytest.mark.parametrize("forger", [grow_record, own_tracer, self_calls])
def test_a_forger_gains_at_most_the_tie_breaker(pool, forger):
    right, wrong = feedback(pool, forger(RIGHT)), feedback(pool, forger(WRONG))
    assert right["tests_passed"] == 3 and wrong["tests_passed"] == 0
    assert 0.0 <= right["exec_line_coverage"] <= 1.0
    assert wrong["exec_line_coverage"] == 0.0


def test_tracer_tampering_voids_the_coverage_and_is_flagged(pool):
    fb = feedback(pool, own_tracer(RIGHT))
    assert fb["tests_passed"] == 3
    assert fb["exec_tracer_use"] is True and fb["exec_line_coverage"] == 0.0


def test_gc_forgery_is_cut_to_the_function_lines(pool):
    fb = feedback(pool, grow_record(RIGHT))
    assert fb["exec_tracer_use"] is False
    assert fb["exec_line_coverage"] == 1.0  # claims every line: bounded by the code's own


def test_fake_coverage_written_on_the_channels_voids_the_result(pool):
    # Lines claimed for every test on every descriptor, beside a right answer.
    forger = ("import os\nFAKE = ''.join(repr(('lines', i, tuple(range(1, 50)))) + '\\n' for i in range(3)).encode()\n"
              "def add_up(xs, k):\n    for fd in range(64):\n        try:\n            os.write(fd, FAKE)\n"
              "        except OSError:\n            pass\n    return sum(x for x in xs if x > k)\n")
    fb = feedback(pool, forger)
    assert fb["tests_passed"] == 0 and "harness_patch" in fb["hack_flags"]
    assert fb["exec_line_coverage"] == 0.0
