"""How close a re-run of one experiment run comes to the committed one.

The CPU engine's sampling does not repeat exactly for a seed, so a run trained again from the
same config is a second draw, not a copy. Its agreement with the committed run is measured
from the two results folders alone (the same files results.md is built from): per eval set the
success@1 of each, the share of tasks whose greedy outcome is the same, and the paired
difference with its McNemar p (a re-run that "agrees within sampling noise" has an interval
that holds 0); beside them the rollouts and the pass rate over training.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from producers.evaluation.metrics import CandidateOutcome, compare_paired


def _outcomes(report: dict) -> list[CandidateOutcome]:
    return [CandidateOutcome(**{**c, "hack_flags": tuple(c["hack_flags"])}) for c in report["candidates"]]


def _training(folder: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text())
    by_version = summary.get("by_policy_version", [])
    rollouts = sum(v["rollouts"] for v in by_version)
    return {"rollouts": summary.get("rollouts"), "learner_steps": summary.get("learner_steps"),
            "pass_rate": round(sum(v["pass_rate"] * v["rollouts"] for v in by_version) / rollouts, 4)
            if rollouts else None}


def rerun_agreement(committed: Path, rerun: Path, sets: list[str], resamples: int = 10_000) -> dict:
    """The re-run (folder `rerun`) against the committed run (folder `committed`), set by set."""
    out: dict = {"committed": committed.name, "rerun": rerun.name,
                 "training": {"committed": _training(committed), "rerun": _training(rerun)}, "sets": {}}
    for set_name in sets:
        a = json.loads((committed / "eval" / f"{set_name}.json").read_text())
        b = json.loads((rerun / "eval" / f"{set_name}.json").read_text())
        greedy_a = {c["task_id"]: bool(c["passed"]) for c in a["candidates"] if c["greedy"]}
        greedy_b = {c["task_id"]: bool(c["passed"]) for c in b["candidates"] if c["greedy"]}
        shared = sorted(set(greedy_a) & set(greedy_b))
        compared = compare_paired(_outcomes(a), _outcomes(b), resamples=resamples)
        diff, mcnemar = compared["greedy"], compared["mcnemar_greedy"]
        out["sets"][set_name] = {
            "tasks": len(shared),
            "success_at_1": {"committed": a["overall"]["success_at_1"], "rerun": b["overall"]["success_at_1"]},
            "same_greedy_outcome_share": round(statistics.fmean(greedy_a[t] == greedy_b[t] for t in shared), 4),
            "difference": {"mean": round(diff.mean, 4), "low": round(diff.low, 4), "high": round(diff.high, 4)},
            "mcnemar": {"only_committed": mcnemar.only_a, "only_rerun": mcnemar.only_b,
                        "p_value": round(mcnemar.p_value, 4)},
            "within_noise": diff.low <= 0 <= diff.high}
    return out


def agreement_markdown(agreement: dict) -> str:
    lines = [f"Re-run of {agreement['committed']}", "",
             "| set | success@1 committed | success@1 re-run | same greedy outcome | re-run - committed | McNemar p |",
             "|---|---|---|---|---|---|"]
    for set_name, s in agreement["sets"].items():
        d = s["difference"]
        lines.append(f"| {set_name} | {s['success_at_1']['committed']:.3f} | {s['success_at_1']['rerun']:.3f} | "
                     f"{s['same_greedy_outcome_share']:.2f} | {d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] | "
                     f"{s['mcnemar']['p_value']:.3f} |")
    t = agreement["training"]
    lines += ["", f"training pass rate: committed {t['committed']['pass_rate']}, re-run {t['rerun']['pass_rate']}; "
              f"learner steps {t['committed']['learner_steps']} and {t['rerun']['learner_steps']}"]
    return "\n".join(lines) + "\n"
