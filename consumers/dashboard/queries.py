"""Every query the dashboard runs, by name, and the values it binds: pure, no I/O.

A query is named, never sent as SQL text: ``drift:<name>`` is a drift query
(``consumers/drift/sql``), ``panel:<name>`` one of ``sql/`` beside this file, and
``samples:<kind>`` the sample browser's query of that kind. A process that holds the store
for someone else (``query_service``) runs names only, so it never runs SQL it was sent.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from consumers.drift.queries import (
    DriftError,
    DriftQuery,
    bind_parameters,
    load_query,
    query_names,
    sql_file_names,
    sql_placeholders,
)

SampleKind = Literal["top", "hacked", "random", "one"]
SAMPLE_KINDS: tuple[str, ...] = ("top", "hacked", "random", "one")
LATEST_VERSION = 2**62  # an upper bound on policy versions: "no upper bound" in a BETWEEN


class UnknownDashboardQuery(DriftError):
    def __init__(self, name: str):
        super().__init__(f"no dashboard query {name!r}")
        self.name = name


def _panel_files():
    return resources.files("consumers.dashboard").joinpath("sql")


@lru_cache(maxsize=1)
def panel_query_names() -> tuple[str, ...]:
    return sql_file_names(_panel_files())


@lru_cache(maxsize=None)
def _panel_query(name: str) -> DriftQuery:
    if name not in panel_query_names():
        raise UnknownDashboardQuery(f"panel:{name}")
    sql = _panel_files().joinpath(f"{name}.sql").read_text()
    return DriftQuery(f"panel:{name}", sql, name, sql_placeholders(sql))


_SAMPLE_FILTERS = {
    "top": "1",
    "hacked": "(notEmpty(f.hack_flags) OR notEmpty(a.hack_flags))",
    "random": "1",
    "one": "a.rollout_id = {rollout_id:String}",
}
_SAMPLE_ORDER = {
    "top": "a.reward_enhanced DESC, a.rollout_id",
    "hacked": "a.reward_enhanced DESC, a.rollout_id",
    # a seeded hash: the same seed shows the same samples, another seed others
    "random": "cityHash64(a.rollout_id, {seed:UInt64}), a.rollout_id",
    "one": "a.rollout_id",
}
_SAMPLE_WINDOW = """event_time >= {since:DateTime64(3, 'UTC')}
          AND policy_version BETWEEN {version_min:Int64} AND {version_max:Int64}
          AND ({bug_pattern:String} = '' OR bug_pattern = {bug_pattern:String})"""


def sample_sql(kind: str) -> str:
    """The samples of one kind in a window of one config, each with its feedback, its task's
    buggy code and its latest review. Tables are filtered before they are joined, so a
    window reads only its own rows."""
    if kind not in SAMPLE_KINDS:
        raise UnknownDashboardQuery(f"samples:{kind}")
    return f"""
SELECT
    a.rollout_id AS rollout_id, a.config_id AS config_id, a.policy_version AS policy_version,
    a.bug_pattern AS bug_pattern, a.task_id AS task_id, a.group_id AS group_id, a.sample_index AS sample_index,
    a.reward_raw AS reward_raw, a.reward_enhanced AS reward_enhanced, a.advantage AS advantage,
    a.components AS components, a.weights AS weights, a.excluded AS excluded,
    f.hack_flags AS hack_flags, f.tests_passed AS tests_passed, f.tests_total AS tests_total,
    f.test_outcomes AS test_outcomes, f.error_kind AS error_kind, f.completion_text AS completion_text,
    t.buggy_code AS buggy_code, t.entry_point AS entry_point,
    r.verdict AS review_verdict, r.hack_class AS review_hack_class
FROM (
    SELECT * FROM advantages FINAL
    WHERE config_id = {{config_id:String}} AND {_SAMPLE_WINDOW}
) AS a
LEFT JOIN (
    SELECT rollout_id, hack_flags, tests_passed, tests_total, test_outcomes, error_kind, completion_text
    FROM feedback FINAL
    WHERE {_SAMPLE_WINDOW}
) AS f ON f.rollout_id = a.rollout_id
LEFT JOIN (
    SELECT task_id, any(buggy_code) AS buggy_code, any(entry_point) AS entry_point
    FROM tasks
    GROUP BY task_id
) AS t ON t.task_id = a.task_id
LEFT JOIN (
    SELECT rollout_id, argMax(verdict, event_time) AS verdict, argMax(hack_class, event_time) AS hack_class
    FROM reviews FINAL
    GROUP BY rollout_id
) AS r ON r.rollout_id = a.rollout_id
WHERE {_SAMPLE_FILTERS[kind]}
ORDER BY {_SAMPLE_ORDER[kind]}
LIMIT {{limit:UInt32}}
"""


def sql_for(name: str) -> str:
    """The SQL text of a named query; UnknownDashboardQuery for any other name."""
    family, _, rest = name.partition(":")
    if family == "drift" and rest in query_names():
        return load_query(rest).sql
    if family == "panel":
        return _panel_query(rest).sql
    if family == "samples":
        return sample_sql(rest)
    raise UnknownDashboardQuery(name)


def chart_query_parameters(name: str, since: datetime | None, config: str | None, config_b: str | None = None,
                           window_s: int = 60) -> dict[str, object]:
    """The values of a ``drift:`` or ``panel:`` query's placeholders (the drift rules: a
    missing config is an error, except for learner health, where it means every config)."""
    family, _, rest = name.partition(":")
    if family == "drift":
        if rest not in query_names():
            raise UnknownDashboardQuery(name)
        query = load_query(rest)
    elif family == "panel":
        query = _panel_query(rest)
    else:
        raise UnknownDashboardQuery(name)
    return bind_parameters(query, since, config, config_b, window_s)


def sample_parameters(kind: str, config: str, since: datetime | None = None, bug_pattern: str = "",
                      version_min: int = 0, version_max: int = LATEST_VERSION, limit: int = 20, seed: int = 0,
                      rollout_id: str = "") -> dict[str, object]:
    """The values of the sample query's placeholders; ``rollout_id`` only for kind ``one``."""
    if kind not in SAMPLE_KINDS:
        raise UnknownDashboardQuery(f"samples:{kind}")
    if limit <= 0:
        raise DriftError(f"limit must be positive, got {limit}")
    if version_min > version_max:
        raise DriftError(f"version_min {version_min} is above version_max {version_max}")
    values = bind_parameters(load_query("reward_by_version"), since, config)  # formats `since` as drift does
    values.update(bug_pattern=bug_pattern, version_min=int(version_min), version_max=int(version_max),
                  limit=int(limit))
    if kind == "random":
        values["seed"] = int(seed)
    if kind == "one":
        values["rollout_id"] = rollout_id
    return values


def jsonable(value: Any) -> Any:
    """A store value as JSON can carry it: times as ISO text, NaN and infinities as None
    (JSON has neither), bytes as hex, tuples as lists, maps with string keys."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def jsonable_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: jsonable(v) for k, v in row.items()} for row in rows]
