"""A consumer's commit goes through a move of its group coordinator, is dropped when the consumer
lost its partitions (their records are read again), and fails on anything else."""

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
    assert commit_through_coordinator_moves(consumer, offsets) is True
    assert consumer.committed == [offsets] and consumer.errors == []


def test_a_commit_of_a_member_that_lost_its_partitions_is_dropped():
    evicted = FlakyConsumer(KafkaError.UNKNOWN_MEMBER_ID)
    assert commit_through_coordinator_moves(evicted, [TopicPartition("metrics", 0, 12)]) is False
    assert evicted.committed == []  # its records are read again by their owner


def test_a_commit_fails_at_once_on_another_error_and_after_its_deadline():
    refused = FlakyConsumer(KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._WAIT_COORD)
    with pytest.raises(KafkaException):
        commit_through_coordinator_moves(refused, [TopicPartition("metrics", 0, 12)])
    assert refused.committed == [] and len(refused.errors) == 1
    gone = FlakyConsumer(*[KafkaError._WAIT_COORD] * 3)
    with pytest.raises(KafkaException):
        commit_through_coordinator_moves(gone, [TopicPartition("metrics", 0, 12)], timeout_s=0)
    assert gone.committed == [] and len(gone.errors) == 2
