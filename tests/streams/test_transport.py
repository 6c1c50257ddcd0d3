"""Only a message an agent received is acked: one a stream skipped in a rebalance is read again."""

from faust.types.tuples import Message

from streams.app import create_app
from streams.reshaping.config import load_preset
from streams.settings import StreamSettings
from streams.transport import ReceivedOnlyAckConsumer


def test_an_ack_counts_only_for_a_message_an_agent_received(tmp_path, monkeypatch):
    settings = StreamSettings()
    app = create_app("ack-test", load_preset("full"), "127.0.0.1:1", tmp_path, settings)  # never started
    consumer = app.consumer
    assert isinstance(consumer, ReceivedOnlyAckConsumer)
    monkeypatch.setattr(app.topics, "acks_enabled_for", lambda topic: True)  # set when the agents subscribe

    def message(offset: int, received: bool) -> Message:
        msg = Message(settings.topics.rollouts, 0, offset, 0.0, 0, {}, b"group", b"rollout", None)
        msg.tracked = received  # what the stream sets when it hands the message to an agent
        return msg

    skipped, received = message(0, received=False), message(1, received=True)
    assert consumer.ack(skipped) is False and consumer.ack(received) is True
    assert [offsets for offsets in consumer._acked.values()] == [[1]]  # offset 0 stays to be read again
