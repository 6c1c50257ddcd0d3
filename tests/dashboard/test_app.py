"""The dashboard app over a stored run (Flask's test client): every panel and drift query
answers with rows and a figure, the sample browser filters, a verdict is published and stored."""

import uuid

import pytest
from confluent_kafka import Consumer

from consumers.dashboard.app import create_app
from consumers.dashboard.config import DashboardConfig
from consumers.dashboard.panels import PANELS
from consumers.dashboard.reviews import ReviewPublisher
from consumers.drift.queries import query_names
from infra.platform.topics import Topics
from schemas.codec import decode
from schemas.code_fingerprint import code_fingerprint
from tests.dashboard import history
from tests.drift import events


@pytest.fixture(scope="module")
def client(run_source):
    app = create_app(DashboardConfig(store="test"), run_source)
    return app.test_client()


def test_the_page_lists_every_panel_and_serves_plotly(client):
    page = client.get("/").get_data(as_text=True)
    assert all(f'id="panel-{p.name}"' in page for p in PANELS)
    script = client.get("/plotly.js")
    assert script.status_code == 200 and b"Plotly" in script.data[:5000]


def test_the_default_config_is_the_one_with_most_advantages(client):
    configs = client.get("/api/configs").get_json()["configs"]
    assert [c["config_id"] for c in configs] == ["base", "tuned"]  # tuned lacks one rollout


@pytest.mark.parametrize("panel", [p.name for p in PANELS])
def test_every_panel_answers_rows_and_a_figure_with_data(client, panel):
    answer = client.get(f"/api/panel/{panel}").get_json()
    assert answer["rows"], answer
    traces = answer["figure"]["data"]
    assert traces and any(any(v is not None for v in t["y"]) for t in traces)


def test_panel_values_come_from_the_history(client):
    rows = client.get("/api/panel/pass_rate?config=base").get_json()["rows"]
    expected = {v: sum(sum(by) for by in p.values()) / (8 * events.TESTS) for v, p in events.PASSED.items()}
    assert {r["policy_version"]: round(r["pass_rate"], 6) for r in rows} == {v: round(x, 6) for v, x in expected.items()}
    zero = client.get("/api/panel/zero_variance?config=base").get_json()["rows"]
    # version 1's wrong_operator group passed nothing in every rollout: one of its two groups is flat
    assert {r["policy_version"]: r["zero_variance_share"] for r in zero}[1] == 0.5


def test_kl_is_a_gap_where_it_was_not_measured(client):
    rows = client.get("/api/panel/kl").get_json()["rows"]
    by_step = {r["step"]: r["kl_ref"] for r in rows}
    assert by_step[3] is None and by_step[0] == pytest.approx(0.01)


@pytest.mark.parametrize("name", [n for n in query_names()])
def test_every_drift_query_answers(client, name):
    answer = client.get(f"/api/drift/{name}?config=base&config_b=tuned")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["rows"]


def test_a_bad_parameter_is_a_400_not_a_crash(client):
    assert client.get("/api/panel/pass_rate?since=yesterday").status_code == 400
    assert client.get("/api/samples?kind=worst").status_code == 400
    assert client.get("/api/panel/nope").status_code == 404


def test_top_samples_come_in_reward_order_with_diff_tests_and_components(client):
    samples = client.get("/api/samples?kind=top&config=base&limit=5").get_json()["samples"]
    rewards = [s["reward_enhanced"] for s in samples]
    assert len(samples) == 5 and rewards == sorted(rewards, reverse=True)
    best = samples[0]
    assert best["buggy_code"] in history.BUGGY.values()
    assert best["diff"].startswith("--- buggy") and "\n+" in best["diff"]
    assert len(best["tests"]) == events.TESTS and all(t["passed"] for t in best["tests"])
    assert {r["component"] for r in best["reward"]} == {"style", "test"}
    assert "advantage" in best and best["code_fingerprint"] == code_fingerprint(best["completion_code"])


def test_hacked_samples_are_the_flagged_ones_and_filters_apply(client):
    hacked = client.get("/api/samples?kind=hacked&config=base&limit=50").get_json()["samples"]
    flagged = {events.rollout_id(*key) for key in events.HACKS}
    assert {s["rollout_id"] for s in hacked} == flagged
    # renamed copies of one hack share one fingerprint
    assert len({s["code_fingerprint"] for s in hacked if s["bug_pattern"] == "off_by_one"}) == 1
    narrow = client.get("/api/samples?kind=hacked&config=base&pattern=wrong_operator&version_min=3&version_max=3"
                        ).get_json()["samples"]
    assert {s["rollout_id"] for s in narrow} == {events.rollout_id(3, "wrong_operator", k) for k in (0, 1)}


def test_random_samples_follow_the_seed(client):
    def ids(seed):
        return [s["rollout_id"] for s in client.get(f"/api/samples?kind=random&config=base&limit=6&seed={seed}"
                                                    ).get_json()["samples"]]
    assert ids(1) == ids(1) and len(ids(1)) == 6
    assert any(ids(seed) != ids(1) for seed in (2, 3, 4))


def test_a_reviewed_sample_shows_its_verdict(client):
    samples = client.get("/api/samples?kind=top&config=base&limit=50").get_json()["samples"]
    verdicts = {s["rollout_id"]: s["review_verdict"] for s in samples}
    assert verdicts[history.REVIEWED_ROLLOUT] == "fine"


def test_without_a_broker_reviewing_is_refused(client):
    answer = client.post("/api/reviews", json={"rollout_id": history.REVIEWED_ROLLOUT, "config_id": "base",
                                               "verdict": "fine"})
    assert answer.status_code == 409


def test_a_verdict_is_published_on_the_reviews_topic_and_stored(run_source, kafka_bootstrap):
    topics = Topics(prefix=f"test-dash-{uuid.uuid4().hex[:8]}.")
    publisher = ReviewPublisher(kafka_bootstrap, topics, run_source)
    client = create_app(DashboardConfig(store="test", topics=topics), run_source, publisher).test_client()
    target = events.rollout_id(2, "wrong_operator", 1)  # flagged swallowed_exception and hardcoded_output

    refused = client.post("/api/reviews", json={"rollout_id": target, "config_id": "base", "verdict": "hack"})
    assert refused.status_code == 400  # a hack needs its class
    answer = client.post("/api/reviews", json={"rollout_id": target, "config_id": "base", "verdict": "hack",
                                               "hack_class": "swallowed_exception", "note": "returns None on error"})
    assert answer.status_code == 201, answer.get_json()
    review = answer.get_json()["review"]

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topics.reviews])
    message = None
    for _ in range(30):
        message = consumer.poll(1.0)
        if message is not None and not message.error():
            break
    consumer.close()
    assert message is not None and message.key() == target.encode()
    published = decode(message.value())
    assert published["event_id"] == review["event_id"] and published["verdict"] == "hack"
    assert published["automatic_flags"] == ["hardcoded_output", "swallowed_exception"]
    assert published["code_fingerprint"] == code_fingerprint(history.HACK.format(name="double", op="+", var="renamed"))

    stored = run_source.run("drift:review_agreement", {"since": "1970-01-01 00:00:00.000"})
    assert {(r["verdict"], r["hack_class"], r["reviews"], r["agreed"]) for r in stored} == {
        ("fine", "", 1, 1), ("hack", "swallowed_exception", 1, 1)}
