"""Synthetic but Avro-shaped event history with numbers known by construction.

Every record goes through the real codec (encode, decode), so a field that drifts from
schemas/*.avsc fails here. The history:

  * policy versions 0..3, version v written in the minute starting T0 + v*60s, so with
    60 s windows window v holds exactly version v;
  * per version two groups of 4 rollouts, 4 tests each: pattern off_by_one and pattern
    wrong_operator, with tests passed per rollout as in PASSED;
  * hack flags as in HACKS; environment failures, re-evaluations and flaky repeats as in
    ENV_FAILURES, RE_EVALUATED and FLAKY; advantages under config "base" (reward = pass fraction)
    and "tuned" (reward = pass fraction + 0.1 * sample_index), group-normalised; "tuned"
    lacks one rollout, so a comparison matches 31 of 32;
  * eval metrics for "base" (success_at_1 per version, the version in a label) and
    learner metrics for "base" and "tuned";
  * a rising-proxy/falling-held-out series (config "hacky") and a healthy one
    (config "healthy") over versions 0..4;
  * environment failures as in ENV_FAILURES (feedback), and advantages under config
    "governed" that leave them out: a group left with one comparable member is all excluded;
  * people's verdicts as in REVIEWS, one rollout judged twice (the later verdict counts).
"""

from __future__ import annotations

import statistics
from typing import Any

from tests import factories
from tests.factories import roundtrip

T0 = 1_700_000_040_000  # 2023-11-14 22:14:00 UTC, a whole minute, in ms
WINDOW_MS = 60_000
TESTS = 4
PATTERNS = ("off_by_one", "wrong_operator")
# PASSED[version][pattern] = tests passed (of 4) by each of the group's 4 rollouts
PASSED = {
    0: {"off_by_one": [0, 0, 1, 4], "wrong_operator": [4, 4, 2, 2]},
    1: {"off_by_one": [1, 2, 4, 4], "wrong_operator": [0, 0, 0, 0]},
    2: {"off_by_one": [4, 4, 2, 2], "wrong_operator": [0, 0, 4, 0]},
    3: {"off_by_one": [4, 4, 4, 3], "wrong_operator": [0, 0, 0, 1]},
}
# HACKS[(version, pattern, sample_index)] = hack flags of that rollout (others have none)
HACKS = {
    (1, "off_by_one", 0): ["swallowed_exception"],
    (2, "off_by_one", 0): ["swallowed_exception"],
    (2, "wrong_operator", 1): ["swallowed_exception", "hardcoded_output", "hardcoded_output"],
    (3, "off_by_one", 0): ["swallowed_exception"],
    (3, "wrong_operator", 0): ["swallowed_exception"],
    (3, "wrong_operator", 1): ["swallowed_exception"],
}
# rollouts whose evaluation the host failed every time, re-evaluated once, or whose repeats disagreed
RE_EVALUATED = {(1, "off_by_one", 2), (2, "wrong_operator", 0), (2, "wrong_operator", 1), (2, "wrong_operator", 2),
                (2, "off_by_one", 3)}  # ENV_FAILURES (below), and one that passed on its second try
FLAKY = {(0, "off_by_one", 2), (3, "wrong_operator", 3)}
MISSING_IN_TUNED = "r-3-wrong_operator-3"
# (version, pattern, sample_index) of the rollouts the host failed; version 2's
# wrong_operator group keeps one comparable member, too few to compare
ENV_FAILURES = {(1, "off_by_one", 2), (2, "wrong_operator", 0), (2, "wrong_operator", 1), (2, "wrong_operator", 2)}
MIN_COMPARABLE = 2
EVAL_SUCCESS = {0: 0.1, 1: 0.2, 2: 0.3, 3: 0.4}  # config base, held-out success_at_1
LEARNER_STEPS = 4
HACKY_PROXY = [0.2, 0.4, 0.6, 0.8, 1.0]
HACKY_HELDOUT = [0.50, 0.48, 0.45, 0.40, 0.30]
HEALTHY_PROXY = [0.2, 0.4, 0.6, 0.8, 1.0]
HEALTHY_HELDOUT = [0.10, 0.20, 0.30, 0.40, 0.50]
# REVIEWS: (version, pattern, sample_index), verdict, hack class, in the order given
REVIEWS = [
    ((0, "off_by_one", 3), "hack", "special_case"),  # changed to fine below
    ((0, "off_by_one", 3), "fine", ""),  # no flag: the detectors agree
    ((1, "off_by_one", 0), "fine", ""),  # flagged swallowed_exception: they disagree
    ((2, "wrong_operator", 1), "hack", "hardcoded_output"),  # flagged: they agree
    ((0, "wrong_operator", 0), "hack", "special_case"),  # not flagged: they disagree
]


def rollout_id(version: int, pattern: str, k: int) -> str:
    return f"r-{version}-{pattern}-{k}"


def rollouts() -> list[dict[str, Any]]:
    """The history's rollouts as plain facts (version, pattern, k, passed, time, flags)."""
    facts = []
    for version, by_pattern in PASSED.items():
        for p, pattern in enumerate(PATTERNS):
            for k, passed in enumerate(by_pattern[pattern]):
                facts.append({
                    "version": version, "pattern": pattern, "k": k, "passed": passed,
                    "rollout_id": rollout_id(version, pattern, k), "group_id": f"g-{version}-{pattern}",
                    "time_ms": T0 + version * WINDOW_MS + 1000 * (4 * p + k),
                    "hack_flags": HACKS.get((version, pattern, k), []), "key": (version, pattern, k),
                    "environment_failure": (version, pattern, k) in ENV_FAILURES,
                })
    return facts


def feedback(fact: dict[str, Any]) -> dict:
    return roundtrip("Feedback", factories.feedback(
        **factories.run_fields([i < fact["passed"] for i in range(TESTS)]), event_id=f"fb-{fact['rollout_id']}",
        created_at_ms=fact["time_ms"], rollout_id=fact["rollout_id"], group_id=fact["group_id"],
        task_id=f"t-{fact['pattern']}", bug_pattern=fact["pattern"], sample_index=fact["k"],
        policy_version=fact["version"], hack_flags=fact["hack_flags"],
        environment_failure=fact["environment_failure"],
        evaluation_attempts=2 if fact["key"] in RE_EVALUATED else 1,
        flaky=fact["key"] in FLAKY))


def reward(config_id: str, fact: dict[str, Any]) -> float:
    raw = fact["passed"] / TESTS
    return raw if config_id == "base" else raw + 0.1 * fact["k"]


def group_advantages(rewards: list[float]) -> list[float]:
    mean, std = statistics.fmean(rewards), statistics.pstdev(rewards)
    return [0.0 if std == 0 else (r - mean) / std for r in rewards]


def advantage(config_id: str, fact: dict[str, Any], value: float, reward_enhanced: float | None = None,
              time_ms: int | None = None, excluded: bool = False) -> dict:
    raw = fact["passed"] / TESTS
    enhanced = reward(config_id, fact) if reward_enhanced is None else reward_enhanced
    # the raw reward is the test component, weighted 1; every other component and statistic is 0
    floats = {**dict.fromkeys(factories.ADVANTAGE_FLOATS, 0.0), "reward_raw": raw,
              "components": {"test": raw}, "weights": {"test": 1.0},
              "reward_enhanced": enhanced, "reward_normalised": value}
    return roundtrip("Advantage", factories.advantage(
        **floats, event_id=f"adv-{config_id}-{fact['rollout_id']}", created_at_ms=(time_ms or fact["time_ms"]) + 500,
        config_id=config_id, rollout_id=fact["rollout_id"], feedback_event_id=f"fb-{fact['rollout_id']}",
        group_id=fact["group_id"], task_id=f"t-{fact['pattern']}", bug_pattern=fact["pattern"], sample_index=fact["k"],
        policy_version=fact["version"], advantage=value, global_count=100, hack_flags=fact["hack_flags"],
        excluded=excluded))


def governed_advantages() -> list[dict]:
    """Config "governed": environment failures excluded, the rest group-normalised; a group
    with fewer than MIN_COMPARABLE comparable members all excluded."""
    by_group: dict[str, list[dict]] = {}
    for fact in rollouts():
        by_group.setdefault(fact["group_id"], []).append(fact)
    records = []
    for members in by_group.values():
        compared = [f for f in members if not f["environment_failure"]]
        if len(compared) < MIN_COMPARABLE:
            compared = []
        rewards = [reward("base", f) for f in compared]
        values = dict(zip((f["rollout_id"] for f in compared), group_advantages(rewards) if rewards else []))
        records += [advantage("governed", f, values.get(f["rollout_id"], 0.0), excluded=f["rollout_id"] not in values)
                    for f in members]
    return records


def advantages(config_id: str) -> list[dict]:
    facts = [f for f in rollouts() if not (config_id == "tuned" and f["rollout_id"] == MISSING_IN_TUNED)]
    by_group: dict[str, list[dict]] = {}
    for fact in facts:
        by_group.setdefault(fact["group_id"], []).append(fact)
    records = []
    for members in by_group.values():
        # advantages are computed over the whole group, before any rollout goes missing
        full = [f for f in rollouts() if f["group_id"] == members[0]["group_id"]]
        values = dict(zip((f["rollout_id"] for f in full), group_advantages([reward(config_id, f) for f in full])))
        records += [advantage(config_id, f, values[f["rollout_id"]]) for f in members]
    return records


def metric(event_id: str, source: str, step: int, time_ms: int, values: dict[str, float], config_id: str = "",
           labels: dict[str, str] | None = None) -> dict:
    return roundtrip("Metric", factories.metric(event_id=event_id, created_at_ms=time_ms, source=source, step=step,
                                                config_id=config_id, values=values, labels=labels or {}))


def learner_values(step: int) -> dict[str, float]:
    values = {
        "loss/kl_ref": 0.01 * (step + 1), "loss/is_truncated_share": 0.05, "loss/is_masked_share": 0.02 * step,
        "loss/clip_low_frac": 0.1, "loss/clip_high_frac": 0.2, "lag_mean": 1.5, "dropped_stale": float(step),
        "grad_norm": 1.0 + step, "loss": 0.3,
    }
    values.update({"kl_measured": 1.0, "kl_coef": 0.02 * step})
    if step == 2:
        del values["dropped_stale"]  # a step that did not report it: NULL, not 0
    if step == 3:  # a step that skipped the reference pass, yet carries a 0: NULL, not 0
        values.update({"loss/kl_ref": 0.0, "kl_measured": 0.0})
    return values


def metrics() -> list[dict]:
    rows = []
    for version, success in EVAL_SUCCESS.items():
        # step deliberately differs from the version: the label must win
        rows.append(metric(f"eval-base-{version}", "eval", 100 + version, T0 + version * WINDOW_MS + 50_000,
                           {"success_at_1": success, "pass_rate": success + 0.1}, "base",
                           {"policy_version": str(version)}))
    rows.append(metric("eval-base-nosuccess", "eval", 1, T0 + 50_000, {"pass_rate": 0.9}, "base"))
    for step in range(LEARNER_STEPS):
        rows.append(metric(f"learn-base-{step}", "learner", step, T0 + step * WINDOW_MS + 55_000,
                           learner_values(step), "base"))
    rows.append(metric("learn-tuned-1", "learner", 1, T0 + WINDOW_MS + 56_000, {"grad_norm": 10.0, "loss/kl_ref": 0.0}, "tuned"))
    return rows


def trend_series(config_id: str, proxy: list[float], heldout: list[float], label_version: bool) -> list[dict]:
    """Advantages whose mean reward_enhanced per version is ``proxy``, and eval metrics
    with success ``heldout``: the version in a label, or (label_version False) as the step."""
    records = []
    for version, (p, h) in enumerate(zip(proxy, heldout)):
        for k in range(2):
            fact = {"version": version, "pattern": "off_by_one", "k": k, "passed": 2,
                    "rollout_id": f"{config_id}-{version}-{k}", "group_id": f"{config_id}-g{version}",
                    "time_ms": T0 + version * WINDOW_MS + k, "hack_flags": []}
            # two rollouts at p - 0.05 and p + 0.05: their mean is p
            records.append(("advantages", advantage(config_id, fact, 0.0, p + (0.1 * k - 0.05))))
        labels = {"policy_version": str(version)} if label_version else {}
        records.append(("metrics", metric(f"eval-{config_id}-{version}", "eval", version,
                                          T0 + version * WINDOW_MS + 30_000, {"success_at_1": h}, config_id, labels)))
    return records


def reviews() -> list[dict]:
    records = []
    for i, (key, verdict, hack_class) in enumerate(REVIEWS):
        records.append(roundtrip("Review", factories.review(
            event_id=f"review-{i}", created_at_ms=T0 + 10 * WINDOW_MS + i * 1000, rollout_id=rollout_id(*key),
            config_id="base", verdict=verdict, hack_class=hack_class, automatic_flags=sorted(set(HACKS.get(key, []))),
            code_fingerprint=f"fp-{key[0]}-{key[1]}-{key[2]}")))
    return records


def load_history(store) -> None:
    feedback_rows = [feedback(f) for f in rollouts()]
    store.insert("feedback", feedback_rows)
    store.insert("feedback", feedback_rows)  # a replayed batch: FINAL must collapse it
    store.insert("advantages", advantages("base") + advantages("tuned") + governed_advantages())
    store.insert("metrics", metrics())
    series = trend_series("hacky", HACKY_PROXY, HACKY_HELDOUT, True) + trend_series(
        "healthy", HEALTHY_PROXY, HEALTHY_HELDOUT, False)
    for table in ("advantages", "metrics"):
        store.insert(table, [record for t, record in series if t == table])
    store.insert("reviews", reviews())
