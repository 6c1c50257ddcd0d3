"""Soak: feedback at full speed through the reshape worker for many minutes, with a planned
SIGKILL and a committed offset moved ahead of the stored state every cycle (so every restart
takes the agent's seek-back path, where aiokafka's fetcher once raised KeyError). Demands:
no unplanned worker death, no crash in the log, every advantage delivered.

Twenty minutes is long for the suite, so it runs only when asked:
    RESHAPER_SOAK_S=1200 bash infra/test.sh tests/streams/test_soak.py -s
"""

import os
import time

import pytest

from infra.platform.kafka_io import EventProducer
from streams.app import ensure_app_topics
from streams.reshaping.config import PRESETS_DIR, load_preset
from tests.streams.helpers import WorkerProcess, end_offsets, feedback, isolated_settings, read_all, unique
from tests.streams.test_crash import move_committed_offsets

SOAK_S = float(os.environ.get("RESHAPER_SOAK_S", "0"))
CYCLE_S = 60.0  # one planned kill per cycle
SIZE = 4
BACKLOG = 4000  # feedback events sent but not yet reshaped: the producer runs at the worker's speed

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.timeout(SOAK_S + 900),
              pytest.mark.skipif(not SOAK_S, reason="a soak of many minutes: set RESHAPER_SOAK_S to run it")]


def test_soak_no_worker_death_and_nothing_lost(kafka_bootstrap, kafka_admin, tmp_path):
    cfg = load_preset("full")
    settings = isolated_settings(agents=("reshape",), batch_max_events=50)
    app_id = unique("soak")
    ensure_app_topics(kafka_admin, app_id, cfg, settings)
    worker = WorkerProcess(tmp_path, app_id, PRESETS_DIR / "full.yaml", settings, kafka_bootstrap).start()
    out_topic = settings.topics.advantages(cfg.config_id)
    groups, unplanned, planned, cycle_start = 0, 0, 0, time.monotonic()
    start = time.monotonic()
    with EventProducer(kafka_bootstrap) as producer:
        while time.monotonic() - start < SOAK_S:
            for _ in range(50):  # 200 feedback events, then a look at the worker
                for i in range(SIZE):
                    fb = feedback(f"g{groups}", i, SIZE, [0.0, 0.5, 1.0, 0.25][(groups + i) % 4],
                                  pattern=f"p{groups % 7}", created_at_ms=1_700_000_000_000 + groups * 10)
                    producer.send(settings.topics.feedback, fb["group_id"], "Feedback", fb)
                groups += 1
            producer.flush()
            while (groups * SIZE - sum(end_offsets(kafka_bootstrap, out_topic, settings.partitions)) > BACKLOG
                   and worker.proc.poll() is None and time.monotonic() - start < SOAK_S):
                time.sleep(0.2)
            if worker.proc.poll() is not None:
                unplanned += 1
                print(f"unplanned worker exit {worker.proc.returncode}:\n{worker.log_tail()}")
                worker.start()
            if time.monotonic() - cycle_start > CYCLE_S:
                worker.kill()
                planned += 1
                move_committed_offsets(kafka_bootstrap, app_id, settings.topics.feedback, settings.partitions, 120)
                worker.start()
                cycle_start = time.monotonic()
    try:
        out = read_all(kafka_bootstrap, out_topic, groups * SIZE, timeout_s=600,
                       settle_s=3, proc=worker, distinct="rollout_id")
    finally:
        worker.stop()
    delivered = {a["rollout_id"] for a in out}
    log = worker.log.read_text(errors="replace")
    print(f"soak {SOAK_S:.0f} s: {groups * SIZE} feedback events, {planned} planned kills, "
          f"{unplanned} unplanned deaths, {len(delivered)} distinct advantages, "
          f"{log.count('re-reading')} seek-backs, {log.count('KeyError')} KeyErrors in the log")
    assert unplanned == 0
    assert "KeyError" not in log and "Traceback" not in log
    assert len(delivered) == groups * SIZE
