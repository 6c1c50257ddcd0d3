"""Event contracts: one Avro schema per topic payload, and the codec that frames them."""

from schemas.codec import (
    CODEC,
    Codec,
    DecodeError,
    MalformedRecordError,
    SchemaMismatchError,
    UnknownSchemaError,
    decode,
    encode,
    new_event_fields,
)

__all__ = [
    "CODEC",
    "Codec",
    "DecodeError",
    "MalformedRecordError",
    "SchemaMismatchError",
    "UnknownSchemaError",
    "decode",
    "encode",
    "new_event_fields",
]
