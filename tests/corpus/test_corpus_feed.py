"""The corpus built in a run's background: chunks published as they are tested, the cache
written at the end, and a resumed build that does not publish the same tasks twice."""

import uuid

import pytest

from infra.compose.corpus_feed import CorpusFeed
from infra.platform.kafka_io import read_topic
from infra.platform.topics import Topics, TopicSpec, ensure_topics
from producers.corpus import CorpusBuildConfig, cached_corpus, read_tasks

pytestmark = pytest.mark.kafka

CONFIG = CorpusBuildConfig(max_functions=3, patterns=("operator_swap", "variable_rename"))


@pytest.fixture
def topics(kafka_admin) -> Topics:
    topics = Topics(prefix=f"feed-{uuid.uuid4().hex[:8]}.")
    ensure_topics(kafka_admin, [TopicSpec(topics.tasks, 2, 1, {})])
    return topics


def train_ids_on_topic(bootstrap, topics: Topics) -> list[str]:
    return [e.record["task_id"] for e in read_topic(topics.tasks, bootstrap)]


def run_feed(bootstrap, tmp_path, marker, topics):
    said = []
    feed = CorpusFeed(CONFIG, bootstrap, marker, said.append, cache_dir=tmp_path / "cache", topics=topics).start()
    feed.finish(said.append)
    assert feed.error is None, feed.error
    return feed, said


def test_background_build_publishes_every_train_task_once_and_caches(kafka_bootstrap, tmp_path, topics):
    marker = tmp_path / "run" / ".tasks-published"
    marker.parent.mkdir()
    feed, said = run_feed(kafka_bootstrap, tmp_path, marker, topics)
    corpus = cached_corpus(CONFIG, tmp_path / "cache")
    assert corpus is not None and marker.read_text() == corpus.name
    train = [t["task_id"] for t in read_tasks(corpus) if t["split"] == "train"]
    assert train and feed.published == len(train)
    assert sorted(train_ids_on_topic(kafka_bootstrap, topics)) == sorted(train)
    assert any(line.startswith("first ") for line in said)


def test_a_resumed_build_skips_what_was_already_published(kafka_bootstrap, tmp_path, topics):
    marker = tmp_path / "run" / ".tasks-published"
    marker.parent.mkdir()
    marker.with_name(marker.name + ".partial").write_text("2")  # an earlier build published 2, then died
    feed, _ = run_feed(kafka_bootstrap, tmp_path, marker, topics)
    train = [t["task_id"] for t in read_tasks(cached_corpus(CONFIG, tmp_path / "cache")) if t["split"] == "train"]
    assert feed.published == len(train)
    assert sorted(train_ids_on_topic(kafka_bootstrap, topics)) == sorted(train[2:])
    assert not marker.with_name(marker.name + ".partial").exists()
