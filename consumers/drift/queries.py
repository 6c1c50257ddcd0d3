"""The named drift queries: SQL files under ``sql/`` and the parameters they take.

Each ``sql/<name>.sql`` is one SELECT with ``{name:Type}`` server-side placeholders, so
the same text runs on chDB and on a ClickHouse server. Its leading ``--`` comment says
what it answers; the first line is the one-line summary ``drift list`` prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from importlib import resources

# Lower bound used when no `since` is given: before any event the system can have written.
FAR_PAST = datetime(1970, 1, 1, tzinfo=timezone.utc)
_PLACEHOLDER = re.compile(r"\{(\w+):[^{}]+\}")
_RELATIVE = re.compile(r"^(\d+)\s*([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class DriftError(ValueError):
    """Base of every error of the drift analysis (bad name, bad or missing parameter)."""


class UnknownQueryError(DriftError):
    def __init__(self, name: str):
        super().__init__(f"no drift query {name!r}; known: {', '.join(query_names())}")
        self.name = name


class MissingParameterError(DriftError):
    def __init__(self, query: str, parameter: str, hint: str):
        super().__init__(f"{query} needs {parameter} ({hint})")
        self.query = query
        self.parameter = parameter


class BadSinceError(DriftError):
    def __init__(self, text: str):
        super().__init__(
            f"cannot read since={text!r}: give an ISO time (2024-05-01, 2024-05-01T12:00:00+02:00)"
            " or an age such as 30m, 6h, 7d"
        )


@dataclass(frozen=True)
class DriftQuery:
    name: str
    sql: str
    summary: str  # first line of the header comment
    parameters: frozenset[str]  # placeholder names the SQL uses


def _sql_files():
    return resources.files("consumers.drift").joinpath("sql")


def sql_file_names(folder) -> tuple[str, ...]:
    """The names of the .sql files in a package's sql folder (`resources.files(...)/sql`), sorted."""
    return tuple(sorted(f.name.removesuffix(".sql") for f in folder.iterdir() if f.name.endswith(".sql")))


@lru_cache(maxsize=1)
def query_names() -> tuple[str, ...]:
    return sql_file_names(_sql_files())


@lru_cache(maxsize=None)
def load_query(name: str) -> DriftQuery:
    if name not in query_names():
        raise UnknownQueryError(name)
    sql = _sql_files().joinpath(f"{name}.sql").read_text()
    header = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        header.append(line.removeprefix("--").strip())
    summary = header[0] if header else name
    return DriftQuery(name, sql, summary, sql_placeholders(sql))


def sql_placeholders(sql: str) -> frozenset[str]:
    """The names of the ``{name:Type}`` placeholders of a SQL text."""
    return frozenset(_PLACEHOLDER.findall(sql))


def parse_since(text: str | None, now: datetime | None = None) -> datetime:
    """``None`` -> FAR_PAST; ``30m``/``6h``/``7d`` -> that long before ``now``; else ISO 8601.

    An ISO time without an offset is read as UTC, the time zone of every store column.
    """
    if text is None or not text.strip():
        return FAR_PAST
    text = text.strip()
    relative = _RELATIVE.match(text)
    if relative:
        amount, unit = relative.groups()
        return (now or datetime.now(timezone.utc)) - timedelta(seconds=int(amount) * _UNIT_SECONDS[unit])
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise BadSinceError(text) from None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def bind_parameters(
    query: DriftQuery,
    since: datetime | None = None,
    config: str | None = None,
    config_b: str | None = None,
    window_s: int = 60,
) -> dict[str, object]:
    """The parameter values for exactly the placeholders ``query`` uses.

    ``config`` fills config_id and config_a; learner_health reads an absent config as
    every config. ``since`` is sent as text: a DateTime64 placeholder parses
    'YYYY-MM-DD hh:mm:ss.fff' the same way on every backend.
    """
    moment = since or FAR_PAST
    # a naive datetime means UTC here (the store's zone), not this machine's local time
    moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
    values: dict[str, object] = {"since": moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]}
    if "window_s" in query.parameters:
        if window_s <= 0:
            raise DriftError(f"window_s must be a positive number of seconds, got {window_s}")
        values["window_s"] = int(window_s)
    if "config_id" in query.parameters:
        if config is None and query.name != "learner_health":
            raise MissingParameterError(query.name, "config", "the reshaping config_id to read advantages of")
        values["config_id"] = config or ""
    if "config_a" in query.parameters:
        if config is None or config_b is None:
            raise MissingParameterError(query.name, "config and config_b", "the two config_ids to compare")
        values["config_a"], values["config_b"] = config, config_b
    unknown = query.parameters - values.keys()
    if unknown:  # a new placeholder in a .sql file that this function does not fill yet
        raise DriftError(f"{query.name} uses parameters {sorted(unknown)} that bind_parameters does not know")
    return values
