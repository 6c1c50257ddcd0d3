"""Throughput of the reshape agent against a pass-through Faust agent, and of the replay.

    RESHAPER_BOOTSTRAP=127.0.0.1:39092 python benchmarks/reshape_throughput.py [--agent-events N] [--replay-events M]
        [--skip-agents] [--replay-processes 1 2] [--replay-repeats 2]

Both agents run as worker subprocesses on the same freshly filled feedback topic; the
rate is measured on the output topic's end offsets from the first output to the last,
so worker start-up is left out. The replay runs over one filled topic with each process
count in turn, each into a namespace of its own, timed from the start of its processes to its last
delivered record (process start-up included); the first count is the baseline.
"""

from __future__ import annotations

import argparse
import uuid
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from infra.platform.kafka_io import EventProducer  # noqa: E402
from infra.platform.settings import bootstrap_servers  # noqa: E402
from infra.platform.topics import KEEP_FOREVER, TopicSpec, ensure_topics  # noqa: E402
from streams.replay import ReplayOptions, run_replay  # noqa: E402
from streams.reshaping.config import PRESETS_DIR, load_preset  # noqa: E402
from infra.platform.topics import Topics  # noqa: E402
from schemas.records import build_record  # noqa: E402
from streams.settings import StreamSettings  # noqa: E402

SIZE = 4


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def bench_settings(**overrides) -> StreamSettings:
    """Stream settings with topics of this run's own."""
    return StreamSettings(topics=Topics(prefix=unique("bench") + "."), partitions=2, **overrides)


def feedback(group: str, index: int, passed: float, pattern: str, created_at_ms: int, tokens: int = 0) -> dict:
    """One rollout's feedback of a group of SIZE: four tests, ``passed`` of them passing;
    ``tokens``: prompt and completion of that many tokens each (0: a few, as in unit tests)."""
    return build_record(
        "Feedback", event_id=uuid.uuid4().hex, created_at_ms=created_at_ms, rollout_id=f"{group}-r{index}",
        group_id=group, task_id=f"task-{group}", bug_pattern=pattern, difficulty=0.5, sample_index=index,
        group_size=SIZE, policy_version=3, evaluator_version="bench", repeats=1, tests_total=4,
        tests_passed=round(passed * 4), pass_fraction_runs=[passed], test_outcomes=[],
        error_kind="none" if passed == 1 else "wrong_answer", runtime_ms=1.0, tree_edit_distance=0.2,
        style_class="clean", prompt_token_ids=list(range(1, tokens + 1)) if tokens else [1, 2, 3],
        completion_token_ids=list(range(100, 100 + tokens)) if tokens else [4, 5],
        behaviour_logprobs=[-0.5 - 1e-3 * k for k in range(tokens)] if tokens else [-0.5, -0.25], finish_reason="stop")


def create(admin, name: str, partitions: int) -> None:
    for attempt in range(5):  # a just-created topic can take a moment to show in metadata
        try:
            return ensure_topics(admin, [TopicSpec(name, partitions, 1, KEEP_FOREVER)])
        except Exception:
            time.sleep(1)
    raise RuntimeError(f"could not create {name}")


def fill(bootstrap: str, topic: str, events: int, tokens: int = 0) -> None:
    passes = [0.0, 0.25, 1.0, 0.5, 0.75]
    with EventProducer(bootstrap) as producer:
        for g in range(events // SIZE):
            for i in range(SIZE):
                fb = feedback(f"g{g}", i, passes[(g + i) % 5], pattern=f"p{g % 5}", tokens=tokens,
                              created_at_ms=1_700_000_000_000 + g)
                producer.send(topic, fb["group_id"], "Feedback", fb)


def rate_on(bootstrap: str, topic: str, partitions: int, events: int, timeout_s: float = 600) -> float:
    """Records/s written to ``topic`` from its first record until it holds ``events``."""
    first_t = None
    deadline = time.monotonic() + timeout_s
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("offsets")})  # reads end offsets only
    try:
        while time.monotonic() < deadline:
            n = sum(probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions))
            if n and first_t is None:
                first_t, first_n = time.monotonic(), n
            if n >= events:
                return (n - first_n) / max(time.monotonic() - first_t, 1e-9)
            time.sleep(0.2)
    finally:
        probe.close()
    raise TimeoutError(f"{topic}: fewer than {events} records after {timeout_s}s")


def passthrough_worker(bootstrap: str, source: str, sink: str, app_id: str, data_dir: str) -> None:
    """A Faust agent that forwards every feedback value unchanged: the baseline."""
    import faust

    app = faust.App(app_id, broker=f"kafka://{bootstrap}", store="memory://", datadir=data_dir,
                    key_serializer="raw", value_serializer="raw", web_enabled=False,
                    consumer_auto_offset_reset="earliest")
    out = app.topic(sink)

    @app.agent(app.topic(source))
    async def forward(stream):
        async for event in stream.events():
            await out.send(key=event.key, value=event.value)

    faust.Worker(app, loglevel="warning", quiet=True).execute_from_commandline()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent-events", type=int, default=20_000)
    parser.add_argument("--replay-events", type=int, default=100_000)
    parser.add_argument("--replay-processes", type=int, nargs="+", default=[1, 2],
                        help="replay with each of these process counts; the first is the baseline of the ratios")
    parser.add_argument("--replay-repeats", type=int, default=2, help="replays of each count; the best is kept")
    parser.add_argument("--tokens", type=int, default=0,
                        help="replayed records carry prompts and completions of this many tokens (0: a few)")
    parser.add_argument("--skip-agents", action="store_true", help="measure the replay only")
    args = parser.parse_args()
    bootstrap = bootstrap_servers()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    cfg = load_preset("full")
    tmp = Path(tempfile.mkdtemp(prefix="reshape-bench-"))

    if not args.skip_agents:
        agents(bootstrap, admin, cfg, tmp, args.agent_events)
    replay_settings = bench_settings()
    create(admin, replay_settings.topics.feedback, replay_settings.partitions)
    fill(bootstrap, replay_settings.topics.feedback, args.replay_events, args.tokens)
    best: dict[int, float] = {}
    for attempt in range(args.replay_repeats):  # the counts take turns, so drift in the machine hits each alike
        for processes in args.replay_processes:
            prefix = f"{replay_settings.topics.prefix}{attempt}-{processes}."
            into = replay_settings.topics.model_copy(update={"prefix": prefix})
            report = run_replay(cfg, ReplayOptions(bootstrap=bootstrap, settings=replay_settings, into=into,
                                                   processes=processes))
            best[processes] = max(best.get(processes, 0.0), report.rate)
    base = args.replay_processes[0]
    for processes, rate in best.items():
        versus = (f"x{rate / best[base]:.2f} of {base} process{'es' if base > 1 else ''} (goal x1.6 for 2)"
                  if processes != base else f"{rate / processes / 20_000:.2f} of the 20k goal per process")
        print(f"replay, {processes} process{'es' if processes > 1 else ''}: {args.replay_events:,} feedback events at "
              f"{rate:,.0f} events/s, {versus}")


def agents(bootstrap: str, admin, cfg, tmp: Path, events: int) -> None:
    """The reshape agent against the pass-through agent, on the same feedback topic."""
    # imported here, not at the top: each replay process re-imports this module, and Faust
    # would add a second to every process's start
    from streams.app import ensure_app_topics

    settings = bench_settings(agents=("reshape",))
    app_id = unique("bench")
    ensure_app_topics(admin, app_id, cfg, settings)
    sink = unique("bench-passthrough")
    create(admin, sink, settings.partitions)
    fill(bootstrap, settings.topics.feedback, events)

    base = subprocess.Popen([sys.executable, __file__, "passthrough", bootstrap, settings.topics.feedback, sink,
                             unique("bench-pt"), str(tmp / "pt")], cwd=REPO)
    try:
        pt_rate = rate_on(bootstrap, sink, settings.partitions, events)
    finally:
        base.terminate()
        base.wait(30)
    settings_file = tmp / "settings.json"
    settings_file.write_text(settings.model_dump_json())
    worker = subprocess.Popen([sys.executable, "-m", "streams.cli", "worker", "--config", str(PRESETS_DIR / "full.yaml"),
                               "--app-id", app_id, "--settings", str(settings_file), "--data-dir", str(tmp / "data"),
                               "--bootstrap", bootstrap], cwd=REPO, stdout=(tmp / "worker.log").open("ab"),
                              stderr=subprocess.STDOUT)
    try:
        rs_rate = rate_on(bootstrap, settings.topics.advantages(cfg.config_id), settings.partitions, events)
    finally:
        worker.terminate()
        worker.wait(60)
    print(f"pass-through agent: {pt_rate:,.0f} events/s")
    print(f"reshape agent:      {rs_rate:,.0f} events/s  (slowdown x{pt_rate / rs_rate:.2f}, goal <= 1.3)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "passthrough":
        sys.argv, rest = sys.argv[:1] + ["worker"], sys.argv[2:]
        passthrough_worker(*rest)
    else:
        main()
