"""The warm worker process that runs inside the sandbox.

This module and the ones it imports (wire, phases, candidate_server, judge) are not
imported by the host: their sources are sent over stdin to a bare `python -I -S` inside
bubblewrap and executed there (launcher.py), so they use the standard library only. The
zygote never runs candidate code itself. For each request it forks two processes:

- the candidate's process, which (bwrap mode) is pid 1 of a fresh PID namespace, so when it
  exits or is killed the kernel kills everything it spawned, with a private mount namespace
  (its own empty /tmp, a /proc that shows only itself), stdout/stderr on a capped pipe,
  resource limits, no capabilities, its own session; it loads the candidate and answers
  calls (candidate_server.py);
- the judge, which runs the tests against the candidate's process over two pipes and writes
  the report (judge.py); the candidate's process holds no descriptor of the report pipe and
  cannot see the judge's process.

The zygote enforces the wall-clock deadline, caps what it reads, reaps both and relays the
judge's report to the host, which parses and judges it. Expected values of split asserts
never reach this process.

Wire format, host <-> zygote: 4-byte big-endian length + JSON.
Judge -> host (relayed): lines, each `repr()` of a tuple of str/int/float/bool.
"""

import ctypes
import fcntl
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

from streams.sandbox.candidate_server import JUDGE_IMPORTABLE, CandidateServer
from streams.sandbox.judge import Judge
from streams.sandbox.phases import describe
from streams.sandbox.wire import write_frame

# Imported once here so that every forked child gets them for free.
for _name in sorted(JUDGE_IMPORTABLE):
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


def read_host_frame(stream):
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    return json.loads(stream.read(size).decode("utf-8"))


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


def redirect_fds(out_fd, keep):
    """stdin <- /dev/null, stdout+stderr -> out_fd, `keep` -> fds 3, 4, ...; close the rest
    (the zygote's pipes to the host among them). Returns the new numbers of `keep`."""
    # Copy the kept ones above every target first, so that no dup2 overwrites another.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3 + len(keep)) for fd in keep]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    for number, fd in enumerate(high, start=3):
        os.dup2(fd, number)
    os.closerange(3 + len(keep), 1 << 16)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = sys.stdout
    return list(range(3, 3 + len(keep)))


# ------------------------------------------------------------- the zygote side


def candidate_main(req, out_w, call_r, reply_w, isolated):
    status, reply_fd = 0, reply_w
    try:
        if isolated:
            enter_private_namespaces()
        call_fd, reply_fd = redirect_fds(out_w, [call_r, reply_w])
        set_rlimits(req["limits"])
        if isolated:
            drop_capabilities()
        os.setsid()
        CandidateServer(req, call_fd, reply_fd).run()
    except BaseException as exc:  # a failure of the server itself: the judge sees a bad reply
        try:
            write_frame(reply_fd, ["fatal", describe(exc)])
        except BaseException:
            pass
        status = 70
    os._exit(status)


def judge_main(req, call_w, reply_r, res_w):
    status, res_fd = 0, res_w
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        call_fd, reply_fd, res_fd = redirect_fds(devnull, [call_w, reply_r, res_w])
        # Trusted code, but it holds values the candidate chose: the same caps apply.
        set_rlimits(req["limits"])
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a dead candidate is an EPIPE, not our death
        Judge(req, call_fd, reply_fd, res_fd).run()
    except BaseException as exc:  # a failure of the judge itself, not the candidate
        try:
            os.write(res_fd, (repr(("fatal", describe(exc))) + "\n").encode())
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
    call_r, call_w = os.pipe()
    reply_r, reply_w = os.pipe()
    started = time.perf_counter()
    if isolated:
        # The candidate becomes pid 1 of a new PID namespace: the kernel kills all of its
        # descendants when it dies, even ones that called setsid. The kernel allows a new
        # one only once children go to our own namespace again, hence the setns first.
        _check(_libc.setns(_own_pid_namespace(), CLONE_NEWPID), "setns(pid)")
        _check(_libc.unshare(CLONE_NEWPID), "unshare(pid)")
    # Weak mode has no private /tmp: give each candidate a fresh folder, removed after.
    workdir = None if isolated else tempfile.mkdtemp(prefix="candidate-")
    candidate = os.fork()
    if candidate == 0:
        for fd in (out_r, call_w, reply_r):
            os.close(fd)
        if workdir:
            os.chdir(workdir)
        candidate_main(req, out_w, call_r, reply_w, isolated)
    for fd in (out_w, call_r, reply_w):
        os.close(fd)
    if isolated:  # the judge lives in our namespace, out of the candidate's sight
        _check(_libc.setns(_own_pid_namespace(), CLONE_NEWPID), "setns(pid)")
    # Made after the candidate's fork: it never had this pipe, not even for a moment.
    res_r, res_w = os.pipe()
    judge = os.fork()
    if judge == 0:
        for fd in (out_r, res_r):
            os.close(fd)
        judge_main(req, call_w, reply_r, res_w)
    for fd in (call_w, reply_r, res_w):
        os.close(fd)
    candidate_fd, judge_fd = os.pidfd_open(candidate), os.pidfd_open(judge)
    output = CappedReader(out_r, limits["max_output_bytes"])
    results = CappedReader(res_r, limits["max_result_bytes"])
    deadline = started + req["timeout_s"]
    timed_out, judged = False, False
    while not judged or output.open or results.open:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            timed_out = not judged
            break
        watch = [r.fd for r in (output, results) if r.open] + ([] if judged else [judge_fd])
        ready, _, _ = select.select(watch, [], [], remaining)
        for reader in (output, results):
            if reader.open and reader.fd in ready:
                reader.pump()
        if judge_fd in ready:
            judged = True
            # The verdict is in: the candidate and its stragglers go.
            _kill_group(candidate)
            deadline = min(deadline, time.perf_counter() + 0.2)
    _kill_group(candidate)
    for pid in (candidate, judge):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status, usage = os.wait4(candidate, 0)
    _, judge_status, _ = os.wait4(judge, 0)
    for fd in (candidate_fd, judge_fd):
        os.close(fd)
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    for reader in (output, results):
        if reader.open:
            os.close(reader.fd)
    return {
        "wait_status": status,
        "judge_status": judge_status,
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
        req = read_host_frame(stdin)
        if req is None:
            return
        try:
            reply = run_request(req, isolated)
        except BaseException as exc:
            reply = {"error": describe(exc)}
        write_frame(out_fd, reply)
