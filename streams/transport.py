"""Faust's Kafka transport with the changes that make its commits at-least-once.

Three faults of faust-streaming (with aiokafka) lose records in a rebalance, each seen in
the scale-out test:
- A stream drops a message it fetched before a rebalance (an older consumer generation, or
  flow control off) and acks it all the same (`Stream._py_aiter` and its Cython twin), so
  its offset is committed though no agent saw it. Here the ack of a message the stream did
  not hand to an agent (Faust marks those `tracked`) is not recorded.
- Records fetched while flow is off (table recovery) are thrown away and the consumer
  "seeks back to committed offsets" (`perform_seek`), but aiokafka's `seek_to_committed`
  seeks only a partition whose committed offset is above 0: one never committed stays
  where the fetcher left it, past the records thrown away. Here such a partition is sought
  to its log start, where `auto_offset_reset="earliest"` would have started it.
- The commit's check for a gap at the head of the acked offsets (`Consumer._new_offset`)
  is skipped while a partition has no committed offset, and lets one missing offset
  through after that. Here nothing is committed while the offset to read next (the
  committed one, or the log start) has not been acked.
A subclass, because the transport's Consumer is the one place every ack, seek and commit
passes; `App.transport` is Faust's own setter.
"""

from __future__ import annotations

from faust.transport.drivers.aiokafka import Consumer, Transport
from faust.types import TP


class AtLeastOnceConsumer(Consumer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log_start: dict[TP, int] = {}  # agent partitions never committed: where reading began

    def ack(self, message) -> bool:
        if not message.tracked:  # skipped by the stream, never processed: read it again
            return False
        return super().ack(message)

    async def perform_seek(self) -> None:
        await super().perform_seek()
        # only the agents' partitions: changelogs (acks off) are positioned by table recovery
        never_committed = [tp for tp in self.assignment()
                           if self.app.topics.acks_enabled_for(tp.topic) and not self._committed_offset.get(tp)]
        unknown = [tp for tp in never_committed if tp not in self.log_start]
        if unknown:  # asked once: Faust calls this in a loop while flow is off
            self.log_start.update({TP(tp.topic, tp.partition): offset
                                   for tp, offset in (await self.earliest_offsets(*unknown)).items()})
        if never_committed:
            await self.seek_wait({tp: self.log_start[tp] for tp in never_committed})

    def next_to_read(self, tp: TP) -> int | None:
        """The offset a commit must start from: the committed one, else the log start."""
        return self._committed_offset.get(tp) or self.log_start.get(tp)

    def _new_offset(self, tp: TP) -> int | None:
        acked, start = self._acked[tp], self.next_to_read(tp)
        # with known gaps (transaction markers, compaction) Faust's own bookkeeping decides
        if acked and start is not None and not self._gap[tp] and min(acked) > start:
            return None  # the record at `start` is not processed yet: commit nothing past it
        return super()._new_offset(tp)


class AtLeastOnceTransport(Transport):
    Consumer = AtLeastOnceConsumer


def use_at_least_once_transport(app) -> None:
    """Give `app` (before it starts) the transport above."""
    app.transport = AtLeastOnceTransport(app.conf.broker_consumer, app)
