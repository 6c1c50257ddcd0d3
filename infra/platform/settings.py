"""Where reshaper keeps its local state, and how to reach the broker. Environment overrides
(`RESHAPER_HOME`, `RESHAPER_BOOTSTRAP`, `RESHAPER_KAFKA_PORT`) let tests and deployments
point elsewhere without code changes."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

REPO_ROOT = Path(__file__).resolve().parents[2]


def home_dir() -> Path:
    """Root of caches and local data (broker jars, broker data, chDB, models, runs)."""
    return Path(os.environ.get("RESHAPER_HOME", REPO_ROOT / ".cache")).resolve()


class BrokerSettings(BaseModel):
    """One Apache Kafka node in KRaft mode, broker and controller in one JVM: a single node
    that is its own quorum by default, or one node of a local cluster (`ClusterSettings`)."""

    kafka_version: str = Field("4.1.1", description="Apache Kafka version; must match infra/kafka/pom.xml")
    host: str = Field("127.0.0.1", description="loopback only: the embedded broker is never exposed")
    port: int = Field(default_factory=lambda: int(os.environ.get("RESHAPER_KAFKA_PORT", "9092")))
    controller_port: int | None = Field(None, description="default: port + 1")
    home: Path = Field(default_factory=lambda: home_dir() / "kafka")
    heap: str = Field("1g", description="JVM heap of the broker")
    start_timeout_s: float = 90.0
    node_id: int = Field(1, ge=1, description="KRaft node id")
    quorum_voters: str | None = Field(
        None, description="controller.quorum.voters of a cluster ('1@host:port,2@...'); None: a single node, "
        "its own quorum")
    replication_factor: int = Field(1, ge=1, description="replicas of the internal topics (consumer offsets, "
                                    "transactions) and of topics created without a factor")
    min_insync_replicas: int = Field(1, ge=1, description="replicas that must have a write before a producer "
                                     "asking for acks from all in-sync replicas hears it succeeded")

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def controller(self) -> int:
        return self.controller_port or self.port + 1

    @property
    def libs_dir(self) -> Path:
        return home_dir() / "jars" / f"kafka-{self.kafka_version}"

    @property
    def data_dir(self) -> Path:
        return self.home / f"data-{self.port}"


def replication_for(brokers: int) -> tuple[int, int]:
    """(replication factor, min.insync.replicas) of a cluster of `brokers` nodes: three
    replicas at most, and a write must reach two of them, so one node may fail without
    losing an acknowledged write or stopping producers."""
    factor = min(3, brokers)
    return factor, max(1, min(2, factor - 1))


class ClusterSettings(BaseModel):
    """A local Kafka cluster of `brokers` nodes on loopback. Each node runs broker and
    controller in one JVM (combined roles): three JVMs rather than six on a small machine,
    and every node a voter of the controller quorum, so any one may fail. Node i listens on
    port + 2i and its controller on the port above, so neighbouring nodes never collide."""

    brokers: int = Field(default_factory=lambda: int(os.environ.get("RESHAPER_KAFKA_BROKERS", "1")), ge=1, le=9,
                         description="nodes of the cluster; 1 is the embedded single broker")
    host: str = Field("127.0.0.1", description="loopback only")
    port: int = Field(default_factory=lambda: int(os.environ.get("RESHAPER_KAFKA_PORT", "9092")),
                      description="the first node's port")
    home: Path = Field(default_factory=lambda: home_dir() / "kafka")
    heap: str = Field("1g", description="JVM heap of each node")
    start_timeout_s: float = 120.0

    def nodes(self) -> list[BrokerSettings]:
        if self.brokers == 1:  # exactly the single broker, its own quorum
            return [BrokerSettings(host=self.host, port=self.port, home=self.home, heap=self.heap,
                                   start_timeout_s=self.start_timeout_s)]
        ports = [self.port + 2 * i for i in range(self.brokers)]
        voters = ",".join(f"{i + 1}@{self.host}:{p + 1}" for i, p in enumerate(ports))
        factor, min_isr = replication_for(self.brokers)
        return [BrokerSettings(host=self.host, port=p, home=self.home, heap=self.heap,
                               start_timeout_s=self.start_timeout_s, node_id=i + 1, quorum_voters=voters,
                               replication_factor=factor, min_insync_replicas=min_isr)
                for i, p in enumerate(ports)]

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes())


def topic_replication() -> tuple[int, int]:
    """(replication factor, min.insync.replicas) of the project's topics on the cluster the
    components talk to: `RESHAPER_KAFKA_BROKERS` nodes (1 unless set)."""
    return replication_for(int(os.environ.get("RESHAPER_KAFKA_BROKERS", "1")))


def bootstrap_servers() -> str:
    """The brokers every component talks to: `RESHAPER_BOOTSTRAP`, else the embedded ones
    (one node, or the local cluster `RESHAPER_KAFKA_BROKERS` asks for)."""
    return os.environ.get("RESHAPER_BOOTSTRAP") or ClusterSettings().bootstrap
