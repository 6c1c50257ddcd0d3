import pytest

from producers.evaluation.experiment import (ExperimentConfig, final_policy, results_markdown, results_table,
                                             run_reshaping_file)
from streams.reshaping.config import load_config, load_preset


def report(s1, pk):
    return {"overall": {"success_at_1": s1, "pass_at_k": {"1": pk / 2, "4": pk}, "mean_pass_fraction": s1,
                        "hacked_success_share": None}}


def test_results_table_over_seeds():
    reports = {("raw", 0, "validation"): report(0.1, 0.3), ("raw", 1, "validation"): report(0.3, 0.5),
               ("base", 0, "validation"): report(0.0, 0.2)}
    rows = {(r["arm"], r["metric"]): r for r in results_table(reports)}
    raw = rows["raw", "success_at_1"]
    # mean 0.2, sample std 0.1414, n 2: half width 12.706 * 0.1414 / sqrt(2) = 1.2706
    assert raw["mean"] == pytest.approx(0.2) and raw["ci95_half_width"] == pytest.approx(1.2706, rel=1e-3)
    assert rows["raw", "pass_at_k"]["mean"] == pytest.approx(0.4)  # the largest k
    assert rows["base", "success_at_1"]["ci95_half_width"] is None  # one seed
    assert rows["raw", "hacked_success_share"]["text"] == "-"
    md = results_markdown(results_table(reports))
    assert md.index("| base |") < md.index("| raw |") and "n=1" in md


def test_final_policy_is_newest(tmp_path):
    assert final_policy(tmp_path) == (None, 0)
    for v in (1, 12, 3):
        (tmp_path / "policy" / f"v-{v:08d}").mkdir(parents=True)
    path, version = final_policy(tmp_path)
    assert version == 12 and path.name == "v-00000012"


def test_run_reshaping_keeps_rules_with_run_name(tmp_path):
    cfg = ExperimentConfig(out_dir=tmp_path, name="exp", seeds=[0])
    path = run_reshaping_file(cfg, "raw", 0)
    tagged, raw = load_config(path), load_preset("raw")
    assert tagged.name == "raw.exp-raw-s0" and tagged.config_id != raw.config_id
    assert tagged.model_dump(exclude={"name"}) == raw.model_dump(exclude={"name"})
