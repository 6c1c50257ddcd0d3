"""The one entry point of the reshaping: a group of feedback records in, advantages out.

``reshape_group`` is a pure function of (feedbacks, state, config, step): the stream and
the replay tool call it the same way, so a replay of the feedback log from the same
initial state reproduces the original advantage stream exactly. The members of a group
are processed in a canonical order (``sample_index``, then ``rollout_id``), so the result
does not depend on the order they arrived in; records come back in the input order.

Steps for one group (``score_group``):

1. validate every record (``InvalidFeedbackError`` names rollout and field);
2. governance: which members are comparable (``GovernanceConfig``); a member whose
   feedback says ``environment_failure`` is left out of every statistic and of the
   comparison, and the others are compared as a group of their own size. A group with
   fewer than ``min_comparable`` comparable members is not compared at all: its records
   are all emitted with ``excluded`` true and advantage 0 (emitted, not dropped: the
   learner and the generator's pacing count the group as arrived, so a run never waits
   for it), and no statistic moves;
3. weights at the clock (the group's newest ``policy_version``, or ``step``);
4. components per rollout; R_progress reads the failure history as it stood *before*
   this group, so every member that fixes a failing pattern gets the bonus (equal
   candidates get equal reward in a group-relative advantage);
5. enhanced rewards; the global statistics and the EMA baseline take in this group's
   comparable members;
6. the comparable members' outcomes enter the failure history, failures before fixes (the
   group is one moment of the policy: if any member fixed the pattern, the pattern counts
   as fixed as of this group).

Then ``normalise_groups``: normalise, amplify, focus, clip (``advantages``), one group at a
time, or, in mode ``batch``, the groups of one batch together. ``reshape_group`` does both
for one group.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from schemas.records import build_record
from streams.reshaping.advantages import Normalised, normalise_batch, transform
from streams.reshaping.config import COMPONENTS, ReshapingConfig
from streams.reshaping.errors import InvalidFeedbackError, StateMismatchError
from streams.reshaping.rewards import (
    STYLE_CLASSES,
    combine_evaluators,
    enhanced_reward,
    evaluator_outcomes,
    r_exec,
    r_hack,
    r_outcome,
    r_precision,
    r_progress,
    r_robust,
    r_style,
    r_test,
    reward_raw,
    weights_at,
)
from streams.reshaping.stats import EmaBaseline, FailureHistory, RunningStats

# Quantities with a global running statistic (each component under its name); reward_enhanced
# is the one that normalises.
TRACKED = ("reward_raw", *COMPONENTS, "reward_enhanced")


def _fresh_stats() -> dict[str, RunningStats]:
    return {name: RunningStats() for name in TRACKED}


@dataclass(frozen=True)
class ReshapeState:
    """Everything the reshaping remembers between groups.

    ``config_id`` is bound by the first group; using the state with another config raises
    ``StateMismatchError`` rather than silently blending two reshaping rules.
    """

    config_id: str = ""
    groups: int = 0  # groups scored, compared or not (the ``step`` clock of the stream)
    compared: int = 0  # groups compared: the warm-up clock of mode group
    batches: int = 0  # batches normalised: the warm-up clock of mode batch
    stats: Mapping[str, RunningStats] = field(default_factory=_fresh_stats)
    baseline: EmaBaseline = EmaBaseline()
    patterns: Mapping[str, FailureHistory] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config_id": self.config_id,
            "groups": self.groups,
            "compared": self.compared,
            "batches": self.batches,
            "stats": {name: s.to_dict() for name, s in sorted(self.stats.items())},
            "baseline": self.baseline.to_dict(),
            "patterns": {name: h.to_dict() for name, h in sorted(self.patterns.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReshapeState:
        stats = _fresh_stats()
        stats.update({name: RunningStats.from_dict(s) for name, s in data["stats"].items()})
        return cls(
            config_id=str(data["config_id"]),
            groups=int(data["groups"]),
            compared=int(data.get("compared", data["groups"])),
            batches=int(data.get("batches", 0)),
            stats=stats,
            baseline=EmaBaseline.from_dict(data["baseline"]),
            patterns={name: FailureHistory.from_dict(h) for name, h in data["patterns"].items()},
        )


# ---------------------------------------------------------------- validation

_REQUIRED = (
    "event_id", "created_at_ms", "rollout_id", "group_id", "task_id", "bug_pattern", "sample_index",
    "group_size", "policy_version", "pass_fraction_runs", "tree_edit_distance", "style_class",
    "prompt_token_ids", "completion_token_ids", "behaviour_logprobs", "finish_reason",
)  # fmt: skip


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_unit_interval(rid: str, name: str, x: Any) -> None:
    if not _is_number(x):
        raise InvalidFeedbackError(rid, name, f"expected a number, got {x!r}")
    if not math.isfinite(x):
        raise InvalidFeedbackError(rid, name, f"not finite ({x})")
    if not 0.0 <= x <= 1.0:
        raise InvalidFeedbackError(rid, name, f"{x} outside [0, 1]")


_REQUIRED_SET = frozenset(_REQUIRED)
_INTEGERS = ("created_at_ms", "sample_index", "group_size", "policy_version")


def _plainly_valid(fb: Mapping[str, Any]) -> bool:
    """True only for a record ``_explain_invalid`` accepts, checked with C-level loops; False
    whenever unsure (an int where floats are usual, a NaN), leaving the verdict to it. The
    record-by-record checks were a fifth of the replay's time."""
    if not _REQUIRED_SET.issubset(fb.keys()):
        return False
    if not (type(fb["created_at_ms"]) is int and type(fb["sample_index"]) is int
            and type(fb["group_size"]) is int and type(fb["policy_version"]) is int and fb["group_size"] >= 1):
        return False
    flags, runs, logprobs, distance = fb.get("hack_flags", []), fb["pass_fraction_runs"], fb["behaviour_logprobs"], \
        fb["tree_edit_distance"]
    return (type(flags) is list and all(type(f) is str for f in flags)
            and type(runs) is list and bool(runs) and set(map(type, runs)) == {float}
            and math.isfinite(sum(runs)) and 0.0 <= min(runs) and max(runs) <= 1.0  # min/max skip NaNs
            and type(distance) is float and 0.0 <= distance <= 1.0
            and set(map(type, logprobs)) <= {float} and all(map(math.isfinite, logprobs))
            and fb["style_class"] in STYLE_CLASSES
            and type(coverage := fb.get("exec_line_coverage", 0.0)) is float and 0.0 <= coverage <= 1.0
            and type(checked := fb.get("adversarial_checked", 0)) is int
            and type(mismatches := fb.get("adversarial_mismatches", 0)) is int and 0 <= mismatches <= checked)


def validate_feedback(fb: Mapping[str, Any]) -> None:
    """Refuse a record the reshaping cannot turn into a finite advantage.

    Checked: the fields it reads or carries exist; pass fractions, the tree edit distance
    and the exec line coverage are finite and in [0, 1]; the adversarial counts are counts,
    mismatches no more than inputs checked; behaviour logprobs are finite (the learner
    divides by their exponent); the style class is one of ``STYLE_CLASSES``; the integers that
    order and size the group are integers, ``group_size >= 1``; hack flags are strings.
    """
    if not _plainly_valid(fb):
        _explain_invalid(fb)


def _explain_invalid(fb: Mapping[str, Any]) -> None:
    """The checks of ``validate_feedback`` one by one: raises naming the first field that fails."""
    rid = str(fb.get("rollout_id", "<no rollout_id>"))
    for name in _REQUIRED:
        if name not in fb:
            raise InvalidFeedbackError(rid, name, "missing")
    for name in _INTEGERS:
        if not isinstance(fb[name], int) or isinstance(fb[name], bool):
            raise InvalidFeedbackError(rid, name, f"expected an integer, got {fb[name]!r}")
    flags = fb.get("hack_flags", [])
    if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
        raise InvalidFeedbackError(rid, "hack_flags", f"expected a list of strings, got {flags!r}")
    runs = fb["pass_fraction_runs"]
    if not isinstance(runs, (list, tuple)) or not runs:
        raise InvalidFeedbackError(rid, "pass_fraction_runs", "needs at least one run")
    for i, x in enumerate(runs):
        _check_unit_interval(rid, f"pass_fraction_runs[{i}]", x)
    _check_unit_interval(rid, "tree_edit_distance", fb["tree_edit_distance"])
    for i, x in enumerate(fb["behaviour_logprobs"]):
        if not _is_number(x) or not math.isfinite(x):
            raise InvalidFeedbackError(rid, f"behaviour_logprobs[{i}]", f"not a finite number ({x!r})")
    if fb["style_class"] not in STYLE_CLASSES:
        raise InvalidFeedbackError(rid, "style_class", f"{fb['style_class']!r} not one of {STYLE_CLASSES}")
    if fb["group_size"] < 1:
        raise InvalidFeedbackError(rid, "group_size", f"must be at least 1, got {fb['group_size']}")
    _check_unit_interval(rid, "exec_line_coverage", fb.get("exec_line_coverage", 0.0))
    checked, mismatches = fb.get("adversarial_checked", 0), fb.get("adversarial_mismatches", 0)
    for name, count in (("adversarial_checked", checked), ("adversarial_mismatches", mismatches)):
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidFeedbackError(rid, name, f"expected a count, got {count!r}")
    if mismatches > checked:
        raise InvalidFeedbackError(rid, "adversarial_mismatches", f"{mismatches} exceed {checked} inputs checked")


def validate_group(feedbacks: Sequence[Mapping[str, Any]], members_valid: bool = False) -> None:
    """Every record valid, one group id and group size, distinct rollouts, no more than the size.
    ``members_valid``: each record already passed ``validate_feedback`` (the stream checks each
    on arrival), so only what ties the group together is checked."""
    if not feedbacks:
        raise InvalidFeedbackError("<none>", "group_id", "empty group")
    if not members_valid:
        for fb in feedbacks:
            validate_feedback(fb)
    first = feedbacks[0]
    seen: set[str] = set()
    for fb in feedbacks:
        rid = fb["rollout_id"]
        for name in ("group_id", "group_size"):
            if fb[name] != first[name]:
                raise InvalidFeedbackError(rid, name, f"{fb[name]!r} differs from {first[name]!r} in the same group")
        if rid in seen:
            raise InvalidFeedbackError(rid, "rollout_id", "appears twice in the group")
        seen.add(rid)
    if len(feedbacks) > first["group_size"]:
        raise InvalidFeedbackError(
            first["rollout_id"], "group_size", f"{len(feedbacks)} members exceed group_size {first['group_size']}"
        )


# ---------------------------------------------------------------- reshaping


def is_full_fix(fb: Mapping[str, Any]) -> bool:
    """The evaluator names the task's own pattern as repaired and every repeat passed every test."""
    pattern = fb["bug_pattern"]
    return bool(pattern) and fb.get("fixed_pattern", "") == pattern and min(fb["pass_fraction_runs"]) == 1.0


def _components(
    fb: Mapping[str, Any], patterns: Mapping[str, FailureHistory], cfg: ReshapingConfig
) -> dict[str, float]:
    """Every component of ``COMPONENTS`` for one rollout, by name."""
    rc, how = cfg.rewards, cfg.robustness.combine
    fraction = r_test(fb["pass_fraction_runs"], cfg.outcome.repeats_average)
    # an ensemble places the evaluators' combined outcome on the outcome's scale instead
    combined = fraction if how == "component" else combine_evaluators(evaluator_outcomes(fb, fraction), how)
    test = r_outcome(fb, cfg.outcome, combined)
    gate = test if rc.precision_gate == "r_test" else 1.0
    return {
        "test": test,
        "precision": r_precision(fb["tree_edit_distance"], rc.precision_lambda, gate),
        "style": r_style(fb["style_class"], rc),
        "hack": r_hack(fb.get("hack_flags", []), rc),
        "progress": r_progress(is_full_fix(fb), fb["bug_pattern"], patterns, cfg.progress, fb["created_at_ms"]),
        "robust": r_robust(fb, fraction, cfg.robustness),
        "exec": r_exec(fb),
    }


def _record_outcomes(
    patterns: Mapping[str, FailureHistory], members: Sequence[Mapping[str, Any]], cfg: ReshapingConfig
) -> dict[str, FailureHistory]:
    updated = dict(patterns)
    by_pattern: dict[str, list[tuple[bool, int]]] = {}
    for fb in members:
        if fb["bug_pattern"]:
            by_pattern.setdefault(fb["bug_pattern"], []).append((is_full_fix(fb), fb["created_at_ms"]))
    for pattern, outcomes in sorted(by_pattern.items()):
        ordered = [(t, fixed) for fixed, t in sorted(outcomes, key=lambda o: o[0])]  # failures first, stable
        history = updated.get(pattern, FailureHistory())
        updated[pattern] = history.record(ordered, cfg.progress.window_kind, cfg.progress.window)
    return updated


def is_comparable(fb: Mapping[str, Any], cfg: ReshapingConfig) -> bool:
    """Whether a member takes part in its group's comparison (``GovernanceConfig``)."""
    return not (cfg.governance.exclude_environment_failures and fb.get("environment_failure", False))


@dataclass(frozen=True)
class ScoredGroup:
    """One group's rewards, before normalisation: what a batch of mode ``batch`` holds.

    Values are in the canonical member order; ``feedbacks`` keeps the input order and
    ``order[pos]`` is the input position of canonical member ``pos``. Plain data with
    ``to_dict``/``from_dict``: a batch still waiting is part of the partition's saved state.
    """

    feedbacks: tuple[dict, ...]
    order: tuple[int, ...]
    weights: dict[str, float]
    raws: tuple[float, ...]
    components: tuple[dict[str, float], ...]
    enhanced: tuple[float, ...]
    comparable: tuple[bool, ...]
    compared: bool  # enough comparable members: the group has advantages

    @property
    def members(self) -> list[dict]:
        return [self.feedbacks[i] for i in self.order]

    def compared_rewards(self) -> list[float]:
        return [r for r, ok in zip(self.enhanced, self.comparable) if ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "feedbacks": list(self.feedbacks), "order": list(self.order), "weights": dict(self.weights),
            "raws": list(self.raws), "components": [dict(c) for c in self.components],
            "enhanced": list(self.enhanced), "comparable": list(self.comparable), "compared": self.compared,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoredGroup:
        return cls(
            feedbacks=tuple(data["feedbacks"]), order=tuple(data["order"]), weights=dict(data["weights"]),
            raws=tuple(data["raws"]), components=tuple(dict(c) for c in data["components"]),
            enhanced=tuple(data["enhanced"]), comparable=tuple(data["comparable"]), compared=bool(data["compared"]),
        )


def score_group(
    feedbacks: list[dict], state: ReshapeState, cfg: ReshapingConfig, step: int, members_valid: bool = False
) -> tuple[ScoredGroup, ReshapeState]:
    """Steps 1-6 above: the group's rewards and the state after it. ``members_valid``: as in
    ``validate_group``."""
    validate_group(feedbacks, members_valid)
    if state.config_id and state.config_id != cfg.config_id:
        raise StateMismatchError(f"state belongs to config {state.config_id}, not {cfg.config_id}")

    order = sorted(range(len(feedbacks)), key=lambda i: (feedbacks[i]["sample_index"], feedbacks[i]["rollout_id"]))
    members = [feedbacks[i] for i in order]
    comparable = [is_comparable(fb, cfg) for fb in members]
    compared = sum(comparable) >= cfg.governance.min_comparable

    clock = step if cfg.weights.clock == "step" else max(fb["policy_version"] for fb in members)
    weights = weights_at(cfg.weights, clock)
    raws = [reward_raw(fb["pass_fraction_runs"]) for fb in members]
    components = [_components(fb, state.patterns, cfg) for fb in members]
    enhanced = [enhanced_reward(c, weights) for c in components]
    scored = ScoredGroup(tuple(feedbacks), tuple(order), dict(weights), tuple(raws), tuple(components),
                         tuple(enhanced), tuple(comparable), compared)
    if not compared:  # no comparison, so nothing of it enters a statistic
        return scored, replace(state, config_id=cfg.config_id, groups=state.groups + 1)

    def kept(xs: Sequence[Any]) -> list[Any]:
        return [x for x, ok in zip(xs, comparable) if ok]

    tracked = {
        "reward_raw": kept(raws),
        **{name: kept([c[name] for c in components]) for name in COMPONENTS},
        "reward_enhanced": kept(enhanced),
    }
    stats = {name: state.stats.get(name, RunningStats()).update_many(xs) for name, xs in tracked.items()}
    baseline = state.baseline.update(statistics.fmean(kept(enhanced)), cfg.normalisation.ema_beta)
    new_state = replace(
        state,
        config_id=cfg.config_id,
        groups=state.groups + 1,
        compared=state.compared + 1,
        stats=stats,
        baseline=baseline,
        patterns=_record_outcomes(state.patterns, kept(members), cfg),
    )
    return scored, new_state


# The normalisation reported for the records of a group that was not compared.
_NOT_COMPARED = Normalised(values=(), warmup=False, centre=0.0, scale=1.0, group_mean=0.0, group_std=0.0)


def normalise_groups(
    groups: Sequence[ScoredGroup], state: ReshapeState, cfg: ReshapingConfig
) -> tuple[list[list[dict]], ReshapeState]:
    """Advantage records of each group (each in its input order) and the state after them.

    Mode ``batch``: the compared groups given are one batch and share one centre and scale;
    the other modes take one group. Records hold every field of ``schemas/advantage.avsc``
    except the envelope ``event_id`` and ``created_at_ms``, which the caller adds.
    """
    compared = [g for g in groups if g.compared]
    glob = state.stats["reward_enhanced"]
    baseline = state.baseline.value
    if cfg.normalisation.mode == "batch":
        period = state.batches + 1 if compared else state.batches
        state = replace(state, batches=period)
    else:
        period = state.compared
    norms = iter(normalise_batch([g.compared_rewards() for g in compared], glob, baseline, cfg.normalisation,
                                 period) if compared else [])
    return [_records(g, next(norms) if g.compared else _NOT_COMPARED, state, cfg) for g in groups], state


def _records(group: ScoredGroup, norm: Normalised, state: ReshapeState, cfg: ReshapingConfig) -> list[dict]:
    """The records of one group, in its input order; ``norm`` holds its comparable members' values."""
    glob = state.stats["reward_enhanced"]
    # no baseline before the first compared group: 0.0, as the empty global statistics say
    baseline = state.baseline if state.baseline.value is not None else EmaBaseline(0.0)
    members, components, weights = group.members, group.components, group.weights
    raws, enhanced = group.raws, group.enhanced
    normalised = iter(norm.values)
    size = members[0]["group_size"]
    records_by_input: dict[int, dict] = {}
    for pos, fb in enumerate(members):
        c = components[pos]
        excluded = not (group.compared and group.comparable[pos])
        z = 0.0 if excluded else next(normalised)
        records_by_input[group.order[pos]] = build_record(
            "Advantage", leave_out=("event_id", "created_at_ms"), config_id=cfg.config_id,
            rollout_id=fb["rollout_id"], feedback_event_id=fb["event_id"], group_id=fb["group_id"],
            task_id=fb["task_id"], bug_pattern=fb["bug_pattern"], sample_index=fb["sample_index"],
            group_size=size, group_members=len(members), group_complete=len(members) == size,
            policy_version=fb["policy_version"],
            # the reward: its components, their weights, the reshaped value and its advantage
            reward_raw=raws[pos], components=dict(c), weights=dict(weights), reward_enhanced=enhanced[pos],
            reward_normalised=z,
            advantage=0.0 if excluded else transform(z, cfg.transform),
            # the statistics it was normalised with
            ema_baseline=baseline.value, global_count=glob.count, global_mean=glob.mean, global_std=glob.std,
            group_mean=norm.group_mean, group_std=norm.group_std, warmup=norm.warmup,
            norm_mode=cfg.normalisation.mode, norm_centre=norm.centre, norm_scale=norm.scale, excluded=excluded,
            # what the learner needs to score the completion again
            hack_flags=list(fb.get("hack_flags", [])), prompt_token_ids=list(fb["prompt_token_ids"]),
            completion_token_ids=list(fb["completion_token_ids"]),
            behaviour_logprobs=list(fb["behaviour_logprobs"]), finish_reason=fb["finish_reason"],
        )
    return [records_by_input[i] for i in range(len(members))]


def reshape_group(
    feedbacks: list[dict], state: ReshapeState, cfg: ReshapingConfig, step: int, members_valid: bool = False
) -> tuple[list[dict], ReshapeState]:
    """One advantage record per feedback (input order) and the state after the group:
    ``score_group`` then ``normalise_groups`` of this group alone (in mode batch, a batch of
    one group; the stream forms batches of several, ``streams/agents/batches.py``)."""
    scored, state = score_group(feedbacks, state, cfg, step, members_valid)
    records, state = normalise_groups([scored], state, cfg)
    return records[0], state
