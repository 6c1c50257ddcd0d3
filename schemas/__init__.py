"""Event contracts: one Avro schema per topic payload, the codec that frames them, and the prompt
contract (what a completion must look like and how code is read back from it).

May import: no project package.
"""

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
from schemas.records import build_record

__all__ = [
    "CODEC",
    "Codec",
    "DecodeError",
    "MalformedRecordError",
    "SchemaMismatchError",
    "UnknownSchemaError",
    "build_record",
    "decode",
    "encode",
    "new_event_fields",
]
