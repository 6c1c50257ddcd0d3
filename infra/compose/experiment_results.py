"""results.json and results.md of an experiment, from its committed per-run results alone.

Every input is a file under `<experiment>/results/<unit>/` (eval/<set>.json, summary.json,
curve.csv, replay.json, audit.json) plus the experiment's config; nothing reads a run
folder, a clock or a path of the machine, and the bootstrap is seeded, so the same results
folders give the same bytes on any machine.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from infra.compose.experiment_plan import BASE, Unit
from producers.evaluation.metrics import CandidateOutcome, compare_paired, holm_adjust, t_interval

HEADLINE = ("success_at_1", "pass_at_k", "mean_pass_fraction", "hacked_success_share",
            "mean_tree_edit_distance_success", "style_clean_share")


def unit_folder_name(unit: Unit, shared_base: bool) -> str:
    if unit.is_base:
        return BASE if shared_base else f"{BASE}-s{unit.seed}"
    return f"{unit.arm}-s{unit.seed}"


def load_reports(results_dir: Path, arms: list[str], seeds: list[int], sets: list[str],
                 shared_base: bool, with_base: bool) -> dict[tuple[str, int, str], dict]:
    """(arm, seed, set) -> evaluation report, for every report present. A base model
    evaluated once (shared_base) stands for the base of every seed: greedy decoding of the
    same model on the same tasks does not depend on the training seed."""
    reports: dict[tuple[str, int, str], dict] = {}
    names = ([BASE] if with_base else []) + list(arms)
    for arm in names:
        for seed in seeds:
            unit = Unit(arm, seed if not (arm == BASE and shared_base) else 0)
            folder = results_dir / unit_folder_name(unit, shared_base)
            for set_name in sets:
                path = folder / "eval" / f"{set_name}.json"
                if path.exists():
                    reports[arm, seed, set_name] = json.loads(path.read_text())
    return reports


def _headline(report: dict) -> dict[str, float | None]:
    overall = report["overall"]
    pass_k = overall.get("pass_at_k") or {}
    return {"success_at_1": overall.get("success_at_1"),
            "pass_at_k": pass_k[max(pass_k, key=int)] if pass_k else None,
            **{m: overall.get(m) for m in HEADLINE if m not in ("success_at_1", "pass_at_k")}}


def results_table(reports: dict[tuple[str, int, str], dict]) -> list[dict]:
    """One row per (arm, set, metric): mean ± 95% t-interval over seeds (a report standing for
    several seeds, as the shared base does, counts once)."""
    rows = []
    keys = sorted({(arm, s) for arm, _, s in reports}, key=lambda a: (a[0] != BASE, a))
    for arm, set_name in keys:
        distinct = {id(r): r for (a, _, s), r in sorted(reports.items(), key=lambda kv: kv[0])
                    if a == arm and s == set_name}
        per_seed = [_headline(r) for r in distinct.values()]
        for metric in HEADLINE:
            values = [h[metric] for h in per_seed if h[metric] is not None]
            iv = t_interval(values) if values else None
            rows.append({"arm": arm, "set": set_name, "metric": metric, "seeds": len(values),
                         "mean": iv.mean if iv else None, "ci95_half_width": iv.half_width if iv else None,
                         "text": str(iv) if iv else "-"})
    return rows


def results_markdown(rows: list[dict]) -> str:
    lines = ["| arm | set | " + " | ".join(HEADLINE) + " |", "|---|---|" + "---|" * len(HEADLINE)]
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        cells.setdefault((r["arm"], r["set"]), {})[r["metric"]] = r["text"]
    for (arm, set_name), by_metric in cells.items():
        lines.append(f"| {arm} | {set_name} | " + " | ".join(by_metric.get(m, "-") for m in HEADLINE) + " |")
    return "\n".join(lines) + ("\n\nmean ± half width of a 95% Student-t interval over seeds; "
                               "n=1: one seed, no interval.\n")


def _outcomes(reports: dict[tuple[str, int, str], dict], arm: str, set_name: str) -> list[CandidateOutcome]:
    """An arm's candidates on a set over every seed; a task of seed s pairs with the same task of seed s."""
    return [CandidateOutcome(**{**c, "task_id": f"s{seed}/{c['task_id']}", "hack_flags": tuple(c["hack_flags"])})
            for (a, seed, s), r in sorted(reports.items()) if a == arm and s == set_name
            for c in r["candidates"]]


def _comparison(reports, set_name: str, a: str, b: str, resamples: int) -> dict | None:
    oa, ob = _outcomes(reports, a, set_name), _outcomes(reports, b, set_name)
    if not oa or not ob:
        return None
    cmp = compare_paired(oa, ob, resamples=resamples)
    return {"set": set_name, "a": a, "b": b, "tasks": cmp["tasks"],
            **{key: None if cmp[key] is None else {"mean": cmp[key].mean, "low": cmp[key].low, "high": cmp[key].high}
               for key in ("greedy", "sample_pass_rate", "pass_fraction")},
            "mcnemar": {"only_a": cmp["mcnemar_greedy"].only_a, "only_b": cmp["mcnemar_greedy"].only_b,
                        "p_value": cmp["mcnemar_greedy"].p_value}}


def paired_table(reports: dict[tuple[str, int, str], dict], resamples: int = 10_000) -> list[dict]:
    """Every later arm against every earlier one (base first, then the arms in their order), per
    set: the per-task differences pooled over seeds, with bootstrap intervals and McNemar on
    greedy successes."""
    arms = sorted(dict.fromkeys(a for a, _, _ in reports), key=lambda a: a != BASE)  # stable: arm order kept
    rows = []
    for set_name in sorted({s for _, _, s in reports}):
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                row = _comparison(reports, set_name, a, b, resamples)
                if row is not None:
                    rows.append(row)
    return rows


def primary_table(reports: dict[tuple[str, int, str], dict], comparisons: list[tuple[str, str]], sets: list[str],
                  alpha: float, resamples: int = 10_000) -> list[dict]:
    """The pre-registered family: each (a, b) comparison on each set, greedy success@1 paired
    per task, exact McNemar p-values Holm-adjusted over the whole registered family. While some
    comparisons lack their data, each missing one counts as p = 1, so a partial table is never
    less strict than the complete one will be (`family_complete` says which it is)."""
    rows = [row for a, b in comparisons for s in sets
            if (row := _comparison(reports, s, a, b, resamples)) is not None]
    family = len(comparisons) * len(sets)
    adjusted = holm_adjust([r["mcnemar"]["p_value"] for r in rows] + [1.0] * (family - len(rows)))
    for row, p in zip(rows, adjusted):
        row["holm_p_value"] = p
        row["rejected_at_alpha"] = p <= alpha
        row["family_size"] = family
        row["family_complete"] = len(rows) == family
    return rows


def paired_markdown(rows: list[dict]) -> str:
    lines = ["| set | b − a | tasks | success@1 | sample pass rate | pass fraction | McNemar (a only / b only, p) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = ["–" if r[k] is None else f"{r[k]['mean']:+.3f} [{r[k]['low']:+.3f}, {r[k]['high']:+.3f}]"
                 for k in ("greedy", "sample_pass_rate", "pass_fraction")]
        m = r["mcnemar"]
        holm = f", Holm p={r['holm_p_value']:.3f}" if "holm_p_value" in r else ""
        lines.append(f"| {r['set']} | {r['b']} − {r['a']} | {r['tasks']} | " + " | ".join(cells)
                     + f" | {m['only_a']} / {m['only_b']}, p={m['p_value']:.3f}{holm} |")
    return "\n".join(lines) + ("\n\nper-task differences pooled over seeds; [95% percentile bootstrap over "
                               "tasks]; McNemar: exact two-sided test on greedy successes; sample pass rate – "
                               "where an evaluation was greedy only (no sampled repairs).\n")


def run_rows(results_dir: Path, units: list[Unit], shared_base: bool, sets: list[str]) -> list[dict]:
    """Per run: its rollouts (generated and trained), steps, wall time, and per set the
    headline numbers and the greedy outcome of every task."""
    out = []
    for unit in units:
        folder = results_dir / unit_folder_name(unit, shared_base)
        if not folder.is_dir():
            continue
        row: dict = {"arm": unit.arm, "seed": unit.seed, "folder": folder.name}
        summary_path = folder / "summary.json"
        if summary_path.exists():
            summary = json.loads(summary_path.read_text())
            row.update({"config_id": summary.get("config_id"), "seconds": summary.get("seconds"),
                        "learner_steps": summary.get("learner_steps"),
                        "policy_version": summary.get("policy_version"),
                        "rollouts": summary.get("rollouts"), "restarts": summary.get("restarts")})
        row["eval"] = {}
        for set_name in sets:
            path = folder / "eval" / f"{set_name}.json"
            if path.exists():
                report = json.loads(path.read_text())
                row["eval"][set_name] = {
                    "policy_version": report["policy_version"], "seconds": report.get("seconds"),
                    "headline": _headline(report),
                    "greedy_passed": {c["task_id"]: bool(c["passed"]) for c in report["candidates"] if c["greedy"]}}
        out.append(row)
    return out


def runs_markdown(rows: list[dict]) -> str:
    lines = ["| run | generated rollouts | trained rollouts | learner steps | wall s |", "|---|---|---|---|---|"]
    for r in rows:
        if r["arm"] == BASE:
            continue
        rollouts = r.get("rollouts") or {}
        lines.append(f"| {r['folder']} | {rollouts.get('generated', '-')} | {rollouts.get('trained', '-')} | "
                     f"{r.get('learner_steps', '-')} | {r.get('seconds', '-')} |")
    total = sum(r.get("seconds") or 0 for r in rows if r["arm"] != BASE)
    return "\n".join(lines) + f"\n\ntraining wall time in all: {total:.0f} s\n"


def curve_csv(summary: dict) -> str:
    """The learning curve of a run: per policy version, rollouts, pass rate and reshaped reward."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["policy_version", "rollouts", "pass_rate", "reward_enhanced",
                                             "advantage_mean"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(summary.get("by_policy_version", []))
    return buf.getvalue()


def audit_markdown(audit: list[dict]) -> str:
    lines = ["# Reward-hacking audit", ""]
    for a in audit:
        share = "-" if a["flagged_share"] is None else f"{a['flagged_share']:.3f}"
        lines += [f"## {a['arm']} seed {a['seed']}: {a['flagged_successes']}/{a['successes']} successful "
                  f"training candidates hack-flagged ({share})", ""]
        for i, s in enumerate(a["top_samples"], 1):
            lines += [f"### {i}. reward {s['reward']:.3f}, advantage {s['advantage']:+.3f}, {s['task_id']}, "
                      f"tests {s['passed']}/{s['total']}, flags {s['hack_flags'] or 'none'}", "",
                      "```", s["completion_text"][:1500], "```", ""]
    return "\n".join(lines)
