"""Fetch, format, start and stop real Apache Kafka nodes (KRaft): one broker, or a local cluster.

The jars come from Maven Central through `mvn dependency:copy-dependencies` on
`infra/kafka/pom.xml` (no other download), into a cache folder kept across runs. The
broker runs detached; a pid file and a probe of the port make `up` idempotent.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from infra.platform.settings import REPO_ROOT, BrokerSettings, ClusterSettings

POM = REPO_ROOT / "infra" / "kafka" / "pom.xml"
LOG4J_CONFIG = REPO_ROOT / "infra" / "kafka" / "log4j2.properties"


class InfraError(RuntimeError):
    """The local infrastructure cannot be brought up; the message says what to do."""


@dataclass
class BrokerStatus:
    running: bool
    bootstrap: str
    pid: int | None
    detail: str


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise InfraError(f"`{tool}` not found on PATH: {hint}")
    return path


def _port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still "exists": dead, unless another of its threads still runs. A JVM
    # in its shutdown hooks (a broker's controlled shutdown) has a zombie main thread, and its port.
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:  # reaped meanwhile
        return False
    for thread in threads:
        try:
            stat = Path(f"/proc/{pid}/task/{thread}/stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":  # the state follows the name, which may hold spaces
            return True
    return False


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes in url-safe base64 without padding. One that starts
    with '-' would read as an option to the storage tool, so draw again."""
    cluster = "-"
    while cluster.startswith("-"):
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    return cluster


def stop_nodes(nodes: list[KafkaBroker], timeout_s: float = 30.0) -> bool:
    """SIGTERM every running node at once, SIGKILL what is left after `timeout_s`. All at once:
    stopped one by one, the last nodes of a cluster wait in their controlled shutdown for a
    controller quorum that is already gone. Returns False if none was running."""
    running = [pid for node in nodes if (pid := node._read_pid()) is not None]
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):  # SIGKILL: gone, ports and all
        alive = [pid for pid in running if _pid_alive(pid)]
        for pid in alive:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(_pid_alive(pid) for pid in alive):
            time.sleep(0.05)
    for node in nodes:  # only files naming a dead process: a node started meanwhile keeps its own
        pid = node._pid_in_file()
        if pid is not None and not _pid_alive(pid):
            node.pid_file.unlink(missing_ok=True)
    return bool(running)


class KafkaBroker:
    def __init__(self, settings: BrokerSettings | None = None):
        self.settings = settings or BrokerSettings()
        self.pid_file = self.settings.home / f"broker-{self.settings.port}.pid"
        self.log_dir = self.settings.home / f"logs-{self.settings.port}"

    # --- jars -------------------------------------------------------------------------
    def fetch(self) -> Path:
        """Resolve the broker's runtime classpath from Maven Central into the cache (once)."""
        libs = self.settings.libs_dir
        marker = libs / ".complete"
        if marker.exists():
            return libs
        _require("java", "install a Java 17+ runtime (Debian: openjdk-17-jre-headless)")
        mvn = _require("mvn", "install Apache Maven (Debian: maven); it resolves the Kafka jars")
        tmp = libs.with_name(libs.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
               f"-Dkafka.version={self.settings.kafka_version}",
               f"-DoutputDirectory={tmp}", "-DincludeScope=runtime"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise InfraError(f"mvn could not resolve Kafka {self.settings.kafka_version}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        (tmp / ".complete").write_text(self.settings.kafka_version)
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
        return libs

    def _java(self, main: str, *args: str, **kw) -> subprocess.CompletedProcess:
        java = _require("java", "install a Java 17+ runtime")
        cp = str(self.fetch() / "*")
        return subprocess.run([java, "-cp", cp, main, *args], capture_output=True, text=True, **kw)

    # --- storage ----------------------------------------------------------------------
    def _properties(self) -> Path:
        s = self.settings
        s.home.mkdir(parents=True, exist_ok=True)
        path = s.home / f"server-{s.port}.properties"
        if s.quorum_voters:  # a node of a cluster: a static quorum of every node's controller
            quorum = f"controller.quorum.voters={s.quorum_voters}"
        else:  # one node, its own quorum
            quorum = f"controller.quorum.bootstrap.servers={s.host}:{s.controller}"
        rf, isr = s.replication_factor, s.min_insync_replicas
        path.write_text("\n".join([
            "process.roles=broker,controller",
            f"node.id={s.node_id}",
            quorum,
            f"listeners=PLAINTEXT://{s.host}:{s.port},CONTROLLER://{s.host}:{s.controller}",
            f"advertised.listeners=PLAINTEXT://{s.host}:{s.port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={s.data_dir}",
            # the internal topics are replicated as the cluster allows (one node: one replica)
            f"offsets.topic.replication.factor={rf}",
            f"transaction.state.log.replication.factor={rf}",
            f"transaction.state.log.min.isr={isr}",
            f"share.coordinator.state.topic.replication.factor={rf}",
            f"share.coordinator.state.topic.min.isr={isr}",
            f"default.replication.factor={rf}",
            f"min.insync.replicas={isr}",
            "group.initial.rebalance.delay.ms=0",
            # topics are created as code (infra/platform/topics.py), never implicitly by a typo
            "auto.create.topics.enable=false",
            "num.partitions=4",
            "message.max.bytes=10485760",
            "",
        ]))
        return path

    def _format(self, props: Path, cluster_id: str | None = None) -> None:
        if (self.settings.data_dir / "meta.properties").exists():
            return
        cluster = cluster_id or new_cluster_id()
        # a cluster's quorum is static (its voters are in the properties); one node bootstraps its own
        standalone = [] if self.settings.quorum_voters else ["--standalone"]
        proc = self._java("kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(props), *standalone)
        if proc.returncode != 0:
            raise InfraError(f"formatting KRaft storage failed:\n{proc.stdout}{proc.stderr}")

    # --- lifecycle --------------------------------------------------------------------
    def _pid_in_file(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _read_pid(self) -> int | None:
        pid = self._pid_in_file()
        return pid if pid is not None and _pid_alive(pid) else None

    def status(self) -> BrokerStatus:
        s = self.settings
        pid = self._read_pid()
        listening = _port_open(s.host, s.port)
        if pid and listening:
            return BrokerStatus(True, s.bootstrap, pid, "running")
        if pid:
            return BrokerStatus(False, s.bootstrap, pid, "starting (process alive, port not open yet)")
        if listening:
            return BrokerStatus(False, s.bootstrap, None, f"port {s.port} is taken by another process")
        return BrokerStatus(False, s.bootstrap, None, "stopped")

    def up(self) -> BrokerStatus:
        """Start the broker unless ours already runs; return once it answers metadata requests."""
        self.start()
        self.wait_ready()
        return self.status()

    def start(self, cluster_id: str | None = None) -> None:
        """Launch the node unless ours already runs (a cluster's nodes share `cluster_id`)."""
        s = self.settings
        if self.status().pid is not None:
            return
        if _port_open(s.host, s.port):
            raise InfraError(f"port {s.port} on {s.host} is taken by another process; "
                             f"stop it or set RESHAPER_KAFKA_PORT to a free port")
        if _port_open(s.host, s.controller):
            raise InfraError(f"controller port {s.controller} is taken by another process")
        self.fetch()
        props = self._properties()
        self._format(props, cluster_id)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        java = _require("java", "install a Java 17+ runtime")
        cmd = [java, f"-Xmx{s.heap}", f"-Xms{s.heap}", "-XX:+UseG1GC",
               f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", f"-Dkafka.logs.dir={self.log_dir}",
               "-cp", str(s.libs_dir / "*"), "kafka.Kafka", str(props)]
        with open(self.log_dir / "stdout.log", "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid_file.write_text(str(proc.pid))

    def wait_ready(self, brokers: int = 1, deadline: float | None = None) -> None:
        """Return once this node answers metadata naming at least `brokers` brokers."""
        from confluent_kafka.admin import AdminClient

        deadline = deadline or time.monotonic() + self.settings.start_timeout_s
        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap, "log_level": 0})
        while time.monotonic() < deadline:
            if self._read_pid() is None:
                raise InfraError(f"the broker exited during start-up; see {self.log_dir}/server.log")
            try:
                if len(admin.list_topics(timeout=2).brokers) >= brokers:
                    return
            except Exception:  # not answering yet
                pass
            time.sleep(0.3)
        raise InfraError(f"the broker did not answer within {self.settings.start_timeout_s}s; see {self.log_dir}")

    def kill(self) -> bool:
        """SIGKILL the node, as a crash would (its data stays); False if it was not running."""
        pid = self._read_pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGKILL)
        while _pid_alive(pid):
            time.sleep(0.05)
        return True

    def down(self, timeout_s: float = 30.0) -> bool:
        """Stop our broker (SIGTERM, then SIGKILL). Returns False if none was running."""
        return stop_nodes([self], timeout_s)

    def reset(self) -> None:
        """Stop and delete the broker's data (topics, offsets); the jars stay cached."""
        self.down()
        shutil.rmtree(self.settings.data_dir, ignore_errors=True)


class KafkaCluster:
    """The nodes of a local cluster (`ClusterSettings`), started together: a node of a static
    quorum cannot answer until a majority of the controllers is up, so every node is launched
    before any is waited on. One node is exactly `KafkaBroker`."""

    def __init__(self, settings: ClusterSettings | None = None):
        self.settings = settings or ClusterSettings()
        self.nodes = [KafkaBroker(s) for s in self.settings.nodes()]

    @property
    def bootstrap(self) -> str:
        return self.settings.bootstrap

    def _cluster_id(self) -> str:
        """One id for every node, kept beside their data so a restarted node formats alike."""
        path = self.settings.home / f"cluster-{self.settings.port}x{self.settings.brokers}.id"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new_cluster_id())
        return path.read_text().strip()

    def up(self) -> list[BrokerStatus]:
        """Start every node not yet running; return once each names all of them. A cluster that
        does not come up is not left half running: the nodes this call started are stopped."""
        cluster_id = self._cluster_id() if len(self.nodes) > 1 else None
        started = []
        try:
            for node in self.nodes:
                if node.status().pid is None:
                    started.append(node)
                node.start(cluster_id)
            deadline = time.monotonic() + self.settings.start_timeout_s
            for node in self.nodes:
                node.wait_ready(brokers=len(self.nodes), deadline=deadline)
        except InfraError:
            stop_nodes(started)
            raise
        return self.status()

    def start_node(self, index: int) -> BrokerStatus:
        """Start one node again (after `kill`); returns once the cluster names every node."""
        node = self.nodes[index]
        node.start(self._cluster_id() if len(self.nodes) > 1 else None)
        node.wait_ready(brokers=len(self.nodes))
        return node.status()

    def status(self) -> list[BrokerStatus]:
        return [node.status() for node in self.nodes]

    def busiest_leader(self, topics: list[str]) -> int:
        """The node id leading the most partitions of `topics` (a fault test kills that one)."""
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=10)
        leads: dict[int, int] = {}
        for topic in topics:
            for partition in metadata.topics[topic].partitions.values():
                leads[partition.leader] = leads.get(partition.leader, 0) + 1
        return max(sorted(leads), key=lambda node: leads[node])

    def down(self, timeout_s: float = 30.0) -> bool:
        """Stop every node; False if none was running."""
        return stop_nodes(self.nodes, timeout_s)

    def reset(self) -> None:
        self.down()
        for node in self.nodes:
            shutil.rmtree(node.settings.data_dir, ignore_errors=True)
        (self.settings.home / f"cluster-{self.settings.port}x{self.settings.brokers}.id").unlink(missing_ok=True)
