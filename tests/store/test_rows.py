from datetime import datetime, timezone

import pytest

from consumers.store import RowShapeError, UnknownTableError, table_for_topic, to_row
from consumers.store.rows import to_columns
from infra.platform.topics import Topics


@pytest.mark.parametrize("topics", [Topics(), Topics(prefix="exp-full-s1.")])
def test_topics_route_to_tables(topics):
    assert table_for_topic(topics.feedback, topics) == "feedback"
    assert table_for_topic(topics.advantages("base"), topics) == "advantages"
    assert table_for_topic(topics.advantages("v2-ema"), topics) == "advantages"
    assert table_for_topic(topics.deadletter, topics) == "dead_letters"
    with pytest.raises(UnknownTableError):
        table_for_topic(topics.prefix + "advantages.", topics)  # a bare prefix is no config stream
    with pytest.raises(UnknownTableError):
        table_for_topic("other." + topics.feedback, topics)  # another namespace's topic


def test_created_at_ms_becomes_utc_event_time():
    row = to_row({"event_id": "e", "created_at_ms": 1_700_000_000_123, "x": [1]})
    assert row == {
        "event_id": "e",
        "event_time": datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=timezone.utc),
        "x": [1],
    }


def test_columns_require_one_key_set():
    assert to_columns([{"a": 1, "b": 2}, {"b": 4, "a": 3}]) == (["a", "b"], [[1, 2], [3, 4]])
    with pytest.raises(RowShapeError, match=r"missing \['b'\], extra \['c'\]"):
        to_columns([{"a": 1, "b": 2}, {"a": 3, "c": 4}])
