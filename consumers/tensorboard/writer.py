"""`reshaper tensorboard`: follow a run's `metrics` topic and write each record as TensorBoard
scalars (`names.py` says which), so `tensorboard --logdir DIR` shows the run while it goes on.

The event files are written by torch's SummaryWriter: torch is a dependency already, and it
is the writer TensorBoard documents for PyTorch. Offsets are committed only after the
records' scalars are flushed to disk, so a crash repeats a few points and loses none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from consumers.tensorboard.names import run_name, scalars
from infra.platform.kafka_io import EventConsumer
from infra.platform.topics import Topics


class ScalarFiles:
    """Metric records into event files: one SummaryWriter per TensorBoard run (sub-folder)."""

    def __init__(self, logdir: Path):
        from torch.utils.tensorboard import SummaryWriter

        self._writer_type = SummaryWriter
        self.logdir = Path(logdir)
        self.writers: dict[str, object] = {}
        self.records = 0
        self.scalars = 0

    def write(self, record: dict) -> None:
        run = run_name(record)
        if run not in self.writers:
            self.writers[run] = self._writer_type(log_dir=str(self.logdir / run))
        writer = self.writers[run]
        walltime = record["created_at_ms"] / 1000
        for tag, value in scalars(record).items():
            writer.add_scalar(tag, value, global_step=int(record["step"]), walltime=walltime)
            self.scalars += 1
        self.records += 1

    def flush(self) -> None:
        for writer in self.writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


class MetricsToTensorBoard:
    """The metrics topic followed into `ScalarFiles`."""

    def __init__(self, logdir: Path, group_id: str, bootstrap: str | None = None, topics: Topics = Topics()):
        self.files = ScalarFiles(logdir)
        self.consumer = EventConsumer([topics.metrics], group_id, bootstrap, dead_letter_topic=topics.deadletter)

    def run(self, should_stop: Callable[[], bool] = lambda: False, idle_exit_s: float | None = None) -> int:
        """Write records until `should_stop` (or `idle_exit_s` without one); returns the count."""
        last = time.monotonic()
        while not should_stop():
            events = self.consumer.poll_batch(500, timeout_s=1.0)
            if not events:
                if idle_exit_s is not None and time.monotonic() - last > idle_exit_s:
                    break
                continue
            last = time.monotonic()
            for event in events:
                if event.payload == "Metric":
                    self.files.write(event.record)
            self.files.flush()
            self.consumer.commit(events)
        return self.files.records

    def close(self) -> None:
        self.files.close()
        self.consumer.close()


def tensorboard(logdir: Path = typer.Option(..., help="folder of the event files (one sub-folder per source)"),
                group_id: str = typer.Option("reshaper-tensorboard", help="consumer group"),
                topic_prefix: str = typer.Option("", help="the topic namespace (Topics.prefix)"),
                idle_exit: Optional[float] = typer.Option(None, help="exit after this many idle seconds "
                                                          "(default: run until stopped)")) -> None:
    """Write the metrics topic as TensorBoard scalars, under TRL's names where TRL has one."""
    import signal

    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    follower = MetricsToTensorBoard(logdir, group_id, topics=Topics(prefix=topic_prefix))
    try:
        follower.run(lambda: stopping["now"], idle_exit_s=idle_exit)
    except KeyboardInterrupt:
        pass
    finally:
        follower.close()
    typer.echo(f"wrote {follower.files.scalars} scalars of {follower.files.records} metric records under {logdir}")
