"""Typed errors of the reshaping core, so callers can route bad input (dead letters) apart from bugs."""

from __future__ import annotations


class ReshapingError(ValueError):
    """Base of every error raised on bad input to the reshaping core."""


class ConfigError(ReshapingError):
    """A reshaping config that cannot be loaded or does not validate; the message names the field."""


class InvalidFeedbackError(ReshapingError):
    """A feedback record the reshaping refuses (missing field, NaN/inf, out of range, bad group)."""

    def __init__(self, rollout_id: str, field: str, reason: str):
        super().__init__(f"rollout {rollout_id!r}: field {field!r}: {reason}")
        self.rollout_id = rollout_id
        self.field = field
        self.reason = reason


class StateMismatchError(ReshapingError):
    """A reshaping state built under one config used with another (would mix two advantage streams)."""
