"""Signal reshaping: weak feedback (pass rate, crashes, style) in, GRPO advantages out.

Pure logic, no streaming: the Faust agents and the replay tool keep the state that
``reshape_group`` returns and hand it back with the next group.
"""

from streams.reshaping.config import ReshapingConfig, config_from_dict, load_config, load_preset
from streams.reshaping.errors import ConfigError, InvalidFeedbackError, ReshapingError, StateMismatchError
from streams.reshaping.pipeline import ReshapeState, reshape_group, validate_feedback, validate_group

__all__ = [
    "ConfigError",
    "InvalidFeedbackError",
    "ReshapeState",
    "ReshapingConfig",
    "ReshapingError",
    "StateMismatchError",
    "config_from_dict",
    "load_config",
    "load_preset",
    "reshape_group",
    "validate_feedback",
    "validate_group",
]
