"""The dashboard's typed configuration, and what a run folder tells it."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from infra.platform.topics import Topics


class DashboardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    store: str = Field(description="chDB folder or ClickHouse server URL holding the run's history")
    host: str = Field("127.0.0.1", description="address the page is served on; loopback keeps it local")
    port: int = Field(8050, ge=0, le=65535, description="port of the page; 0 picks a free one")
    refresh_s: float = Field(10.0, gt=0, description="seconds between the page's reloads of its charts")
    window_s: int = Field(60, gt=0, description="seconds per time window in the time charts")
    sample_limit: int = Field(20, gt=0, le=500, description="samples the browser shows per kind")
    bootstrap: str | None = Field(None, description="Kafka the verdicts are published to; None: reviewing is off")
    topics: Topics = Field(default_factory=Topics, description="the run's topic namespace (reviews topic name)")
    query_timeout_s: float = Field(30.0, gt=0, description="longest wait for the process serving the queries")


def local_bootstrap() -> str:
    """The machine's local broker, as ``reshaper infra up`` starts it."""
    return f"127.0.0.1:{os.environ.get('RESHAPER_KAFKA_PORT', '9092')}"


def config_for_run(run_dir: Path, **overrides) -> DashboardConfig:
    """The dashboard of a run folder: its store, its broker and its topic namespace, as its
    run.yaml recorded them (a run's own broker listens on the recorded ``kafka_port``)."""
    recorded = yaml.safe_load((run_dir / "run.yaml").read_text()) or {}
    if recorded.get("bootstrap"):
        bootstrap = recorded["bootstrap"]
    elif recorded.get("broker", "own") == "own" and recorded.get("kafka_port"):
        bootstrap = f"127.0.0.1:{recorded['kafka_port']}"
    else:
        bootstrap = local_bootstrap()
    values = {"store": recorded.get("store") or str(run_dir / "chdb"), "bootstrap": bootstrap,
              "topics": Topics.model_validate(recorded.get("topics") or {})}
    return DashboardConfig(**{**values, **{k: v for k, v in overrides.items() if v is not None}})
