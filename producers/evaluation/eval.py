"""`reshaper eval`: a policy's repair quality on a bug set, every candidate run in the sandbox.

Bug-set format (JSONL, one task per line; full corpus Task records are accepted too):
`task_id`, `buggy_code`, `entry_point`, `tests` (list of asserts) or `test_code`
(HumanEval `def check(candidate)`), optional `bug_pattern`, `reference_code`,
`test_setup_code`, `test_imports`, `difficulty`, `source`. See `taskfile.py` for details.

Per task the policy makes one greedy repair (success@1) and n temperature samples
(pass@k, unbiased estimator). Sampling is a parameter (`Generate`), so tests can evaluate
fixed answers and the CLI wraps the transformers backend. The prompt is the generator's
(`render_task_prompt`): with `include_error_context` it shows the task's visible test and
its error, as training does with the same knob; the visible test is never scored.
Candidates go through the same evaluator the training stream uses
(`streams.feedback.evaluate`), so "passed" and the hack flags mean here exactly what they
mean in training.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from infra.platform.topics import Topics
from producers.evaluation.metrics import CandidateOutcome, Metrics, summarise, summarise_by_pattern
from producers.generator.backends.base import SamplingParams
from schemas.prompt import render_task_prompt, task_import_names
from streams.feedback.evaluate import EvaluatorConfig, aevaluate_rollout
from streams.sandbox import SandboxPool

# tasks and sampling parameters in, params.n completion texts per task out (in task order)
Generate = Callable[[Sequence[dict], SamplingParams], list[list[str]]]

# The adversarial and rename checks feed fields the metrics do not read and triple the
# sandbox work per candidate, so evaluation leaves them off by default; so too the line
# tracing of the execution path, which no metric reads either.
EVAL_EVALUATOR = EvaluatorConfig(adversarial_inputs=0, rename_check=False, exec_coverage=False)


@dataclass
class EvalReport:
    model: str
    adapter: str | None
    policy_version: int
    settings: dict
    overall: Metrics
    per_pattern: dict[str, Metrics]
    candidates: list[CandidateOutcome] = field(repr=False)
    seconds: float = 0.0
    import_name_errors: int = 0  # candidates failed by a NameError on a name the task imports

    def to_dict(self, with_candidates: bool = True) -> dict:
        data = {"model": self.model, "adapter": self.adapter, "policy_version": self.policy_version,
                "settings": self.settings, "seconds": round(self.seconds, 2),
                "import_name_errors": self.import_name_errors, "overall": self.overall.to_dict(),
                "per_pattern": {p: m.to_dict() for p, m in self.per_pattern.items()}}
        if with_candidates:
            data["candidates"] = [asdict(c) for c in self.candidates]
        return data

    def write_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2))
        return path


def hf_generate(backend, include_error_context: bool = False, max_error_chars: int = 2000) -> Generate:
    """A Generate over a GenerationBackend with a Hugging Face tokenizer, prompting as the
    generator does with the same `include_error_context` and `max_error_chars`."""
    def generate(tasks: Sequence[dict], params: SamplingParams) -> list[list[str]]:
        prompts = [render_task_prompt(backend.tokenizer, t, include_error_context, max_error_chars) for t in tasks]
        return [[s.text for s in group] for group in backend.generate(prompts, params)]

    return generate


def load_generate(model_dir: str | Path, adapter: str | Path | None = None, policy_version: int = 1,
                  device: str = "auto", backend: str = "transformers", compute_type: str = "float32",
                  include_error_context: bool = False, max_error_chars: int = 2000) -> Generate:
    """A generation backend on `model_dir`, wearing `adapter` (a LoRA or full policy dir) if given.

    The transformers backend is the exact reference; ctranslate2 at float32 agrees with it
    to ~1e-4 in logprob and is about twice as fast on a CPU; at int8 it is the generator's
    quantized policy (faster again, not the learner's exact model).
    """
    from producers.generator.backends import make_backend
    from producers.generator.config import GeneratorConfig

    engine = make_backend(GeneratorConfig(model_dir=Path(model_dir), backend=backend, compute_type=compute_type,
                                          device=device))
    if adapter is not None:
        engine.load_policy(max(policy_version, 1), str(adapter))
    return hf_generate(engine, include_error_context, max_error_chars)


def _rollout(task: dict, text: str, index: int, size: int, version: int, seed: int) -> dict:
    """The rollout fields the evaluator reads (tokens are not needed to score a repair)."""
    return {"rollout_id": f"eval-{task['task_id']}-{index}", "group_id": f"eval-{task['task_id']}",
            "task_id": task["task_id"], "sample_index": index, "group_size": size, "policy_version": version,
            "prompt_token_ids": [], "completion_token_ids": [], "behaviour_logprobs": [], "finish_reason": "stop",
            "completion_text": text, "created_at_ms": int(time.time() * 1000), "sampling_seed": seed}


def _outcome(task: dict, fb: dict, greedy: bool) -> CandidateOutcome:
    passed = fb["tests_total"] > 0 and min(fb["pass_fraction_runs"]) == 1.0
    return CandidateOutcome(task_id=task["task_id"], bug_pattern=task["bug_pattern"], greedy=greedy, passed=passed,
                            pass_fraction=min(fb["pass_fraction_runs"]), tree_edit_distance=fb["tree_edit_distance"],
                            style_class=fb["style_class"], hack_flags=tuple(fb["hack_flags"]),
                            completion_text=fb["completion_text"], error_kind=fb["error_kind"],
                            error_message=fb["error_message"][:300])


async def _score(tasks: list[dict], greedy: list[list[str]], sampled: list[list[str]], pool: SandboxPool,
                 cfg: EvaluatorConfig, version: int, seed: int) -> list[CandidateOutcome]:
    jobs = []
    for task, g, s in zip(tasks, greedy, sampled):
        texts = [(text, True) for text in g] + [(text, False) for text in s]
        for i, (text, is_greedy) in enumerate(texts):
            jobs.append((task, is_greedy, _rollout(task, text, i, len(texts), version, seed)))
    # the pool bounds the parallelism; gather only keeps every worker busy
    feedback = await asyncio.gather(*(aevaluate_rollout(task, r, pool, cfg) for task, _, r in jobs))
    return [_outcome(task, fb, is_greedy) for (task, is_greedy, _), fb in zip(jobs, feedback)]


def evaluate_policy(model_dir: str | Path | None, tasks: Sequence[dict], *, adapter: str | Path | None = None,
                    k: int = 4, n: int | None = None, temperature: float = 0.8, max_new_tokens: int = 256,
                    pool: SandboxPool, seed: int = 0, policy_version: int = 0, generate: Generate | None = None,
                    evaluator: EvaluatorConfig = EVAL_EVALUATOR, chunk_tasks: int = 4,
                    progress: bool = False, greedy_only: bool = False, backend: str = "transformers",
                    compute_type: str = "float32", include_error_context: bool = False,
                    max_error_chars: int = 2000) -> EvalReport:
    """Evaluate a policy on `tasks` (normalised bug-set records).

    One greedy repair per task (success@1) and, unless `greedy_only`, n >= k samples at
    `temperature` (pass@1 and pass@k by the unbiased estimator; n defaults to k). `generate`
    replaces the policy (tests); without it `backend` is loaded from `model_dir`.
    Tasks go through generation and the sandbox `chunk_tasks` at a time, so `progress`
    can show tasks done, greedy successes so far and the time left. `include_error_context`
    shows each task's visible test and its error in the prompt (a loaded backend only; a
    given `generate` renders its own prompts).
    """
    n = n or k
    if not tasks:
        raise ValueError("no tasks to evaluate")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    t0 = time.monotonic()
    generate_is_loaded = generate is None
    if generate is None:
        if model_dir is None:
            raise ValueError("give model_dir or a generate callable")
        generate = load_generate(model_dir, adapter, policy_version, backend=backend, compute_type=compute_type,
                                 include_error_context=include_error_context, max_error_chars=max_error_chars)
    tasks = list(tasks)
    outcomes: list[CandidateOutcome] = []
    with _TaskProgress(len(tasks), enabled=progress) as bar:
        for start in range(0, len(tasks), chunk_tasks):
            chunk = tasks[start:start + chunk_tasks]
            greedy = generate(chunk, SamplingParams(n=1, temperature=0.0, max_new_tokens=max_new_tokens, seed=seed))
            sampled = [[] for _ in chunk] if greedy_only else generate(
                chunk, SamplingParams(n=n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed))
            if len(greedy) != len(chunk) or len(sampled) != len(chunk):
                raise ValueError("generate returned a different number of groups than tasks")
            scored = asyncio.run(_score(chunk, greedy, sampled, pool, evaluator, policy_version, seed))
            outcomes += scored
            bar.advance(len(chunk), sum(o.passed for o in scored if o.greedy))
    settings = {"k": k, "n": 0 if greedy_only else n, "greedy_only": greedy_only, "temperature": temperature,
                "max_new_tokens": max_new_tokens, "seed": seed, "tasks": len(tasks),
                "evaluator_version": evaluator.version, "backend": backend if generate_is_loaded else "given",
                "compute_type": compute_type if generate_is_loaded and backend == "ctranslate2" else None,
                "include_error_context": include_error_context if generate_is_loaded else None,
                "tasks_with_error_context": sum(bool(t.get("error_context")) for t in tasks)}
    return _report(model_dir, adapter, policy_version, settings, tasks, outcomes, time.monotonic() - t0)


def _report(model_dir, adapter, policy_version: int, settings: dict, tasks: Sequence[dict],
            outcomes: list[CandidateOutcome], seconds: float) -> EvalReport:
    ks = sorted({1, settings["k"]})
    return EvalReport(model=str(model_dir), adapter=str(adapter) if adapter else None, policy_version=policy_version,
                      settings=settings, overall=summarise(outcomes, ks), per_pattern=summarise_by_pattern(outcomes, ks),
                      candidates=outcomes, seconds=seconds, import_name_errors=task_import_name_errors(tasks, outcomes))


def rescore(report: dict, tasks: Sequence[dict], pool: SandboxPool, evaluator: EvaluatorConfig) -> EvalReport:
    """The candidates of a written report (its `to_dict()`), scored again by `evaluator`:
    the same completions under another rule, without generating again."""
    by_id = {t["task_id"]: t for t in tasks}
    greedy: dict[str, list[str]] = {}
    sampled: dict[str, list[str]] = {}
    for c in report["candidates"]:
        if c["task_id"] not in by_id:
            raise ValueError(f"report candidate of task {c['task_id']!r}, which the bug set does not hold")
        (greedy if c["greedy"] else sampled).setdefault(c["task_id"], []).append(c["completion_text"])
    chosen = [by_id[task_id] for task_id in greedy]
    t0 = time.monotonic()
    outcomes = asyncio.run(_score(chosen, [greedy[t["task_id"]] for t in chosen],
                                  [sampled.get(t["task_id"], []) for t in chosen], pool, evaluator,
                                  report["policy_version"], report["settings"]["seed"]))
    settings = {**report["settings"], "evaluator_version": evaluator.version}
    return _report(report["model"], report["adapter"], report["policy_version"], settings, chosen, outcomes,
                   time.monotonic() - t0)


_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")


def task_import_name_errors(tasks: Sequence[dict], outcomes: Sequence[CandidateOutcome]) -> int:
    """Candidates that failed on a NameError for a name their task's module-level imports bind."""
    names = {t["task_id"]: task_import_names(t["buggy_code"]) for t in tasks}
    count = 0
    for o in outcomes:
        match = _NAME_ERROR.search(o.error_message)
        count += bool(match and match.group(1) in names.get(o.task_id, ()))
    return count


class _TaskProgress:
    """A progress bar on stderr: tasks done, greedy successes so far, time left."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.successes = total, enabled, 0

    def __enter__(self) -> "_TaskProgress":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("tasks, {task.fields[successes]} solved (greedy)"),
                                TimeRemainingColumn(), console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task("eval", total=self.total, successes=0)
        return self

    def advance(self, tasks: int, successes: int) -> None:
        self.successes += successes
        if self.enabled:
            self.bar.update(self.task, advance=tasks, successes=self.successes)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.stop()


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def render_table(report: EvalReport, console=None) -> None:
    """Print the overall and per-pattern metrics in 80 columns: short headers, a legend below
    that says which candidates each mean covers."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    ks = sorted(report.overall.pass_at_k)
    policy = Path(report.adapter).name if report.adapter else Path(report.model).name
    table = Table(title=f"eval: {policy} (policy v{report.policy_version})", box=box.SIMPLE_HEAD,
                  show_edge=False, padding=0)
    for col in ["pattern", "tasks", "s@1", *[f"p@{k}" for k in ks], "pf", "ted", "clean", "hack", "hfix"]:
        table.add_column(col, justify="left" if col == "pattern" else "right", no_wrap=True)
    for name, m in [("ALL", report.overall), *report.per_pattern.items()]:
        table.add_row(name, str(m.tasks), _fmt(m.success_at_1), *[_fmt(m.pass_at_k.get(k)) for k in ks],
                      _fmt(m.mean_pass_fraction), _fmt(m.mean_tree_edit_distance_success), _fmt(m.style_clean_share),
                      _fmt(m.hack_share), _fmt(m.hacked_success_share))
    console = console or Console()
    console.print(table)
    console.print()
    for line in table_legend(report):
        console.print(line, highlight=False, soft_wrap=False)


def table_legend(report: EvalReport) -> list[str]:
    """What each column of `render_table` means and over which candidates it is taken."""
    n = report.settings.get("n", 0)
    every = "the greedy repairs" if not n else f"all candidates (1 greedy + {n} samples a task)"
    lines = ["s@1   greedy repair passes every test, share of tasks"]
    lines += [f"p@{k}   unbiased pass@{k} over the {n} samples of a task, mean over tasks"
              for k in sorted(report.overall.pass_at_k)]
    lines += ["pf    mean pass fraction",
              "ted   mean edit distance buggy -> candidate",
              "clean share of black- and flake8-clean candidates",
              "hack  share of candidates with a hack flag",
              "hfix  share of passing candidates with a hack flag",
              f"pf, clean, hack: over {every}",
              "ted, hfix: over passing candidates only"]
    return lines


def publish_eval_metric(report: EvalReport, bootstrap: str, eval_set: str = "", config_id: str = "",
                        topics: Topics = Topics()) -> dict:
    """Send the report's headline numbers as an `eval` Metric (read by the drift query
    proxy_vs_heldout); step is the policy version."""
    from infra.platform.kafka_io import EventProducer

    values = {"success_at_1": report.overall.success_at_1 or 0.0,
              "mean_pass_fraction": report.overall.mean_pass_fraction}
    if report.overall.pass_at_k:  # a greedy-only evaluation has no samples
        values["pass_at_k"] = report.overall.pass_at_k[max(report.overall.pass_at_k)]
    record = {"source": "eval", "step": report.policy_version, "config_id": config_id, "values": values,
              "labels": {"policy_version": str(report.policy_version), "eval_set": eval_set,
                         "k": str(report.settings["k"])}}
    producer = EventProducer(bootstrap)
    sent = producer.send(topics.metrics, "eval", "Metric", record)
    producer.flush()
    return sent
