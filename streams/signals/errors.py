"""Typed errors raised by the signal functions on bad input."""


class SignalInputError(ValueError):
    """An argument to a signal function is malformed (empty outcomes, bad weights, ...)."""
