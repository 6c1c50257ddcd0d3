"""Dashboard page load in headless Chromium against the same queries run straight on the store.

    python benchmarks/dashboard_load.py [--rollouts 1200] [--repeats 3] [--screenshots DIR]
    python benchmarks/dashboard_load.py --store runs/NAME/chdb   # a stored run instead (a copy is timed)

A chDB store in a temporary folder is filled with a run of --rollouts rollouts (groups of
4 over 30 policy versions, 4 bug patterns, fenced completions, 5 test outcomes each, hack
flags on a tenth, advantages under two reshaping configs with all seven reward
components, learner metrics per version). Baseline: every panel's query and the sample
browser's top query run one after another on that store, in this process (what the page
cannot do faster). Page: the dashboard served from this process, Chromium opening the
charts page until every panel has drawn data, and the samples page until its cards show;
the first load fetches plotly.js, later ones find it in the browser cache. Printed: each
time, and page / baseline. Needs Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from selenium.webdriver.common.by import By  # noqa: E402

from consumers.dashboard.app import create_app  # noqa: E402
from consumers.dashboard.config import DashboardConfig  # noqa: E402
from consumers.dashboard.panels import PANELS  # noqa: E402
from consumers.dashboard.queries import chart_query_parameters, sample_parameters  # noqa: E402
from consumers.dashboard.source import StoreSource  # noqa: E402
from consumers.store import ChdbStore  # noqa: E402
from schemas.records import build_record  # noqa: E402
from tests.dashboard.browser import PANEL_POINTS_JS, chrome, serving  # noqa: E402

T0_MS = 1_700_000_040_000
VERSIONS = 30
GROUP = 4
PATTERNS = ("off_by_one", "wrong_operator", "swapped_args", "missing_return")
COMPONENTS = ("test", "precision", "style", "hack", "progress", "robust", "exec")
CONFIGS = ("full", "raw")
ENVELOPE_TOKENS = {"prompt_token_ids": list(range(32)), "completion_token_ids": list(range(32)),
                   "behaviour_logprobs": [-0.5] * 32, "finish_reason": "stop"}


def buggy(task: int) -> str:
    return f"def f{task}(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total - 1\n"


def history(rollouts: int, seed: int = 0) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    tables: dict[str, list[dict]] = {"tasks": [], "feedback": [], "advantages": [], "metrics": [], "reviews": []}
    tasks = 50
    for t in range(tasks):
        tables["tasks"].append(build_record(
            "Task", event_id=f"task-{t}", created_at_ms=T0_MS, task_id=f"t{t}", function_id=f"f{t}", source="mbpp",
            split="train", entry_point=f"f{t}", reference_code=buggy(t).replace(" - 1", ""), buggy_code=buggy(t),
            tests=[f"assert f{t}([1]) == 1"], bug_pattern=PATTERNS[t % 4], difficulty=0.5))
    groups = rollouts // GROUP
    for g in range(groups):
        version = g * VERSIONS // groups
        task = rng.randrange(tasks)
        time_ms = T0_MS + g * 3_000
        group_rows = []
        for k in range(GROUP):
            rid = f"r{g}-{k}"
            passed = [rng.random() < 0.2 + 0.02 * version for _ in range(5)]
            flags = ["except_pass"] if rng.random() < 0.1 else []
            code = buggy(task).replace(" - 1", "" if all(passed) else " - 1")
            tables["feedback"].append(build_record(
                "Feedback", event_id=f"fb-{rid}", created_at_ms=time_ms + k, rollout_id=rid, group_id=f"g{g}",
                task_id=f"t{task}", bug_pattern=PATTERNS[task % 4], difficulty=0.5, sample_index=k, group_size=GROUP,
                policy_version=version, evaluator_version="e1", repeats=1, tests_total=5, tests_passed=sum(passed),
                pass_fraction_runs=[sum(passed) / 5],
                test_outcomes=[{"index": i, "passed": ok, "error_kind": "none" if ok else "wrong_answer",
                                "message": "" if ok else "expected 3, got 2", "runtime_ms": 1.0}
                               for i, ok in enumerate(passed)],
                error_kind="none" if all(passed) else "wrong_answer", runtime_ms=5.0, tree_edit_distance=0.1,
                style_class="clean", hack_flags=flags, completion_text=f"```python\n{code}```", **ENVELOPE_TOKENS))
            group_rows.append((rid, sum(passed) / 5, flags))
        for config in CONFIGS:
            rewards = [raw - (1.0 if flags and config == "full" else 0.0) for _, raw, flags in group_rows]
            mean, std = statistics.fmean(rewards), statistics.pstdev(rewards)
            for k, ((rid, raw, flags), reward) in enumerate(zip(group_rows, rewards)):
                components = {c: rng.random() for c in COMPONENTS} | {"test": raw}
                tables["advantages"].append(build_record(
                    "Advantage", event_id=f"adv-{config}-{rid}", created_at_ms=time_ms + 500 + k, config_id=config,
                    rollout_id=rid, feedback_event_id=f"fb-{rid}", group_id=f"g{g}", task_id=f"t{task}",
                    bug_pattern=PATTERNS[task % 4], sample_index=k, group_size=GROUP, group_members=GROUP,
                    group_complete=True, policy_version=version, reward_raw=raw, components=components,
                    weights={c: 1.0 if c == "test" else 0.1 for c in COMPONENTS}, reward_enhanced=reward,
                    reward_normalised=0.0 if std == 0 else (reward - mean) / std, ema_baseline=mean,
                    advantage=0.0 if std == 0 else (reward - mean) / std, global_count=g, global_mean=mean,
                    global_std=std, group_mean=mean, group_std=std, warmup=False, hack_flags=flags, **ENVELOPE_TOKENS))
    for i, row in enumerate(tables["feedback"][:: max(1, len(tables["feedback"]) // 20)]):
        verdict = "hack" if row["hack_flags"] or i % 3 == 0 else "fine"
        tables["reviews"].append(build_record(
            "Review", event_id=f"review-{i}", created_at_ms=row["created_at_ms"] + 1000, rollout_id=row["rollout_id"],
            config_id=CONFIGS[0], verdict=verdict, hack_class="except_pass" if verdict == "hack" else "",
            code_fingerprint="", automatic_flags=row["hack_flags"]))
    for step in range(VERSIONS):
        for config in CONFIGS:
            tables["metrics"].append(build_record(
                "Metric", event_id=f"learn-{config}-{step}", created_at_ms=T0_MS + step * 60_000, source="learner",
                step=step, config_id=config,
                values={"loss/kl_ref": 0.01 * step, "kl_measured": float(step % 2 == 0), "kl_coef": 0.02,
                        "loss/is_truncated_share": 0.05, "loss/is_masked_share": 0.01, "loss/clip_low_frac": 0.1,
                        "loss/clip_high_frac": 0.2, "lag_mean": 1.0 + rng.random(), "dropped_stale": 0.0,
                        "grad_norm": 1.0}))
    return tables


def queries_alone(source: StoreSource, config: str) -> float:
    """Every panel's query and the top samples, one after another, straight on the store."""
    start = time.perf_counter()
    for panel in PANELS:
        source.run(panel.query, chart_query_parameters(panel.query, None, config if panel.needs_config else None))
    source.run("samples:top", sample_parameters("top", config))
    return time.perf_counter() - start


def _until(condition, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not shown after {timeout_s:.0f}s")
        time.sleep(0.02)


def panels_with_rows(source: StoreSource, config: str) -> list:
    """The panels whose query has rows in this store (a stored run may have no reviews, say)."""
    return [p for p in PANELS
            if source.run(p.query, chart_query_parameters(p.query, None, config if p.needs_config else None))]


def page_load(driver, url: str, panels: list) -> float:
    start = time.perf_counter()
    driver.get(url + "/")
    _until(lambda: all(driver.execute_script(PANEL_POINTS_JS, f"panel-{p.name}") > 0 for p in panels),
           "every panel with data")
    return time.perf_counter() - start


def samples_load(driver, url: str) -> float:
    start = time.perf_counter()
    driver.get(url + "/samples")
    _until(lambda: driver.find_elements(By.CSS_SELECTOR, ".sample"), "the sample cards")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=1200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--screenshots", type=Path, default=None, help="save a PNG of each page here")
    parser.add_argument("--store", type=Path, default=None,
                        help="a run's chDB folder instead of the generated history (copied first: never changed)")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request would bury the figures
    with tempfile.TemporaryDirectory() as folder:
        if args.store:
            shutil.copytree(args.store, Path(folder) / "chdb", symlinks=True)  # chDB links metadata to its data
        store = ChdbStore(Path(folder) / "chdb")
        store.init_schema()  # a stored run from before a table existed gains it
        if not args.store:
            for table, rows in history(args.rollouts).items():
                store.insert(table, rows)
        source = StoreSource(store)
        rollouts, configs = store.query("SELECT (SELECT count() FROM rollouts FINAL), "
                                        "(SELECT groupUniqArray(config_id) FROM advantages)").rows[0]
        config = CONFIGS[0] if not args.store else sorted(configs)[0]
        print(f"store: {rollouts} rollouts, configs {sorted(configs)}")
        baseline = [queries_alone(source, config) for _ in range(args.repeats)]
        drawn = panels_with_rows(source, config)
        print(f"panels with data: {len(drawn)} of {len(PANELS)}")
        app = create_app(DashboardConfig(store=folder, refresh_s=3600), source)
        with serving(app) as url:
            driver = chrome()
            try:
                charts = [page_load(driver, url, drawn) for _ in range(args.repeats)]
                samples = [samples_load(driver, url) for _ in range(args.repeats)]
                if args.screenshots:
                    args.screenshots.mkdir(parents=True, exist_ok=True)
                    for name, path in (("charts", "/"), ("samples", "/samples")):
                        driver.set_window_size(1400, 2400 if name == "charts" else 1600)
                        page_load(driver, url, drawn) if name == "charts" else samples_load(driver, url)
                        driver.save_screenshot(str(args.screenshots / f"dashboard-{name}.png"))
            finally:
                driver.quit()
        source.close()
    print("queries alone (every panel + top samples), s:", " ".join(f"{t:.2f}" for t in baseline))
    print("charts page, every panel drawn, s (first fetches plotly.js):", " ".join(f"{t:.2f}" for t in charts))
    print("samples page, cards shown, s:", " ".join(f"{t:.2f}" for t in samples))
    print(f"charts page / queries alone (best of each): {min(charts) / min(baseline):.2f}x")


if __name__ == "__main__":
    main()
