"""The worker's transport commits at least once: a record a stream skipped or threw away in a
rebalance is read again, and no commit passes a record not processed yet."""

import asyncio

import pytest
from faust.types import TP
from faust.types.tuples import Message

from streams.app import create_app
from streams.reshaping.config import load_preset
from streams.settings import StreamSettings
from streams.transport import AtLeastOnceConsumer

SETTINGS = StreamSettings()
ROLLOUTS = SETTINGS.topics.rollouts


@pytest.fixture
def consumer(tmp_path, monkeypatch) -> AtLeastOnceConsumer:
    app = create_app("ack-test", load_preset("full"), "127.0.0.1:1", tmp_path, SETTINGS)  # never started
    consumer = app.consumer
    assert isinstance(consumer, AtLeastOnceConsumer)
    # set when the agents subscribe: the agents' topics ack, changelogs do not
    monkeypatch.setattr(app.topics, "acks_enabled_for", lambda topic: not topic.endswith("-changelog"))
    return consumer


def message(offset: int, received: bool = True, partition: int = 0) -> Message:
    msg = Message(ROLLOUTS, partition, offset, 0.0, 0, {}, b"group", b"rollout", None)
    msg.tracked = received  # what the stream sets when it hands the message to an agent
    return msg


def test_an_ack_counts_only_for_a_message_an_agent_received(consumer):
    skipped, received = message(0, received=False), message(1)
    assert consumer.ack(skipped) is False and consumer.ack(received) is True
    assert [offsets for offsets in consumer._acked.values()] == [[1]]  # offset 0 stays to be read again


def test_nothing_is_committed_past_a_record_not_yet_processed(consumer):
    never, committed = TP(ROLLOUTS, 0), TP(ROLLOUTS, 1)
    consumer.log_start[never] = 0
    consumer.ack(message(1, partition=0))
    assert consumer._new_offset(never) is None  # never committed: offset 0 comes first
    consumer.ack(message(0, partition=0))
    assert consumer._new_offset(never) == 2
    consumer._committed_offset[committed] = 4  # the next offset to read
    consumer.ack(message(5, partition=1))
    assert consumer._new_offset(committed) is None  # Faust's own check lets one missing offset through
    consumer.ack(message(4, partition=1))
    assert consumer._new_offset(committed) == 6


def test_a_partition_never_committed_is_sought_to_its_log_start(consumer, monkeypatch):
    committed = {TP(ROLLOUTS, 0): None, TP(ROLLOUTS, 1): 0, TP(ROLLOUTS, 2): 5,
                 TP("ack-test-reshape-state-changelog", 0): None}
    sought: dict = {}

    async def seek_to_committed():  # aiokafka's: seeks only partitions committed above 0
        return committed

    async def earliest_offsets(*tps):
        return {tp: 3 for tp in tps}

    async def seek_wait(offsets):
        sought.update(offsets)

    monkeypatch.setattr(consumer, "seek_to_committed", seek_to_committed)
    monkeypatch.setattr(consumer, "assignment", lambda: set(committed))
    monkeypatch.setattr(consumer, "earliest_offsets", earliest_offsets)
    monkeypatch.setattr(consumer, "seek_wait", seek_wait)
    asyncio.run(consumer.perform_seek())
    assert sought == {TP(ROLLOUTS, 0): 3, TP(ROLLOUTS, 1): 3}  # not the committed one, nor a changelog
    assert consumer.next_to_read(TP(ROLLOUTS, 0)) == 3 and consumer.next_to_read(TP(ROLLOUTS, 2)) == 5
