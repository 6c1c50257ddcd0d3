"""Encoded Kafka values to an Avro object container file that ClickHouse reads as table rows.

Pure, no I/O. The sink's fast path: the values on a topic are already Avro bodies, so
instead of decoding each one into a Python dict and encoding it again for the insert, the
bodies of one batch are framed as one block of an Avro container file and ClickHouse's own
``Avro`` input format decodes them, in C++, straight into the table's columns.

A row needs what the record does not carry: its Kafka coordinates, and ``event_time``
where the record has ``created_at_ms``. Avro writes a record as its fields one after the
other, so a body followed by the encodings of ``_topic``, ``_partition`` and ``_offset``
is a valid body of the writer schema with those three fields appended; and a field's name
is not in the encoding, so ``created_at_ms`` is declared as ``event_time`` (a long with
the timestamp-millis logical type, which ClickHouse reads as DateTime64(3)). The file
states that row schema in its header; the bytes of the bodies are not touched.

Why the block is framed here: fastavro's writer takes dicts and would encode the records
again, which is the cost this path exists to avoid. Its header is written by fastavro;
the block is what the Avro specification defines (count, byte size, the bodies, the
16-byte sync marker of the header), and the only integer encoding needed is Avro's
zig-zag varint, a few lines below.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from typing import Iterable

import fastavro
from fastavro.schema import to_parsing_canonical_form

from consumers.store.rows import KAFKA_COLUMNS

EVENT_TIME_FIELD = ("created_at_ms", "event_time")


def zigzag_long(n: int) -> bytes:
    """Avro's encoding of an int or long: zig-zag, then base-128 varint, low bits first."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def avro_string(text: str) -> bytes:
    data = text.encode()
    return zigzag_long(len(data)) + data


def row_schema(writer: dict) -> dict:
    """The writer schema as a table row: ``created_at_ms`` named ``event_time``, and the Kafka
    coordinates appended (same encoding for every original field)."""
    schema = json.loads(to_parsing_canonical_form(writer))
    for f in schema["fields"]:
        if f["name"] == EVENT_TIME_FIELD[0]:
            if f["type"] != "long":
                raise ValueError(f"{schema['name']}.created_at_ms is {f['type']}, expected long")
            f["name"], f["type"] = EVENT_TIME_FIELD[1], {"type": "long", "logicalType": "timestamp-millis"}
    names = {f["name"] for f in schema["fields"]}
    clash = names & set(KAFKA_COLUMNS)
    if clash:
        raise ValueError(f"{schema['name']} already has fields named {sorted(clash)}")
    topic, partition, offset = KAFKA_COLUMNS
    schema["fields"] += [{"name": topic, "type": "string"}, {"name": partition, "type": "int"},
                         {"name": offset, "type": "long"}]
    return schema


@dataclass(frozen=True)
class ContainerFormat:
    """The header of container files for one writer schema, and the table columns they fill."""

    header: bytes
    sync: bytes
    columns: tuple[str, ...]

    @classmethod
    def of(cls, writer: dict) -> ContainerFormat:
        schema = row_schema(writer)
        sync = os.urandom(16)  # the spec asks for a random marker per file
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(schema), [], codec="null", sync_marker=sync)
        return cls(buf.getvalue(), sync, tuple(f["name"] for f in schema["fields"]))

    def file(self, topic: str, rows: Iterable[tuple[int, int, bytes | memoryview]]) -> bytes:
        """A container file of one block: each row is (partition, offset, Avro body)."""
        topic_bytes = avro_string(topic)
        parts = []
        count = 0
        for partition, offset, body in rows:
            parts += (body, topic_bytes, zigzag_long(partition), zigzag_long(offset))
            count += 1
        data = b"".join(parts)
        return b"".join((self.header, zigzag_long(count), zigzag_long(len(data)), data, self.sync))
