"""Faust's Kafka transport with one change: an ack counts only for a message an agent received.

A faust-streaming stream drops a message it fetched before a rebalance (its consumer
generation is older, or flow control was off) and acks it all the same (`Stream._py_aiter`
and its Cython twin), so the offset is committed though no agent ever saw the record. In the
scale-out test that lost the first two rollouts of a partition: committed past, never
evaluated, no feedback. The stream marks a message `tracked` when it hands it to an agent, so
here the ack of an untracked one is not recorded: its offset stays uncommitted, and the seek
to the committed offsets that ends every rebalance reads it again. A subclass, because the
transport's Consumer is the one place every ack passes; `App.transport` is Faust's own setter.
"""

from __future__ import annotations

from faust.transport.drivers.aiokafka import Consumer, Transport


class ReceivedOnlyAckConsumer(Consumer):
    def ack(self, message) -> bool:
        if not message.tracked:  # skipped by the stream, never processed: read it again
            return False
        return super().ack(message)


class ReceivedOnlyAckTransport(Transport):
    Consumer = ReceivedOnlyAckConsumer


def use_received_only_acks(app) -> None:
    """Give `app` (before it starts) the transport above."""
    app.transport = ReceivedOnlyAckTransport(app.conf.broker_consumer, app)
