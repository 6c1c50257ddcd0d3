"""The candidate's process: loads the candidate's code and answers the judge's calls.

Standard library only: this file runs inside the sandbox (see launcher.py).

Everything here shares a process with hostile code, so nothing here is trusted: what this
process sends is only ever read as the values of the candidate's calls (plain data by the
codec in wire.py), never as a verdict. Verdicts are made by the judge (judge.py), in a
process the candidate's code never ran in. What this file does honestly is what a correct
candidate needs: its values converted through builtin base classes (so a `Counter` compares
as a dict), pristine builtins before every call, and a per-call alarm so one hanging call
leaves time for the others.

Protocol (frames of wire.py; call fd 3 in, reply fd 4 out). Each request carries the
judge's nonce and the seconds it may take; each reply echoes the nonce:
    ["load", nonce, s]                      -> ["loaded", nonce, kind, message, names, flags]
    ["call", nonce, handle, args, kwargs, s] | ["getattr", nonce, handle, name, s]
    ["setattr", nonce, handle, name, value, s] | ["iter", nonce, handle, s] | ["next", nonce, handle, s]
    | ["lines", nonce, s]  (the lines of the candidate's functions run since the last ask; [] untraced)
                                            -> ["ok", nonce, value, flags]
                                             | ["raised", nonce, kind, type name, message, flags]
                                             | ["toolong", nonce, flags]
`names` lists the candidate's top-level names: [name, "module", module name] or
[name, "value", encoded value or handle].
"""

import builtins
import os
import random
import re
import sys

from streams.sandbox.line_trace import LineTrace
from streams.sandbox.phases import Alarm, classify, describe
from streams.sandbox.wire import TooDeep, WireError, decode, encode, pack, read_frame, write_all, write_frame

MAX_NAMES = 1000
# Modules the judge imports for itself rather than calling into the candidate's copy.
JUDGE_IMPORTABLE = frozenset(
    "math cmath re collections collections.abc itertools functools heapq bisect string "
    "operator typing decimal fractions statistics random datetime copy array dataclasses "
    "enum json struct textwrap unicodedata numbers".split()
)


class Snapshot:
    """Pristine builtins and watched modules, restorable after the candidate ran."""

    def __init__(self, module_names):
        self.builtins = dict(builtins.__dict__)
        self.modules = {}
        for name in module_names:
            module = sys.modules.get(name)
            if module is not None:
                self.modules[name] = (module, dict(module.__dict__))

    def restore(self):
        """Undo any patching; return True if something had been patched."""
        patched = self._restore_dict(builtins.__dict__, self.builtins)
        for name, (module, saved) in self.modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                patched = True
            patched |= self._restore_dict(module.__dict__, saved)
        return patched

    @staticmethod
    def _restore_dict(live, saved):
        same = len(live) == len(saved) and all(k in live and live[k] is v for k, v in saved.items())
        if not same:
            live.clear()
            live.update(saved)
        return not same


class CandidateServer:
    def __init__(self, req, call_fd, reply_fd):
        self.req = req
        self.call_fd, self.reply_fd = call_fd, reply_fd
        self.max_value = req["limits"]["max_output_bytes"]
        self.max_frame = req["limits"]["max_result_bytes"]
        watched = set(JUDGE_IMPORTABLE) | {"os", "sys", "signal", "time", "io", "builtins"}
        for line in req["imports"]:
            for word in line.replace(",", " ").split():
                if word not in ("import", "from", "as"):
                    watched.add(word)
        self.snapshot = Snapshot(sorted(watched))
        self.flags = set()
        self.alarm = Alarm()
        # Bound now, before the candidate can patch them.
        self._read, self._write = os.read, os.write
        self.objects = {}  # handle number -> object kept alive for the judge
        self.tracer = None  # a LineTrace once the code compiled, if the request asks for lines
        self.numbers = {}  # id(object) -> handle number

    # ------------------------------------------------------------------ values
    def handle_of(self, obj):
        number = self.numbers.get(id(obj))
        if number is None:
            number = len(self.objects) + 1
            self.objects[number], self.numbers[id(obj)] = obj, number
        try:
            name = type.__getattribute__(type(obj), "__name__")
        except BaseException:
            name = "object"
        return {"h": number, "type": name if type(name) is str else "object"}

    def encode(self, value):
        try:
            return encode(value, self.handle_of)
        except (TooDeep, RecursionError, TypeError):  # self-referencing, or a lying __class__
            return self.handle_of(value)

    def encode_small(self, value, budget):
        """Plain while the names frame has room (budget: [bytes left]), else a handle, so
        a module full of tables stays within the judge's limit."""
        encoded = self.encode(value)
        if type(encoded) is not dict or "h" not in encoded:
            size = len(pack(encoded))
            if size > min(budget[0], self.max_value // 16):
                return self.handle_of(value)
            budget[0] -= size
        return encoded

    def handle(self, number, type_name):
        if number not in self.objects:
            raise WireError(f"no object has handle {number}")
        return self.objects[number]

    # ---------------------------------------------------------------- protocol
    def send(self, frame):
        write_frame(self.reply_fd, frame, self._write)

    def receive(self):
        return decode(read_frame(self.call_fd, self.max_frame, self._read), self.handle)

    def run(self):
        loaded_kind, message, namespace = self.load()
        try:
            first = self.receive()
        except (EOFError, OSError, WireError):
            return
        names = self.names(namespace) if loaded_kind == "none" else []
        self.send(["loaded", first[1], loaded_kind, message, names, sorted(self.flags)])
        if loaded_kind != "none":
            return
        while True:
            try:
                request = self.receive()
            except (EOFError, OSError, WireError):
                return
            self.answer(request)

    def load(self):
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        if self.req.get("seed") is not None:
            # before any candidate code: a candidate that draws from `random` draws the same
            # numbers on every run with this seed (the zygote's fork gave it fresh OS entropy)
            random.seed(self.req["seed"])
        self.alarm.arm(self.req["phase_timeout_s"])
        try:
            try:
                code = compile(self.req["code"], "<candidate>", "exec")
            except (SyntaxError, ValueError, OverflowError, RecursionError) as exc:
                self.alarm.disarm()
                return "syntax", describe(exc), namespace
            if self.req.get("trace_lines"):
                self.tracer = LineTrace(code)
            exec(code, namespace)
            self.alarm.disarm()
        except BaseException as exc:
            self.alarm.disarm()
            return classify(exc), describe(exc), namespace
        if self.snapshot.restore() or namespace.get("__builtins__") is not builtins:
            self.flags.add("patched_builtins")
        return "none", "", namespace

    def names(self, namespace):
        entry, listed = self.req["entry_point"], []
        budget = [self.max_frame // 4]  # the rest is room for handles and names
        # Names the tests and setup code use go first, so a cap never drops one of them.
        used = set(re.findall(r"[A-Za-z_]\w*", " ".join(t["source"] for t in self.req["tests"])
                              + " " + self.req["setup_code"]))
        items = list(dict.items(namespace))
        items = [i for i in items if i[0] in used] + [i for i in items if i[0] not in used]
        for name, value in items:
            if type(name) is not str or not name.isidentifier() or name.startswith("__"):
                continue
            if name in self.snapshot.builtins and name != entry:
                continue  # a test sees the real builtin, as the judge keeps it
            module = value.__dict__.get("__name__") if type(value) is type(sys) else None
            if module in JUDGE_IMPORTABLE and sys.modules.get(module) is value:
                listed.append([name, "module", module])
            else:
                listed.append([name, "value", self.encode_small(value, budget)])
            if len(listed) >= MAX_NAMES:
                break
        return listed

    def answer(self, request):
        op, nonce, seconds = request[0], request[1], request[-1]
        if op == "lines":
            # Runs none of the candidate's code, so it skips the restore below (the bulk of a
            # request's cost), which also leaves the flags as an untraced run would find them.
            lines = self.tracer.take() if self.tracer is not None else []
            self.send(["ok", nonce, lines, sorted(self.flags)])
            return
        if self.snapshot.restore():
            self.flags.add("patched_builtins")
        self.alarm.arm(seconds)
        tracer = self.tracer
        try:
            if tracer is not None:
                tracer.start()
            value = self.perform(op, request[2:-1])
            if tracer is not None:
                tracer.stop()
            encoded = self.encode(value)
            self.alarm.disarm()
        except BaseException as exc:
            if tracer is not None:
                tracer.stop()
            self.alarm.disarm()
            self.send(["raised", nonce, classify(exc), _type_name(exc), _text(exc), sorted(self.flags)])
            return
        data = pack(["ok", nonce, encoded, sorted(self.flags)])
        if len(data) > self.max_value:
            data = pack(["toolong", nonce, sorted(self.flags)])
        write_all(self.reply_fd, data, self._write)

    def perform(self, op, fields):
        if op == "call":
            target, args, kwargs = fields
            return target(*args, **dict(kwargs))
        if op == "getattr":
            return getattr(fields[0], fields[1])
        if op == "setattr":
            setattr(fields[0], fields[1], fields[2])
            return None
        if op == "iter":
            return iter(fields[0])
        if op == "next":
            return next(fields[0])
        raise ValueError(f"unknown request {op!r}")


def _type_name(exc):
    try:
        name = type.__getattribute__(type(exc), "__name__")
        return name if type(name) is str else "Exception"
    except BaseException:
        return "Exception"


def _text(exc):
    try:
        text = str(exc)
        return text[:500] if type(text) is str else ""
    except BaseException:
        return ""
