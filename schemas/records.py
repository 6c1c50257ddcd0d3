"""Records built from their Avro schemas: one constructor for every payload.

``build_record("Feedback", rollout_id=..., ...)`` is the record of those fields plus the
schema's default for every field left out, nested records (a record field, or an array of
records) included. A field the schema does not have, or a required one that is missing,
is a ``ValueError`` naming the payload and the fields. The schemas are the ones the
codec writes with (``schemas.codec.CODEC`` unless told), so a built record encodes to the same bytes as the
same record written out in full. Values are taken as given (not copied or converted).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from schemas.codec import CODEC, Codec, new_event_fields


class _Plan:
    """What building a record of one schema needs, worked out once per schema (the
    reshaping builds one record per rollout, so the per-record work is a few set checks)."""

    def __init__(self, schema: Mapping[str, Any]):
        fields = schema["fields"]
        self.fields = frozenset(f["name"] for f in fields)
        self.defaults = tuple((f["name"], f["default"]) for f in fields if "default" in f)
        self.all_required = frozenset(f["name"] for f in fields if "default" not in f)
        self.nested: list[tuple[str, bool, _Plan]] = []  # (field, holds an array of them, the record's plan)
        for f in fields:
            is_array = isinstance(f["type"], dict) and f["type"]["type"] == "array"
            inner = f["type"]["items"] if is_array else f["type"]
            if isinstance(inner, dict) and inner["type"] == "record":
                self.nested.append((f["name"], is_array, _Plan(inner)))
        self._required: dict[tuple[str, ...], frozenset[str]] = {}  # leave_out -> the fields still required

    def required(self, where: str, leave_out: tuple[str, ...] = ()) -> frozenset[str]:
        if leave_out not in self._required:
            if unknown := set(leave_out) - self.fields:
                raise ValueError(f"{where}: cannot leave out unknown field(s) {', '.join(sorted(unknown))}")
            self._required[leave_out] = self.all_required - set(leave_out)
        return self._required[leave_out]

    def fill(self, record: dict[str, Any], where: str, required: frozenset[str]) -> dict[str, Any]:
        """``record`` (a dict of the caller's own, filled in place) checked and completed."""
        if not self.fields.issuperset(record):
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(set(record) - self.fields))}")
        missing = self.fields.difference(record)  # one set operation; most records lack none or a few
        if missing:
            if not required.isdisjoint(missing):
                raise ValueError(f"{where}: missing required field(s) {', '.join(sorted(required & missing))}")
            for name, default in self.defaults:
                if name in missing:  # a list or map default is copied: records never share one
                    record[name] = copy.deepcopy(default) if isinstance(default, (list, dict)) else default
        for name, is_array, inner in self.nested:
            if name in record:
                value, need = record[name], inner.required(where)
                record[name] = ([inner.fill(dict(item), f"{where}.{name}[{i}]", need) for i, item in enumerate(value)]
                                if is_array else inner.fill(dict(value), f"{where}.{name}", need))
        return record


_PLANS: dict[str, tuple[Mapping[str, Any], _Plan]] = {}  # payload -> (the schema planned, its plan)


def _plan_of(payload: str, codec: Codec) -> _Plan:
    schema = codec.schema(payload)
    cached = _PLANS.get(payload)
    if cached is None or cached[0] is not schema:  # a newly registered current schema is planned anew
        cached = _PLANS[payload] = (schema, _Plan(schema))
    return cached[1]


def build_record(payload: str, /, *, codec: Codec = CODEC, new_event: bool = False,
                 leave_out: Iterable[str] = (), **fields: Any) -> dict[str, Any]:
    """The ``payload`` record of ``fields``, every missing field with a default filled in.

    ``new_event``: give an ``event_id`` and ``created_at_ms`` the caller did not (a fresh id,
    now; ``new_event_fields``). Off by default, so a record is a function of its fields.
    ``leave_out``: required fields left out on purpose, for whoever publishes the record to
    add (a record body without its envelope).
    ``codec``: whose current schema of ``payload`` the record follows.
    """
    plan = _plan_of(payload, codec)
    required = plan.required(payload, tuple(leave_out))
    if new_event:
        fields = {**new_event_fields(), **fields}
    return plan.fill(fields, payload, required)
