"""The report folder of a run: what it used, what it did, how it went."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

LEARNER_COLUMNS = ["step", "policy_version", "num_samples", "num_tokens", "dropped_stale", "lag_mean", "grad_norm",
                   "loss/loss", "loss/pg_loss", "loss/kl_ref", "kl_coef", "loss/clip_low_frac", "loss/clip_high_frac",
                   "loss/is_weight_mean", "loss/is_truncated_share", "loss/mismatch_abs_logp", "loss/mismatch_kl",
                   "loss/entropy", "tokens_per_s"]


def learner_reports(reports: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """The learner's step reports in step order, one per step it took: a step
    redone after a crash (the same step number, reported again) keeps its last report. A batch
    whose every record was stale trains nothing and reports the step count it left unchanged,
    so it keeps a row of its own after the step it followed and never stands in for that step."""
    kept: dict[tuple[int, bool], dict] = {}
    for step, values in reports:
        kept[(step, bool(values.get("num_samples", 0)))] = values
    return [(step, values) for (step, _), values in sorted(kept.items(), key=lambda kv: (kv[0][0], not kv[0][1]))]


def loop_throughput(started_ms: int, rollouts: int, groups: int, first_ms: int | None, last_ms: int | None,
                    tokens: int) -> dict:
    """How fast the loop made rollouts: the delay to the first one after the command started,
    and the steady rate after it (start-up excluded: from the first group to the last)."""
    if not rollouts or first_ms is None:
        return {"first_rollout_s": None, "rollouts_per_min": 0.0, "tokens_per_s": 0.0}
    first_rollout_s = round((first_ms - started_ms) / 1000, 1)
    if groups < 2:  # the first group marks the start: one group gives no rate
        return {"first_rollout_s": first_rollout_s, "rollouts_per_min": 0.0, "tokens_per_s": 0.0}
    span_s = max((last_ms - first_ms) / 1000, 1e-3)
    steady = rollouts - rollouts / groups
    return {"first_rollout_s": first_rollout_s, "rollouts_per_min": round(steady * 60 / span_s, 2),
            "tokens_per_s": round(tokens * (steady / rollouts) / span_s, 1)}


def write_run_report(report_dir: Path, store_url: str, config_id: str, run_dir: Path, seconds: float,
                     interrupted: bool, restarts: dict[str, int] | None = None,
                     started_ms: int | None = None) -> dict:
    from consumers.store import open_store

    report_dir.mkdir(parents=True, exist_ok=True)
    generators = sorted(p.name for p in run_dir.glob("generator*.yaml"))  # generator.yaml, or one per generator
    for name in ("run.yaml", "reshaping.yaml", *generators, "learner.yaml", "evaluator.yaml", "streams.json"):
        if (run_dir / name).exists():
            shutil.copy(run_dir / name, report_dir / name)
    with open_store(store_url) as store:
        counts = {t: store.query(f"SELECT count() FROM {t} FINAL").rows[0][0]
                  for t in ("tasks", "rollouts", "feedback", "advantages", "policy", "metrics", "dead_letters")}
        learner = store.query(
            "SELECT step, values FROM metrics FINAL WHERE source = 'learner' AND config_id = {c:String} "
            "ORDER BY event_time", {"c": config_id}).rows
        by_version = store.query(
            "SELECT policy_version, count(), avg(reward_raw), avg(reward_enhanced), avg(advantage) "
            "FROM advantages FINAL WHERE config_id = {c:String} GROUP BY policy_version ORDER BY policy_version",
            {"c": config_id}).rows
        published = store.query("SELECT max(version) FROM policy FINAL WHERE config_id = {c:String}",
                                {"c": config_id}).rows[0][0]
        made = store.query(
            "SELECT count(), uniqExact(group_id), toUnixTimestamp64Milli(min(event_time)), "
            "toUnixTimestamp64Milli(max(event_time)), sum(length(completion_token_ids)) FROM rollouts FINAL").rows[0]
        by_generator = store.query("SELECT generator_id, count() FROM rollouts FINAL GROUP BY generator_id "
                                   "ORDER BY generator_id").rows
        drift = _drift_reports(store, config_id, report_dir)
    reports = learner_reports(learner)
    rows = [{k: values.get(k, "") for k in LEARNER_COLUMNS if k != "step"} | {"step": step}
            for step, values in reports]
    with open(report_dir / "learner_metrics.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=LEARNER_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    _plot_learner(report_dir / "learner.png", rows)
    summary = {
        "config_id": config_id, "seconds": round(seconds, 1), "interrupted": interrupted,
        "restarts": dict(restarts or {}),  # component -> times restarted after a crash
        "learner_steps": max((step for step, _ in reports), default=0),
        "policy_version": int(published or 0),  # the newest version the learner published
        "rows": counts,
        # the compute (every rollout sampled) beside what the learner trained on: dynamic
        # sampling drops uniform groups, stale records are dropped too
        "rollouts": {"generated": int(made[0]), "groups_generated": int(made[1]),
                     "trained": int(sum(v.get("num_samples", 0) for _, v in reports)),
                     "groups_dropped_uniform": int(max((v.get("groups_dropped_uniform", 0)
                                                        for _, v in reports), default=0)),
                     "by_generator": {gid: int(n) for gid, n in by_generator}},
        "by_policy_version": [{"policy_version": v, "rollouts": n, "pass_rate": round(raw, 4),
                               "reward_enhanced": round(enh, 4), "advantage_mean": round(adv, 4)}
                              for v, n, raw, enh, adv in by_version],
        "throughput": loop_throughput(started_ms or 0, int(made[0]), int(made[1]),
                                      int(made[2]) if made[0] else None, int(made[3]) if made[0] else None,
                                      int(made[4] or 0)),
        "drift_reports": drift,
    }
    if (run_dir / "heldout").is_dir():  # held-out success while training, per evaluated version
        from producers.evaluation.periodic import heldout_curve_csv

        (report_dir / "heldout.csv").write_text(heldout_curve_csv(run_dir / "heldout"))
    (report_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: summary[k] for k in ("learner_steps", "policy_version", "rollouts", "seconds", "restarts",
                                              "throughput")},
                     indent=2))
    return summary


def _drift_reports(store, config_id: str, report_dir: Path) -> list[str]:
    import io

    from rich.console import Console

    from consumers.drift.cli import drift_names
    from consumers.drift.report import run_drift

    written, quiet = [], Console(file=io.StringIO())
    for name in drift_names():
        if name == "config_compare":
            continue  # needs two configs: `reshaper drift config_compare --config A --config-b B`
        try:
            rep = run_drift(store, name, config=config_id, out_dir=report_dir, console=quiet)
        except Exception as exc:  # a report that fails must not lose the run's other results
            (report_dir / f"{name}.error.txt").write_text(f"{type(exc).__name__}: {exc}")
            continue
        if rep.png_path:
            written.append(Path(rep.png_path).name)
    return written


def _plot_learner(path: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    steps = [r["step"] for r in rows]
    for ax, keys, title in ((axes[0], ["loss/loss", "loss/pg_loss"], "loss"),
                            (axes[1], ["loss/kl_ref", "kl_coef", "loss/clip_high_frac", "loss/clip_low_frac"],
                             "KL (gaps: not measured) and clipping"),
                            (axes[2], ["loss/is_weight_mean", "lag_mean"], "off-policy: weights and lag")):
        for key in keys:
            ys = [r.get(key) if r.get(key) != "" else None for r in rows]
            ax.plot(steps, ys, marker="o", label=key)
        ax.set_title(title)
        ax.set_xlabel("learner step")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
