"""The differential check: the candidate against the task's reference on random inputs.

Two sandbox runs, both judged in the judge's process where the reference lives under a
private name (the candidate's process never holds it, so it could never read expected
values from it):

1. the probe, once per task: the reference alone, twice on each input. An input on which it
   raises, overruns its time or returns something that is not a plain value is outside the
   function's domain and dropped; a reference that disagrees with itself on any input is
   nondeterministic, and the task is left out of the check (no candidate can be held to it).
2. the comparison: the candidate on the inputs the probe kept, each against the reference.

The inputs come from the task's own seed, so every member of a group meets the same inputs
(a group's advantages compare like with like), and the probe's verdict can be kept per task.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from streams.sandbox import ErrorKind, EvalRequest, EvalResult
from streams.signals import SignalConfig, random_inputs, rename_entry_point

REFERENCE_NAME = "_reshaper_reference_{}"

# Why a rollout's differential check compared no input (feedback `adversarial_skip_reason`).
SKIP_DISABLED = "disabled"
SKIP_NO_REFERENCE = "no_reference"
SKIP_NO_LITERAL_CALLS = "no_literal_calls"  # no test calls the entry point with literals only
SKIP_REFERENCE_BROKEN = "reference_broken"  # the reference does not load in the sandbox
SKIP_NONDETERMINISTIC = "nondeterministic_reference"
SKIP_NO_VALID_INPUTS = "no_valid_inputs"  # the reference rejected every input drawn
SKIP_HOST_FAILURE = "host_failure"  # the sandbox failed the comparison run on every try
SKIP_REASONS = (SKIP_DISABLED, SKIP_NO_REFERENCE, SKIP_NO_LITERAL_CALLS, SKIP_REFERENCE_BROKEN,
                SKIP_NONDETERMINISTIC, SKIP_NO_VALID_INPUTS, SKIP_HOST_FAILURE)

# Runs in the judge's process (trusted), beside the reference.
HELPERS = '''
import math as _reshaper_math

_RESHAPER_PLAIN = (int, float, complex, str, bytes, bool, type(None))


class _ReshaperOutOfDomain(Exception):
    """The reference cannot be run on this input: not an input of the function."""


def _reshaper_plain(value, depth=0):
    if isinstance(value, _RESHAPER_PLAIN):
        return True
    if depth < 50 and type(value) in (list, tuple, set, frozenset):
        return all(_reshaper_plain(v, depth + 1) for v in value)
    if depth < 50 and type(value) is dict:
        return all(_reshaper_plain(k, depth + 1) and _reshaper_plain(v, depth + 1) for k, v in value.items())
    return False


def _reshaper_equal(a, b):
    """Equality as the tests see it, with float rounding forgiven (another order of the
    same additions is still a correct program)."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        if a != a and b != b:
            return True
        return a == b or _reshaper_math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if type(a) in (list, tuple) or type(b) in (list, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_reshaper_equal, a, b))
    if type(a) is dict or type(b) is dict:
        return type(a) is type(b) and a.keys() == b.keys() and all(_reshaper_equal(a[k], b[k]) for k in a)
    return a == b

def _reshaper_probe(reference_call):
    try:
        first, second = reference_call(), reference_call()
    except Exception as exc:
        raise _ReshaperOutOfDomain(type(exc).__name__) from None
    if not (_reshaper_plain(first) and _reshaper_plain(second)):
        raise _ReshaperOutOfDomain("not a plain value")
    assert _reshaper_equal(first, second), "the reference disagrees with itself"


def _reshaper_agrees(candidate_call, reference_call):
    expected = reference_call()
    try:
        got = candidate_call()
    except Exception:
        return False
    return _reshaper_equal(got, expected)
'''


def task_seed(task: dict) -> int:
    """The seed of a task's random inputs: the same for every rollout of the task."""
    return int(hashlib.sha256(str(task.get("task_id", "")).encode()).hexdigest()[:8], 16)


@dataclass(frozen=True)
class DifferentialPlan:
    """The inputs of one task's check, or why there are none."""

    calls: tuple[str, ...]
    reference_setup: str
    skip_reason: str = ""


def plan_differential(task: dict, inputs: int, config: SignalConfig) -> DifferentialPlan:
    """The calls to try and the judge-side setup (reference, helpers, the task's setup).
    Pure: the same task always gives the same plan (kept, since every rollout asks)."""
    if inputs <= 0:
        return DifferentialPlan((), "", SKIP_DISABLED)
    if not task.get("reference_code"):
        return DifferentialPlan((), "", SKIP_NO_REFERENCE)
    return _plan(str(task.get("task_id", "")), task["entry_point"], task["reference_code"],
                 (*task["tests"], *task.get("visible_tests", [])), task.get("test_setup_code", ""), inputs, config)


@lru_cache(maxsize=4096)
def _plan(task_id: str, entry: str, reference_code: str, tests: tuple[str, ...], setup_code: str, inputs: int,
          config: SignalConfig) -> DifferentialPlan:
    calls = tuple(random_inputs(list(tests), entry, inputs, seed=task_seed({"task_id": task_id}), config=config))
    if not calls:
        return DifferentialPlan((), "", SKIP_NO_LITERAL_CALLS)
    try:
        reference, _ = rename_entry_point(reference_code, [], entry, REFERENCE_NAME.format(entry))
    except ValueError:  # SignalInputError: a reference libcst cannot parse
        return DifferentialPlan((), "", SKIP_REFERENCE_BROKEN)
    return DifferentialPlan(calls, "\n".join([reference, HELPERS, setup_code]))


def _as_reference(call: str, entry: str) -> str:
    return REFERENCE_NAME.format(entry) + call[len(entry):]


def probe_request(task: dict, plan: DifferentialPlan, timeout_s: float | None) -> EvalRequest:
    """The reference alone, twice on each input; no candidate code."""
    entry = task["entry_point"]
    tests = [f"assert _reshaper_probe(lambda: {_as_reference(c, entry)}) is None" for c in plan.calls]
    return EvalRequest(code="", tests=tests, setup_code=plan.reference_setup,
                       imports=list(task.get("test_imports", [])), timeout_s=timeout_s)


@dataclass(frozen=True)
class ProbeVerdict:
    """Which inputs the reference takes, or why the check is skipped.

    complete: every probe ran to its own end; a verdict cut short (a sandbox failure, the
    request's wall clock) may say otherwise on another try, so it is not kept for the task."""

    usable: tuple[int, ...]
    skip_reason: str = ""
    complete: bool = True


def probe_verdict(result: EvalResult) -> ProbeVerdict:
    """A probe that fails on an assertion (wrong answer) caught the reference disagreeing
    with itself; any other failure (raised, timeout) marks an input outside its domain."""
    ran = [o for o in result.outcomes if o.runtime_ms > 0 or o.passed]
    complete = len(ran) == len(result.outcomes) and result.error_kind is not ErrorKind.SANDBOX
    if not ran:  # the setup (reference, imports) never got to the tests
        return ProbeVerdict((), SKIP_REFERENCE_BROKEN, complete=result.error_kind is not ErrorKind.SANDBOX)
    if any(o.error_kind is ErrorKind.WRONG_ANSWER for o in ran):
        return ProbeVerdict((), SKIP_NONDETERMINISTIC, complete)
    usable = tuple(o.index for o in ran if o.passed)
    return ProbeVerdict(usable, "" if usable else SKIP_NO_VALID_INPUTS, complete)


def compare_request(task: dict, candidate: str, plan: DifferentialPlan, usable: tuple[int, ...],
                    timeout_s: float | None) -> EvalRequest:
    """The candidate against the reference on the usable inputs; a test passes when the two agree."""
    entry = task["entry_point"]
    tests = [f"assert _reshaper_agrees(lambda: {plan.calls[i]}, lambda: {_as_reference(plan.calls[i], entry)})"
             for i in usable]
    return EvalRequest(code=candidate, tests=tests, entry_point=entry, setup_code=plan.reference_setup,
                       imports=list(task.get("test_imports", [])), timeout_s=timeout_s)
