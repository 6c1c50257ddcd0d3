"""A small stored run for the dashboard: the drift tests' history (tests/drift/events.py),
with each rollout's completion text, its task's buggy code, reward components beside the
test outcome and one earlier verdict. Everything goes through the real codec."""

from __future__ import annotations

from tests import factories
from tests.drift import events
from tests.factories import roundtrip

BUGGY = {
    "off_by_one": "def add_one(x):\n    return x\n",
    "wrong_operator": "def double(x):\n    return x + 2\n",
}
FIXED = {
    "off_by_one": "def add_one(x):\n    return x + 1\n",
    "wrong_operator": "def double(x):\n    return x * 2\n",
}
# a hack: the same swallowing handler in every flagged rollout, with its own local names
HACK = "def {name}({var}):\n    try:\n        return {var} {op} 1\n    except Exception:\n        pass\n"


def completion(fact: dict) -> str:
    """A fenced completion: the fix when every test passed, the hack when flagged, else the buggy code."""
    name = BUGGY[fact["pattern"]].split("(")[0].removeprefix("def ")
    if fact["hack_flags"]:
        code = HACK.format(name=name, op="+", var=f"value_{fact['k']}")
    elif fact["passed"] == events.TESTS:
        code = FIXED[fact["pattern"]]
    else:
        code = BUGGY[fact["pattern"]]
    return f"```python\n{code}```"


def tasks() -> list[dict]:
    return [roundtrip("Task", factories.task(event_id=f"task-{p}", task_id=f"t-{p}", bug_pattern=p,
                                             buggy_code=BUGGY[p], reference_code=FIXED[p],
                                             entry_point=BUGGY[p].split("(")[0].removeprefix("def ")))
            for p in events.PATTERNS]


def feedback() -> list[dict]:
    return [{**events.feedback(f), "completion_text": completion(f)} for f in events.rollouts()]


def advantages(config_id: str) -> list[dict]:
    """The drift history's advantages, with a style component (weight 0.1) beside the test outcome."""
    rows = []
    for row in events.advantages(config_id):
        style = 1.0 if row["reward_raw"] == 1.0 else 0.0
        rows.append({**row, "components": {"test": row["reward_raw"], "style": style},
                     "weights": {"test": 1.0, "style": 0.1}})
    return rows


REVIEWED_ROLLOUT = events.rollout_id(0, "off_by_one", 3)  # a full fix, judged fine


def load(store) -> None:
    store.init_schema()
    store.insert("tasks", tasks())
    store.insert("feedback", feedback())
    store.insert("advantages", advantages("base") + advantages("tuned"))
    store.insert("metrics", events.metrics())
    store.insert("reviews", [roundtrip("Review", factories.review(
        event_id="review-0", rollout_id=REVIEWED_ROLLOUT, config_id="base", verdict="fine",
        code_fingerprint="f" * 32))])
