"""A consumer's commit goes through a move of its group coordinator, and fails on anything else."""

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from infra.platform import kafka_io
from infra.platform.kafka_io import commit_through_coordinator_moves


class FlakyConsumer:
    """Raises the given errors on its first commits, then takes the commit."""

    def __init__(self, *errors: int):
        self.errors = list(errors)
        self.committed: list[list[TopicPartition]] = []

    def commit(self, offsets, asynchronous):
        assert asynchronous is False
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        self.committed.append(offsets)


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(kafka_io.time, "sleep", lambda s: None)


def test_a_commit_waits_out_a_moving_coordinator():
    consumer = FlakyConsumer(KafkaError._WAIT_COORD, KafkaError.NOT_COORDINATOR)
    offsets = [TopicPartition("metrics", 0, 12)]
    commit_through_coordinator_moves(consumer, offsets)
    assert consumer.committed == [offsets] and consumer.errors == []


def test_a_commit_fails_at_once_on_another_error_and_after_its_deadline():
    fenced = FlakyConsumer(KafkaError.UNKNOWN_MEMBER_ID)
    with pytest.raises(KafkaException):
        commit_through_coordinator_moves(fenced, [TopicPartition("metrics", 0, 12)])
    assert fenced.committed == []
    gone = FlakyConsumer(*[KafkaError._WAIT_COORD] * 3)
    with pytest.raises(KafkaException):
        commit_through_coordinator_moves(gone, [TopicPartition("metrics", 0, 12)], timeout_s=0)
    assert gone.committed == [] and len(gone.errors) == 2
