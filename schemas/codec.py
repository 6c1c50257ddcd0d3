"""Avro codec with the Avro *single-object encoding* header.

Every message value is ``C3 01`` + the 8-byte little-endian CRC-64-AVRO fingerprint of
the writer schema's parsing canonical form + the schemaless Avro body. This framing is
the one the Avro specification defines, so any Avro tool can read our topics; a reader
looks the fingerprint up, and fastavro resolves the writer schema against the reader's
(new fields take their defaults). fastavro has no single-object reader of its own with
a multi-schema registry, which is why the 10-byte header is framed here.
"""

from __future__ import annotations

import io
import json
import struct
import time
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import fingerprint, to_parsing_canonical_form

SCHEMA_DIR = Path(__file__).resolve().parent
MAGIC = b"\xc3\x01"
HEADER_LEN = len(MAGIC) + 8

# payload name -> schema file; topic names and their payloads live in infra.platform.topics (Topics)
SCHEMA_FILES = {
    "Task": "task.avsc",
    "Rollout": "rollout.avsc",
    "Feedback": "feedback.avsc",
    "Advantage": "advantage.avsc",
    "PolicyVersion": "policy.avsc",
    "Metric": "metric.avsc",
    "DeadLetter": "dead_letter.avsc",
}


class DecodeError(ValueError):
    """A message value that cannot be turned into a record."""


class MalformedRecordError(DecodeError):
    """Bytes that are not a framed Avro record (wrong magic, truncated, corrupt body)."""


class UnknownSchemaError(DecodeError):
    """A well-framed record whose writer schema this process does not know."""

    def __init__(self, fp: bytes):
        super().__init__(f"unknown writer schema fingerprint {fp.hex()}")
        self.fingerprint = fp


class SchemaMismatchError(DecodeError):
    """The writer schema cannot be resolved to the requested reader schema."""


def _fingerprint(parsed: dict) -> bytes:
    canonical = to_parsing_canonical_form(parsed)
    # fastavro returns the CRC-64-AVRO fingerprint as a hex string of the 8 LE bytes.
    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


class Codec:
    """A registry of writer schemas (current and historical) and the encode/decode pair."""

    def __init__(self) -> None:
        self._by_fp: dict[bytes, dict] = {}
        self._current: dict[str, tuple[bytes, dict]] = {}
        self._headers: dict[bytes, tuple[bytes, str, bool]] = {}  # framed header -> `header`'s answer

    def register(self, schema: dict, current: bool = True) -> bytes:
        """Add a schema. ``current`` makes it the one ``encode`` writes and ``decode`` reads into."""
        parsed = fastavro.parse_schema(schema)
        fp = _fingerprint(parsed)
        self._by_fp[fp] = parsed
        if current:
            self._current[parsed["name"].split(".")[-1]] = (fp, parsed)
        self._headers = {MAGIC + known: (known, name, self._current.get(name, (None,))[0] == known)
                         for known, name in ((f, w["name"].split(".")[-1]) for f, w in self._by_fp.items())}
        return fp

    def schema(self, name: str) -> dict:
        return self._current[name][1]

    def names(self) -> list[str]:
        return sorted(self._current)

    def encode(self, name: str, record: dict[str, Any]) -> bytes:
        fp, parsed = self._current[name]
        buf = io.BytesIO()
        buf.write(MAGIC)
        buf.write(fp)
        fastavro.schemaless_writer(buf, parsed, record)
        return buf.getvalue()

    def writer_name(self, data: bytes) -> str:
        """Name of the payload type a framed value was written with."""
        return self._writer(data)["name"].split(".")[-1]

    def header(self, data: bytes) -> tuple[bytes, str, bool]:
        """From the 10-byte header alone (the body is not read): the writer fingerprint, the
        payload name, and whether that writer is the payload's current schema. Raises
        ``MalformedRecordError``/``UnknownSchemaError`` as ``decode`` does for a bad header."""
        try:  # the hot path of the sink: one slice and one lookup
            return self._headers[data[:HEADER_LEN]]
        except (KeyError, TypeError):
            pass
        writer = self._writer(data)  # raises for what is not a known header
        fp = bytes(data[2:HEADER_LEN])
        name = writer["name"].split(".")[-1]
        return fp, name, self._current[name][0] == fp

    def writer_schema(self, fp: bytes) -> dict:
        """The parsed writer schema of a fingerprint this codec knows."""
        try:
            return self._by_fp[fp]
        except KeyError:
            raise UnknownSchemaError(fp) from None

    def _writer(self, data: bytes) -> dict:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise MalformedRecordError(f"expected bytes, got {type(data).__name__}")
        if len(data) < HEADER_LEN or bytes(data[:2]) != MAGIC:
            raise MalformedRecordError("not an Avro single-object record (bad magic or too short)")
        fp = bytes(data[2:HEADER_LEN])
        try:
            return self._by_fp[fp]
        except KeyError:
            raise UnknownSchemaError(fp) from None

    def decode(self, data: bytes, name: str | None = None) -> dict[str, Any]:
        """Decode a framed value, resolved to the current schema of ``name`` (default: the writer's)."""
        return self.decode_named(data, name)[1]

    def decode_named(self, data: bytes, name: str | None = None) -> tuple[str, dict[str, Any]]:
        """`decode`, also returning the writer's payload name (one header lookup for both)."""
        writer = self._writer(data)
        reader_name = name or writer["name"].split(".")[-1]
        if reader_name not in self._current:
            raise UnknownSchemaError(bytes(data[2:HEADER_LEN]))
        reader = self._current[reader_name][1]
        body = io.BytesIO(bytes(data[HEADER_LEN:]))
        try:
            record = fastavro.schemaless_reader(body, writer, reader if reader is not writer else None)
        except fastavro.read.SchemaResolutionError as exc:
            raise SchemaMismatchError(str(exc)) from exc
        except (EOFError, UnicodeDecodeError, ValueError, IndexError, struct.error, TypeError) as exc:
            raise MalformedRecordError(f"corrupt Avro body: {exc}") from exc
        if body.tell() != len(body.getbuffer()):
            raise MalformedRecordError("trailing bytes after the Avro body")
        return writer["name"].split(".")[-1], record


def load_schema_file(path: Path) -> dict:
    return json.loads(path.read_text())


@lru_cache(maxsize=1)
def default_codec() -> Codec:
    codec = Codec()
    history = SCHEMA_DIR / "history"
    if history.is_dir():  # older versions still readable, never written
        for path in sorted(history.glob("*.avsc")):
            codec.register(load_schema_file(path), current=False)
    for file in SCHEMA_FILES.values():
        codec.register(load_schema_file(SCHEMA_DIR / file))
    return codec


CODEC = default_codec()


def encode(name: str, record: dict[str, Any]) -> bytes:
    return CODEC.encode(name, record)


def decode(data: bytes, name: str | None = None) -> dict[str, Any]:
    return CODEC.decode(data, name)


def new_event_fields() -> dict[str, Any]:
    """The envelope every record carries: a fresh event id, the schema version, the event time."""
    return {"event_id": uuid.uuid4().hex, "schema_version": 1, "created_at_ms": int(time.time() * 1000)}
