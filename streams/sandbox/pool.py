"""A pool of warm zygotes: sync, parallel and asyncio entry points."""

import asyncio
import itertools
import json
import logging
import os
import queue
import select
import signal
import struct
import subprocess
import tempfile
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streams.sandbox import launcher
from streams.sandbox.asserts import PreparedTest, prepare_test
from streams.sandbox.config import SandboxConfig
from streams.sandbox.errors import SandboxUnavailable
from streams.sandbox.models import EvalRequest, EvalResult
from streams.sandbox.verdict import build_result, sandbox_failure

log = logging.getLogger(__name__)

# Host-side backstop on top of the zygote's own deadline, for a zygote that hangs.
REPLY_GRACE_S = 5.0
_worker_ids = itertools.count()


class ZygoteDied(RuntimeError):
    """The zygote stopped answering; the worker restarts it.

    `exited` tells a zygote that was found gone (worth one retry on a fresh one)
    from one that hung past the deadline (not retried: it would hang again).
    """

    def __init__(self, message: str, exited: bool = True):
        super().__init__(message)
        self.exited = exited


class _Zygote:
    """One warm sandboxed interpreter and the pipes to it."""

    def __init__(self, config: SandboxConfig):
        self.config = config
        name = f"{os.getpid()}-{next(_worker_ids)}"
        self.cgroup = launcher.make_pids_cgroup(
            name, config.max_processes + launcher.SANDBOX_OVERHEAD_PROCESSES
        )
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                launcher.zygote_command(config, self.cgroup),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=launcher.zygote_env(),
                start_new_session=True,  # its own process group, killed as one
            )
        except OSError as exc:
            launcher.remove_cgroup(self.cgroup)
            raise SandboxUnavailable(f"cannot start a zygote: {exc}") from exc
        self.out_fd = self.proc.stdout.fileno()
        self._write(launcher.zygote_source())

    def wait_ready(self) -> None:
        try:
            hello = self._read_frame(time.monotonic() + self.config.start_timeout_s)
        except ZygoteDied as exc:
            raise SandboxUnavailable(
                f"zygote did not start: {exc}; {self._stderr_tail()}"
            ) from exc
        if not hello.get("ready"):
            raise SandboxUnavailable(f"zygote self-check failed: {hello.get('error')}")

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(request).encode("utf-8")
        self._write(struct.pack(">I", len(data)) + data)
        return self._read_frame(time.monotonic() + request["timeout_s"] + REPLY_GRACE_S)

    def _write(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ZygoteDied(f"cannot write to zygote: {exc}") from exc

    def _read_exact(self, size: int, deadline: float) -> bytes:
        chunks, left = [], size
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.out_fd], [], [], remaining)[0]:
                raise ZygoteDied("no reply before the deadline", exited=False)
            chunk = os.read(self.out_fd, left)
            if not chunk:
                raise ZygoteDied(f"zygote exited (status {self.proc.poll()})")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read_frame(self, deadline: float) -> dict[str, Any]:
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        return json.loads(self._read_exact(size, deadline))

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-800:].decode("utf-8", "replace").strip()

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            try:
                stream.close()
            except OSError:
                pass
        launcher.remove_cgroup(self.cgroup)


class _Slot:
    """One worker place in the pool; its zygote is swapped when it dies."""

    def __init__(self, zygote: _Zygote):
        self.zygote = zygote


@dataclass
class _Job:
    tests: list[PreparedTest]
    wire: dict


@dataclass
class _Reply:
    reply: dict | None  # None when the worker failed
    failure: str
    runtime_ms: float


class SandboxPool:
    """Evaluates candidates in `config.workers` warm sandboxed zygotes.

    Usable as a context manager or with start()/close(). `evaluate` blocks,
    `evaluate_many` runs requests on all workers and keeps their order,
    `aevaluate` is the same for asyncio without blocking the event loop.
    """

    def __init__(self, config: SandboxConfig = SandboxConfig()):
        self.config = config
        self._idle: queue.Queue[_Slot] = queue.Queue()
        self._slots: list[_Slot] = []
        self._executor: ThreadPoolExecutor | None = None
        self._base_flags: set[str] = set()

    # ------------------------------------------------------------ lifecycle
    def start(self) -> "SandboxPool":
        if self._executor is not None:
            return self
        if self.config.isolation == "bwrap":
            launcher.check_bwrap(self.config)
        else:
            log.warning(
                "sandbox runs with isolation='rlimits-only': candidates are NOT isolated "
                "from the host file system or network; results carry 'weak_isolation'"
            )
            self._base_flags.add("weak_isolation")
        zygotes = [_Zygote(self.config) for _ in range(self.config.workers)]
        try:
            for zygote in zygotes:
                zygote.wait_ready()
        except BaseException:
            for zygote in zygotes:
                zygote.close()
            raise
        if any(z.cgroup is None for z in zygotes) and os.geteuid() == 0:
            log.warning(
                "no pids cgroup available: the number of candidate processes is not capped"
            )
            self._base_flags.add("no_process_limit")
        self._slots = [_Slot(zygote) for zygote in zygotes]
        for slot in self._slots:
            self._idle.put(slot)
        self._executor = ThreadPoolExecutor(
            self.config.workers, thread_name_prefix="sandbox"
        )
        return self

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        for slot in self._slots:
            slot.zygote.close()
        self._slots = []
        self._idle = queue.Queue()

    def __enter__(self) -> "SandboxPool":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ----------------------------------------------------------- evaluation
    # Parsing (the tests before, the reply after) stays on the calling thread and only the
    # wait for the zygote goes to the executor: CPython 3.11 builds AST objects with
    # interpreter-wide recursion counters, and compile()/ast.parse from two threads at once
    # can fail with "SystemError: AST constructor recursion depth mismatch" (gh-106905).
    def evaluate(self, request: EvalRequest) -> EvalResult:
        job = self._prepare(request)
        return self._verdict(job, self._run(job))

    def evaluate_many(self, requests: list[EvalRequest]) -> list[EvalResult]:
        jobs = [self._prepare(r) for r in requests]
        replies = list(self._executor.map(self._run, jobs))
        return [self._verdict(job, reply) for job, reply in zip(jobs, replies)]

    async def aevaluate(self, request: EvalRequest, parse_in: Executor | None = None) -> EvalResult:
        """``parse_in``: where the tests and the reply are parsed, by default the calling
        thread; a caller that builds ASTs on a thread of its own as well (the evaluator's
        signals) gives that thread, so two threads never parse at once."""
        loop = asyncio.get_running_loop()
        if parse_in is None:
            job = self._prepare(request)
            return self._verdict(job, await loop.run_in_executor(self._executor, self._run, job))
        job = await loop.run_in_executor(parse_in, self._prepare, request)
        reply = await loop.run_in_executor(self._executor, self._run, job)
        return await loop.run_in_executor(parse_in, self._verdict, job, reply)

    def _prepare(self, request: EvalRequest) -> "_Job":
        if self._executor is None:
            raise RuntimeError(
                "SandboxPool is not started; use start() or a with block"
            )
        tests = [prepare_test(t) for t in request.tests]  # raises InvalidRequest
        timeout_s = request.timeout_s or self.config.timeout_s
        return _Job(tests, self._wire_request(request, tests, timeout_s))

    def _run(self, job: "_Job") -> "_Reply":
        """The blocking part: one idle zygote slot answers the request (any thread)."""
        started = time.perf_counter()
        slot = self._idle.get()
        try:
            reply, failure = self._ask(slot, job.wire), ""
        except (ZygoteDied, SandboxUnavailable) as exc:
            reply, failure = None, f"sandbox worker failed: {exc}"
        finally:
            self._idle.put(slot)
        return _Reply(reply, failure, (time.perf_counter() - started) * 1000)

    def _verdict(self, job: "_Job", reply: "_Reply") -> EvalResult:
        if reply.reply is None:
            return sandbox_failure(len(job.tests), reply.failure, reply.runtime_ms, sorted(self._base_flags))
        return build_result(job.tests, reply.reply, self.config.cpu_seconds, reply.runtime_ms, self._base_flags)

    # -------------------------------------------------------------- helpers
    def _wire_request(
        self, request: EvalRequest, tests: list[PreparedTest], timeout_s: float
    ) -> dict:
        code = request.code
        if isinstance(code, bytes):
            code = code.decode("utf-8", "replace")
        c = self.config
        limits = {
            "cpu_seconds": c.cpu_seconds,
            "memory_mb": c.memory_mb,
            "max_processes": c.max_processes,
            "max_file_mb": c.max_file_mb,
            "max_open_files": c.max_open_files,
            "max_output_bytes": c.max_output_bytes,
            "max_result_bytes": (len(tests) + 8) * (c.max_output_bytes + 1024),
        }
        return {
            "code": code,
            "setup_code": request.setup_code,
            "imports": list(request.imports),
            "entry_point": request.entry_point,
            # Only the side to evaluate: expected values stay here.
            "tests": [{"kind": t.kind, "source": t.source} for t in tests],
            "timeout_s": timeout_s,
            # Each phase (the candidate's top level, each test) may use half the budget:
            # one hanging test still leaves time to report the others, while a slow but
            # correct test is not cut to a sliver of the budget.
            "phase_timeout_s": timeout_s / 2,
            "trace_lines": request.trace_lines,
            "limits": limits,
            "seed": request.seed,
        }

    def _ask(self, slot: "_Slot", wire: dict) -> dict:
        """Ask the slot's zygote. One found dead is replaced and asked again, once;
        one that hung is replaced and the request fails."""
        for attempt in range(2):
            try:
                if slot.zygote.proc.poll() is not None:
                    raise ZygoteDied(
                        f"zygote exited (status {slot.zygote.proc.returncode})"
                    )
                return slot.zygote.ask(wire)
            except ZygoteDied as exc:
                log.warning("sandbox zygote failed (%s); starting a new one", exc)
                slot.zygote.close()
                slot.zygote = (
                    self._start_zygote()
                )  # SandboxUnavailable: retried on next use
                if attempt or not exc.exited:
                    raise
        raise AssertionError("unreachable")

    def _start_zygote(self) -> _Zygote:
        zygote = _Zygote(self.config)
        try:
            zygote.wait_ready()
        except BaseException:
            zygote.close()
            raise
        return zygote
