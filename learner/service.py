"""The learner as a streaming service: advantage batches from Kafka in, policy versions out.

One process owns every partition of `advantages.<config_id>` (manual assignment, not a
consumer group), so the offsets it trains on are exactly the ones it checkpoints:

    seek to the checkpoint's offsets -> accumulate whole groups -> step -> publish policy
    -> checkpoint (weights, optimiser, RNG, offsets, groups still being accumulated, ids of
       the groups done, so a copy of one read later is set aside)
    -> commit offsets to Kafka (for lag monitoring only) -> metrics event

A restart after SIGKILL resumes from the last checkpoint: records consumed after it are
read again, records before it never are, and the partially accumulated groups come back
from the checkpoint, so no batch is skipped or trained twice.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Callable

import yaml
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from infra.platform.kafka_io import (
    EventProducer,
    commit_through_coordinator_moves,
    consumer_config,
    dead_letter_record,
)
from infra.platform.topics import Topics
from learner.batching import GroupAccumulator
from learner.config import DROPPED_METRIC, DROPPED_SOURCE, LearnerConfig
from learner.trainer import Learner, StepMetrics
from schemas.codec import CODEC, DecodeError

log = logging.getLogger(__name__)
PENDING_KEY = "pending_records"
DROPPED_KEY = "dropped_groups"
RELEASED_KEY = "released_groups"
CLOSED_KEY = "closed_groups"


def learner_group_id(topics: Topics, config_id: str) -> str:
    """The consumer group the learner commits its read positions under (lag monitoring, audits)."""
    return f"reshaper-learner-{topics.prefix}{config_id}"


class LearnRunConfig(BaseModel):
    """What `reshaper learn` runs: which advantage stream, which model, how long."""

    model_config = ConfigDict(extra="forbid")

    config_id: str = Field(
        ..., description="reshaping config id: the learner reads advantages.<config_id>"
    )
    model_dir: Path = Field(
        ..., description="local HF model directory of the base policy"
    )
    steps: int = Field(
        10,
        ge=1,
        description="stop after this many learner steps (optimiser steps / num_iterations)",
    )
    max_groups: int | None = Field(
        None, ge=1, description="the generator's budget of groups: once this many complete groups have arrived "
        "(trained, dropped by dynamic sampling, or waiting), the waiting ones are trained as a last step, "
        "possibly partial, and the learner stops; None: only `steps` ends it")
    idle_timeout_s: float | None = Field(
        None, description="stop when no advantage arrived for this long"
    )
    learner_id: str = Field("learner", description="names this learner in its metrics (labels.learner_id)")
    topics: Topics = Field(default_factory=Topics, description="the topic namespace it reads and writes")
    threads: int = Field(0, ge=0, description="torch CPU threads of the learner; 0 keeps torch's default")
    learner: LearnerConfig = Field(default_factory=LearnerConfig)


def load_learn_config(path: Path) -> LearnRunConfig:
    return LearnRunConfig.model_validate(yaml.safe_load(Path(path).read_text()) or {})


def batch_digest(records: list[dict]) -> str:
    """Identity of a step's batch: which rollouts it trained on."""
    return hashlib.sha256(
        "\n".join(sorted(r["rollout_id"] for r in records)).encode()
    ).hexdigest()[:16]


class LearnerService:
    def __init__(
        self,
        run: LearnRunConfig,
        bootstrap: str | None = None,
        learner: Learner | None = None,
    ):
        self.run_cfg = run
        self.topics = run.topics
        self.topic = run.topics.advantages(run.config_id)
        self.learner = learner or Learner(run.learner, run.model_dir)
        self.producer = EventProducer(bootstrap)
        self.consumer = Consumer(
            consumer_config(learner_group_id(run.topics, run.config_id), bootstrap)
        )
        self.accumulator = GroupAccumulator(run.learner.groups_per_step, run.learner.drop_uniform_groups)
        self.positions: dict[int, int] = {}  # partition -> next offset to read
        self.dead_lettered = 0
        self._resume_and_assign()

    # --- start-up ---------------------------------------------------------------------
    def _resume_and_assign(self) -> None:
        ckpt = self.learner.resume()
        saved = ckpt.offsets.get(self.topic, {}) if ckpt else {}
        self.accumulator.dropped_groups = int(ckpt.extra.get(DROPPED_KEY, 0)) if ckpt else 0
        self.accumulator.released_groups = int(ckpt.extra.get(RELEASED_KEY, 0)) if ckpt else 0
        self.accumulator.restore_closed(ckpt.extra.get(CLOSED_KEY, []) if ckpt else [])
        for record in (ckpt.extra.get(PENDING_KEY, []) if ckpt else []):
            self.accumulator.add(record)
        metadata = self.consumer.list_topics(self.topic, timeout=10).topics[self.topic]
        if metadata.error is not None:
            raise RuntimeError(f"topic {self.topic} is not readable: {metadata.error}")
        assignment = [
            TopicPartition(
                self.topic, p, int(saved.get(p, saved.get(str(p), OFFSET_BEGINNING)))
            )
            for p in sorted(metadata.partitions)
        ]
        self.consumer.assign(assignment)
        self.positions = {tp.partition: tp.offset for tp in assignment}
        log.info(
            "learner at step %d, version %d; reading %s from %s",
            self.learner.step_count,
            self.learner.policy_version,
            self.topic,
            self.positions,
        )

    # --- the loop ---------------------------------------------------------------------
    def _next_step_records(self, timeout_s: float) -> list[dict] | None:
        """Consume until one step's worth of whole groups is ready (or nothing arrives)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for msg in self.consumer.consume(200, 0.5):
                if msg.error():
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        log.warning("consume error: %s", msg.error())
                    continue
                self.positions[msg.partition()] = msg.offset() + 1
                try:
                    record = CODEC.decode(msg.value(), "Advantage")
                except DecodeError as exc:
                    self._dead_letter(msg, exc)
                    continue
                dropped = self.accumulator.dropped_groups
                ready = self.accumulator.add(record)
                if self.accumulator.dropped_groups != dropped:
                    self._announce_dropped()
                if ready is not None or self.budget_spent():
                    # records past this point in the same poll stay unread: rewind to them
                    self._rewind()
                    return ready
        return None

    def budget_spent(self) -> bool:
        """Every group the generator may make has arrived (`max_groups`)."""
        cap = self.run_cfg.max_groups
        return cap is not None and self.accumulator.groups_seen >= cap

    def _rewind(self) -> None:
        for partition, offset in self.positions.items():
            self.consumer.seek(TopicPartition(self.topic, partition, offset))

    def _dead_letter(self, msg, exc: Exception) -> None:
        self.dead_lettered += 1
        self.producer.send(self.topics.deadletter, msg.topic(), "DeadLetter", dead_letter_record(
            msg.topic(), msg.partition(), msg.offset(), "learner", msg.key(), msg.value(), exc))

    def _announce_dropped(self) -> None:
        """Tell the generator at once that a group was dropped, so its pacing bound grows by
        one and it samples a replacement (waiting for the next version could stall both)."""
        self.producer.send(self.topics.metrics, DROPPED_SOURCE, "Metric", {
            "source": DROPPED_SOURCE, "step": self.learner.step_count, "config_id": self.run_cfg.config_id,
            "values": {DROPPED_METRIC: float(self.accumulator.dropped_groups)},
            "labels": {"learner_id": self.run_cfg.learner_id}})

    def _pending(self) -> list[dict]:
        return self.accumulator.pending()

    def train_one_step(self, records: list[dict]) -> StepMetrics:
        metrics = self.learner.step(records)
        policy = self.learner.publish() if self.learner.due_for_publish() else None
        if policy is not None:
            self.producer.send(
                self.topics.policy,
                str(policy["version"]),
                "PolicyVersion",
                {**policy, "config_id": self.run_cfg.config_id},
            )
        self.learner.save_checkpoint(
            {self.topic: dict(self.positions)},
            extra={PENDING_KEY: self._pending(), DROPPED_KEY: self.accumulator.dropped_groups,
                   RELEASED_KEY: self.accumulator.released_groups, CLOSED_KEY: self.accumulator.closed_groups},
        )
        commit_through_coordinator_moves(
            self.consumer,
            [TopicPartition(self.topic, p, o) for p, o in self.positions.items() if o >= 0],
        )
        values = metrics.as_values()
        lags = metrics.lag_histogram
        values["lag_mean"] = (
            (sum(k * v for k, v in lags.items()) / sum(lags.values())) if lags else 0.0
        )
        values["dead_lettered"] = float(self.dead_lettered)
        values["groups_dropped_uniform"] = float(self.accumulator.dropped_groups)
        values["duplicate_records"] = float(self.accumulator.duplicate_records)
        self.producer.send(
            self.topics.metrics,
            "learner",
            "Metric",
            {
                "source": "learner",
                "step": metrics.step,
                "config_id": self.run_cfg.config_id,
                "values": values,
                "labels": {
                    "batch_digest": batch_digest(records),
                    "learner_id": self.run_cfg.learner_id,
                    "anchor": self.run_cfg.learner.anchor,
                    "is_level": self.run_cfg.learner.is_level,
                    "is_mode": self.run_cfg.learner.is_mode,
                    "is_cap": str(self.run_cfg.learner.is_cap),
                    "is_min": str(self.run_cfg.learner.is_min),
                    "is_max": str(self.run_cfg.learner.is_max),
                    "loss_type": self.run_cfg.learner.loss_type,
                    "beta_schedule": "adaptive" if self.run_cfg.learner.adap_kl_ctrl
                    else self.run_cfg.learner.beta_schedule,
                },
            },
        )
        self.producer.flush()
        return metrics

    def run(
        self, should_stop: Callable[[], bool] = lambda: False, progress: bool = True
    ) -> int:
        """Train until `steps` steps are done, the group budget is spent, `should_stop()`, or the idle
        timeout; returns steps done."""
        target = self.run_cfg.steps
        iterations = self.run_cfg.learner.num_iterations
        done = self.learner.step_count // iterations
        bar = tqdm(
            total=target,
            initial=min(done, target),
            desc="learner",
            unit="step",
            disable=not progress,
        )
        idle_since = time.monotonic()
        try:
            while done < target and not should_stop():
                if self.budget_spent():  # the generator is done: train what is left, then stop
                    last = self.accumulator.flush()
                    if last:
                        self.train_one_step(last)
                        done = self.learner.step_count // iterations
                        bar.update(1)
                    break
                records = self._next_step_records(timeout_s=2.0)
                if records is None:
                    idle = time.monotonic() - idle_since
                    if (
                        self.run_cfg.idle_timeout_s is not None
                        and idle > self.run_cfg.idle_timeout_s
                    ):
                        log.info("no advantages for %.0fs: stopping", idle)
                        break
                    continue
                idle_since = time.monotonic()
                m = self.train_one_step(records)
                done = self.learner.step_count // iterations
                bar.update(1)
                loss = m.loss.loss if m.loss else float("nan")
                bar.set_postfix(
                    version=self.learner.policy_version,
                    loss=f"{loss:.4f}",
                    stale=m.dropped_stale,
                    tok_s=f"{m.tokens_per_s:.0f}",
                )
        finally:
            bar.close()
        return done

    def close(self) -> None:
        try:
            self.producer.flush()
        finally:
            self.consumer.close()
