"""Which TensorBoard scalars a Metric record becomes.

Where TRL's GRPO trainer logs the same quantity, the scalar takes TRL's name, so curves from
this project and from TRL read alike; every value of a record is also written under its own
name, prefixed by its source, so nothing is lost. Each source, and each reshaping partition or
generator, is its own TensorBoard run (a sub-folder): their steps count different things
(learner steps, groups a partition has reshaped, groups a generator has made), and one tag
holds one step axis.
"""

from __future__ import annotations

import math
from typing import Any

# our value -> TRL's name for it
TRL_NAMES: dict[str, dict[str, str]] = {
    "learner": {
        "loss/loss": "loss",
        "grad_norm": "grad_norm",
        "loss/kl_ref": "kl",  # absent from a step that did not measure it: then nothing is written
        "loss/entropy": "entropy",
        "loss/clip_low_frac": "clip_ratio/low_mean",
        "loss/clip_high_frac": "clip_ratio/high_mean",
        "loss/is_weight_mean": "sampling/importance_sampling_ratio/mean",
        "loss/mismatch_abs_logp": "sampling/sampling_logp_difference/mean",
    },
    "reshape": {
        "reward_reshaped_mean": "reward",  # the reward the learner is trained on
        "zero_variance_share_reshaped": "frac_reward_zero_std",
    },
}


def run_name(record: dict[str, Any]) -> str:
    """The TensorBoard run (sub-folder) of a record: its source, with the reshaping partition
    or the generator id when there is one."""
    labels = record.get("labels") or {}
    source = record["source"]
    if "partition" in labels:
        return f"{source}-p{labels['partition']}"
    if "generator_id" in labels:
        return f"{source}-{labels['generator_id']}"
    return source


def scalars(record: dict[str, Any]) -> dict[str, float]:
    """tag -> value of one Metric record: TRL's names where they apply, then every value under
    `<source>/<name>`. Values that are not finite numbers are left out."""
    values = {k: float(v) for k, v in (record.get("values") or {}).items() if math.isfinite(float(v))}
    source = record["source"]
    out = {trl: values[ours] for ours, trl in TRL_NAMES.get(source, {}).items() if ours in values}
    if source == "reshape" and "reward_reshaped_var" in values:
        out["reward_std"] = math.sqrt(max(values["reward_reshaped_var"], 0.0))
    if source == "learner" and values.get("num_samples"):
        out["completions/mean_length"] = values.get("num_tokens", 0.0) / values["num_samples"]
    out.update({f"{source}/{name}": value for name, value in values.items()})
    return out
