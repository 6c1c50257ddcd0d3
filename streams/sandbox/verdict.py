"""Turning what the sandbox reported into an EvalResult.

The lines relayed from the sandbox are the judge's (judge.py), a process the candidate
never ran in; they are parsed with ast.literal_eval and checked for shape all the same,
and a line that breaks the format, a test reported twice, or test times that add up to
more than the whole run took mark the result tampered. The lines a test ran (asked for
with EvalRequest.trace_lines) are the candidate's claim relayed by the judge, kept as given
for the signals to bound. A value is read back with the
codec (wire.py), which builds exact builtin types only, and compared here with the
expected literal, which never left this process.
"""

import os
import signal
from typing import Any

from streams.sandbox.asserts import PreparedTest, parse_value
from streams.sandbox.models import SEVERITY, ErrorKind, EvalResult, TestResult
from streams.sandbox.wire import WireError, decode

KNOWN_CHILD_FLAGS = {"patched_builtins", "non_plain_value"}
MESSAGE_CHARS = 300
# Timer granularity and rounding: more than this beyond the wall clock is impossible.
TIMING_SLACK_MS = 50.0


def sandbox_failure(
    total: int, message: str, runtime_ms: float, flags: list[str]
) -> EvalResult:
    outcomes = [
        TestResult(i, False, ErrorKind.SANDBOX, message, 0.0) for i in range(total)
    ]
    return EvalResult(
        0, total, outcomes, ErrorKind.SANDBOX, message, runtime_ms, "", sorted(flags)
    )


def death_reason(reply: dict[str, Any]) -> tuple[ErrorKind, str]:
    """Why the judge stopped before reporting everything."""
    if reply["timed_out"]:
        return (
            ErrorKind.TIMEOUT,
            f"wall-clock timeout after {reply['wall_ms'] / 1000:.2f} s",
        )
    return ErrorKind.CRASH, "the judge stopped before finishing the tests"


def candidate_end(reply: dict[str, Any], cpu_seconds: int) -> tuple[ErrorKind, str] | None:
    """Why the candidate's process ended while the judge needed it; None if it ended of
    its own accord (an exit call), which only a candidate dodging its tests does."""
    status = reply["wait_status"]
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (
            sig == signal.SIGKILL and reply["cpu_s"] >= cpu_seconds - 0.05
        ):
            return ErrorKind.TIMEOUT, f"CPU limit of {cpu_seconds} s reached"
        return ErrorKind.CRASH, f"killed by signal {signal.Signals(sig).name}"
    return None


class _Frames:
    """The child's report, validated."""

    def __init__(self, text: str, total: int):
        self.load: tuple[ErrorKind, str] | None = None
        self.results: dict[int, tuple[bool, ErrorKind, str, float, Any]] = {}
        self.flags: set[str] = set()
        self.fatal = ""
        self.done = False
        self.lost: tuple[int, bool] | None = None  # (test index or -1 at load, hung)
        self.tampered = ""
        self.lines: dict[int, frozenset[int]] = {}
        for line in text.splitlines():
            ok, frame = parse_value(line)
            if not (
                ok and isinstance(frame, tuple) and frame and self._accept(frame, total)
            ):
                self.flags.add("results_tampered")

    def _accept(self, frame: tuple, total: int) -> bool:
        tag, rest = frame[0], frame[1:]
        if tag == "load" and len(rest) == 3 and rest[0] in ErrorKind._value2member_map_:
            kind = ErrorKind(rest[0])
            if self.load is None or kind is not ErrorKind.NONE:
                self.load = (kind, str(rest[1]))
            return True
        if tag == "flags":
            self.flags |= KNOWN_CHILD_FLAGS & set(rest)
            return True
        if tag == "done" and not rest:
            self.done = True
            return True
        if tag == "fatal" and len(rest) == 1:
            self.fatal = str(rest[0])
            return True
        if tag == "lost" and len(rest) == 2 and isinstance(rest[0], int) and isinstance(rest[1], bool):
            self.lost = (rest[0], rest[1])
            return True
        if tag == "tampered" and len(rest) == 2 and isinstance(rest[1], str):
            self.tampered = rest[1] or "tampering"
            return True
        if (
            tag == "lines"
            and len(rest) == 2
            and type(rest[0]) is int
            and 0 <= rest[0] < total
            and rest[0] not in self.lines
            and isinstance(rest[1], tuple)
            and all(type(n) is int for n in rest[1])
        ):
            self.lines[rest[0]] = frozenset(rest[1])
            return True
        if (
            tag in ("value", "pass", "fail")
            and rest
            and isinstance(rest[0], int)
            and 0 <= rest[0] < total
        ):
            index = rest[0]
            if index in self.results:  # a forged line beside the real one
                self.results[index] = (
                    False,
                    ErrorKind.WRONG_ANSWER,
                    "result reported twice",
                    0.0,
                    None,
                )
                return False
            shape = {
                "value": (str, bool, float),
                "pass": (float,),
                "fail": (str, str, float),
            }[tag]
            if len(rest) - 1 != len(shape) or not all(
                isinstance(v, t) for v, t in zip(rest[1:], shape)
            ):
                return False
            if tag == "fail" and rest[1] not in ErrorKind._value2member_map_:
                return False
            self.results[index] = (tag, *rest[1:])
            return True
        return False


def judge(test: PreparedTest, index: int, raw: tuple) -> TestResult:
    tag = raw[0]
    if tag is False:  # already judged as tampered
        return TestResult(index, False, raw[1], raw[2], 0.0)
    if (tag == "value") != (test.kind == "expr") and tag != "fail":
        # A split test must come back as a value; a bare "pass" for it is forged.
        return TestResult(
            index, False, ErrorKind.WRONG_ANSWER, "result of the wrong shape", 0.0
        )
    if tag == "pass":
        return TestResult(index, True, ErrorKind.NONE, "", raw[1])
    if tag == "fail":
        return TestResult(
            index, False, ErrorKind(raw[1]), raw[2][:MESSAGE_CHARS], raw[3]
        )
    text, truncated, runtime_ms = raw[1], raw[2], raw[3]
    shown = text[:MESSAGE_CHARS]
    if truncated:
        return TestResult(
            index,
            False,
            ErrorKind.WRONG_ANSWER,
            f"value too long: {shown}...",
            runtime_ms,
        )
    try:
        ok, value = True, decode(text)
    except WireError:
        ok, value = False, None
    if not ok:
        return TestResult(
            index,
            False,
            ErrorKind.WRONG_ANSWER,
            f"got {shown}, not a plain value",
            runtime_ms,
        )
    shown = repr(value)[:MESSAGE_CHARS]
    try:
        passed = bool(value == test.expected)
    except Exception:  # literals compare without raising, but stay safe
        passed = False
    message = (
        "" if passed else f"expected {test.expected!r:.{MESSAGE_CHARS}}, got {shown}"
    )
    return TestResult(
        index,
        passed,
        ErrorKind.NONE if passed else ErrorKind.WRONG_ANSWER,
        message,
        runtime_ms,
    )


def build_result(
    tests: list[PreparedTest],
    reply: dict[str, Any],
    cpu_seconds: int,
    runtime_ms: float,
    flags: set[str],
) -> EvalResult:
    total = len(tests)
    if "error" in reply:
        return sandbox_failure(
            total, "sandbox error: " + str(reply["error"]), runtime_ms, list(flags)
        )
    frames = _Frames(reply["results"], total)
    flags = set(flags) | frames.flags
    if reply["output_truncated"]:
        flags.add("output_truncated")
    if reply["results_truncated"]:
        flags.add("results_truncated")
    stdout = reply["output"]
    if frames.fatal:
        return sandbox_failure(
            total, "harness failed: " + frames.fatal, runtime_ms, list(flags)
        )
    reported_ms = sum(r[-1] for r in frames.results.values() if isinstance(r[-1], float))
    if reported_ms > reply["wall_ms"] + TIMING_SLACK_MS:
        frames.tampered = f"tests took {reported_ms:.0f} ms of a {reply['wall_ms']:.0f} ms run"
    ended = None
    if frames.lost is not None and not frames.tampered:
        ended = candidate_end(reply, cpu_seconds)
        if frames.lost[1]:
            ended = (ErrorKind.TIMEOUT, "the candidate stopped answering (time limit)")
        elif ended is None:
            frames.tampered = "the candidate's process exited before the tests finished"
    if frames.tampered:
        flags.add("results_tampered")
        message = "results tampered: " + frames.tampered[:200]
        outcomes = [TestResult(i, False, ErrorKind.CRASH, message, 0.0) for i in range(total)]
        return EvalResult(0, total, outcomes, ErrorKind.CRASH, message, runtime_ms, stdout, sorted(flags))

    if frames.load is not None and frames.load[0] is not ErrorKind.NONE:
        kind, message = frames.load
        outcomes = [
            TestResult(i, False, kind, message[:MESSAGE_CHARS], 0.0)
            for i in range(total)
        ]
        return EvalResult(
            0, total, outcomes, kind, message, runtime_ms, stdout, sorted(flags)
        )

    died = ended or (None if frames.done else death_reason(reply))
    outcomes = []
    for index, test in enumerate(tests):
        if index in frames.results:
            outcome = judge(test, index, frames.results[index])
            outcome.executed_lines = frames.lines.get(index, frozenset())
            if outcome.message == "result of the wrong shape":
                flags.add("results_tampered")
            outcomes.append(outcome)
        else:
            kind, message = died or (ErrorKind.CRASH, "no result reported")
            outcomes.append(TestResult(index, False, kind, message, 0.0))
    if total == 0 and died is not None:
        return EvalResult(0, 0, [], died[0], died[1], runtime_ms, stdout, sorted(flags))

    failed = [o for o in outcomes if not o.passed]
    kind = max(
        (o.error_kind for o in failed), key=SEVERITY.index, default=ErrorKind.NONE
    )
    message = next((o.message for o in failed if o.error_kind is kind), "")
    passed = total - len(failed)
    return EvalResult(
        passed, total, outcomes, kind, message, runtime_ms, stdout, sorted(flags)
    )
