"""`reshaper experiment --config exp.yaml`: raw vs reshaped rewards, same everything else.

For every arm (a reshaping preset name or YAML path) and seed, the full streaming loop
(`infra.compose.orchestrator.Orchestrator`) trains one run with the same model, corpus, sample
budget and seed. Then each arm's final policy, and the base model (version 0), is
evaluated on held-out bugs (the validation split and HumanEval with injected bugs) at a
fixed sample budget. Written into <out_dir>/<name>/:

  experiment.yaml, configs/<run>.yaml   what was used
  eval/<arm>-s<seed>-<set>.json         every evaluation report
  results.json, results.md              mean ± 95% t-interval over seeds (n=1: no interval)
  curves.png                            pass rate and reshaped reward by policy version, per arm
  replay.json                           every arm's config replayed over each run's stored feedback
  audit.json, audit.md                  hack-flagged share of successes; top-5 rewarded samples

Each run's topics carry the run name as their prefix (`RunConfig.topics`), so two runs of
one arm on one broker never read each other's tasks, rollouts or advantages, while the
arm's rules, and so its config id, stay the same in every run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from producers.evaluation.advantage_compare import compare_configs
from producers.evaluation.converters import EVAL_SETS, select_tasks
from producers.evaluation.eval import evaluate_policy
from producers.evaluation.run_folder import base_model_dir, final_policy
from producers.evaluation.metrics import CandidateOutcome, compare_paired, t_interval

HEADLINE = ("success_at_1", "pass_at_k", "mean_pass_fraction", "hacked_success_share")


class EvalBudget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sets: list[str] = Field(["validation", "humaneval"], description="held-out sets: validation, humaneval, "
                            "heldout_pattern (only where the corpus holds patterns out)")
    max_tasks: int = Field(20, ge=1, description="tasks per set (spread over functions, the same for every arm: see select_tasks)")
    k: int = Field(4, ge=1, description="pass@k")
    n: int | None = Field(None, ge=1, description="samples per task (default k)")
    temperature: float = Field(0.8, gt=0, description="sampling temperature of the n samples")
    max_new_tokens: int = Field(256, ge=1, description="completion cap at evaluation")
    sandbox_workers: int = Field(2, ge=1, description="sandbox processes for evaluation")
    backend: Literal["transformers", "ctranslate2"] = Field(
        "transformers", description="generation engine of the evaluation: transformers (the exact reference) or "
        "ctranslate2 (on every core; at float32 it agrees with transformers to about 1e-4 per token)")
    compute_type: Literal["float32", "int8"] = Field("float32", description="ctranslate2's precision")


class ArmSpec(BaseModel):
    """An arm: its reshaping rules and the run settings it changes (e.g. dynamic_sampling)."""

    model_config = ConfigDict(extra="forbid")

    reshaping: str = Field(..., description="reshaping preset name or YAML path")
    run: dict = Field(default_factory=dict, description="RunConfig fields of this arm, over the shared ones")


class ExperimentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("raw-vs-full", pattern=r"^[A-Za-z0-9_-]+$", description="names the folder and the runs")
    out_dir: Path = Field(Path("experiments"), description="parent of the experiment folder")
    arms: dict[str, str | ArmSpec] = Field(
        {"raw": "raw", "full": "full"},
        description="arm name -> reshaping preset name or YAML path, or an ArmSpec (rules plus run settings)")
    seeds: list[int] = Field([0, 1, 2], min_length=1, description="one run per arm and seed")
    run: dict = Field(default_factory=dict, description="RunConfig fields shared by every run (model, steps, ...)")
    eval: EvalBudget = Field(default_factory=EvalBudget)
    evaluate_base: bool = Field(True, description="also evaluate the base model (policy version 0)")

    @property
    def dir(self) -> Path:
        return Path(self.out_dir) / self.name

    @classmethod
    def from_yaml(cls, path: str | Path) -> ExperimentConfig:
        return cls.model_validate(yaml.safe_load(Path(path).read_text()) or {})


def run_name(cfg: ExperimentConfig, arm: str, seed: int) -> str:
    return f"{cfg.name}-{arm}-s{seed}"


def arm_spec(spec: str | ArmSpec) -> ArmSpec:
    return spec if isinstance(spec, ArmSpec) else ArmSpec(reshaping=spec)


def arm_config(spec: str | ArmSpec):
    from streams.reshaping.config import load_config, load_preset

    rules = arm_spec(spec).reshaping
    return load_config(rules) if rules.endswith((".yaml", ".yml")) else load_preset(rules)


def run_reshaping_file(cfg: ExperimentConfig, arm: str, seed: int) -> Path:
    """The arm's rules, written beside the run's config as what the run used."""
    data = json.loads(arm_config(cfg.arms[arm]).canonical_json())
    path = cfg.dir / "configs" / f"{run_name(cfg, arm, seed)}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def arm_run_config(cfg: ExperimentConfig, arm: str, seed: int):
    """The RunConfig of one run: the shared settings, the arm's own over them, then its name,
    seed, folder and rules."""
    from infra.compose.run_config import RunConfig, deep_merge

    return RunConfig.model_validate({**deep_merge(cfg.run, arm_spec(cfg.arms[arm]).run),
                                     "name": run_name(cfg, arm, seed), "seed": seed,
                                     "runs_dir": str(cfg.dir / "runs"),
                                     "topics": {"prefix": f"{run_name(cfg, arm, seed)}."},
                                     "reshaping": str(run_reshaping_file(cfg, arm, seed))})


def train_arm(cfg: ExperimentConfig, arm: str, seed: int, progress: bool = True) -> Path:
    """One full streaming run; a finished run (report/summary.json) is kept, a broken one resumed."""
    from infra.compose.orchestrator import Orchestrator

    run_cfg = arm_run_config(cfg, arm, seed)
    if not (run_cfg.run_dir / "report" / "summary.json").exists():
        Orchestrator(run_cfg, resume=(run_cfg.run_dir / "run.yaml").exists()).run(progress=progress)
    return run_cfg.run_dir


def eval_sets(cfg: ExperimentConfig, seed: int) -> dict[str, list[dict]]:
    """The held-out sets of the corpus the seed's runs trained beside (same corpus config)."""
    from producers.corpus import CorpusBuildConfig, cached_build, read_tasks
    from producers.evaluation.taskfile import write_eval_tasks

    corpus = cached_build(CorpusBuildConfig(seed=seed, max_functions=cfg.run.get("max_functions")))
    records = list(read_tasks(corpus))
    sets = {}
    for name in cfg.eval.sets:
        tasks = select_tasks(records, limit=cfg.eval.max_tasks, **EVAL_SETS[name])
        if tasks:
            sets[name] = tasks
            write_eval_tasks(cfg.dir / "eval_sets" / f"s{seed}-{name}.jsonl", tasks)
    return sets


def _headline(report: dict) -> dict[str, float | None]:
    overall = report["overall"]
    pass_k = overall["pass_at_k"]
    return {"success_at_1": overall["success_at_1"], "pass_at_k": pass_k[max(pass_k, key=int)] if pass_k else None,
            "mean_pass_fraction": overall["mean_pass_fraction"],
            "hacked_success_share": overall["hacked_success_share"]}


def arm_prompt(cfg: ExperimentConfig, arm: str, seed: int) -> dict:
    """The prompt settings an arm's generator trained with; its evaluation prompts the same way."""
    generator = arm_run_config(cfg, arm, seed).generator
    return {"include_error_context": generator.include_error_context, "max_error_chars": generator.max_error_chars}


def evaluate_all(cfg: ExperimentConfig, runs: dict[tuple[str, int], Path]) -> dict[tuple[str, int, str], dict]:
    from streams.sandbox import SandboxConfig, SandboxPool

    b = cfg.eval
    reports: dict[tuple[str, int, str], dict] = {}
    with SandboxPool(SandboxConfig(workers=b.sandbox_workers)) as pool:
        for seed in cfg.seeds:
            sets = eval_sets(cfg, seed)
            policies = {arm: final_policy(runs[arm, seed]) for arm in cfg.arms}
            base = base_model_dir(runs[next(iter(cfg.arms)), seed])
            if cfg.evaluate_base:
                policies = {"base": (None, 0), **policies}
            for arm, (adapter, version) in policies.items():
                # the base model is prompted as the first arm is
                prompt = arm_prompt(cfg, next(iter(cfg.arms)) if arm == "base" else arm, seed)
                for set_name, tasks in sets.items():
                    path = cfg.dir / "eval" / f"{arm}-s{seed}-{set_name}.json"
                    if not path.exists():
                        report = evaluate_policy(base, tasks, adapter=adapter, policy_version=version, k=b.k, n=b.n,
                                                 temperature=b.temperature, max_new_tokens=b.max_new_tokens,
                                                 pool=pool, seed=seed, backend=b.backend, compute_type=b.compute_type,
                                                 **prompt)
                        report.write_json(path)
                    reports[arm, seed, set_name] = json.loads(path.read_text())
    return reports


def results_table(reports: dict[tuple[str, int, str], dict]) -> list[dict]:
    """One row per (arm, set, metric): mean ± 95% t-interval over seeds."""
    rows = []
    keys = sorted({(arm, s) for arm, _, s in reports}, key=lambda a: (a[0] != "base", a))
    for arm, set_name in keys:
        per_seed = [_headline(r) for (a, _, s), r in sorted(reports.items()) if a == arm and s == set_name]
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


def paired_table(reports: dict[tuple[str, int, str], dict], resamples: int = 10_000) -> list[dict]:
    """Every later arm against every earlier one (base first, then the arms in their order), per
    set: the per-task differences pooled over seeds (a task of seed s pairs with the same task
    of seed s), with bootstrap intervals and McNemar on greedy successes."""
    arms = sorted(dict.fromkeys(a for a, _, _ in reports), key=lambda a: a != "base")  # stable: arm order kept
    rows = []
    for set_name in sorted({s for _, _, s in reports}):
        outcomes = {arm: [CandidateOutcome(**{**c, "task_id": f"s{seed}/{c['task_id']}",
                                              "hack_flags": tuple(c["hack_flags"])})
                          for (a, seed, s), r in sorted(reports.items()) if a == arm and s == set_name
                          for c in r["candidates"]]
                    for arm in arms}
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                if not outcomes[a] or not outcomes[b]:
                    continue
                cmp = compare_paired(outcomes[a], outcomes[b], resamples=resamples)
                rows.append({"set": set_name, "a": a, "b": b, "tasks": cmp["tasks"],
                             **{key: {"mean": cmp[key].mean, "low": cmp[key].low, "high": cmp[key].high}
                                for key in ("greedy", "sample_pass_rate", "pass_fraction")},
                             "mcnemar": {"only_a": cmp["mcnemar_greedy"].only_a,
                                         "only_b": cmp["mcnemar_greedy"].only_b,
                                         "p_value": cmp["mcnemar_greedy"].p_value}})
    return rows


def paired_markdown(rows: list[dict]) -> str:
    lines = ["| set | b − a | tasks | success@1 | sample pass rate | pass fraction | McNemar (a only / b only, p) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{r[k]['mean']:+.3f} [{r[k]['low']:+.3f}, {r[k]['high']:+.3f}]"
                 for k in ("greedy", "sample_pass_rate", "pass_fraction")]
        m = r["mcnemar"]
        lines.append(f"| {r['set']} | {r['b']} − {r['a']} | {r['tasks']} | " + " | ".join(cells)
                     + f" | {m['only_a']} / {m['only_b']}, p={m['p_value']:.3f} |")
    return "\n".join(lines) + ("\n\nper-task differences pooled over seeds; [95% percentile bootstrap over "
                               "tasks]; McNemar: exact two-sided test on greedy successes.\n")


def plot_curves(cfg: ExperimentConfig, runs: dict[tuple[str, int], Path], path: Path) -> Path:
    """Pass rate (raw reward) and reshaped reward by policy version (one per learner step), per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for i, arm in enumerate(cfg.arms):
        colour = f"C{i}"
        for seed in cfg.seeds:
            summary = json.loads((runs[arm, seed] / "report" / "summary.json").read_text())
            rows = summary.get("by_policy_version", [])
            versions = [r["policy_version"] for r in rows]
            for ax, key in zip(axes, ("pass_rate", "reward_enhanced")):
                ax.plot(versions, [r[key] for r in rows], marker="o", color=colour, alpha=0.8,
                        label=arm if seed == cfg.seeds[0] else None)
    for ax, title in zip(axes, ("training pass rate (raw reward)", "reshaped reward (reward_enhanced)")):
        ax.set_title(title)
        ax.set_xlabel("policy version (= learner step)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _run_store(run_dir: Path):
    from consumers.store import open_store

    recorded = yaml.safe_load((run_dir / "run.yaml").read_text())
    return open_store(recorded.get("store") or str(run_dir / "chdb"))


# The run's rows only: the topics are shared by every run on a broker, the generator id is not.
_RUN_FEEDBACK = ("SELECT * FROM feedback FINAL WHERE rollout_id IN (SELECT rollout_id FROM rollouts FINAL "
                 "WHERE generator_id = {g:String}) ORDER BY event_time, event_id")


def _feedback_events(store, generator_id: str) -> list[dict]:
    rows = store.query(_RUN_FEEDBACK, {"g": generator_id}).as_dicts()
    for r in rows:  # the reshaping reads the envelope's event time as created_at_ms
        r["created_at_ms"] = int(r["event_time"].timestamp() * 1000)
    return rows


def replay_comparison(cfg: ExperimentConfig, runs: dict[tuple[str, int], Path]) -> list[dict]:
    """Every arm's rules over each run's stored feedback (pure core, no retraining)."""
    configs = [arm_config(spec) for spec in cfg.arms.values()]
    out = []
    for (arm, seed), run_dir in runs.items():
        with _run_store(run_dir) as store:
            feedback = _feedback_events(store, f"{run_name(cfg, arm, seed)}-gen-0")
        for stats in compare_configs(feedback, configs) if feedback else []:
            out.append({"run": run_name(cfg, arm, seed), "source": "reshape_group over stored feedback",
                        **stats.__dict__})
    return out


def hack_audit(cfg: ExperimentConfig, runs: dict[tuple[str, int], Path], top: int = 5) -> list[dict]:
    """Per run: the hack-flagged share of successful training candidates and the `top`
    highest-reward samples with their text, for a person to read."""
    out = []
    for (arm, seed), run_dir in runs.items():
        config_id = json.loads((run_dir / "report" / "summary.json").read_text())["config_id"]
        g = f"{run_name(cfg, arm, seed)}-gen-0"
        with _run_store(run_dir) as store:
            feedback = _feedback_events(store, g)
            best = store.query(
                "SELECT a.reward_enhanced AS reward, a.advantage AS advantage, f.task_id AS task_id, "
                "f.tests_passed AS passed, f.tests_total AS total, f.hack_flags AS hack_flags, "
                "f.completion_text AS completion_text "
                "FROM (SELECT rollout_id, reward_enhanced, advantage FROM advantages FINAL "
                "      WHERE config_id = {c:String}) AS a "
                "INNER JOIN (SELECT * FROM feedback FINAL) AS f ON a.rollout_id = f.rollout_id "
                "ORDER BY reward DESC LIMIT {n:UInt32}", {"c": config_id, "n": top}).as_dicts()
        successes = [f for f in feedback if f["tests_total"] > 0 and min(f["pass_fraction_runs"]) == 1.0]
        flagged = sum(bool(f["hack_flags"]) for f in successes)
        out.append({"arm": arm, "seed": seed, "successes": len(successes), "flagged_successes": flagged,
                    "flagged_share": flagged / len(successes) if successes else None,
                    "top_samples": [{**b, "hack_flags": list(b["hack_flags"])} for b in best]})
    return out


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


def run_experiment(cfg: ExperimentConfig, progress: bool = True) -> dict:
    """Train every arm x seed, evaluate, and write the experiment folder; returns results.json's content."""
    cfg.dir.mkdir(parents=True, exist_ok=True)
    (cfg.dir / "experiment.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    runs = {(arm, seed): train_arm(cfg, arm, seed, progress) for seed in cfg.seeds for arm in cfg.arms}
    reports = evaluate_all(cfg, runs)
    rows = results_table(reports)
    results = {"experiment": cfg.name, "seeds": cfg.seeds, "arms": cfg.model_dump(mode="json")["arms"],
               "interval": "95% Student-t over seeds; none with one seed", "rows": rows,
               "runs": {run_name(cfg, a, s): str(d) for (a, s), d in runs.items()}}
    (cfg.dir / "results.json").write_text(json.dumps(results, indent=2))
    paired = paired_table(reports)
    results["paired"] = paired
    (cfg.dir / "results.json").write_text(json.dumps(results, indent=2))
    (cfg.dir / "results.md").write_text(results_markdown(rows) + "\n" + paired_markdown(paired))
    plot_curves(cfg, runs, cfg.dir / "curves.png")
    (cfg.dir / "replay.json").write_text(json.dumps(replay_comparison(cfg, runs), indent=2))
    audit = hack_audit(cfg, runs)
    (cfg.dir / "audit.json").write_text(json.dumps(audit, indent=2, default=str))
    (cfg.dir / "audit.md").write_text(audit_markdown(audit))
    return results
