"""Which task the generator repairs next: a difficulty curriculum driven by success rates.

Pure core: `Curriculum(cfg).pick(tasks_by_id, success_rates, rng)`. Tasks are split into
difficulty bands by `CurriculumConfig.band_edges`; the easiest band is always open, and
band b opens once the mean success rate of the bug patterns in the bands below it reaches
`unlock_threshold`. A pick first chooses an open band uniformly, then a task uniformly in
it, so a newly opened hard band gets its share at once instead of being drowned by a large
easy band.

Thin readers: `TopicFollower` reads topics from their start on a unique consumer group and
keeps following; `TaskFeed` turns the `tasks` and `metrics` topics into the two inputs of
`pick` (train split only; the latest `success_rate/<pattern>` value wins).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import bisect
import random
import uuid
from typing import Any, Iterable

from confluent_kafka import TopicPartition
from pydantic import BaseModel, ConfigDict, Field, field_validator

from infra.platform.kafka_io import ConsumedEvent, EventConsumer
from infra.platform.topics import Topics

SUCCESS_PREFIX = "success_rate/"
TRAIN_SPLIT = "train"


class NoTasksError(LookupError):
    """`pick` was asked to choose from an empty task set."""


class CurriculumConfig(BaseModel):
    """Knobs of the difficulty curriculum."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    band_edges: list[float] = Field(
        [0.4, 0.6, 0.8],
        description="Increasing difficulty cut points in (0, 1); n edges make n + 1 bands, "
        "band b holding edges[b-1] <= difficulty < edges[b].",
    )
    unlock_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="Mean per-pattern success of the open bands that opens the next band."
    )
    unseen_success: float = Field(
        0.0, ge=0.0, le=1.0, description="Success rate assumed for a pattern no metric has reported yet."
    )

    @field_validator("band_edges")
    @classmethod
    def _increasing_inside_unit_interval(cls, edges: list[float]) -> list[float]:
        if any(not 0.0 < e < 1.0 for e in edges) or any(a >= b for a, b in zip(edges, edges[1:])):
            raise ValueError(f"band_edges must increase strictly inside (0, 1), got {edges}")
        return edges


class Curriculum:
    """Easy bug patterns first; harder difficulty bands open as the policy's success grows."""

    def __init__(self, cfg: CurriculumConfig = CurriculumConfig()):
        self.cfg = cfg

    def band_of(self, difficulty: float) -> int:
        return bisect.bisect_right(self.cfg.band_edges, difficulty)

    def bands(self, tasks_by_id: dict[str, dict]) -> list[list[dict]]:
        """Tasks per band (sorted by task id, so a seeded pick never depends on dict order)."""
        bands: list[list[dict]] = [[] for _ in range(len(self.cfg.band_edges) + 1)]
        for task_id in sorted(tasks_by_id):
            task = tasks_by_id[task_id]
            bands[self.band_of(task["difficulty"])].append(task)
        return bands

    def success_of(self, tasks: Iterable[dict], success_rates: dict[str, float]) -> float:
        """Mean success over the distinct bug patterns of `tasks`; 1.0 for none (nothing to learn)."""
        patterns = {t["bug_pattern"] for t in tasks}
        if not patterns:
            return 1.0
        return sum(success_rates.get(p, self.cfg.unseen_success) for p in patterns) / len(patterns)

    def open_bands(self, tasks_by_id: dict[str, dict], success_rates: dict[str, float]) -> list[list[dict]]:
        """The bands that may be picked from now: the easiest, and each one whose lower bands passed."""
        bands = self.bands(tasks_by_id)
        opened, below = [bands[0]], list(bands[0])
        for band in bands[1:]:
            if self.success_of(below, success_rates) < self.cfg.unlock_threshold:
                break
            opened.append(band)
            below.extend(band)
        return [band for band in opened if band]

    def pick(self, tasks_by_id: dict[str, dict], success_rates: dict[str, float], rng: random.Random) -> dict:
        """One task: an open band chosen uniformly by `rng`, then a task in it uniformly."""
        if not tasks_by_id:
            raise NoTasksError("no tasks to pick from")
        band = rng.choice(self.open_bands(tasks_by_id, success_rates))
        return rng.choice(band)


def success_rates_from(values: dict[str, float]) -> dict[str, float]:
    """{pattern: rate} from a Metric's values (keys `success_rate/<pattern>`; others ignored)."""
    return {k[len(SUCCESS_PREFIX) :]: float(v) for k, v in values.items() if k.startswith(SUCCESS_PREFIX)}


class TopicFollower:
    """Reads `topics` from their beginning on a fresh consumer group and keeps following.

    It never commits: every run rebuilds its view from the log, which is the source of
    truth. `caught_up()` says whether everything that was in the topics when the follower
    started has been read, so a service can wait for the full picture before acting.
    """

    def __init__(self, topics: list[str], bootstrap: str | None = None, name: str = "generator"):
        self.consumer = EventConsumer(topics, f"{name}-{uuid.uuid4().hex}", bootstrap)
        self._ends = self._end_offsets(topics)

    def _end_offsets(self, topics: list[str]) -> dict[tuple[str, int], int]:
        raw = self.consumer.raw
        metadata = raw.list_topics(timeout=10).topics
        ends: dict[tuple[str, int], int] = {}
        for topic in topics:
            if topic not in metadata or metadata[topic].error is not None:
                continue  # a topic that does not exist yet has nothing to catch up on
            for partition in metadata[topic].partitions:
                low, high = raw.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                if high > low:
                    ends[(topic, partition)] = high
        return ends

    def poll(self, timeout_s: float = 0.0, max_records: int = 500) -> list[ConsumedEvent]:
        return self.consumer.poll_batch(max_records, timeout_s)

    def caught_up(self) -> bool:
        if not self._ends:
            return True
        positions = self.consumer.raw.position([TopicPartition(t, p) for t, p in self._ends])
        done = all(tp.offset >= self._ends[(tp.topic, tp.partition)] for tp in positions)
        if done:
            self._ends = {}  # once caught up, always caught up
        return done

    def close(self) -> None:
        self.consumer.close()


class FollowedFeed(ABC):
    """State folded from followed topics: subclasses set `self.follower` and define `apply`."""

    follower: "TopicFollower"

    def poll(self, timeout_s: float = 0.0) -> int:
        """Read what has arrived; returns how many events were applied."""
        events = self.follower.poll(timeout_s)
        for event in events:
            self.apply(event.topic, event.payload, event.record)
        return len(events)

    @abstractmethod
    def apply(self, topic: str, payload: str, record: dict[str, Any]) -> None:
        """Fold one event into the state."""


class TaskFeed(FollowedFeed):
    """The train tasks (by id) and the latest per-pattern success rates, kept current."""

    def __init__(self, topics: Topics, bootstrap: str | None = None):
        self.tasks_topic, self.metrics_topic = topics.tasks, topics.metrics
        self.follower = TopicFollower([topics.tasks, topics.metrics], bootstrap, name="generator-tasks")
        self.tasks_by_id: dict[str, dict] = {}
        self.success_rates: dict[str, float] = {}

    def apply(self, topic: str, payload: str, record: dict[str, Any]) -> None:
        if topic == self.tasks_topic and payload == "Task":
            if record["split"] == TRAIN_SPLIT:
                self.tasks_by_id[record["task_id"]] = record
            else:  # a task re-published into another split leaves the training pool
                self.tasks_by_id.pop(record["task_id"], None)
        elif topic == self.metrics_topic and payload == "Metric":
            self.success_rates.update(success_rates_from(record["values"]))

    def caught_up(self) -> bool:
        return self.follower.caught_up()

    def close(self) -> None:
        self.follower.close()
