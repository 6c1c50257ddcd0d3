"""`reshaper experiment --config exp.yaml`: reshaping arms against each other, same everything else.

The unit is one run: an arm (a reshaping preset or YAML path, with the run settings it
changes) and a seed. Each run trains through the full streaming loop
(`infra.compose.orchestrator.Orchestrator`); as soon as it has trained, its final policy is
evaluated on the held-out sets, its stored feedback replayed under every arm's rules and its
successes audited for hacks, and all of it is written as small text files into
`<out_dir>/<name>/results/<arm>-s<seed>/`, a manifest last. Those folders are what the
repository keeps (the run folders, `<name>/runs/`, with weights and stores, are not), so the
experiment goes on from any machine that has the repository:

    results/<unit>/run.yaml, reshaping.yaml    what the run used
    results/<unit>/summary.json                its report (rollouts generated and trained, wall time)
    results/<unit>/learner_metrics.csv         the learner's curve, per step
    results/<unit>/curve.csv                   pass rate and reshaped reward per policy version
    results/<unit>/eval/<set>.json             evaluation reports, every candidate's outcome
    results/<unit>/replay.json                 every arm's rules over this run's stored feedback
    results/<unit>/audit.json                  hack-flagged share of successes; top-5 rewarded samples
    results/<unit>/manifest.json               sha256 of each file above: the unit is complete
    results/base[-s<seed>]/eval/<set>.json     the base model, evaluated once per corpus seed

`results.json` and `results.md` (means over seeds, every paired comparison, the
pre-registered family with Holm's correction, the runs' rollouts and wall time), `replay.json`,
`audit.*` and `curves.png` are rebuilt from those folders alone (`--report-only`).

Each run's topics carry the run name as their prefix (`RunConfig.topics`), so two runs of
one arm on one broker never read each other's tasks, rollouts or advantages, while the
arm's rules, and so its config id, stay the same in every run.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from infra.compose.experiment_plan import (BASE, MANIFEST, Action, RunFolder, Unit, decide, folder_manifest_intact,
                                           manifest_of, order_units, read_folder_files, run_folder_state)
from infra.compose.experiment_results import (HEADLINE, audit_markdown, curve_csv, load_reports,  # noqa: F401
                                              paired_markdown, paired_table, primary_table, results_markdown,
                                              results_table, run_rows, runs_markdown, unit_folder_name)
from infra.compose.experiment_rerun import agreement_markdown, rerun_agreement
from producers.evaluation.converters import EVAL_SETS, select_tasks
from infra.compose.run_history import run_feedback, run_store


class EvalBudget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sets: list[str] = Field(["validation", "humaneval"],
                            description="held-out sets: " + ", ".join(EVAL_SETS))
    max_tasks: int = Field(20, ge=1, description="tasks per set (spread over functions, the same for every arm: "
                           "see select_tasks)")
    k: int = Field(4, ge=1, description="pass@k")
    n: int | None = Field(None, ge=1, description="samples per task (default k)")
    greedy_only: bool = Field(False, description="only the greedy repair per task (success@1): no samples, no pass@k")
    temperature: float = Field(0.8, gt=0, description="sampling temperature of the n samples")
    max_new_tokens: int = Field(256, ge=1, description="completion cap at evaluation")
    sandbox_workers: int = Field(2, ge=1, description="sandbox processes for evaluation")
    backend: Literal["transformers", "ctranslate2"] = Field(
        "transformers", description="generation engine of the evaluation: transformers (the exact reference) or "
        "ctranslate2 (on every core; at float32 it agrees with transformers to about 1e-4 per token)")
    compute_type: Literal["float32", "int8"] = Field("float32", description="ctranslate2's precision")

    @model_validator(mode="after")
    def _known_sets(self) -> EvalBudget:
        unknown = [s for s in self.sets if s not in EVAL_SETS]
        if unknown:
            raise ValueError(f"unknown eval sets {unknown}; known: {list(EVAL_SETS)}")
        return self


class AnalysisConfig(BaseModel):
    """The confirmatory comparisons, fixed before the first run."""

    model_config = ConfigDict(extra="forbid")

    primary: list[tuple[str, str]] = Field(
        default_factory=list, description="(a, b) arm pairs whose b - a greedy success@1 is the primary endpoint, "
        "on every eval set; their McNemar p-values are Holm-adjusted as one family")
    alpha: float = Field(0.05, gt=0, lt=1, description="family-wise error rate of the primary comparisons")
    resamples: int = Field(10_000, ge=100, description="bootstrap resamples of every paired interval (seeded)")


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
    corpus_seed: int | None = Field(
        None, description="one corpus for every run (its train tasks and held-out sets), apart from the training "
        "seed; the base model is then evaluated once. None: each run's corpus seed is its training seed")
    run: dict = Field(default_factory=dict, description="RunConfig fields shared by every run (model, steps, ...)")
    eval: EvalBudget = Field(default_factory=EvalBudget)
    evaluate_base: bool = Field(True, description="also evaluate the base model (policy version 0)")
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)

    @model_validator(mode="after")
    def _arms_named(self) -> ExperimentConfig:
        if BASE in self.arms:
            raise ValueError(f"{BASE!r} names the base model's evaluation; call the arm something else")
        unknown = sorted({a for pair in self.analysis.primary for a in pair} - set(self.arms) - {BASE})
        if unknown:
            raise ValueError(f"primary comparisons name arms the experiment lacks: {unknown}")
        return self

    @property
    def dir(self) -> Path:
        return Path(self.out_dir) / self.name

    @property
    def results_dir(self) -> Path:
        return self.dir / "results"

    @property
    def shared_base(self) -> bool:
        return self.corpus_seed is not None

    def corpus_seed_of(self, seed: int) -> int:
        return seed if self.corpus_seed is None else self.corpus_seed

    def base_seeds(self) -> list[int]:
        if not self.evaluate_base:
            return []
        return [self.corpus_seed] if self.shared_base else list(self.seeds)

    def units(self) -> list[Unit]:
        return order_units(list(self.arms), self.seeds, self.base_seeds())

    def unit_dir(self, unit: Unit) -> Path:
        return self.results_dir / unit_folder_name(unit, self.shared_base)

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
    seed, corpus seed, folder and rules."""
    from infra.compose.run_config import RunConfig, deep_merge

    fixed = {"corpus_seed": cfg.corpus_seed} if cfg.corpus_seed is not None else {}
    return RunConfig.model_validate({**deep_merge(cfg.run, arm_spec(cfg.arms[arm]).run), **fixed,
                                     "name": run_name(cfg, arm, seed), "seed": seed,
                                     "runs_dir": str(cfg.dir / "runs"),
                                     "topics": {"prefix": f"{run_name(cfg, arm, seed)}."},
                                     "reshaping": str(run_reshaping_file(cfg, arm, seed))})


# --- the steps of a unit (replaceable, so the planning is tested without training) -------

Train = Callable[[object, bool], Path]  # (RunConfig, resume) -> the trained run folder
EvalSets = Callable[[int], dict[str, list[dict]]]  # corpus seed -> set name -> tasks
# (model name or dir, adapter or None, policy version, the sets, seed) -> set name -> report dict
Evaluate = Callable[[str, Path | None, int, dict[str, list[dict]], int, dict], dict[str, dict]]
Analyse = Callable[[ExperimentConfig, str, int, Path], tuple[list[dict], dict]]  # -> (replay rows, audit)


@dataclass
class UnitSteps:
    train: Train
    eval_sets: EvalSets
    evaluate: Evaluate
    analyse: Analyse


def real_steps(cfg: ExperimentConfig, progress: bool = True) -> UnitSteps:
    """Training through the streaming loop, evaluation in the sandbox, analysis on the run's store."""
    from streams.sandbox import SandboxConfig, SandboxPool

    def train(run_cfg, resume: bool) -> Path:
        from infra.compose.orchestrator import Orchestrator

        Orchestrator(run_cfg, resume=resume).run(progress=progress)
        return run_cfg.run_dir

    def evaluate(model: str, adapter: Path | None, version: int, sets: dict[str, list[dict]],
                 seed: int, prompt: dict) -> dict[str, dict]:
        from infra.compose.orchestrator import resolve_model_dir
        from producers.evaluation.eval import evaluate_policy

        b = cfg.eval
        out = {}
        with SandboxPool(SandboxConfig(workers=b.sandbox_workers)) as pool:
            for set_name, tasks in sets.items():
                report = evaluate_policy(resolve_model_dir(model), tasks, adapter=adapter, policy_version=version,
                                         k=b.k, n=b.n, temperature=b.temperature, max_new_tokens=b.max_new_tokens,
                                         pool=pool, seed=seed, greedy_only=b.greedy_only, backend=b.backend,
                                         compute_type=b.compute_type, **prompt)
                out[set_name] = report.to_dict()
        return out

    return UnitSteps(train=train, eval_sets=lambda corpus_seed: eval_sets(cfg, corpus_seed), evaluate=evaluate,
                     analyse=analyse_run)


def shared_run_config(cfg: ExperimentConfig, corpus_seed: int):
    """The run settings every arm shares, on `corpus_seed`: what decides the corpus and the model."""
    from infra.compose.run_config import RunConfig

    return RunConfig.model_validate({**cfg.run, "seed": corpus_seed, "corpus_seed": corpus_seed})


def eval_sets(cfg: ExperimentConfig, corpus_seed: int) -> dict[str, list[dict]]:
    """The held-out sets of the corpus the runs trained beside (same corpus config); each is
    also written as JSONL under eval_sets/, so what was evaluated is kept with the results."""
    from producers.corpus import cached_build, read_tasks
    from producers.evaluation.taskfile import write_eval_tasks

    corpus = cached_build(shared_run_config(cfg, corpus_seed).corpus_config())
    records = list(read_tasks(corpus))
    sets = {}
    for name in cfg.eval.sets:
        tasks = select_tasks(records, limit=cfg.eval.max_tasks, **EVAL_SETS[name])
        if not tasks:  # a design that names a set must get it: an empty one would silently drop an endpoint
            raise ValueError(f"the corpus of seed {corpus_seed} has no tasks for eval set {name!r}")
        sets[name] = tasks
        write_eval_tasks(cfg.dir / "eval_sets" / f"s{corpus_seed}-{name}.jsonl", tasks)
    return sets


# --- one unit -----------------------------------------------------------------------------

def unit_action(cfg: ExperimentConfig, unit: Unit) -> Action:
    if unit.is_base:  # no run folder: the base model is only evaluated
        return decide(folder_manifest_intact(cfg.unit_dir(unit)), RunFolder(False, False), True)
    run_dir = cfg.dir / "runs" / run_name(cfg, unit.arm, unit.seed)
    return decide(folder_manifest_intact(cfg.unit_dir(unit)), run_folder_state(run_dir))


def _write(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def arm_prompt(cfg: ExperimentConfig, arm: str, seed: int) -> dict:
    """The prompt settings an arm's generator trained with; its evaluation prompts the same way."""
    generator = arm_run_config(cfg, arm, seed).generator
    return {"include_error_context": generator.include_error_context, "max_error_chars": generator.max_error_chars}


def _fresh(folder: Path) -> Path:
    """A results folder written from scratch: what a cut write left is not mixed in."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def _seal(folder: Path) -> None:
    """The manifest, written last: from now on the unit is complete."""
    _write(folder, MANIFEST, json.dumps(manifest_of(read_folder_files(folder)), indent=2) + "\n")


def finish_base(cfg: ExperimentConfig, unit: Unit, steps: UnitSteps) -> None:
    folder = _fresh(cfg.unit_dir(unit))
    sets = steps.eval_sets(unit.seed)
    model = shared_run_config(cfg, unit.seed).model
    # the base model is prompted as the first arm's generator is
    prompt = arm_prompt(cfg, next(iter(cfg.arms)), unit.seed)
    for set_name, report in steps.evaluate(model, None, 0, sets, unit.seed, prompt).items():
        _write(folder, f"eval/{set_name}.json", json.dumps(report, indent=2) + "\n")
    _seal(folder)


def finish_run(cfg: ExperimentConfig, unit: Unit, run_dir: Path, steps: UnitSteps) -> None:
    """A trained run's results: its configs and report, the evaluation of its final policy, the
    replay of its feedback under every arm's rules and its hack audit."""
    from producers.evaluation.run_folder import final_policy

    run_cfg = arm_run_config(cfg, unit.arm, unit.seed)
    folder = _fresh(cfg.unit_dir(unit))
    report = run_dir / "report"
    for name in ("run.yaml", "reshaping.yaml", "summary.json", "learner_metrics.csv", "heldout.csv"):
        if (report / name).exists():
            _write(folder, name, (report / name).read_text())
    summary = json.loads((report / "summary.json").read_text())
    _write(folder, "curve.csv", curve_csv(summary))
    adapter, version = final_policy(run_dir)
    sets = steps.eval_sets(cfg.corpus_seed_of(unit.seed))
    prompt = arm_prompt(cfg, unit.arm, unit.seed)
    for set_name, rep in steps.evaluate(run_cfg.model, adapter, version, sets, unit.seed, prompt).items():
        _write(folder, f"eval/{set_name}.json", json.dumps(rep, indent=2) + "\n")
    replay, audit = steps.analyse(cfg, unit.arm, unit.seed, run_dir)
    _write(folder, "replay.json", json.dumps(replay, indent=2, default=str) + "\n")
    _write(folder, "audit.json", json.dumps(audit, indent=2, default=str) + "\n")
    _seal(folder)


def do_unit(cfg: ExperimentConfig, unit: Unit, steps: UnitSteps) -> Action:
    """Bring one unit to complete; returns what it needed."""
    action = unit_action(cfg, unit)
    if action == "complete":
        return action
    if unit.is_base:
        finish_base(cfg, unit, steps)
        return action
    run_cfg = arm_run_config(cfg, unit.arm, unit.seed)
    if action in ("resume", "start"):
        if action == "start" and run_cfg.run_dir.exists():  # a folder cut before it recorded its config
            shutil.rmtree(run_cfg.run_dir)
        steps.train(run_cfg, action == "resume")
        if not run_folder_state(run_cfg.run_dir).trained:
            raise RuntimeError(f"{run_cfg.name} stopped before it finished training; run the experiment again "
                               "to resume it")
    finish_run(cfg, unit, run_cfg.run_dir, steps)
    return action


def run_experiment(cfg: ExperimentConfig, progress: bool = True, steps: UnitSteps | None = None) -> dict:
    """Bring every unit to complete, in order, then rebuild the experiment's tables; returns
    results.json's content."""
    steps = steps or real_steps(cfg, progress)
    cfg.dir.mkdir(parents=True, exist_ok=True)
    (cfg.dir / "experiment.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
    for unit in cfg.units():
        action = do_unit(cfg, unit, steps)
        if progress:
            print(f"[experiment] {unit_folder_name(unit, cfg.shared_base)}: {action}", flush=True)
    return write_report(cfg)


def rerun_config(cfg: ExperimentConfig, arm: str, seed: int) -> ExperimentConfig:
    """The experiment `<name>-rerun` that holds one run of `cfg` again: the same arm, seed,
    corpus and evaluation, in its own folder and under its own run name."""
    if arm not in cfg.arms or seed not in cfg.seeds:
        raise ValueError(f"{cfg.name} has no run {arm} seed {seed}: arms {list(cfg.arms)}, seeds {cfg.seeds}")
    return cfg.model_copy(update={"name": f"{cfg.name}-rerun", "arms": {arm: cfg.arms[arm]}, "seeds": [seed],
                                  "evaluate_base": False,
                                  "analysis": cfg.analysis.model_copy(update={"primary": []})})


def rerun(cfg: ExperimentConfig, arm: str, seed: int, progress: bool = True, steps: UnitSteps | None = None) -> dict:
    """Train and evaluate one committed run again (resumable like any unit), then write how
    close the two came (agreement.json, agreement.md in the re-run's folder)."""
    unit = Unit(arm, seed)
    again = rerun_config(cfg, arm, seed)
    if not folder_manifest_intact(cfg.unit_dir(unit)):
        raise ValueError(f"{cfg.unit_dir(unit)} holds no complete results: the run to compare with comes first")
    steps = steps or real_steps(again, progress)
    do_unit(again, unit, steps)
    agreement = rerun_agreement(cfg.unit_dir(unit), again.unit_dir(unit), cfg.eval.sets, cfg.analysis.resamples)
    (again.dir / "agreement.json").write_text(json.dumps(agreement, indent=2) + "\n")
    (again.dir / "agreement.md").write_text(agreement_markdown(agreement))
    return agreement


# --- the experiment's tables, from the results folders alone ---------------------------------

def build_results(cfg: ExperimentConfig) -> tuple[dict, str]:
    """results.json's content and results.md's text, from the committed results folders."""
    reports = load_reports(cfg.results_dir, list(cfg.arms), cfg.seeds, cfg.eval.sets, cfg.shared_base,
                           cfg.evaluate_base)
    rows = results_table(reports)
    paired = paired_table(reports, resamples=cfg.analysis.resamples)
    primary = primary_table(reports, cfg.analysis.primary, cfg.eval.sets, cfg.analysis.alpha,
                            resamples=cfg.analysis.resamples)
    runs = run_rows(cfg.results_dir, cfg.units(), cfg.shared_base, cfg.eval.sets)
    complete = [u for u in cfg.units() if folder_manifest_intact(cfg.unit_dir(u))]
    results = {"experiment": cfg.name, "seeds": cfg.seeds, "corpus_seed": cfg.corpus_seed,
               "arms": cfg.model_dump(mode="json")["arms"], "eval": cfg.eval.model_dump(mode="json"),
               "analysis": cfg.analysis.model_dump(mode="json"),
               "complete_units": [unit_folder_name(u, cfg.shared_base) for u in complete],
               "units": len(cfg.units()),
               "interval": "95% Student-t over seeds; none with one seed", "rows": rows,
               "primary": primary, "paired": paired, "runs": runs}
    md = [f"# {cfg.name}", "", f"{len(complete)} of {len(cfg.units())} units complete.", "",
          results_markdown(rows)]
    if cfg.analysis.primary:
        md += ["## Primary comparisons (pre-registered; Holm over "
               f"{len(cfg.analysis.primary) * len(cfg.eval.sets)} tests, alpha {cfg.analysis.alpha})", "",
               paired_markdown(primary)]
    md += ["## Every paired comparison", "", paired_markdown(paired), "## Runs", "", runs_markdown(runs)]
    return results, "\n".join(md)


def write_report(cfg: ExperimentConfig) -> dict:
    results, md = build_results(cfg)
    (cfg.dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (cfg.dir / "results.md").write_text(md)
    replay, audit = [], []
    for unit in cfg.units():
        folder = cfg.unit_dir(unit)
        if not unit.is_base and folder_manifest_intact(folder):
            replay += json.loads((folder / "replay.json").read_text())
            audit.append(json.loads((folder / "audit.json").read_text()))
    (cfg.dir / "replay.json").write_text(json.dumps(replay, indent=2) + "\n")
    (cfg.dir / "audit.json").write_text(json.dumps(audit, indent=2) + "\n")
    (cfg.dir / "audit.md").write_text(audit_markdown(audit))
    plot_curves(cfg, cfg.dir / "curves.png")
    return results


def plot_curves(cfg: ExperimentConfig, path: Path, smooth: int = 5) -> Path:
    """Pass rate (raw reward) and reshaped reward by policy version, per arm: each seed's
    points faint, and the mean over the seeds that reached a version as a line, a centred
    rolling mean over `smooth` versions (one step's 4 groups are too few to read alone)."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for i, arm in enumerate(cfg.arms):
        paths = [cfg.unit_dir(Unit(arm, seed)) / "curve.csv" for seed in cfg.seeds]
        curves = [list(csv.DictReader(path.read_text().splitlines())) for path in paths if path.exists()]
        label = f"{arm} ({len(curves)} seed{'s' if len(curves) > 1 else ''})"
        for ax, key in zip(axes, ("pass_rate", "reward_enhanced")):
            by_version: dict[int, list[float]] = {}
            for rows in curves:
                versions = [int(r["policy_version"]) for r in rows]
                values = [float(r[key]) for r in rows]
                ax.plot(versions, values, "o", color=f"C{i}", alpha=0.2, markersize=3)
                for version, value in zip(versions, values):
                    by_version.setdefault(version, []).append(value)
            if not by_version:
                continue
            versions = sorted(by_version)
            means = np.array([np.mean(by_version[v]) for v in versions])
            window = min(smooth, len(means))
            padded = np.pad(means, (window // 2, window - 1 - window // 2), mode="edge")
            ax.plot(versions, np.convolve(padded, np.ones(window) / window, mode="valid"), color=f"C{i}",
                    linewidth=2, label=label)
    for ax, title in zip(axes, ("training pass rate (raw reward)", "reshaped reward (reward_enhanced)")):
        ax.set_title(title)
        ax.set_xlabel("policy version (= learner step)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(f"points: one seed's step; lines: mean over seeds, rolling mean of {smooth} versions", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --- a run's analysis, from its store -----------------------------------------------------

def analyse_run(cfg: ExperimentConfig, arm: str, seed: int, run_dir: Path, top: int = 5) -> tuple[list[dict], dict]:
    """Every arm's rules over the run's stored feedback (pure core, no retraining), and its hack
    audit: the hack-flagged share of successful training candidates and the `top`
    highest-reward samples with their text, for a person to read."""
    from producers.evaluation.advantage_compare import compare_configs

    name = run_name(cfg, arm, seed)
    config_id = json.loads((run_dir / "report" / "summary.json").read_text())["config_id"]
    with run_store(run_dir) as store:
        feedback = run_feedback(store, name)
        best = store.query(
            "SELECT a.reward_enhanced AS reward, a.advantage AS advantage, f.task_id AS task_id, "
            "f.tests_passed AS passed, f.tests_total AS total, f.hack_flags AS hack_flags, "
            "f.completion_text AS completion_text "
            "FROM (SELECT rollout_id, reward_enhanced, advantage FROM advantages FINAL "
            "      WHERE config_id = {c:String}) AS a "
            "INNER JOIN (SELECT * FROM feedback FINAL) AS f ON a.rollout_id = f.rollout_id "
            "ORDER BY reward DESC, f.rollout_id LIMIT {n:UInt32}", {"c": config_id, "n": top}).as_dicts()
    configs = [arm_config(spec) for spec in cfg.arms.values()]
    replay = [{"run": name, "source": "reshape_group over stored feedback", **stats.__dict__}
              for stats in (compare_configs(feedback, configs) if feedback else [])]
    successes = [f for f in feedback if f["tests_total"] > 0 and min(f["pass_fraction_runs"]) == 1.0]
    flagged = sum(bool(f["hack_flags"]) for f in successes)
    audit = {"arm": arm, "seed": seed, "successes": len(successes), "flagged_successes": flagged,
             "flagged_share": flagged / len(successes) if successes else None,
             "top_samples": [{**b, "hack_flags": list(b["hack_flags"])} for b in best]}
    return replay, audit
