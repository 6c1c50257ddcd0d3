"""The end of a run: a component that dies while the run drains it is restarted, as during the
run, unless the run was interrupted (then what still runs is only drained)."""

from infra.compose import orchestrator as orchestrator_module
from infra.compose.orchestrator import Component, Orchestrator
from infra.compose.run_config import RunConfig


def crashing_once(tmp_path) -> Component:
    """A process that exits 3 at its first start and runs on at its second."""
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\nif [ -e {tmp_path}/started ]; then exec sleep 60; fi\n"
                    f"touch {tmp_path}/started\nexit 3\n")
    fake.chmod(0o755)
    worker = Component("worker", [], tmp_path / "worker.log", python=str(fake))
    worker.start({})
    worker.proc.wait(10)
    return worker


def drain(tmp_path, monkeypatch, worker: Component, env: dict | None) -> Orchestrator:
    orchestrator = Orchestrator(RunConfig(name="drain", runs_dir=tmp_path / "runs", model="tiny"))
    orchestrator.restarts = {"worker": 0}
    lags = iter([4, 0])  # records left at first, none once the restarted worker has read them
    monkeypatch.setattr(orchestrator_module, "group_lag", lambda *args: next(lags))
    orchestrator._drain("127.0.0.1:1", "group", ["rollouts"], [worker], env, lambda msg: None, timeout_s=30)
    return orchestrator


def test_a_worker_that_dies_while_drained_is_restarted(tmp_path, monkeypatch):
    worker = crashing_once(tmp_path)
    try:
        assert drain(tmp_path, monkeypatch, worker, env={}).restarts == {"worker": 1} and worker.alive()
    finally:
        worker.stop()


def test_after_an_interrupt_a_dead_worker_is_left_as_it_is(tmp_path, monkeypatch):
    worker = crashing_once(tmp_path)
    assert drain(tmp_path, monkeypatch, worker, env=None).restarts == {"worker": 0} and not worker.alive()
