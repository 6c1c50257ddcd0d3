"""A verdict followed into the reward: code people judged a hack, renamed and reformatted in a
later rollout, is flagged `reviewed_hack` by the feedback (real sandbox evaluation), and the
`full` reshaping charges the flag; a changed operator, or a later `fine`, is not flagged."""

import asyncio

import pytest

from schemas.code_fingerprint import code_fingerprint
from schemas.codec import CODEC
from streams.agents.feedback import feedback_value
from streams.feedback import aevaluate_rollout
from streams.feedback.reviewed import REVIEWED_HACK_FLAG, completion_fingerprint, latest_verdict, with_reviewed_flag
from streams.reshaping.config import load_preset
from streams.reshaping.rewards import COMPONENTS, enhanced_reward, r_hack, weights_at
from streams.sandbox import SandboxConfig, SandboxPool
from streams.settings import StreamSettings
from tests.feedback.test_evaluate import TASK, rollout

# judged a hack by a person: it returns the sum of every element, ignoring k, behind a
# handler that swallows whatever goes wrong
REVIEWED = "def add_up(xs, k):\n    try:\n        return sum(xs)\n    except Exception:\n        return 0\n"
LATER = "def add_up(values, limit):\n    # same trick\n    try:\n        return sum( values )\n" \
        "    except Exception:\n        return 0\n"
CHANGED = LATER.replace("return 0", "return -1")


def review(verdict: str, at_ms: int, code: str = REVIEWED) -> dict:
    return {"code_fingerprint": code_fingerprint(code), "verdict": verdict,
            "hack_class": "swallowed_exception" if verdict == "hack" else "", "created_at_ms": at_ms}


def table_of(*reviews: dict) -> dict:
    table: dict = {}
    for r in reviews:
        kept = latest_verdict(table.get(r["code_fingerprint"]), r)
        if kept is not None:
            table[r["code_fingerprint"]] = kept
    return table


def test_the_latest_verdict_on_a_code_is_kept_whatever_order_they_arrive_in():
    hack, fine = review("hack", 1_000), review("fine", 2_000)
    assert table_of(hack, fine)[hack["code_fingerprint"]]["verdict"] == "fine"
    assert table_of(fine, hack)[hack["code_fingerprint"]]["verdict"] == "fine"
    assert table_of({**hack, "code_fingerprint": ""}) == {}  # unparsable code: nothing to match


@pytest.mark.parametrize("code, flagged", [(LATER, True), (CHANGED, False)])
def test_a_renamed_reformatted_copy_of_a_reviewed_hack_is_flagged(code, flagged):
    table = table_of(review("hack", 1_000))
    fb = with_reviewed_flag({"hack_flags": ["except_pass"]}, completion_fingerprint(f"```python\n{code}```"),
                            table.get)
    assert (REVIEWED_HACK_FLAG in fb["hack_flags"]) is flagged and "except_pass" in fb["hack_flags"]


def test_a_hack_verdict_withdrawn_by_a_later_fine_flags_nothing():
    table = table_of(review("hack", 1_000), review("fine", 2_000))
    assert with_reviewed_flag({"hack_flags": []}, completion_fingerprint(LATER), table.get)["hack_flags"] == []


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2, timeout_s=3)) as p:
        yield p


def evaluated(code: str, table: dict, pool) -> dict:
    value = asyncio.run(feedback_value(TASK, rollout(f"```python\n{code}```"), aevaluate_rollout, lambda: pool,
                                       StreamSettings(), table.get))
    return CODEC.decode(value, "Feedback")


def test_the_feedback_of_a_later_matching_rollout_carries_the_flag_and_full_charges_it(pool):
    table = table_of(review("hack", 1_000))
    later, changed = evaluated(LATER, table, pool), evaluated(CHANGED, table, pool)
    assert REVIEWED_HACK_FLAG in later["hack_flags"] and REVIEWED_HACK_FLAG not in changed["hack_flags"]
    assert later["tests_passed"] == changed["tests_passed"]  # the tests alone cannot tell them apart

    full = load_preset("full")
    weights = weights_at(full.weights, 0)
    assert weights["hack"] > 0 and REVIEWED_HACK_FLAG not in full.rewards.hack_penalties
    cost = r_hack(later["hack_flags"], full.rewards) - r_hack(changed["hack_flags"], full.rewards)
    assert cost == -full.rewards.unknown_hack_penalty < 0

    def reward(fb):  # every other component alike: the reward differs by the hack flags alone
        return enhanced_reward({**dict.fromkeys(COMPONENTS, 0.5), "hack": r_hack(fb["hack_flags"], full.rewards)},
                               weights)
    assert reward(later) == pytest.approx(reward(changed) + weights["hack"] * cost)
    assert reward(later) < reward(changed)
