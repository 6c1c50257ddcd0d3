"""The judge's process: runs the tests and makes every verdict, away from the candidate.

Standard library only: this file runs inside the sandbox (see launcher.py).

The zygote forks the judge beside the candidate's process; no candidate code ever runs
here. Test code, setup code and test imports (all trusted: they come with the task) run in
this process, and each name the candidate defines is a `Remote`: calling it sends the
arguments to the candidate's process (candidate_server.py) and returns what came back,
decoded by wire.py into exact builtin types. So a comparison in a test is always between
plain values, on builtin operators; an object of the candidate's own (a class instance, a
generator) stays a handle, usable as an argument, attribute owner or iterator, and any
other use of it (`==`, `bool`, `len`, ...) fails the test with the flag `non_plain_value`.
Only this process writes the report the host reads (fd `res_fd`); the candidate's process
has no descriptor of it.

Each request to the candidate carries a fresh random nonce that its reply must echo, so no
reply can be written before the judge asked. A reply that breaks the protocol is
tampering: the judge stops and reports it.

Report lines to the host (repr of tuples): ("load", kind, message, ms), ("flags", ...),
("value", index, wire text, truncated, ms), ("pass", index, ms),
("fail", index, kind, message, ms), ("lost", index), ("tampered", index, reason), ("done",),
and where the request asks for them, ("lines", index, (line, ...)): the lines of its functions
the candidate's process says it ran in that test. That is the candidate's claim, not a
verdict; the judge passes it on only for a test that called into the candidate, keeping
line numbers that exist in its code.
"""

import builtins
import os
import time

from streams.sandbox.phases import Alarm, PhaseTimeout, classify, describe
from streams.sandbox.wire import WireError, decode, dumps, encode, read_frame, write_frame

# The judge's own backstop beyond the time it gives the candidate for a call: the
# candidate's alarm fires first, unless it swallowed it, and then it is hung.
BACKSTOP_S = 0.25
CANDIDATE_KINDS = frozenset({"syntax", "import", "timeout", "memory", "crash"})
_NOT_PASSED_UP = (SystemExit, KeyboardInterrupt, GeneratorExit)


class CandidateLost(BaseException):
    """The candidate's process ended (or stopped answering) while the judge needed it.
    BaseException so that a test's `except Exception` does not carry on without it."""

    def __init__(self, hung=False):
        super().__init__("the candidate stopped answering" if hung else "the candidate's process ended")
        self.hung = hung


class Tampered(BaseException):
    """A reply no honest candidate process sends."""


class NonPlainValue(Exception):
    """An object of the candidate's own used where a test needs a plain value."""

    remote_kind = "wrong_answer"


class ValueTooLong(Exception):
    """A value whose encoding is over the size limit of one value."""

    remote_kind = "wrong_answer"


class UnsendableArgument(Exception):
    """A test passed the candidate something that cannot cross to its process."""


class CandidateError(Exception):
    """An exception of the candidate's own class, re-raised here under its name."""


class Remote:
    """A handle to an object that lives in the candidate's process."""

    __slots__ = ("_judge", "_number", "_type")

    def __init__(self, judge, number, type_name):
        object.__setattr__(self, "_judge", judge)
        object.__setattr__(self, "_number", number)
        object.__setattr__(self, "_type", type_name)

    def __call__(self, *args, **kwargs):
        judge = object.__getattribute__(self, "_judge")
        return judge.ask("call", self, judge.send_args(args), [[k, judge.send_arg(v)] for k, v in kwargs.items()])

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return object.__getattribute__(self, "_judge").ask("getattr", self, name)

    def __setattr__(self, name, value):
        judge = object.__getattribute__(self, "_judge")
        judge.ask("setattr", self, name, judge.send_arg(value))

    def __iter__(self):
        return object.__getattribute__(self, "_judge").ask("iter", self)

    def __next__(self):
        return object.__getattribute__(self, "_judge").ask("next", self)

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_type')} object of the candidate>"

    def _not_plain(self, *args):
        judge = object.__getattribute__(self, "_judge")
        judge.flags.add("non_plain_value")
        raise NonPlainValue(f"not a plain value: {self!r}")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _not_plain
    # No __len__: list() asks for one first and must then iterate; `in` iterates too.
    __bool__ = __getitem__ = __str__ = _not_plain
    __int__ = __float__ = __index__ = __add__ = __radd__ = __mul__ = __rmul__ = _not_plain
    __hash__ = object.__hash__  # handles may be set members and dict keys


class Judge:
    def __init__(self, req, call_fd, reply_fd, res_fd):
        self.req = req
        self.call_fd, self.reply_fd, self.res_fd = call_fd, reply_fd, res_fd
        self.max_repr = req["limits"]["max_output_bytes"]
        self.max_frame = req["limits"]["max_result_bytes"]
        self.share = req["phase_timeout_s"]
        self.flags = set()
        self.alarm = Alarm()
        self.phase_ends = 0.0
        self.exceptions = {}
        self.trace_lines = bool(req.get("trace_lines"))
        self.code_lines = len(req["code"].splitlines())  # no fewer than compile() counts
        self.asked = 0  # requests to the candidate since the current test began

    # ------------------------------------------------------------- reporting
    def send(self, *frame):
        try:
            os.write(self.res_fd, (repr(frame) + "\n").encode("utf-8", "backslashreplace"))
        except OSError:
            pass

    # ------------------------------------------------- talking to the candidate
    def ask(self, op, *fields):
        """One request to the candidate's process; its value, or its exception raised here."""
        fields = [self.send_arg(f) if isinstance(f, Remote) else f for f in fields]
        return self.take(*self.exchange(op, fields))

    def exchange(self, op, fields):
        self.asked += 1
        nonce = int.from_bytes(os.urandom(8), "big")
        seconds = max(self.phase_ends - time.perf_counter(), 0.001)
        try:
            write_frame(self.call_fd, [op, nonce, *fields, seconds])
            reply = decode(read_frame(self.reply_fd, self.max_frame), self.remote)
        except (EOFError, BrokenPipeError):
            raise CandidateLost() from None
        except PhaseTimeout:
            raise CandidateLost(hung=True) from None
        except WireError as exc:
            raise Tampered(str(exc)) from None
        return reply, nonce

    def take(self, reply, nonce):
        if type(reply) is not list or len(reply) < 3 or reply[1] != nonce or type(reply[-1]) is not list:
            raise Tampered("a reply that does not answer the request")
        tag = reply[0]
        self.flags |= {"patched_builtins"} & set(f for f in reply[-1] if type(f) is str)
        if tag == "ok" and len(reply) == 4:
            return reply[2]
        if tag == "toolong" and len(reply) == 3:
            raise ValueTooLong("value too long")
        if tag == "raised" and len(reply) == 6 and reply[2] in CANDIDATE_KINDS:
            kind, name, text = reply[2], reply[3], reply[4]
            if type(name) is str and type(text) is str:
                raise self.remote_exception(kind, name)(text[:500])
        raise Tampered(f"a reply of unknown shape: {str(tag)[:40]}")

    def remote(self, number, type_name):
        return Remote(self, number, type_name)

    def send_arg(self, value):
        return encode(value, self._handle_for)

    def send_args(self, args):
        return [self.send_arg(a) for a in args]

    def _handle_for(self, value):
        if isinstance(value, Remote) and object.__getattribute__(value, "_judge") is self:
            return {"h": object.__getattribute__(value, "_number"), "type": "object"}
        raise UnsendableArgument(f"a {type(value).__name__} cannot be passed to the candidate")

    def remote_exception(self, kind, name):
        """A class for the candidate's exception: the builtin one of that name where there
        is one (so `except ValueError` in a test works), else a CandidateError of that name."""
        key = (kind, name)
        if key not in self.exceptions:
            base = getattr(builtins, name, None) if name.isidentifier() else None
            if not (isinstance(base, type) and issubclass(base, BaseException)) or issubclass(base, _NOT_PASSED_UP):
                base = CandidateError
            try:
                made = type(name if name.isidentifier() else "CandidateError", (base,), {"remote_kind": kind})
            except TypeError:  # a builtin whose layout cannot be subclassed this way
                made = type(name, (CandidateError,), {"remote_kind": kind})
            self.exceptions[key] = made
        return self.exceptions[key]

    # ------------------------------------------------------------------ phases
    def start_phase(self):
        self.phase_ends = time.perf_counter() + self.share
        self.alarm.arm(self.share + BACKSTOP_S)

    def run(self):
        start = time.perf_counter()
        self.start_phase()
        try:
            loaded = self.load_candidate()
            self.alarm.disarm()
        except (CandidateLost, Tampered) as exc:
            self.alarm.disarm()
            self.send(*self.stopped(-1, exc))
            return
        kind, message, names = loaded
        ms = (time.perf_counter() - start) * 1000.0
        if kind != "none":
            self.send("load", kind, message, ms)
            return
        namespace = self.namespace(names)
        try:
            self.start_phase()
            for line in self.req["imports"]:
                exec(line, namespace)
            if self.req["setup_code"]:
                exec(compile(self.req["setup_code"], "<setup>", "exec"), namespace)
            self.alarm.disarm()
        except (CandidateLost, Tampered) as exc:
            self.alarm.disarm()
            self.send(*self.stopped(-1, exc))
            return
        except BaseException as exc:
            self.alarm.disarm()
            self.send("load", classify(exc), describe(exc), ms)
            return
        self.send("load", "none", "", ms)
        for index, test in enumerate(self.req["tests"]):
            namespace["__builtins__"] = builtins
            self.asked = 0
            stop = self.run_one(index, test, namespace)
            if stop is None and self.trace_lines and self.asked:
                stop = self.report_lines(index)
            self.send("flags", *sorted(self.flags))
            if stop:
                self.send(*stop)
                return
        self.send("done")

    def load_candidate(self):
        reply, nonce = self.exchange("load", [])
        ok = (
            type(reply) is list and len(reply) == 6 and reply[0] == "loaded" and reply[1] == nonce
            and (reply[2] == "none" or reply[2] in CANDIDATE_KINDS)
            and type(reply[3]) is str and type(reply[4]) is list and type(reply[5]) is list
        )
        if not ok:
            raise Tampered("a load report that does not answer the request")
        self.flags |= {"patched_builtins"} & set(f for f in reply[5] if type(f) is str)
        return reply[2], reply[3][:500], reply[4]

    def namespace(self, names):
        """The test's globals: the candidate's names (as remotes or plain values) on
        the judge's own builtins and modules."""
        namespace = {}
        for entry in names:
            if type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str:
                continue
            name, kind, value = entry
            if not name.isidentifier() or name.startswith("__"):
                continue
            if kind == "module" and type(value) is str:
                try:
                    namespace[name] = __import__(value, fromlist=["_"])
                except ImportError:
                    continue
            elif kind == "value":
                namespace[name] = value
        namespace["__name__"] = "__main__"
        namespace["__builtins__"] = builtins
        return namespace

    def run_one(self, index, test, namespace):
        """Run one test; return the report that ends the run, if it must end here."""
        start, value = time.perf_counter(), None
        try:
            self.start_phase()
            if test["kind"] == "expr":
                value = eval(test["source"], namespace)
            else:
                exec(test["source"], namespace)
            self.alarm.disarm()
        except (CandidateLost, Tampered) as exc:
            self.alarm.disarm()
            return self.stopped(index, exc)
        except AssertionError as exc:
            self.alarm.disarm()
            kind = getattr(type(exc), "remote_kind", "wrong_answer")
            self.send("fail", index, "wrong_answer" if kind == "crash" else kind, describe(exc), _ms(start))
            return None
        except BaseException as exc:
            self.alarm.disarm()
            self.send("fail", index, classify(exc), describe(exc), _ms(start))
            return None
        ms = _ms(start)
        if test["kind"] != "expr":
            self.send("pass", index, ms)
            return None
        try:
            text = dumps(value)
        except (TypeError, ValueError, RecursionError):  # not plain, or nested too deep
            if any(isinstance(v, Remote) for v in _walk(value)):
                self.flags.add("non_plain_value")
            self.send("fail", index, "wrong_answer", f"got {value!r:.300}, not a plain value", ms)
            return None
        self.send("value", index, text[: self.max_repr], len(text) > self.max_repr, ms)
        return None

    def report_lines(self, index):
        """Pass on the lines the candidate says test `index` ran; return the report that ends
        the run if the candidate is gone or broke the protocol."""
        try:
            self.start_phase()
            claimed = self.ask("lines")
            self.alarm.disarm()
        except (CandidateLost, Tampered) as exc:
            self.alarm.disarm()
            return self.stopped(index, exc)
        except BaseException:  # an answer that is not a list of lines: no claim for this test
            self.alarm.disarm()
            return None
        if type(claimed) is list:
            lines = {n for n in claimed if type(n) is int and 0 < n <= self.code_lines}
            self.send("lines", index, tuple(sorted(lines)))
        return None

    @staticmethod
    def stopped(index, exc):
        if isinstance(exc, CandidateLost):
            return ("lost", index, exc.hung)
        return ("tampered", index, str(exc)[:200])


def _walk(value, depth=0):
    """The value and what it holds, for finding a handle inside a container."""
    yield value
    if depth < 20 and type(value) in (list, tuple, set, frozenset):
        for item in value:
            yield from _walk(item, depth + 1)
    elif depth < 20 and type(value) is dict:
        for pair in value.items():
            yield from _walk(pair, depth + 1)


def _ms(start):
    return (time.perf_counter() - start) * 1000.0
