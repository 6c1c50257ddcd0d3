import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.codec import (CODEC, Codec, DecodeError, MalformedRecordError, SchemaMismatchError, UnknownSchemaError,
                           default_codec, load_schema_file, new_event_fields, SCHEMA_DIR, SCHEMA_FILES)
from tests.foundation.samples import SAMPLES


def ping_versions() -> tuple[dict, dict]:
    """A record schema and its next version, which adds a field with a default."""
    old = {"type": "record", "name": "Ping", "namespace": "t",
           "fields": [{"name": "event_id", "type": "string"}, {"name": "n", "type": "int"}]}
    new = copy.deepcopy(old)
    new["fields"].append({"name": "label", "type": "string", "default": "none"})
    return old, new


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_every_schema_round_trips(name):
    record = {**new_event_fields(), **SAMPLES[name]}
    data = CODEC.encode(name, record)
    assert data[:2] == b"\xc3\x01"
    assert CODEC.writer_name(data) == name
    assert CODEC.decode(data) == record


def test_every_schema_has_event_id_and_version():
    for file in SCHEMA_FILES.values():
        fields = {f["name"]: f for f in load_schema_file(SCHEMA_DIR / file)["fields"]}
        assert fields["event_id"]["type"] == "string"
        assert fields["schema_version"]["default"] == 1


def test_old_record_is_read_by_newer_schema_with_defaults():
    old_schema, new_schema = ping_versions()
    writer = Codec()
    writer.register(old_schema)
    old_bytes = writer.encode("Ping", {"event_id": "a", "n": 3})

    reader = Codec()
    reader.register(old_schema, current=False)  # history: still readable
    reader.register(new_schema)
    assert reader.decode(old_bytes) == {"event_id": "a", "n": 3, "label": "none"}


def test_incompatible_writer_gives_typed_error():
    writer = Codec()
    writer.register({"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "string"}]}, current=False)
    writer.register({"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "string"}]})
    data = writer.encode("Ping", {"n": "x"})
    reader = Codec()
    reader.register({"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "string"}]}, current=False)
    reader.register({"type": "record", "name": "Ping", "fields": [{"name": "m", "type": "int"}]})
    with pytest.raises(SchemaMismatchError):
        reader.decode(data)


def test_unknown_schema_is_a_typed_error():
    other = Codec()
    other.register({"type": "record", "name": "Alien", "fields": [{"name": "x", "type": "int"}]})
    with pytest.raises(UnknownSchemaError) as info:
        CODEC.decode(other.encode("Alien", {"x": 1}))
    assert len(info.value.fingerprint) == 8


@pytest.mark.parametrize("garbage", [b"", b"\x00", b"hello world, not avro", b"\xc3\x01\x00", json.dumps({"a": 1}).encode()])
def test_garbage_bytes_are_a_typed_error(garbage):
    with pytest.raises(MalformedRecordError):
        CODEC.decode(garbage)


def test_truncated_body_is_malformed():
    data = CODEC.encode("Metric", {**new_event_fields(), **SAMPLES["Metric"]})
    with pytest.raises(MalformedRecordError):
        CODEC.decode(data[:-3])


def test_fingerprint_is_stable_across_registries():
    a, b = default_codec(), Codec()
    for file in SCHEMA_FILES.values():
        b.register(load_schema_file(SCHEMA_DIR / file))
    rec = {**new_event_fields(), **SAMPLES["Task"]}
    assert b.decode(a.encode("Task", rec)) == rec


def test_header_names_writer_and_whether_it_is_current_without_reading_the_body():
    old_schema, new_schema = ping_versions()
    writer = Codec()
    old_fp = writer.register(old_schema)
    old_bytes = writer.encode("Ping", {"event_id": "a", "n": 3})
    reader = Codec()
    reader.register(old_schema)
    assert reader.header(old_bytes) == (old_fp, "Ping", True)
    new_fp = reader.register(new_schema)  # a newer version makes the old one history
    new_bytes = reader.encode("Ping", {"event_id": "b", "n": 4, "label": "x"})
    assert reader.header(old_bytes) == (old_fp, "Ping", False)
    assert reader.header(new_bytes) == (new_fp, "Ping", True)
    assert reader.header(memoryview(new_bytes)) == (new_fp, "Ping", True)
    assert reader.header(new_bytes[:10] + b"\xff\xff") == (new_fp, "Ping", True)  # the body is not read
    assert reader.writer_schema(old_fp)["fields"][-1]["name"] == "n"
    with pytest.raises(MalformedRecordError):
        reader.header(b"\x00\x01" + new_bytes[2:])
    with pytest.raises(MalformedRecordError):
        reader.header(new_bytes[:6])
    with pytest.raises(UnknownSchemaError):
        reader.header(b"\xc3\x01" + b"\x00" * 8 + b"body")
    with pytest.raises(UnknownSchemaError):
        reader.writer_schema(b"\x00" * 8)


HEADERS = {name: CODEC.encode(name, {**new_event_fields(), **SAMPLES[name]})[:10] for name in SCHEMA_FILES}


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(SCHEMA_FILES)), body=st.binary(max_size=200))
def test_any_body_behind_a_known_header_decodes_or_is_a_typed_error(name, body):
    """Hostile bytes never escape as another exception type (they must reach the dead letters)."""
    try:
        record = CODEC.decode(HEADERS[name] + body)
    except DecodeError:
        return
    assert isinstance(record, dict) and set(record) == {f["name"] for f in CODEC.schema(name)["fields"]}


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_corrupted_records_decode_or_fail_typed(name):
    good = CODEC.encode(name, {**new_event_fields(), **SAMPLES[name]})
    for cut in range(10, len(good)):  # every truncation
        with pytest.raises(DecodeError):
            CODEC.decode(good[:cut])
    flipped = bytearray(good)
    for i in range(10, len(good)):  # every single-byte corruption
        flipped[i] ^= 0xFF
        try:
            CODEC.decode(bytes(flipped))
        except DecodeError:
            pass
        flipped[i] ^= 0xFF


def test_byte_views_decode_like_bytes():
    data = CODEC.encode("Metric", {**new_event_fields(), **SAMPLES["Metric"]})
    assert CODEC.decode(bytearray(data)) == CODEC.decode(memoryview(data)) == CODEC.decode(data)
    assert CODEC.decode_named(memoryview(data)) == ("Metric", CODEC.decode(data))


def test_a_newer_schema_registered_later_is_what_old_records_resolve_to():
    old_schema, new_schema = ping_versions()
    codec = Codec()
    codec.register(old_schema)
    old_bytes = codec.encode("Ping", {"event_id": "a", "n": 3})
    assert codec.decode(old_bytes) == {"event_id": "a", "n": 3}  # decoder for this header now cached
    codec.register(new_schema)
    assert codec.decode(old_bytes) == {"event_id": "a", "n": 3, "label": "none"}
    codec.register({"type": "record", "name": "Pong", "namespace": "t", "fields": [{"name": "m", "type": "int"}]})
    with pytest.raises(SchemaMismatchError):  # a Ping writer does not resolve to another record
        codec.decode(old_bytes, "Pong")
