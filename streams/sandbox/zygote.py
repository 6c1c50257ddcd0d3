"""The warm worker process that runs inside the sandbox.

This file is not imported by the host: its source is sent over stdin to a bare
`python -I -S` inside bubblewrap and executed there, so it may use the standard
library only. The zygote never runs candidate code itself. For each request it
forks a child that:

1. (bwrap mode) is pid 1 of a fresh PID namespace, so when it exits or is killed
   the kernel kills everything it spawned; it also gets a private mount
   namespace with its own empty /tmp and a /proc that shows only itself;
2. redirects stdout/stderr to a capped pipe, sets resource limits, drops every
   capability, and calls setsid;
3. runs the candidate, then each test with pristine builtins, reporting one
   line per event on a result pipe.

The zygote enforces the wall-clock deadline, caps what it reads, reaps the child
and relays raw bytes to the host, which parses and judges them. Expected values
of split asserts never reach this process.

Wire format, host <-> zygote: 4-byte big-endian length + UTF-8 JSON.
Child -> host (relayed): lines, each `repr()` of a tuple of str/int/float.
"""

import builtins
import ctypes
import gc
import io
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time

# Imported once here so that every forked child gets them for free.
PRELOADED = (
    "math cmath re collections collections.abc itertools functools heapq bisect string "
    "operator typing decimal fractions statistics random datetime copy array dataclasses "
    "enum json struct textwrap unicodedata numbers"
).split()
for _name in PRELOADED:
    try:
        __import__(_name)
    except ImportError:
        pass

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
SYS_CAPSET = 126  # x86_64
READ_CHUNK = 65536


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


# ---------------------------------------------------------------- host framing


def read_frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    return json.loads(stream.read(size).decode("utf-8"))


def write_frame(fd, obj):
    data = json.dumps(obj).encode("utf-8")
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


# ------------------------------------------------------------ child isolation


def enter_private_namespaces():
    """New mount namespace: a private /tmp and a /proc of our own PID namespace."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(mount)")
    _check(
        _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private"
    )
    _check(
        _libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"size=16m,mode=1777"), "mount /tmp"
    )
    if os.path.isdir("/dev/shm"):
        _check(
            _libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", 0, b"size=1m"),
            "mount /dev/shm",
        )
    _check(_libc.mount(b"proc", b"/proc", b"proc", 0, None), "mount /proc")
    os.chdir("/tmp")


def drop_capabilities():
    """Drop the bounding set (so exec cannot regain them) and all current caps."""
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails harmlessly past the last cap

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.syscall(SYS_CAPSET, ctypes.byref(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def set_rlimits(limits):
    mb = 1024 * 1024
    cpu = limits["cpu_seconds"]
    # The soft CPU limit sends SIGXCPU; the hard one, a second later, SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["max_file_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["max_open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Ignored by the kernel for uid 0; the pids cgroup set up by the host is the
    # real cap there. Kept for hosts that run the pool as an ordinary user.
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"],) * 2)


def redirect_fds(out_fd, res_fd):
    """stdin <- /dev/null, stdout+stderr -> output pipe, result pipe -> fd 3; close the rest."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.dup2(res_fd, 3)
    os.closerange(4, 1 << 16)  # also closes the zygote's pipes to the host
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = sys.stdout
    return 3


# --------------------------------------------------------------- the harness


class PhaseTimeout(BaseException):
    """Raised by SIGALRM when a phase overruns its share. BaseException so that
    `except Exception` in the candidate does not swallow it."""


def _on_alarm(signum, frame):
    raise PhaseTimeout("exceeded its share of the time limit")


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
        same = len(live) == len(saved) and all(
            k in live and live[k] is v for k, v in saved.items()
        )
        if not same:
            live.clear()
            live.update(saved)
        return not same


def classify(exc):
    if isinstance(exc, PhaseTimeout):
        return "timeout"
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, ImportError):
        return "import"
    return "crash"  # RecursionError, SystemExit and every other exception


def describe(exc):
    # The candidate controls exception classes and their __str__; never let a
    # hostile one break the report.
    try:
        text = str(exc)
        return (type(exc).__name__ + (": " + text if text else ""))[:500]
    except BaseException:
        return "unprintable exception"



_EXACT_LITERALS = (bool, int, float, complex, str, bytes, type(None))


def plain(value, depth=0):
    """The value rebuilt from builtin literal types: subclasses (Counter, defaultdict,
    OrderedDict, namedtuple, str or int subclasses) become their base type, so the host can
    compare them with `literal_eval`, and no subclass's own `__eq__` decides a verdict.
    The base classes' own methods are called, so a candidate's overrides are never run."""
    if type(value) in _EXACT_LITERALS or depth > 64:
        return value
    d = depth + 1
    if isinstance(value, dict):
        return {plain(k, d): plain(v, d) for k, v in dict.items(value)}
    if isinstance(value, list):
        return [plain(v, d) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return tuple(plain(v, d) for v in tuple.__iter__(value))
    if isinstance(value, frozenset):
        return frozenset(plain(v, d) for v in frozenset.__iter__(value))
    if isinstance(value, set):
        return {plain(v, d) for v in set.__iter__(value)}
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, complex):
        return complex.__complex__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return bytes.__bytes__(value) if hasattr(bytes, "__bytes__") else bytes(value)
    return value

class Harness:
    def __init__(self, req, res_fd):
        self.req = req
        self.res_fd = res_fd
        self.max_repr = req["limits"]["max_output_bytes"]
        watched = set(PRELOADED) | {"os", "sys", "signal", "time", "io", "builtins"}
        for line in req["imports"]:
            for word in line.replace(",", " ").split():
                if word not in ("import", "from", "as"):
                    watched.add(word)
        self.snapshot = Snapshot(sorted(watched))
        self.flags = set()
        # Bind everything the harness needs now, before the candidate can patch it.
        self._write, self._repr, self._now = os.write, repr, time.perf_counter
        self._plain = plain
        self._getpid = os.getpid
        self.pid = os.getpid()
        self._setitimer, self._signal = signal.setitimer, signal.signal

    def send(self, *frame):
        if self._getpid() != self.pid:  # a copy made by a candidate's fork stays silent
            return
        line = (self._repr(frame) + "\n").encode("utf-8", "backslashreplace")
        try:
            self._write(self.res_fd, line)
        except OSError:
            pass

    def arm(self, seconds):
        self._signal(signal.SIGALRM, _on_alarm)
        self._setitimer(signal.ITIMER_REAL, max(seconds, 0.001))

    def disarm(self):
        self._setitimer(signal.ITIMER_REAL, 0)

    def run(self):
        req = self.req
        share = req["phase_timeout_s"]
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        start = self._now()
        try:
            self.arm(share)
            try:
                code = compile(req["code"], "<candidate>", "exec")
            except (SyntaxError, ValueError, OverflowError, RecursionError) as exc:
                self.disarm()
                self.send("load", "syntax", describe(exc), self._ms(start))
                return
            exec(code, namespace)
            if req["setup_code"]:
                exec(compile(req["setup_code"], "<setup>", "exec"), namespace)
            self.disarm()
        except BaseException as exc:
            self.disarm()
            self.send("load", classify(exc), describe(exc), self._ms(start))
            return
        self.send("load", "none", "", self._ms(start))
        self.run_tests(namespace, share)

    def test_namespace(self, namespace):
        """The candidate's names, minus any that shadow a builtin, on pristine builtins."""
        entry = self.req["entry_point"]
        names = {
            k: v
            for k, v in namespace.items()
            if k not in self.snapshot.builtins or k == entry
        }
        names["__builtins__"] = builtins
        return names

    def run_tests(self, namespace, share):
        if self.snapshot.restore() or namespace.get("__builtins__") is not builtins:
            self.flags.add("patched_builtins")
        names = self.test_namespace(namespace)
        try:
            for line in self.req["imports"]:
                exec(line, names)
        except BaseException as exc:
            self.send("load", classify(exc), "test imports: " + describe(exc), 0.0)
            return
        for index, test in enumerate(self.req["tests"]):
            if self.snapshot.restore():
                self.flags.add("patched_builtins")
            names["__builtins__"] = builtins
            self.send("flags", *sorted(self.flags))
            self.run_one(index, test, names, share)
        self.send("done")

    def run_one(self, index, test, names, share):
        start = self._now()
        try:
            self.arm(share)
            if test["kind"] == "expr":
                value = eval(test["source"], names)
                text = self._repr(self._plain(value))
                self.disarm()
                self.send(
                    "value",
                    index,
                    text[: self.max_repr],
                    len(text) > self.max_repr,
                    self._ms(start),
                )
            else:
                exec(test["source"], names)
                self.disarm()
                self.send("pass", index, self._ms(start))
        except AssertionError as exc:
            self.disarm()
            self.send("fail", index, "wrong_answer", describe(exc), self._ms(start))
        except BaseException as exc:
            self.disarm()
            self.send("fail", index, classify(exc), describe(exc), self._ms(start))

    def _ms(self, start):
        return (self._now() - start) * 1000.0


# ------------------------------------------------------------- the zygote side


def child_main(req, out_w, res_w, isolated):
    status, report_fd = 0, res_w
    try:
        if isolated:
            enter_private_namespaces()
        res_fd = report_fd = redirect_fds(out_w, res_w)
        set_rlimits(req["limits"])
        if isolated:
            drop_capabilities()
        os.setsid()
        Harness(req, res_fd).run()
    except BaseException as exc:  # a failure of the harness itself, not the candidate
        try:
            os.write(report_fd, (repr(("fatal", describe(exc))) + "\n").encode())
        except BaseException:
            pass
        status = 70
    os._exit(status)


class CappedReader:
    """Drains a pipe, keeping at most `cap` bytes; the rest is read and dropped."""

    def __init__(self, fd, cap):
        self.fd, self.cap, self.chunks, self.size, self.truncated = (
            fd,
            cap,
            [],
            0,
            False,
        )
        self.open = True
        os.set_blocking(fd, False)

    def pump(self):
        try:
            data = os.read(self.fd, READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            self.open = False
            os.close(self.fd)
            return
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        if data:
            self.chunks.append(data)
            self.size += len(data)

    def text(self):
        return b"".join(self.chunks).decode("utf-8", "replace")


def run_request(req, isolated):
    limits = req["limits"]
    out_r, out_w = os.pipe()
    res_r, res_w = os.pipe()
    started = time.perf_counter()
    if isolated:
        # Each child becomes pid 1 of a new PID namespace: the kernel kills all
        # of its descendants when it dies, even ones that called setsid. The
        # kernel allows a new one only once children go to our own namespace
        # again, hence the setns first.
        _check(_libc.setns(_own_pid_namespace(), CLONE_NEWPID), "setns(pid)")
        _check(_libc.unshare(CLONE_NEWPID), "unshare(pid)")
    # Weak mode has no private /tmp: give each child a fresh folder, removed after.
    workdir = None if isolated else tempfile.mkdtemp(prefix="candidate-")
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(res_r)
        if workdir:
            os.chdir(workdir)
        child_main(req, out_w, res_w, isolated)
    os.close(out_w)
    os.close(res_w)
    pidfd = os.pidfd_open(pid)
    output = CappedReader(out_r, limits["max_output_bytes"])
    results = CappedReader(res_r, limits["max_result_bytes"])
    deadline = started + req["timeout_s"]
    timed_out, exited = False, False
    while not exited or output.open or results.open:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            timed_out = not exited
            break
        watch = [r.fd for r in (output, results) if r.open] + (
            [] if exited else [pidfd]
        )
        ready, _, _ = select.select(watch, [], [], remaining)
        for reader in (output, results):
            if reader.open and reader.fd in ready:
                reader.pump()
        if pidfd in ready:
            exited = True
            # Stragglers of a weakly isolated child still hold the pipes open.
            _kill_group(pid)
            deadline = min(deadline, time.perf_counter() + 0.2)
    _kill_group(pid)
    if not exited:
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    os.close(pidfd)
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    for reader in (output, results):
        if reader.open:
            os.close(reader.fd)
    return {
        "wait_status": status,
        "timed_out": timed_out,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_ms": (time.perf_counter() - started) * 1000.0,
        "results": results.text(),
        "results_truncated": results.truncated,
        "output": output.text(),
        "output_truncated": output.truncated,
    }


_pid_namespace_fd = None


def _own_pid_namespace():
    global _pid_namespace_fd
    if _pid_namespace_fd is None:
        _pid_namespace_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    return _pid_namespace_fd


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def self_check(isolated):
    """Run one trivial candidate so that a broken sandbox fails at start-up."""
    limits = {
        "cpu_seconds": 2,
        "memory_mb": 256,
        "max_file_mb": 1,
        "max_open_files": 32,
        "max_processes": 8,
        "max_output_bytes": 1000,
        "max_result_bytes": 10000,
    }
    req = {
        "code": "x = 1",
        "setup_code": "",
        "imports": [],
        "entry_point": "",
        "tests": [{"kind": "expr", "source": "x"}],
        "timeout_s": 5.0,
        "phase_timeout_s": 2.0,
        "limits": limits,
    }
    reply = run_request(req, isolated)
    if "('value', 0, '1'" not in reply["results"]:
        raise RuntimeError("sandbox self-check failed: " + repr(reply)[:800])


def main(isolated):
    out_fd = os.dup(1)  # keep the host channel off fd 1 so nothing prints into it
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    # Not dumpable: a same-uid process cannot ptrace us or read /proc/<pid>/mem.
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        self_check(isolated)
    except BaseException as exc:
        write_frame(out_fd, {"ready": False, "error": describe(exc)})
        return
    # Fork server idiom: move every object alive now out of the collector's
    # reach, so that a child's garbage collection does not touch (and so copy)
    # the pages it shares with us.
    gc.freeze()
    write_frame(out_fd, {"ready": True})
    stdin = sys.stdin.buffer
    while True:
        req = read_frame(stdin)
        if req is None:
            return
        try:
            reply = run_request(req, isolated)
        except BaseException as exc:
            reply = {"error": describe(exc)}
        write_frame(out_fd, reply)
