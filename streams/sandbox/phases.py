"""Time-boxed phases and the names of their failures, for both processes of a request.

Standard library only: this file runs inside the sandbox (see launcher.py).
"""

import signal


class PhaseTimeout(BaseException):
    """Raised by SIGALRM when a phase overruns its share. BaseException so that
    `except Exception` in the candidate or in a test does not swallow it."""


def _on_alarm(signum, frame):
    raise PhaseTimeout("exceeded its share of the time limit")


class Alarm:
    """SIGALRM armed for one phase; bound at start, before any candidate code can patch
    the `signal` module."""

    def __init__(self):
        self._setitimer, self._signal = signal.setitimer, signal.signal

    def arm(self, seconds):
        self._signal(signal.SIGALRM, _on_alarm)
        self._setitimer(signal.ITIMER_REAL, max(seconds, 0.001))

    def disarm(self):
        self._setitimer(signal.ITIMER_REAL, 0)


def classify(exc):
    if isinstance(exc, PhaseTimeout):
        return "timeout"
    remote_kind = getattr(type(exc), "remote_kind", None)  # raised by the candidate, re-raised here
    if remote_kind is not None:
        return remote_kind
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, ImportError):
        return "import"
    return "crash"  # RecursionError, SystemExit and every other exception


def describe(exc):
    # The candidate controls exception classes and their __str__; never let a
    # hostile one break the report.
    try:
        text = str(exc)
        return (type(exc).__name__ + (": " + text if text else ""))[:500]
    except BaseException:
        return "unprintable exception"
