"""From advantage records to padded micro-batches; pure, no model, no I/O.

A record is a mapping with the fields of ``schemas/advantage.avsc`` (the learner reads
``group_id``, ``sample_index``, ``group_members``, ``prompt_token_ids``,
``completion_token_ids``, ``behaviour_logprobs``, ``advantage``, ``policy_version``,
``finish_reason``, ``reward_enhanced`` and ``excluded``). A record with ``excluded`` true
(left out of its group's comparison by the reshaping, advantage 0) is never trained on.

Row layout: ``prompt + completion``, right-padded to the longest row of the micro-batch.
Completion-aligned tensors (``[B, T]``) hold column ``j`` = the ``j``-th completion token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import torch

Record = Mapping[str, Any]
REQUIRED_FIELDS = (
    "group_id", "prompt_token_ids", "completion_token_ids", "behaviour_logprobs",
    "advantage", "policy_version", "finish_reason",
)  # fmt: skip


class BatchError(ValueError):
    """A record that cannot be batched (missing field, lengths that disagree, empty prompt)."""


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [B, L] long, pad 0
    attention_mask: torch.Tensor  # [B, L] long
    completion_start: torch.Tensor  # [B] long, = prompt length
    completion_mask: torch.Tensor  # [B, T] bool
    behaviour_logprobs: torch.Tensor  # [B, T] float32, 0 on padding
    advantages: torch.Tensor  # [B] float32
    truncated: torch.Tensor  # [B] bool, finish_reason == "length"
    policy_versions: torch.Tensor  # [B] long

    @property
    def padded_tokens(self) -> int:
        return self.input_ids.numel()

    def to(self, device: torch.device | str) -> "MicroBatch":
        return MicroBatch(
            **{f.name: getattr(self, f.name).to(device) for f in fields(self)}
        )


@dataclass
class StepBatch:
    """Everything one optimiser step consumes, plus the bookkeeping of what was dropped."""

    micro_batches: list[MicroBatch]
    num_groups: int
    num_samples: int
    num_completion_tokens: int
    dropped_stale: int
    lag_histogram: dict[int, int] = field(
        default_factory=dict
    )  # lag -> samples seen (dropped included)


def validate(record: Record) -> None:
    missing = [k for k in REQUIRED_FIELDS if k not in record]
    if missing:
        raise BatchError(f"record lacks {missing}")
    if len(record["behaviour_logprobs"]) != len(record["completion_token_ids"]):
        raise BatchError(
            f"group {record['group_id']}: {len(record['behaviour_logprobs'])} behaviour logprobs for "
            f"{len(record['completion_token_ids'])} completion tokens"
        )
    if not record["prompt_token_ids"]:
        raise BatchError(
            f"group {record['group_id']}: empty prompt (the first completion token needs a context)"
        )


def split_stale(
    records: Iterable[Record], learner_version: int, max_policy_lag: int
) -> tuple[list[Record], int, dict[int, int]]:
    """Keep samples at most ``max_policy_lag`` versions behind; return (kept, dropped, lag histogram)."""
    kept, lags = [], Counter()
    for r in records:
        lag = learner_version - int(r["policy_version"])
        lags[lag] += 1
        if lag <= max_policy_lag:
            kept.append(r)
    return kept, sum(lags.values()) - len(kept), dict(sorted(lags.items()))


def group_by_id(records: Iterable[Record]) -> list[list[Record]]:
    """Groups in order of first appearance, members ordered by ``sample_index`` when present."""
    groups: dict[str, list[Record]] = {}
    for r in records:
        groups.setdefault(r["group_id"], []).append(r)
    return [sorted(g, key=lambda r: r.get("sample_index", 0)) for g in groups.values()]


def _row_length(r: Record) -> int:
    return len(r["prompt_token_ids"]) + len(r["completion_token_ids"])


def pack_groups(
    groups: Sequence[Sequence[Record]], token_budget: int
) -> list[list[Record]]:
    """Greedily fill micro-batches with whole groups while rows x longest row <= budget.

    A group that alone exceeds the budget is split into row chunks that fit (a single
    row over the budget still gets its own micro-batch: it cannot be cut).
    """
    batches: list[list[Record]] = []
    current: list[Record] = []
    current_len = 0

    def cost(rows: int, longest: int) -> int:
        return rows * longest

    for group in groups:
        group_len = max(_row_length(r) for r in group)
        longest = max(current_len, group_len)
        if current and cost(len(current) + len(group), longest) <= token_budget:
            current.extend(group)
            current_len = longest
            continue
        if current:
            batches.append(current)
        if cost(len(group), group_len) <= token_budget:
            current, current_len = list(group), group_len
            continue
        # Oversized group: cut it into chunks of as many rows as the budget allows.
        rows_per_chunk = max(1, token_budget // group_len)
        chunks = [
            list(group[i : i + rows_per_chunk])
            for i in range(0, len(group), rows_per_chunk)
        ]
        batches.extend(chunks[:-1])
        current, current_len = chunks[-1], max(_row_length(r) for r in chunks[-1])
    if current:
        batches.append(current)
    return batches


def collate(records: Sequence[Record], pad_token_id: int = 0) -> MicroBatch:
    """Right-pad ``records`` into one micro-batch."""
    for r in records:
        validate(r)
    rows = len(records)
    length = max(_row_length(r) for r in records)
    t_max = max(len(r["completion_token_ids"]) for r in records)
    input_ids = torch.full((rows, length), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((rows, length), dtype=torch.long)
    completion_mask = torch.zeros((rows, t_max), dtype=torch.bool)
    behaviour = torch.zeros((rows, t_max), dtype=torch.float32)
    for i, r in enumerate(records):
        tokens = list(r["prompt_token_ids"]) + list(r["completion_token_ids"])
        n_completion = len(r["completion_token_ids"])
        input_ids[i, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        attention_mask[i, : len(tokens)] = 1
        completion_mask[i, :n_completion] = True
        behaviour[i, :n_completion] = torch.tensor(
            r["behaviour_logprobs"], dtype=torch.float32
        )
    return MicroBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        completion_start=torch.tensor(
            [len(r["prompt_token_ids"]) for r in records], dtype=torch.long
        ),
        completion_mask=completion_mask,
        behaviour_logprobs=behaviour,
        advantages=torch.tensor(
            [float(r["advantage"]) for r in records], dtype=torch.float32
        ),
        truncated=torch.tensor(
            [r["finish_reason"] == "length" for r in records], dtype=torch.bool
        ),
        policy_versions=torch.tensor(
            [int(r["policy_version"]) for r in records], dtype=torch.long
        ),
    )


def plan_step(
    records: Sequence[Record],
    learner_version: int,
    max_policy_lag: int,
    micro_batch_tokens: int,
    max_groups: int | None = None,
    pad_token_id: int = 0,
) -> StepBatch:
    """Drop excluded and stale samples, group, pack under the token budget and collate one
    step's batch."""
    for r in records:
        validate(r)
    fresh, dropped, lags = split_stale(comparable(records), learner_version, max_policy_lag)
    groups = group_by_id(fresh)
    if max_groups is not None and len(groups) > max_groups:
        raise BatchError(
            f"{len(groups)} groups given for one step, at most {max_groups} allowed"
        )
    micro = [
        collate(chunk, pad_token_id)
        for chunk in pack_groups(groups, micro_batch_tokens)
    ]
    return StepBatch(
        micro_batches=micro,
        num_groups=len(groups),
        num_samples=len(fresh),
        num_completion_tokens=sum(len(r["completion_token_ids"]) for r in fresh),
        dropped_stale=dropped,
        lag_histogram=lags,
    )


def comparable(records: Iterable[Record]) -> list[Record]:
    """The records the reshaping compared: those without ``excluded`` (absent means compared)."""
    return [r for r in records if not r.get("excluded", False)]


def no_comparison_signal(group: Sequence[Record], tolerance: float = 1e-9) -> bool:
    """True when every compared member has the same reward before normalisation
    (``reward_enhanced``): the group says nothing about which completion is better, as the
    groups DAPO's dynamic sampling drops. The advantage is not the test: under a warm-up
    scale a uniform group gets equal but non-zero advantages, and a reward that separates
    all-fail members (layered tiers, style, hack costs) gives a group with signal although
    every member failed."""
    rewards = [float(r["reward_enhanced"]) for r in comparable(group)]
    return max(rewards) - min(rewards) <= tolerance


class GroupAccumulator:
    """Collects streamed records until ``groups_per_step`` groups are complete.

    A group is complete when it holds ``group_members`` records (the members it had when
    the reshaper emitted it; ``group_size`` when that field is absent), excluded ones
    included. Its excluded records are then set aside: they are never trained on, and a
    group left with no compared record does not count towards a step. ``add`` returns the
    records of one step once enough groups are complete, else None.

    With ``drop_uniform_groups`` (dynamic sampling, as in DAPO) a complete group with no
    comparison signal (``no_comparison_signal``) is dropped instead of trained on.

    ``dropped_groups`` counts every complete group that does not count towards a step,
    wholly excluded or dropped as uniform (``excluded_groups`` and ``uniform_groups`` say
    which). The service announces it to the generator, whose pacing then samples one
    replacement each: without that, the learner would wait for groups the generator is
    not allowed to produce and the run would stall. The service keeps ``dropped_groups``
    in its checkpoints; the two parts count since this process started.

    The topic is written at least once: a worker that dies after emitting a group but
    before committing its input emits the group again, as identical copies. A copy of a
    member already held, or a record of a group already released or dropped (``closed``),
    is counted in ``duplicate_records`` and set aside, so no group is trained twice and
    no copy opens a group that would never complete. The service checkpoints the closed
    ids (``closed_groups``) with the offsets.
    """

    def __init__(self, groups_per_step: int, drop_uniform_groups: bool = False) -> None:
        if groups_per_step < 1:
            raise ValueError("groups_per_step must be >= 1")
        self.groups_per_step = groups_per_step
        self.drop_uniform_groups = drop_uniform_groups
        self.dropped_groups = 0  # restored from a checkpoint by the service
        self.excluded_groups = 0
        self.uniform_groups = 0
        self.released_groups = 0  # groups handed out in steps (restored too)
        self.duplicate_records = 0
        self._closed: set[str] = set()  # ids of the groups released or dropped
        self._open: dict[str, list[Record]] = {}
        self._complete: list[list[Record]] = []

    @staticmethod
    def _expected(record: Record) -> int:
        return int(record.get("group_members", record.get("group_size", 1)))

    def add(self, record: Record) -> list[Record] | None:
        validate(record)
        if self._is_copy(record):
            self.duplicate_records += 1
            return None
        members = self._open.setdefault(record["group_id"], [])
        members.append(record)
        if len(members) >= self._expected(record):
            # kept whole (excluded records too) until released: ``pending`` must give back
            # groups that ``add`` completes again after a restart
            group = self._open.pop(record["group_id"])
            if not comparable(group):
                self.excluded_groups += 1
                self.dropped_groups += 1
                self._closed.add(record["group_id"])
            elif self.drop_uniform_groups and no_comparison_signal(group):
                self.uniform_groups += 1
                self.dropped_groups += 1
                self._closed.add(record["group_id"])
            else:
                self._complete.append(group)
        if len(self._complete) < self.groups_per_step:
            return None
        ready, self._complete = (
            self._complete[: self.groups_per_step],
            self._complete[self.groups_per_step :],
        )
        return self._release(ready)

    def _is_copy(self, record: Record) -> bool:
        """A record this accumulator has already taken (a copy from an at-least-once write)."""
        group_id = record["group_id"]
        if group_id in self._closed or any(g[0]["group_id"] == group_id for g in self._complete):
            return True
        return any(m["rollout_id"] == record["rollout_id"] for m in self._open.get(group_id, []))

    def _release(self, groups: list[list[Record]]) -> list[Record]:
        self.released_groups += len(groups)
        self._closed.update(g[0]["group_id"] for g in groups)
        return [r for g in groups for r in comparable(g)]

    @property
    def closed_groups(self) -> list[str]:
        """Ids of the groups released or dropped, for a checkpoint (``restore_closed`` reads them)."""
        return sorted(self._closed)

    def restore_closed(self, group_ids: Iterable[str]) -> None:
        self._closed.update(group_ids)

    def flush(self) -> list[Record]:
        """The complete groups not yet released, as one (partial) step: the last step of a
        run whose generator has made all its groups. Open groups stay."""
        ready, self._complete = self._complete, []
        return self._release(ready)

    @property
    def groups_seen(self) -> int:
        """Complete groups received: released in steps, dropped, or waiting for a step."""
        return self.released_groups + self.dropped_groups + len(self._complete)

    def pending(self) -> list[Record]:
        """Records held back (open groups, then complete ones not yet released), e.g. to
        checkpoint them with the offsets and ``add`` them again after a restart."""
        return [r for g in self._open.values() for r in g] + [
            r for g in self._complete for r in g
        ]

    @property
    def pending_records(self) -> int:
        return sum(map(len, self._open.values())) + sum(map(len, self._complete))
