"""`reshaper run`: the whole loop on one machine, each component its own process.

    broker up -> model -> corpus -> tasks published -> worker, generator, learner, sink
    -> learner reaches its steps -> generator stopped -> worker drains -> sink drains
    -> report folder (configs, metrics CSV, plots, summary)

Components talk only through Kafka, exactly as on many machines; this module only starts
them with their config files, watches progress on the `metrics` topic, and shuts them
down in the order that loses nothing (each consumer's lag is zero before it stops).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from infra.platform.broker import InfraError, KafkaBroker, KafkaCluster, _port_open
from infra.compose.corpus_feed import CorpusFeed
from infra.compose.run_config import RunConfig
from infra.platform.settings import ClusterSettings, home_dir, replication_for
from infra.platform.topics import Topics, ensure_topics
from infra.platform.vllm_env import VllmEnvironmentMissing, generator_python
from infra.compose.run_history import generator_id
from producers.generator.share import GroupShare, generator_seed


def _stable_port(name: str) -> int:
    """A port in 20000-29998 derived from the run name, so a resumed run finds its broker."""
    return 20000 + 2 * (int(hashlib.sha256(name.encode()).hexdigest(), 16) % 5000)


def _free_ports(port: int, count: int) -> int:
    """`port` if it and the `count` - 1 ports above it (each node's controller, the other
    nodes) are free, else the next such run of ports."""
    for candidate in range(port, port + 200, 2):
        if not any(_port_open("127.0.0.1", p) for p in range(candidate, candidate + count)):
            return candidate
    raise RunError(f"no {count} free ports near {port} for the run's broker")


MAX_RESTARTS = 3


def instance_names(role: str, count: int) -> list[str]:
    """Component names of `count` processes of one role: the role itself when there is one (a
    run of one worker and one generator keeps its names, logs and config files), else
    `<role>-<i>` numbered from 0 like the generator ids."""
    return [role] if count == 1 else [f"{role}-{i}" for i in range(count)]


def resolve_model_dir(model: str) -> Path:
    """The local model directory of a run's `model` setting (smollm2, tiny or a HF directory)."""
    from producers.generator.model_store import build_tiny_model, cached_smollm2, init_model

    if model == "smollm2":
        return cached_smollm2()
    if model == "tiny":
        out = home_dir() / "models" / "tiny-llama"
        if not (out / "config.json").exists():
            build_tiny_model(out, tokenizer_from=cached_smollm2())
        return out
    return init_model(home_dir() / "models" / Path(model).name, source=model)


class RunError(RuntimeError):
    """The run cannot start or a component failed; the message says which and where its log is."""


def check_corpus(feed: CorpusFeed | None) -> None:
    """A failed background corpus build ends the run."""
    if feed is not None and feed.error is not None:
        raise RunError(f"the corpus build failed: {feed.error!r}")


@dataclass
class Component:
    name: str
    args: list[str]
    log: Path
    python: str = sys.executable  # the interpreter (a vLLM generator on a CPU has its own: vllm_env.py)
    proc: subprocess.Popen | None = None

    def start(self, env: dict) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "ab")
        self.proc = subprocess.Popen([self.python, "-m", "infra.compose.cli", *self.args], stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 60.0) -> int | None:
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def group_lag(bootstrap: str, group: str, topics: list[str]) -> int:
    """Records on `topics` not yet committed by consumer `group` (a group that never
    committed counts everything)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        lag = 0
        for topic in topics:
            meta = consumer.list_topics(topic, timeout=10).topics[topic]
            tps = [TopicPartition(topic, p) for p in meta.partitions]
            committed = consumer.committed(tps, timeout=10)
            for tp in committed:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)
                start = tp.offset if tp.offset >= 0 else low
                lag += max(high - start, 0)
        return lag
    finally:
        consumer.close()


@dataclass
class Progress:
    learner_step: int = 0
    policy_version: int = 0
    reward_raw: float = float("nan")
    reward_reshaped: float = float("nan")
    groups: int = 0  # of every generator
    lag: float = 0.0
    groups_by_generator: dict[str, int] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)

    def line(self) -> str:
        return (f"step {self.learner_step} | policy v{self.policy_version} | groups {self.groups} | "
                f"pass rate {self.reward_raw:.3f} | reshaped {self.reward_reshaped:+.3f} | lag {self.lag:.1f}")


class MetricsTail:
    """Follows the metrics topic from its current end, folding what it sees into a Progress."""

    def __init__(self, bootstrap: str, config_id: str, topics: Topics):
        from schemas.codec import CODEC

        self._codec = CODEC
        self.config_id = config_id
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"run-tail-{time.time_ns()}",
                                  "enable.auto.commit": False, "auto.offset.reset": "latest"})
        self.consumer.subscribe([topics.metrics])
        self.progress = Progress()

    def poll(self) -> Progress:
        for msg in self.consumer.consume(500, 0.2):
            if msg.error():
                continue
            try:
                m = self._codec.decode(msg.value())
            except Exception:
                continue
            v, p = m["values"], self.progress
            if m["source"] == "learner" and m["config_id"] == self.config_id:
                p.learner_step, p.policy_version = m["step"], int(v.get("policy_version", 0))
                p.lag = v.get("lag_mean", p.lag)
                p.history.append({"step": m["step"], **v})
            elif m["source"] == "generator":
                gid = m.get("labels", {}).get("generator_id", "")
                p.groups_by_generator[gid] = int(v.get("groups", p.groups_by_generator.get(gid, 0)))
                p.groups = sum(p.groups_by_generator.values())
            elif m["source"] == "reshape" and m["config_id"] in ("", self.config_id):
                p.reward_raw = v.get("reward_raw_mean", p.reward_raw)
                p.reward_reshaped = v.get("reward_reshaped_mean", p.reward_reshaped)
        return self.progress

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


class Orchestrator:
    def __init__(self, cfg: RunConfig, resume: bool = False):
        self.cfg = cfg
        self.dir = cfg.run_dir
        if self.dir.exists() and not resume and any(self.dir.iterdir()):
            raise RunError(f"{self.dir} exists: continue it with --resume, or pick another --name")
        if resume and not (self.dir / "run.yaml").exists():
            raise RunError(f"nothing to resume at {self.dir}")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.components: list[Component] = []  # every process of the run, supervised alike
        self.workers: list[Component] = []
        self.generators: list[Component] = []
        self.sink: Component | None = None
        self.learner: Component | None = None
        self.restarts: dict[str, int] = {}
        self.own_broker: KafkaCluster | None = None

    # --- preparation ------------------------------------------------------------------
    def bootstrap(self) -> str:
        if self.cfg.bootstrap:
            return self.cfg.bootstrap
        try:
            if self.cfg.broker == "shared":
                return KafkaBroker().up().bootstrap
            port = self.cfg.kafka_port or _free_ports(_stable_port(self.cfg.name), 2 * self.cfg.brokers)
            self.cfg = self.cfg.model_copy(update={"kafka_port": port})  # recorded, so --resume finds it
            self.own_broker = KafkaCluster(ClusterSettings(brokers=self.cfg.brokers, port=port,
                                                           home=self.dir / "kafka"))
            self.own_broker.up()
            return self.own_broker.bootstrap
        except InfraError as exc:
            raise RunError(str(exc)) from exc

    def generator_python(self) -> str:
        try:
            return generator_python(self.cfg.generator.backend)
        except VllmEnvironmentMissing as exc:
            raise RunError(str(exc)) from exc

    def model_dir(self) -> Path:
        return resolve_model_dir(self.cfg.model)

    def publish_corpus(self, bootstrap: str, say) -> CorpusFeed | None:
        """Put the corpus's train tasks on the tasks topic, once per run folder.

        A cached corpus is published at once. Otherwise it is built in the background while
        the loop starts: each chunk of tested tasks is published as it is ready, so the
        generator starts on the first ones (the same seed gives the same tasks either way).
        """
        from producers.corpus import cached_corpus, read_tasks

        marker = self.dir / ".tasks-published"
        if marker.exists():
            return None
        config = self.cfg.corpus_config()
        cached = cached_corpus(config)
        if cached is not None:
            from producers.task_publisher import publish_tasks

            tasks = [t for t in read_tasks(cached) if t["split"] == "train"]
            say(f"publishing {len(tasks)} train tasks from {cached.name}")
            publish_tasks(tasks, bootstrap, topics=self.cfg.topics, progress=False)
            marker.write_text(cached.name)
            return None
        say("corpus not cached: building it while the loop runs (tasks are published as they are tested)")
        return CorpusFeed(config, bootstrap, marker, say, topics=self.cfg.topics).start()

    def reshaping(self):
        from streams.reshaping.config import load_config, load_preset

        path = Path(self.cfg.reshaping)
        return load_config(path) if path.suffix in (".yaml", ".yml") else load_preset(self.cfg.reshaping)

    def write_configs(self, model_dir: Path, reshaping) -> dict[str, Path]:
        """Each component's config: its own section of the run config, with the shared knobs
        the run declares once filled in (infra/compose/run_config.py, SHARED)."""
        from learner.config import LearnerConfig
        from learner.service import LearnRunConfig
        from producers.generator.config import GeneratorConfig
        from producers.generator.service import GenerateRunConfig
        from streams.settings import StreamSettings

        c, d = self.cfg, self.dir
        files = {"run": d / "run.yaml", "reshaping": d / "reshaping.yaml", "learner": d / "learner.yaml",
                 "evaluator": d / "evaluator.yaml", "streams": d / "streams.json"}
        files["run"].write_text(yaml.safe_dump(c.recorded(), sort_keys=False))
        files["reshaping"].write_text(yaml.safe_dump(json.loads(reshaping.canonical_json()), sort_keys=False))
        shared = {"temperature": c.temperature, "seed": c.seed, "max_policy_lag": c.max_policy_lag}
        # a frontier rate counts after one group unless the run says otherwise
        frontier = c.frontier if "min_samples" in c.frontier.model_fields_set else \
            c.frontier.model_copy(update={"min_samples": min(c.group_size, 4)})
        # every generator gets the run's budgets and its share of them (producers/generator/share.py)
        for index, name in enumerate(instance_names("generator", c.generators)):
            generator = GeneratorConfig.model_validate({
                **c.generator.model_dump(), **shared, "seed": generator_seed(c.seed, index), "model_dir": model_dir,
                "group_size": c.group_size, "max_new_tokens": c.max_new_tokens, "threads": c.generator_threads})
            gen = GenerateRunConfig(generator=generator, curriculum=c.curriculum, frontier=frontier,
                                    config_id=reshaping.config_id, groups_per_step=c.groups_per_step,
                                    max_groups=c.max_generated_groups, generator_id=generator_id(c.name, index),
                                    share=GroupShare(index=index, of=c.generators), topics=c.topics)
            files[name] = d / f"{name}.yaml"
            files[name].write_text(yaml.safe_dump(gen.model_dump(mode="json"), sort_keys=False))
        # a budget of generated groups fixes the schedule's length: the steps it can give at most
        schedule_steps = c.steps if c.max_generated_groups is not None else max(c.steps, 10)
        learner = LearnerConfig.model_validate({
            **c.learner.model_dump(), **shared, "groups_per_step": c.groups_per_step,
            "max_completion_length": c.max_new_tokens, "max_steps": schedule_steps,
            "checkpoint_dir": d / "learner", "publish_dir": d / "policy"})
        learn = LearnRunConfig(config_id=reshaping.config_id, model_dir=model_dir, steps=c.steps,
                               max_groups=c.max_generated_groups,
                               learner_id=f"{c.name}-learner", threads=c.learner_threads, learner=learner,
                               topics=c.topics)
        files["learner"].write_text(yaml.safe_dump(learn.model_dump(mode="json"), sort_keys=False))
        files["evaluator"].write_text(yaml.safe_dump(c.evaluator.model_dump(mode="json"), sort_keys=False))
        # with several workers each table has a standby on another, restored from it when a worker dies
        files["streams"].write_text(StreamSettings(sandbox_workers=c.sandbox_workers, topics=c.topics,
                                                   standby_replicas=1 if c.workers > 1 else 0,
                                                   evaluator_config=c.evaluator).model_dump_json(indent=2))
        if c.heldout.enabled:
            from producers.evaluation.periodic import HeldoutRunConfig

            files["heldout"] = d / "heldout.yaml"
            heldout = HeldoutRunConfig(heldout=c.heldout, model_dir=model_dir, tasks=d / "heldout" / "tasks.jsonl",
                                       max_new_tokens=c.max_new_tokens, config_id=reshaping.config_id, seed=c.seed,
                                       out_dir=d / "heldout", topics=c.topics)
            files["heldout"].write_text(yaml.safe_dump(heldout.model_dump(mode="json"), sort_keys=False))
        return files

    def write_heldout_tasks(self, say) -> None:
        """The fixed set of the periodic evaluation, from the run's corpus (built now if it is not
        cached: the evaluator needs the set before the first version is announced)."""
        from producers.corpus import cached_build, read_tasks
        from producers.evaluation.converters import EVAL_SETS, select_tasks
        from producers.evaluation.taskfile import write_eval_tasks

        h, path = self.cfg.heldout, self.dir / "heldout" / "tasks.jsonl"
        if path.exists():
            return
        corpus = cached_build(self.cfg.corpus_config())
        tasks = select_tasks(list(read_tasks(corpus)), limit=h.max_tasks, **EVAL_SETS[h.eval_set])
        if not tasks:
            raise RunError(f"the corpus has no {h.eval_set!r} tasks for the held-out evaluation")
        write_eval_tasks(path, tasks)
        say(f"held-out evaluation: {len(tasks)} {h.eval_set} tasks, every {h.every} policy versions")

    # --- the run ----------------------------------------------------------------------
    def run(self, progress: bool = True) -> dict:
        try:
            return self._run(progress)
        finally:
            if self.own_broker is not None:  # the run's own broker lives as long as the run
                self.own_broker.down()

    def _run(self, progress: bool) -> dict:
        c = self.cfg
        t0, started_ms = time.monotonic(), int(time.time() * 1000)
        bootstrap = self.bootstrap()
        say = (lambda msg: print(f"[run] {msg}", flush=True)) if progress else (lambda msg: None)
        say(f"kafka at {bootstrap}")
        reshaping = self.reshaping()
        replication = replication_for(c.brokers)[0]
        ensure_topics(AdminClient({"bootstrap.servers": bootstrap}),
                      c.topics.event_specs(replication=replication)
                      + [c.topics.advantages_spec(reshaping.config_id, replication=replication)])
        model_dir = self.model_dir()
        say(f"policy model {model_dir}")
        files = self.write_configs(model_dir, reshaping)
        if c.heldout.enabled:
            self.write_heldout_tasks(say)
        corpus_feed = self.publish_corpus(bootstrap, say)

        env = {**os.environ, "RESHAPER_BOOTSTRAP": bootstrap, "RESHAPER_KAFKA_BROKERS": str(c.brokers),
               "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
        store = c.store or str(self.dir / "chdb")
        app_id = f"reshaper-{c.name}"
        sink_group = f"sink-{c.name}"
        logs = self.dir / "logs"
        # the workers share one app id, so one consumer group splits the partitions between them;
        # each has its own data dir (a table store is one process's): faust/ alone, faust/worker-<i> of several
        workers = []
        for name in instance_names("worker", c.workers):
            data_dir = self.dir / "faust" / (name if c.workers > 1 else "")
            data_dir.parent.mkdir(parents=True, exist_ok=True)  # Faust makes only the last folder
            workers.append(Component(name, ["worker", "--config", str(files["reshaping"]), "--settings",
                                            str(files["streams"]), "--app-id", app_id, "--data-dir", str(data_dir)],
                                     logs / f"{name}.log"))
        # the sink holds a chDB store for the whole run: it answers `reshaper dashboard` meanwhile
        sink = Component("sink", ["sink", "--store", store, "--group-id", sink_group,
                                  "--topic-prefix", c.topics.prefix, "--serve-queries"], logs / "sink.log")
        learner = Component("learner", ["learn", "--config", str(files["learner"])], logs / "learner.log")
        python = self.generator_python()
        generators = [Component(name, ["generate", "--config", str(files[name]), "--no-progress"], logs / f"{name}.log",
                                python=python) for name in instance_names("generator", c.generators)]
        self.workers, self.sink, self.learner, self.generators = workers, sink, learner, generators
        self.components = [*workers, sink, learner, *generators]
        if c.tensorboard:
            self.components.append(Component("tensorboard", [
                "tensorboard", "--logdir", str(self.dir / "tensorboard"), "--group-id", f"tensorboard-{c.name}",
                "--topic-prefix", c.topics.prefix], logs / "tensorboard.log"))
        if c.heldout.enabled:
            heldout = Component("heldout", ["heldout", "--config", str(files["heldout"])], logs / "heldout.log")
            self.components.append(heldout)
        self.restarts = {comp.name: 0 for comp in self.components}
        tail = MetricsTail(bootstrap, reshaping.config_id, c.topics)
        interrupted = finished = False
        try:
            for comp in self.components:
                comp.start(env)
                say(f"started {comp.name} (pid {comp.proc.pid}, log {comp.log})")
            last = ""
            # the run ends when the learner has made its steps and exits 0
            while learner.alive() or learner.proc.returncode != 0:
                check_corpus(corpus_feed)
                self._restart_crashed(self.components, env, say)
                line = tail.poll().line()
                if progress and line != last:
                    print(f"\r[run] {line}", end="", flush=True)
                    last = line
            if progress:
                print()
            # Nothing left to follow. A consumer left unpolled while the corpus build finishes
            # would overrun max.poll.interval.ms and be evicted from its group, with a warning.
            tail.close()
            if corpus_feed is not None:
                corpus_feed.finish(say)  # the next run then starts from the cache
                check_corpus(corpus_feed)
            finished = True
        except KeyboardInterrupt:
            interrupted = True
            say("interrupted: stopping cleanly (nothing is lost; continue with --resume)")
        finally:
            tail.close()
            # the drains restart a crashed worker or sink only after a finished run: after Ctrl-C
            # (which the components got too) or a failure, what still runs is drained and stopped
            self.shutdown(bootstrap, app_id, sink_group, env if finished else None, say)
        summary = self.report(store, reshaping.config_id, time.monotonic() - t0, interrupted, started_ms)
        if any(self.restarts.values()):
            say("restarted after a crash: " + ", ".join(f"{n} {k}x" for n, k in self.restarts.items() if k))
        say(f"report in {self.dir / 'report'}")
        return summary

    def _restart_crashed(self, comps: list[Component], env: dict, say) -> None:
        """Every component resumes from its committed offsets, changelogs and (the learner) its
        last checkpoint, so a crashed one is restarted (a few times) rather than ending the run;
        the report counts the restarts."""
        for comp in comps:
            if not comp.alive() and comp.proc.returncode not in (0, None):
                if self.restarts[comp.name] >= MAX_RESTARTS:
                    raise RunError(f"{comp.name} exited with {comp.proc.returncode} "
                                   f"{MAX_RESTARTS + 1} times:\n{comp.tail()}")
                self.restarts[comp.name] += 1
                say(f"{comp.name} exited with {comp.proc.returncode}; restarting (see {comp.log})")
                comp.start(env)

    def shutdown(self, bootstrap: str, app_id: str, sink_group: str, env: dict | None, say) -> None:
        core = {id(comp) for comp in (*self.workers, self.sink, self.learner, *self.generators)}
        extra = {comp.name: comp for comp in self.components if id(comp) not in core}
        for comp in (*self.generators, self.learner):
            comp.stop()
        if "heldout" in extra:  # the held-out evaluator: the versions still due, then stop
            self._wait_heldout(extra["heldout"], say)
            extra["heldout"].stop()
        # the workers finish what the generators produced; then the sink stores everything
        names = self.cfg.topics
        self._drain(bootstrap, app_id, [names.rollouts, names.feedback], self.workers, env, say, timeout_s=600)
        for worker in self.workers:
            worker.stop()
        stored = re.compile("|".join(names.subscription))
        topics = [t for t in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
                  if stored.fullmatch(t)]
        self._drain(bootstrap, sink_group, topics, [self.sink], env, say, timeout_s=600)
        self.sink.stop()
        if "tensorboard" in extra:  # every metric written, the last ones the workers'
            self._drain(bootstrap, f"tensorboard-{self.cfg.name}", [names.metrics], [extra["tensorboard"]], env, say,
                        timeout_s=120)
            extra["tensorboard"].stop()

    def _wait_heldout(self, comp: Component, say, timeout_s: float = 1800) -> None:
        """Until every published version that is due has its report (or the evaluator died)."""
        from producers.evaluation.periodic import due_versions, evaluated_versions
        from producers.evaluation.run_folder import final_policy

        published = range(1, final_policy(self.dir)[1] + 1)
        deadline = time.monotonic() + timeout_s
        while comp.alive() and time.monotonic() < deadline:
            due = due_versions(published, self.cfg.heldout.every, evaluated_versions(self.dir / "heldout"))
            if not due:
                return
            say(f"waiting for the held-out evaluation of versions {due}")
            time.sleep(5)

    def _drain(self, bootstrap, group, topics, comps: list[Component], env: dict | None, say,
               timeout_s: float) -> None:
        """Until consumer `group` (of `comps`, one or several processes) has committed everything
        on `topics`; one that crashes meanwhile is restarted as during the run (with `env`)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if env is not None:
                try:
                    self._restart_crashed(comps, env, say)
                except RunError as exc:  # the rest of the shutdown still runs
                    say(f"{exc}\nnot restarted again")
                    env = None
            if not any(comp.alive() for comp in comps):
                return  # every one of them exited (cleanly, or after Ctrl-C)
            lag = group_lag(bootstrap, group, topics)
            if lag == 0:
                return
            say(f"waiting for {', '.join(comp.name for comp in comps)} to catch up ({lag} records)")
            time.sleep(2)

    # --- report -----------------------------------------------------------------------
    def report(self, store_url: str, config_id: str, seconds: float, interrupted: bool, started_ms: int) -> dict:
        from infra.compose.report import write_run_report

        return write_run_report(self.dir / "report", store_url, config_id, self.dir, seconds, interrupted,
                                restarts=self.restarts, started_ms=started_ms)
