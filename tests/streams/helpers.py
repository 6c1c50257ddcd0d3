"""Shared pieces of the stream tests: feedback records, a worker subprocess, topic readers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from infra.platform.topics import Topics
from schemas.codec import CODEC
from streams.settings import StreamSettings
from tests import factories

REPO = Path(__file__).resolve().parents[2]


def feedback(group_id: str, index: int, size: int, passed: float, *, pattern: str = "off_by_one",
             created_at_ms: int = 1_700_000_000_000, distance: float = 0.2, style: str = "clean",
             hacks: list[str] | None = None, fixed: bool = False) -> dict:
    """A complete Feedback record for one rollout of a group."""
    return factories.feedback(
        event_id=uuid.uuid4().hex, created_at_ms=created_at_ms, rollout_id=f"{group_id}-r{index}", group_id=group_id,
        task_id=f"task-{group_id}", bug_pattern=pattern, sample_index=index, group_size=size, policy_version=3,
        evaluator_version="test", tests_passed=round(passed * 4), pass_fraction_runs=[passed],
        error_kind="none" if passed == 1 else "wrong_answer", runtime_ms=1.0, tree_edit_distance=distance,
        tree_edit_distance_raw=2, style_class=style, hack_flags=hacks or [], cyclomatic_complexity=1,
        fixed_pattern=pattern if fixed else "", behaviour_logprobs=[-0.5, -0.25])


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def isolated_settings(**overrides) -> StreamSettings:
    """Settings with topics of their own, so parallel tests never see each other's data."""
    tag = uuid.uuid4().hex[:8]
    base = dict(topics=Topics(prefix=f"test-{tag}."), partitions=2, commit_interval_s=0.2,
                group_timeout_ms=60_000, late_grace_ms=500, tick_interval_s=0.5)
    base.update(overrides)
    return StreamSettings(**base)


class WorkerProcess:
    """``python -m streams.cli worker`` in a subprocess, killable like a crashed worker."""

    def __init__(self, tmp: Path, app_id: str, config: Path, settings: StreamSettings, bootstrap: str):
        self.settings_file = tmp / f"{app_id}-settings.json"
        self.settings_file.write_text(settings.model_dump_json())
        self.log = tmp / f"{app_id}.log"
        self.args = [sys.executable, "-m", "streams.cli", "worker", "--config", str(config), "--app-id", app_id,
                     "--settings", str(self.settings_file), "--data-dir", str(tmp / f"{app_id}-data"),
                     "--bootstrap", bootstrap]
        self.proc: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(self.args, cwd=REPO, env=env, stdout=self.log.open("ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final commit."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


def read_all(bootstrap: str, topic: str, want: int, timeout_s: float = 90.0,
             settle_s: float = 1.0, proc: WorkerProcess | None = None, positions: bool = False,
             stop_at_want: bool = False, distinct: str | None = None) -> list:
    """Decoded records of ``topic`` (read_committed) once ``want`` arrived and no more came for
    ``settle_s``, or when ``timeout_s`` passed. ``positions``: (partition, offset, record) tuples.
    ``distinct``: count records with distinct values of this field (re-emissions count once)."""
    seen: set = set()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    records: list[dict] = []
    deadline = time.monotonic() + timeout_s
    last_new = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msgs = consumer.consume(1000, 0.5)
            got = [m for m in msgs if m.error() is None]
            decoded = [CODEC.decode(m.value()) for m in got]
            records += [(m.partition(), m.offset(), r) for m, r in zip(got, decoded)] if positions else decoded
            if distinct:
                seen.update(r[distinct] for r in decoded)
            have = len(seen) if distinct else len(records)
            if stop_at_want and have >= want:
                break
            if got:
                last_new = time.monotonic()
            elif have >= want and time.monotonic() - last_new >= settle_s:
                break
            if proc is not None and proc.proc is not None and proc.proc.poll() is not None:
                raise AssertionError(f"worker exited early:\n{proc.log_tail()}")
    finally:
        consumer.close()
    return records


def end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("offsets")})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)]
    finally:
        consumer.close()


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path
