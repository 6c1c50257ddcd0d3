"""Plain values on the wire: the one codec between candidate, judge and host.

Standard library only: this file also runs inside the sandbox (see launcher.py).

A value crosses a process boundary as JSON in which every non-JSON shape is an object
with one tag key. Decoding builds nothing but exact builtin types (or handles, where the
reader asks for them), so a value that comes back from hostile code can be compared
without running any of that code: no `__eq__`, `__hash__` or `__repr__` of its own.

    null true 1 1.5 "s" [..]            None, bool, int, float, str, list
    {"t": [..]} {"s": [..]} {"f": [..]}  tuple, set, frozenset
    {"d": [[k, v], ..]}                  dict (keys of any plain type)
    {"i": "hex"} {"c": [re, im]} {"b": "hex"}   huge int, complex, bytes
    {"n": "int"}                         a builtin type, by name (`remove_type(xs, int)`); never a
                                         builtin function, so no `exec` or `open` crosses
    {"h": n, "type": "Name"}             a handle: an object that stays in the process that made it

Encoding reads builtin subclasses (Counter, OrderedDict, defaultdict, namedtuple, IntEnum,
str subclasses) through their base class's own methods, so a correct candidate that returns
one compares as its base value, and no override of the subclass is ever called.
JSON is hand-tagged rather than pickled: pickle would run code on load.
"""

import builtins
import json
import os
import struct

MAX_DEPTH = 100
# ints past this many bits travel as hex: json (and str()) refuse >4300 decimal digits.
HEX_INT_BITS = 10_000


class WireError(ValueError):
    """Bytes that no honest writer of this codec produces."""


class TooDeep(ValueError):
    """A value nested (or self-referencing) past MAX_DEPTH."""


def encode(value, handle_of=None, depth=0):
    """`value` as JSON-able data; objects of other types become handle_of(value), or raise
    TypeError where no handle_of is given."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if value.bit_length() <= HEX_INT_BITS else {"i": format(value, "x")}
    if kind is float:
        return value
    if depth >= MAX_DEPTH:
        raise TooDeep("value nested too deep")
    d = depth + 1
    # Exact types first, then builtin subclasses through their base class's methods.
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return encode(int.__int__(value), handle_of, depth)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [encode(v, handle_of, d) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"t": [encode(v, handle_of, d) for v in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"d": [[encode(k, handle_of, d), encode(v, handle_of, d)] for k, v in dict.items(value)]}
    if isinstance(value, frozenset):
        return {"f": [encode(v, handle_of, d) for v in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"s": [encode(v, handle_of, d) for v in set.__iter__(value)]}
    if isinstance(value, complex):
        return {"c": [complex.__complex__(value).real, complex.__complex__(value).imag]}
    if isinstance(value, bytes):
        return {"b": bytes.hex(value)}
    name = _builtin_name(value)
    if name is not None:
        return {"n": name}
    if handle_of is None:
        raise TypeError(f"not a plain value: {type.__getattribute__(kind, '__name__')}")
    return handle_of(value)


def _builtin_name(value):
    """The name under which `value` is a builtin type, else None."""
    if type(value) is type:
        name = type.__getattribute__(value, "__name__")
        if type(name) is str and builtins.__dict__.get(name) is value:
            return name
    return None


def _decoder(handle):
    def build(obj):
        if len(obj) == 2 and handle is not None:
            number, name = obj.get("h"), obj.get("type")
            if type(number) is int and type(name) is str:
                return handle(number, name[:100])
        elif len(obj) == 1:
            ((tag, body),) = obj.items()
            if tag == "t" and type(body) is list:
                return tuple(body)
            if tag == "s" and type(body) is list:
                return set(body)
            if tag == "f" and type(body) is list:
                return frozenset(body)
            if tag == "d" and type(body) is list and all(type(p) is list and len(p) == 2 for p in body):
                return {k: v for k, v in body}
            if tag == "i" and type(body) is str:
                return int(body, 16)
            if tag == "c" and type(body) is list and len(body) == 2 and all(type(x) is float for x in body):
                return complex(body[0], body[1])
            if tag == "b" and type(body) is str:
                return bytes.fromhex(body)
            if tag == "n" and type(body) is str and _builtin_name(builtins.__dict__.get(body)) == body:
                return builtins.__dict__[body]
        raise WireError(f"not a tagged value: {str(obj)[:100]}")

    return build


def decode(data, handle=None):
    """Inverse of `encode` on bytes or str from `dumps`; WireError for anything else.
    `handle(number, type_name)` makes the handles; without it a handle is an error."""
    try:
        return json.loads(data, object_hook=_decoder(handle))
    except WireError:
        raise
    except (ValueError, TypeError, RecursionError, MemoryError) as exc:
        raise WireError(f"undecodable value: {type(exc).__name__}: {str(exc)[:100]}") from None


def dumps(value, handle_of=None):
    return json.dumps(encode(value, handle_of), separators=(",", ":"))


# ------------------------------------------------------------------ framing


def pack(obj):
    """One frame: 4-byte big-endian length + JSON (ASCII) of an already encoded `obj`."""
    data = json.dumps(obj, separators=(",", ":")).encode("ascii")
    return struct.pack(">I", len(data)) + data


def write_frame(fd, obj, write=None):
    write_all(fd, pack(obj), write)


def write_all(fd, data, write=None):
    write = write or os.write
    while data:
        data = data[write(fd, data):]


def read_exact(fd, size, read=None):
    read = read or os.read
    chunks = []
    while size:
        chunk = read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd, max_bytes, read=None):
    """The next frame's raw JSON bytes; WireError if it claims more than max_bytes."""
    (size,) = struct.unpack(">I", read_exact(fd, 4, read))
    if size > max_bytes:
        raise WireError(f"frame of {size} bytes (limit {max_bytes})")
    return read_exact(fd, size, read)
