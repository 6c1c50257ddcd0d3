"""ci.yaml end to end: both arms trained through the real broker, evaluated, table and plots written."""

import json
import os
import uuid
from pathlib import Path

import pytest

from infra.compose.experiment import ExperimentConfig, run_experiment

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

    arms = {r["arm"] for r in results["rows"]}
    assert arms == {"base", "raw", "full"}
    for row in results["rows"]:
        assert row["seeds"] in (0, 1) and (row["mean"] is None or 0.0 <= row["mean"] <= 1.0)
    assert "| raw | validation |" in (cfg.dir / "results.md").read_text()
    assert (cfg.dir / "curves.png").read_bytes()[:4] == b"\x89PNG"
    replay = json.loads((cfg.dir / "replay.json").read_text())
    assert {r["config_name"] for r in replay} == {"raw", "full"}
    audit = json.loads((cfg.dir / "audit.json").read_text())
    assert {a["arm"] for a in audit} == {"raw", "full"} and all(len(a["top_samples"]) <= 5 for a in audit)
    for arm in ("raw", "full"):
        report = json.loads((cfg.dir / "eval" / f"{arm}-s0-validation.json").read_text())
        assert report["policy_version"] >= 1 and report["adapter"]
