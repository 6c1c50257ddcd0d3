"""The run's metrics as TensorBoard event files: one consumer of the `metrics` topic
(`writer.py`), the names TRL's GRPO trainer logs where it has one (`names.py`)."""
