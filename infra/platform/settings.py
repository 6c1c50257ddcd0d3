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
    """A single-node Apache Kafka broker in KRaft mode (combined broker + controller)."""

    kafka_version: str = Field("4.1.1", description="Apache Kafka version; must match infra/kafka/pom.xml")
    host: str = Field("127.0.0.1", description="loopback only: the embedded broker is never exposed")
    port: int = Field(default_factory=lambda: int(os.environ.get("RESHAPER_KAFKA_PORT", "9092")))
    controller_port: int | None = Field(None, description="default: port + 1")
    home: Path = Field(default_factory=lambda: home_dir() / "kafka")
    heap: str = Field("1g", description="JVM heap of the broker")
    start_timeout_s: float = 90.0

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


def bootstrap_servers() -> str:
    """The broker every component talks to: `RESHAPER_BOOTSTRAP`, else the embedded one."""
    return os.environ.get("RESHAPER_BOOTSTRAP") or BrokerSettings().bootstrap
