"""ci.yaml end to end: both arms trained through the real broker, evaluated as each finishes, the
per-run results written and sealed, the tables rebuilt from them alone; a second call finds
every run complete and trains nothing."""

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from infra.compose.experiment import ExperimentConfig, real_steps, run_experiment, write_report
from infra.compose.experiment_plan import Unit, folder_manifest_intact

CI = Path(__file__).resolve().parents[2] / "producers" / "evaluation" / "presets" / "ci.yaml"


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_ci_experiment_end_to_end(tmp_path):
    cfg = ExperimentConfig.from_yaml(CI)
    run = dict(cfg.run)
    if os.environ.get("RESHAPER_BOOTSTRAP"):
        run["bootstrap"] = os.environ["RESHAPER_BOOTSTRAP"]
    # a fresh name: topics are shared on a broker, and each run's advantage topic is named after it
    cfg = cfg.model_copy(update={"out_dir": tmp_path, "name": f"ci-{uuid.uuid4().hex[:6]}", "run": run})
    results = run_experiment(cfg, progress=False)

    assert {r["arm"] for r in results["rows"]} == {"base", "raw", "full"}
    for row in results["rows"]:
        assert row["seeds"] in (0, 1) and (row["mean"] is None or 0.0 <= row["mean"] <= 1.0)
    assert "| raw | validation |" in (cfg.dir / "results.md").read_text()
    assert (cfg.dir / "curves.png").read_bytes()[:4] == b"\x89PNG"
    for arm in ("raw", "full"):
        folder = cfg.unit_dir(Unit(arm, 0))
        assert folder_manifest_intact(folder)
        report = json.loads((folder / "eval" / "validation.json").read_text())
        assert report["policy_version"] >= 1 and report["adapter"]
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["rollouts"]["generated"] >= summary["rollouts"]["trained"] > 0
        assert {r["config_name"] for r in json.loads((folder / "replay.json").read_text())} == {"raw", "full"}
        assert len(json.loads((folder / "audit.json").read_text())["top_samples"]) <= 5
        assert (folder / "curve.csv").read_text().startswith("policy_version,")

    # the run folders gone (another machine with the repository only): nothing is trained again,
    # and the tables come back byte for byte
    written = {n: (cfg.dir / n).read_bytes() for n in ("results.json", "results.md")}
    shutil.rmtree(cfg.dir / "runs")
    steps = real_steps(cfg, progress=False)
    steps.train = lambda *args: pytest.fail(f"trained again: {args}")
    steps.evaluate = lambda *args: pytest.fail(f"evaluated again: {args}")
    run_experiment(cfg, progress=False, steps=steps)
    write_report(cfg)
    assert {n: (cfg.dir / n).read_bytes() for n in written} == written
