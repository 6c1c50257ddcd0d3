"""Whose failure an outcome is: the candidate's, or the host's. Pure.

Only an outcome the host could have caused is the environment's, and the sandbox reports
each of those, and nothing else, with error kind `sandbox` (streams/sandbox/verdict.py,
`sandbox_failure`):
  * a sandbox worker that failed after the pool's own retry ("sandbox worker failed: ...":
    a zygote lost mid-request, found dead twice, hung past the host's deadline, or not
    restartable);
  * an error of the zygote itself while it ran the request ("sandbox error: ...");
  * a fatal error of the judge, the trusted harness ("harness failed: ...").
A candidate that loops, crashes, exits or kills itself ends as timeout or crash (the judge
sees its process end, verdict.py `candidate_end`): that is its own failure, always scored.
"""

from __future__ import annotations

from collections.abc import Sequence

from streams.sandbox import ErrorKind, EvalResult


def host_failure(result: EvalResult) -> bool:
    """The run says nothing about the candidate: the host may have caused its outcome."""
    return result.error_kind is ErrorKind.SANDBOX


def spread(fractions: Sequence[float]) -> float:
    """max - min of the repeats' pass fractions (0 for one run)."""
    return max(fractions) - min(fractions) if fractions else 0.0


def is_flaky(fractions: Sequence[float], tolerance: float) -> bool:
    """Repeats whose pass fractions spread by more than `tolerance` (SignalConfig.flaky_tolerance)."""
    return spread(fractions) > tolerance
