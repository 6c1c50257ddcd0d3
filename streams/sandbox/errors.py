"""Typed errors of the sandbox."""


class SandboxUnavailable(RuntimeError):
    """The requested isolation cannot be set up here; `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(f"sandbox unavailable: {reason}")
        self.reason = reason


class InvalidRequest(ValueError):
    """An EvalRequest that cannot be evaluated (e.g. a test that is not Python)."""
