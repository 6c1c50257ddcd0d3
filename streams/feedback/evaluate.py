"""The evaluator: a rollout plus its task in, one `feedback` record body out.

Per rollout it runs, all in the sandbox:
  1. the hidden tests, `repeats` times, each in a fresh candidate process with `random` seeded
     from (rollout seed, repeat index), so a flaky candidate shows up as spread between runs
     and a replay of the same rollout draws the same numbers;
  2. the differential (adversarial) check: random inputs from the tests' domain, the candidate
     against the reference (differential.py: the reference runs in the judge's process under a
     private name, probed once per task for the inputs it takes and for nondeterminism);
  3. the rename check: the same tests after a harmless rename of the entry point and of its
     parameters and locals, the tests' keyword arguments following them.
The first run of the hidden tests also records which lines of the candidate's functions each
test ran (`exec_coverage`). A run the host failed (failure_cause.py) is run again, up to
`environment_retries` times; one still failing marks the feedback `environment_failure`, for the
reshaping to leave out of its group rather than score as the candidate's 0.
Then the pure signals (tree edit distance, style, hack flags, fixed pattern, execution path) on
the code and the outcomes.
`build_feedback` is pure, so replays and tests can build records from stored results.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from functools import partial
from typing import Any

from schemas.prompt import candidate_code, extract_code
from schemas.records import build_record
from streams.feedback.ast_thread import AST_THREAD
from streams.feedback.config import EvaluatorConfig
from streams.feedback.differential import (SKIP_HOST_FAILURE, SKIP_NO_LITERAL_CALLS, DifferentialPlan, ProbeVerdict,
                                           compare_request, plan_differential, probe_request, probe_verdict)
from streams.feedback.failure_cause import host_failure, is_flaky
from streams.sandbox import EvalRequest, EvalResult, ErrorKind, SandboxPool
from streams.signals import (check_style, classify_fix, detect_hacks, executable_lines, line_coverage, rename_program,
                             tree_edit_distance, uses_tracer)

log = logging.getLogger(__name__)

# Sandbox flags (run-time evidence) -> the hack flag of streams/signals/hacks.py they prove.
RUNTIME_HACK_FLAGS = {
    "patched_builtins": "builtins_patch",
    "non_plain_value": "always_equal",  # an object of its own where a test needed a value
    "results_tampered": "harness_patch",  # writing on the judge's channels, or exiting to dodge tests
}
RENAMED_ENTRY = "renamed_entry_point_{}"


EVALUATOR_VERSION = EvaluatorConfig().version


@dataclass
class SandboxRuns:
    """What the sandbox said about one candidate (inputs of the pure `build_feedback`).

    adversarial: the comparison over the inputs the reference takes (None: not run, and
    adversarial_skip_reason says why); renamed: the tests after the rename (None: no
    rename check, e.g. the candidate does not parse)."""

    tests: list[EvalResult]
    adversarial: EvalResult | None
    adversarial_checked: int
    renamed: EvalResult | None
    adversarial_skip_reason: str = ""
    attempts: int = 1  # 1 + the rounds of re-evaluation after host failures


def repeat_seed(rollout_seed: int, repeat: int) -> int:
    """The seed of `random` in the candidate's process for one repeat of one rollout."""
    digest = hashlib.sha256(f"repeat:{rollout_seed}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass
class _Plan:
    tests: list[EvalRequest]
    renamed: EvalRequest | None
    differential: DifferentialPlan


def _plan(task: dict, candidate: str, cfg: EvaluatorConfig, seed: int) -> _Plan:
    entry = task["entry_point"]
    common = dict(setup_code=task.get("test_setup_code", ""), imports=list(task.get("test_imports", [])),
                  timeout_s=cfg.timeout_s)
    # Only the first run is traced: its outcomes are the ones the feedback reports per test.
    tests = [EvalRequest(code=candidate, tests=list(task["tests"]), entry_point=entry, seed=repeat_seed(seed, repeat),
                         trace_lines=cfg.exec_coverage and repeat == 0, **common)
             for repeat in range(cfg.repeats)]
    renamed = None
    if cfg.rename_check:
        try:
            new_name = RENAMED_ENTRY.format(hashlib.sha256(entry.encode()).hexdigest()[:6])
            program = rename_program(candidate, list(task["tests"]), common["setup_code"], entry, new_name)
            renamed = EvalRequest(code=program.code, tests=program.tests, entry_point=new_name,
                                  setup_code=program.setup_code, imports=common["imports"], timeout_s=cfg.timeout_s)
        except ValueError:  # SignalInputError: an unparsable candidate has no rename check, its tests already fail
            pass
    try:
        differential = plan_differential(task, cfg.adversarial_inputs, cfg.signals)
    except Exception as exc:  # a domain hypothesis cannot draw from: no check rather than no feedback
        log.debug("no differential inputs for %s: %s", task.get("task_id"), exc)
        differential = DifferentialPlan((), "", SKIP_NO_LITERAL_CALLS)
    return _Plan(tests, renamed, differential)


# The probe's verdict is a function of the task and the evaluator's knobs; one sandbox run
# per task serves all its rollouts (concurrent first rollouts may each run it once).
_PROBES: dict[tuple, ProbeVerdict] = {}
_PROBES_KEPT = 4096


async def _probe(task: dict, plan: DifferentialPlan, pool: SandboxPool, cfg: EvaluatorConfig) -> ProbeVerdict:
    key = (task.get("task_id"), hashlib.sha256(plan.reference_setup.encode()).hexdigest(), plan.calls, cfg.version)
    if key in _PROBES:
        return _PROBES[key]
    verdict = probe_verdict(await pool.aevaluate(probe_request(task, plan, cfg.timeout_s), parse_in=AST_THREAD))
    if verdict.complete:
        if len(_PROBES) >= _PROBES_KEPT:
            _PROBES.pop(next(iter(_PROBES)))
        _PROBES[key] = verdict
    return verdict


async def _differential(task: dict, candidate: str, plan: DifferentialPlan, pool: SandboxPool,
                        cfg: EvaluatorConfig) -> tuple[EvalResult | None, str, int]:
    """The comparison run (or None and why not) and the rounds it took."""
    if plan.skip_reason:
        return None, plan.skip_reason, 1
    verdict = await _probe(task, plan, pool, cfg)
    if verdict.skip_reason:
        return None, verdict.skip_reason, 1
    request = compare_request(task, candidate, plan, verdict.usable, cfg.timeout_s)
    # one the host failed every time is still returned: robustness_fields counts it as not run
    (result,), attempts = await run_requests(pool, [request], cfg.environment_retries)
    return result, "", attempts


async def asandbox_runs(task: dict, candidate: str, pool: SandboxPool, cfg: EvaluatorConfig | None = None,
                        seed: int = 0) -> SandboxRuns:
    """Every sandbox run of one candidate (tests, differential check, rename check), without
    the code signals: for tools that need only what the sandbox says. ``seed``: the rollout's."""
    cfg = cfg or EvaluatorConfig()
    plan = await asyncio.get_running_loop().run_in_executor(AST_THREAD, _plan, task, candidate, cfg, seed)
    return await _run(task, candidate, plan, pool, cfg)


def robustness_fields(runs: SandboxRuns) -> dict:
    """Pure: the feedback fields of the differential and rename checks. A comparison or rename
    run the host failed every time counts as not run, never as the candidate's failure."""
    first = runs.tests[0]
    adversarial = runs.adversarial if runs.adversarial is not None and not host_failure(runs.adversarial) else None
    checked = runs.adversarial_checked if adversarial else 0
    skip_reason = SKIP_HOST_FAILURE if runs.adversarial is not None and adversarial is None \
        else runs.adversarial_skip_reason
    renamed = runs.renamed if runs.renamed is not None and not host_failure(runs.renamed) else None
    return {
        "adversarial_mismatches": int(adversarial.tests_total - adversarial.tests_passed) if checked else 0,
        "adversarial_checked": int(checked),
        "adversarial_skip_reason": "" if checked else skip_reason,
        "rename_checked": renamed is not None,
        "rename_passed": renamed.tests_passed == first.tests_passed if renamed is not None else None,
    }


async def _run(task: dict, candidate: str, plan: _Plan, pool: SandboxPool, cfg: EvaluatorConfig) -> SandboxRuns:
    renamed = [plan.renamed] if plan.renamed is not None else []
    (results, attempts), (adversarial, skip_reason, differential_attempts) = await asyncio.gather(
        run_requests(pool, [*plan.tests, *renamed], cfg.environment_retries),
        _differential(task, candidate, plan.differential, pool, cfg))
    tests, rest = results[:len(plan.tests)], results[len(plan.tests):]
    return SandboxRuns(tests, adversarial, adversarial.tests_total if adversarial else 0,
                       rest[0] if rest else None, skip_reason, max(attempts, differential_attempts))


async def run_requests(pool: SandboxPool, requests: list[EvalRequest], retries: int) -> tuple[list[EvalResult], int]:
    """Every request's result, the runs the host failed tried again up to `retries` times
    (the same request, seed included); and how many rounds it took (1 = no retry). The pool
    parses on the AST thread (ast_thread.py)."""
    def run(request: EvalRequest):
        return pool.aevaluate(request, parse_in=AST_THREAD)

    results = list(await asyncio.gather(*(run(r) for r in requests)))
    attempts = 1
    while attempts <= retries:
        failed = [i for i, result in enumerate(results) if host_failure(result)]
        if not failed:
            break
        log.warning("re-evaluating %d run(s) the sandbox failed: %s", len(failed), results[failed[0]].error_message)
        for i, result in zip(failed, await asyncio.gather(*(run(requests[i]) for i in failed))):
            results[i] = result
        attempts += 1
    return results, attempts


async def aevaluate_rollout(task: dict, rollout: dict, pool: SandboxPool, cfg: EvaluatorConfig | None = None) -> dict:
    """Evaluate one rollout without blocking the event loop. Never raises for bad candidates:
    an evaluator failure becomes error kind `sandbox` in the record."""
    cfg = cfg or EvaluatorConfig()
    loop = asyncio.get_running_loop()
    candidate = await loop.run_in_executor(AST_THREAD, _candidate, task, rollout, cfg)
    plan = await loop.run_in_executor(AST_THREAD, _plan, task, candidate, cfg, rollout.get("sampling_seed", 0))
    try:
        runs, error = await _run(task, candidate, plan, pool, cfg), ""
    except Exception as exc:  # the evaluator itself broke: say so in the stream, do not stall it
        log.exception("evaluation of %s failed", rollout.get("rollout_id"))
        runs, error = None, f"{type(exc).__name__}: {exc}"
    return await loop.run_in_executor(AST_THREAD, partial(build_feedback, evaluator_error=error),
                                      task, rollout, candidate, runs, cfg)


def _candidate(task: dict, rollout: dict, cfg: EvaluatorConfig) -> str:
    """The code to test, cut from the completion (parses it: the AST thread's work)."""
    if cfg.carry_task_imports:
        return candidate_code(rollout["completion_text"], task["buggy_code"])
    return extract_code(rollout["completion_text"])


def evaluate_rollout(task: dict, rollout: dict, pool: SandboxPool, cfg: EvaluatorConfig | None = None) -> dict:
    """Synchronous twin of `aevaluate_rollout` (benchmarks, tools)."""
    return asyncio.run(aevaluate_rollout(task, rollout, pool, cfg))


def build_feedback(task: dict, rollout: dict, candidate: str, runs: SandboxRuns | None, cfg: EvaluatorConfig,
                   evaluator_error: str = "") -> dict:
    """Pure: the feedback record (schemas/feedback.avsc) without its event id, which the publisher adds.
    ``runs`` None: the evaluator broke, ``evaluator_error`` says how (`sandbox_failure_feedback`)."""
    buggy = task["buggy_code"]
    distance = tree_edit_distance(buggy, candidate, cfg.signals)
    style = check_style(candidate, cfg.signals)
    hacks = detect_hacks(buggy, candidate, list(task["tests"]), cfg.signals)
    # what the code alone tells, known even when it never ran
    code_signals = {
        "tree_edit_distance": float(distance.normalised), "tree_edit_distance_raw": int(distance.raw),
        "style_class": style.style_class, "flake8_codes": list(style.codes), "hack_flags": list(hacks.flags),
        "cyclomatic_complexity": int(hacks.complexity), "completion_text": rollout["completion_text"][:20000],
        "exec_tracer_use": uses_tracer(candidate),
    }
    if runs is None:
        return sandbox_failure_feedback(task, rollout, evaluator_error, cfg.version, **code_signals)
    first = runs.tests[0]
    # what the sandbox saw at run time raises the flag the static detector has for that trick
    for sandbox_flag, hack_flag in RUNTIME_HACK_FLAGS.items():
        if sandbox_flag in first.flags and hack_flag not in code_signals["hack_flags"]:
            code_signals["hack_flags"].append(hack_flag)
    passed_all = all(r.tests_passed == r.tests_total and r.tests_total for r in runs.tests)
    # a hidden-test run the host failed every time: the outcome is not the candidate's
    environment_failure = any(host_failure(r) for r in runs.tests)
    fractions = [r.pass_fraction for r in runs.tests]
    measured = cfg.exec_coverage and not code_signals["exec_tracer_use"]
    coverage = line_coverage(executable_lines(candidate), first.outcomes) if measured else 0.0
    return build_record(
        "Feedback", leave_out=("event_id",), **_from_rollout(rollout), **code_signals,
        bug_pattern=task["bug_pattern"], difficulty=float(task["difficulty"]), evaluator_version=cfg.version,
        repeats=len(runs.tests), tests_total=len(task["tests"]), tests_passed=first.tests_passed,
        pass_fraction_runs=fractions,
        test_outcomes=[{"index": o.index, "passed": o.passed, "error_kind": o.error_kind.value,
                        "message": o.message[:500], "runtime_ms": float(o.runtime_ms)} for o in first.outcomes],
        error_kind=first.error_kind.value, error_message=first.error_message[:2000],
        runtime_ms=float(sum(r.runtime_ms for r in runs.tests) / len(runs.tests)),
        fixed_pattern=classify_fix(buggy, candidate, cfg.signals) if passed_all else "",
        **robustness_fields(runs),
        environment_failure=environment_failure, evaluation_attempts=runs.attempts,
        flaky=not environment_failure and is_flaky(fractions, cfg.signals.flaky_tolerance),
        exec_line_coverage=float(coverage),
    )


def sandbox_failure_feedback(task: dict | None, rollout: dict, error_message: str, evaluator_version: str,
                             **known: Any) -> dict:
    """The feedback of a rollout whose evaluation broke (the evaluator, not the candidate):
    nothing passed, error kind ``sandbox``, marked ``environment_failure`` so the reshaping
    leaves it out of its group. ``known``: fields known all the same (the code signals, an
    event id). Without them the code counts as never looked at: distance 1 and style
    ``autofix``, the neutral class, so the candidate is neither rewarded nor charged."""
    task = task or {}  # a task that never arrived
    return build_record(
        "Feedback", leave_out=("event_id",), **{
            **_from_rollout(rollout), "bug_pattern": task.get("bug_pattern", ""),
            "difficulty": float(task.get("difficulty", 0.0)), "evaluator_version": evaluator_version,
            "repeats": 0, "tests_total": len(task.get("tests", [])), "tests_passed": 0, "pass_fraction_runs": [0.0],
            "test_outcomes": [], "error_kind": ErrorKind.SANDBOX.value, "error_message": error_message[:2000],
            "runtime_ms": 0.0, "tree_edit_distance": 1.0, "style_class": "autofix",
            "completion_text": rollout.get("completion_text", ""), "environment_failure": True,
            "evaluation_attempts": 1, **known,
        })


def _from_rollout(rollout: dict) -> dict:
    """The fields a feedback record carries over from its rollout."""
    return {
        "rollout_id": rollout["rollout_id"], "group_id": rollout["group_id"], "task_id": rollout["task_id"],
        "sample_index": rollout["sample_index"], "group_size": rollout["group_size"],
        "policy_version": rollout["policy_version"],
        "prompt_token_ids": list(rollout["prompt_token_ids"]),
        "completion_token_ids": list(rollout["completion_token_ids"]),
        "behaviour_logprobs": list(rollout["behaviour_logprobs"]), "finish_reason": rollout["finish_reason"],
        # the event time of the feedback is the rollout's, so windows follow generation time
        "created_at_ms": rollout["created_at_ms"],
    }
