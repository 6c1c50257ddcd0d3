"""The reshape agent driven record by record through in-memory ports, no broker: the
processing guarantee of streams/agents/reshape_agent.py, step by step."""

from __future__ import annotations

import asyncio
import json

import pytest

from infra.platform.topics import Topics
from schemas.codec import CODEC
from streams.agents.emit import encoded_output
from streams.agents.monitoring import WindowStats
from streams.agents.processor import new_reshaper
from streams.agents.reshape_agent import LogRecord, ReshapeAgent, pattern_sums
from streams.reshaping.config import load_preset
from streams.settings import StreamSettings
from tests.streams.helpers import feedback

CFG = load_preset("full")
TOPICS = Topics(prefix="unit.")
SETTINGS = StreamSettings(topics=TOPICS, group_timeout_ms=1_000, late_grace_ms=100)
TICKS = "unit-ticks"
ADVANTAGES = TOPICS.advantages(CFG.config_id)


class MemoryFeed:
    """The feedback log as lists of values per partition; rewinds are recorded."""

    def __init__(self):
        self.log: dict[int, list[bytes]] = {}
        self.rewinds: list[tuple[int, int]] = []
        self.start: dict[int, int] = {}  # partition -> log start, 0 unless set (retention)

    def append(self, partition: int, record: dict, log_ms: int) -> LogRecord:
        values = self.log.setdefault(partition, [])
        values.append(CODEC.encode("Feedback", record))
        return LogRecord(TOPICS.feedback, partition, len(values) - 1, log_ms, record["group_id"].encode(), values[-1])

    def highwater(self, partition: int) -> int | None:
        return len(self.log.get(partition, []))

    async def log_start(self, partition: int) -> int:
        return self.start.get(partition, 0)

    async def rewind(self, partition: int, offset: int) -> None:
        self.rewinds.append((partition, offset))


class MemoryEmitter:
    """Records in the order sent; ``delivered`` moves them to the broker's side, or fails
    while ``broken`` (a broker that never acknowledges: the worker dies there)."""

    def __init__(self):
        self.sent: list = []
        self.acknowledged: list = []
        self.broken = False

    async def send(self, record) -> None:
        self.sent.append(record)

    async def delivered(self) -> None:
        if self.broken:
            raise ConnectionError("not acknowledged")
        self.acknowledged += self.sent
        self.sent = []

    def on(self, topic: str) -> list:
        return [r for r in self.acknowledged if r.topic == topic]


class MemoryStore:
    def __init__(self):
        self.states: dict[int, bytes] = {}
        self.patterns: dict[tuple[str, float], WindowStats] = {}

    def load(self, partition: int) -> bytes | None:
        return self.states.get(partition)

    def save(self, partition, state, patterns) -> None:
        self.states[partition] = state
        for key, stats in patterns.items():
            self.patterns[key] = self.patterns.get(key, WindowStats()) + stats


def driver(store: MemoryStore | None = None, feed: MemoryFeed | None = None):
    feed, emitter, store = feed or MemoryFeed(), MemoryEmitter(), store or MemoryStore()
    agent = ReshapeAgent(CFG, SETTINGS, consumer="unit-app", ticks_topic=TICKS, feed=feed, emitter=emitter,
                         store=store)
    return agent, feed, emitter, store


def process(agent: ReshapeAgent, batch: list[LogRecord]) -> None:
    asyncio.run(agent.process(batch))


def group(name: str, passes: list[float], created_at_ms: int = 1_700_000_000_000) -> list[dict]:
    return [feedback(name, i, len(passes), p, created_at_ms=created_at_ms) for i, p in enumerate(passes)]


def tick(partition: int, log_ms: int) -> LogRecord:
    return LogRecord(TICKS, partition, 0, log_ms, None, b"")


def test_a_complete_group_gives_the_bytes_the_partition_reshaper_gives():
    agent, feed, emitter, store = driver()
    members = group("g", [0.0, 0.5, 1.0, 0.25])
    process(agent, [feed.append(0, fb, log_ms=10 + i) for i, fb in enumerate(members)])
    reference = new_reshaper(CFG, SETTINGS, 0)
    out = [reference.on_feedback(CODEC.decode(CODEC.encode("Feedback", fb)), i, 10 + i) for i, fb in enumerate(members)]
    expected = [rec for o in out for rec in encoded_output(o, TOPICS, CFG.config_id, "unit-app")]
    assert emitter.acknowledged == expected and len(emitter.on(ADVANTAGES)) == 4
    assert set(store.states) == {0}


def test_redelivered_feedback_emits_nothing_and_keeps_the_state():
    agent, feed, emitter, store = driver()
    records = [feed.append(0, fb, log_ms=i) for i, fb in enumerate(group("g", [0.0, 1.0]))]
    process(agent, records)
    state, sent = store.states[0], len(emitter.acknowledged)
    process(agent, records)  # a crash redelivers the batch
    assert len(emitter.acknowledged) == sent and store.states[0] == state


def test_no_state_is_written_for_output_that_was_not_delivered():
    agent, feed, emitter, store = driver()
    emitter.broken = True
    records = [feed.append(0, fb, log_ms=i) for i, fb in enumerate(group("g", [0.0, 1.0]))]
    with pytest.raises(ConnectionError):
        process(agent, records)
    assert store.states == {}
    # the restarted worker reshapes the same records again, into the same records
    restarted, _, emitter2, _ = driver(store=store, feed=feed)
    process(restarted, records)
    assert emitter2.acknowledged == emitter.sent


def test_a_record_beyond_the_stored_offset_rewinds_instead_of_skipping():
    agent, feed, emitter, store = driver()
    members = group("g", [0.0, 0.5, 1.0])
    records = [feed.append(0, fb, log_ms=i) for i, fb in enumerate(members)]
    process(agent, records[:1])
    process(agent, records[2:])  # offset 1 never arrived: the consumer ran ahead of the state
    assert feed.rewinds == [(0, 1)] and emitter.on(ADVANTAGES) == []
    process(agent, records[1:])
    assert len(emitter.on(ADVANTAGES)) == 3


def test_a_state_that_has_taken_in_nothing_starts_at_the_log_start():
    agent, feed, emitter, store = driver()
    members = group("g", [0.0, 0.5, 1.0])
    records = [feed.append(0, fb, log_ms=i) for i, fb in enumerate(members)]
    process(agent, records[1:])  # offset 0 was thrown away in a rebalance, the consumer moved on
    assert set(feed.rewinds) == {(0, 0)} and emitter.on(ADVANTAGES) == []  # each record beyond rewinds
    process(agent, records)
    assert len(emitter.on(ADVANTAGES)) == 3


def test_records_removed_from_the_log_are_not_waited_for():
    agent, feed, emitter, store = driver()
    members = group("g", [0.0, 0.5, 1.0])
    records = [feed.append(0, fb, log_ms=i) for i, fb in enumerate(members)]
    feed.start[0] = 1  # retention removed offset 0 before any worker read it
    process(agent, records[1:])
    assert feed.rewinds == [] and json.loads(store.states[0])["applied_offset"] == 2  # from the log start on


def test_a_tick_times_out_a_group_only_once_the_partition_is_caught_up():
    agent, feed, emitter, store = driver()
    first = feed.append(0, group("g", [1.0, 0.0])[0], log_ms=0)
    feed.append(0, group("h", [1.0, 0.0])[0], log_ms=1)  # written, not yet taken in
    process(agent, [first, tick(0, log_ms=5_000)])
    assert emitter.on(ADVANTAGES) == []  # what is missing may be in the backlog
    second = LogRecord(TOPICS.feedback, 0, 1, 1, b"h", feed.log[0][1])
    process(agent, [second, tick(0, log_ms=5_000)])
    timed_out = [CODEC.decode(r.value) for r in emitter.on(ADVANTAGES)]
    assert sorted(a["group_id"] for a in timed_out) == ["g", "h"]
    assert not any(a["group_complete"] for a in timed_out)


def test_an_undecodable_record_is_dead_lettered_with_its_position_and_taken_in():
    agent, feed, emitter, store = driver()
    feed.log[1] = [b"\x00not avro"]
    poison = LogRecord(TOPICS.feedback, 1, 0, 0, b"k", b"\x00not avro")
    process(agent, [poison])
    (letter,) = [CODEC.decode(r.value) for r in emitter.on(TOPICS.deadletter)]
    assert (letter["source_topic"], letter["source_partition"], letter["source_offset"]) == (TOPICS.feedback, 1, 0)
    assert letter["consumer"] == "unit-app" and letter["value"] == b"\x00not avro"
    process(agent, [poison])
    assert len(emitter.on(TOPICS.deadletter)) == 1  # taken in: a redelivery is skipped


def test_a_batch_of_two_partitions_stores_each_and_a_new_worker_continues_from_them():
    agent, feed, emitter, store = driver()
    a, b = group("a", [0.0, 1.0, 0.5]), group("b", [1.0, 0.5, 0.0])
    process(agent, [feed.append(0, a[0], 0), feed.append(1, b[0], 0), feed.append(0, a[1], 1)])
    assert set(store.states) == {0, 1}
    other, _, emitter2, _ = driver(store=store, feed=feed)  # the partitions move to another worker
    process(other, [feed.append(0, a[2], 2), feed.append(1, b[1], 1), feed.append(1, b[2], 2)])
    one_worker, feed1, emitter1, _ = driver()
    process(one_worker, [feed1.append(0, fb, i) for i, fb in enumerate(a)] +
            [feed1.append(1, fb, i) for i, fb in enumerate(b)])
    by_id = {r.value for r in emitter1.on(ADVANTAGES)}
    assert {r.value for r in emitter2.on(ADVANTAGES)} == by_id and len(by_id) == 6


def test_pattern_sums_add_groups_per_pattern_and_hop_step_and_for_all():
    t0 = 1_700_000_040_000  # a whole minute
    def advantages(name, pattern, at_ms):
        return [{"created_at_ms": at_ms, "bug_pattern": pattern, "reward_raw": 1.0, "reward_enhanced": 1.0,
                 "advantage": 0.0, "hack_flags": []} for _ in range(2)]
    sums = pattern_sums([advantages("a", "p", t0 + 5_000), advantages("b", "p", t0 + 59_000),
                         advantages("c", "q", t0 + 61_000)], hop_s=60.0)
    step = t0 / 1000.0
    assert sums["p", step].groups == 2 and sums["q", step + 60].groups == 1
    assert sums["*", step].groups == 2 and sums["*", step + 60].groups == 1 and len(sums) == 4
