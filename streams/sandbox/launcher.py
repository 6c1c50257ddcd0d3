"""The command line that starts one zygote, and the cgroup that caps its processes."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from streams.sandbox.config import SandboxConfig
from streams.sandbox.errors import SandboxUnavailable

log = logging.getLogger(__name__)

PIDS_CGROUP_ROOT = Path("/sys/fs/cgroup/pids")  # cgroup v1 pids controller
# Processes of a worker that are not the candidate: bwrap's monitor, bwrap's
# init, the zygote itself.
SANDBOX_OVERHEAD_PROCESSES = 3

# The modules that run inside the sandbox, in import order; each imports only the
# standard library and the ones before it.
SANDBOX_MODULES = ("wire", "phases", "line_trace", "candidate_server", "judge", "zygote")

# Executed by `python -c`: reads the sandbox modules from stdin (so no harness file exists
# inside the sandbox for a candidate to read), registers each under its package name, so
# that they import one another as they do on the host, and starts the zygote.
BOOTSTRAP = (
    "import sys, json, types; bundle = json.loads(sys.stdin.buffer.read(int(sys.argv[2])))\n"
    "for name, src in bundle:\n"
    "    for i in range(1, name.count('.') + 1):\n"
    "        sys.modules.setdefault(name.rsplit('.', i)[0], types.ModuleType(name.rsplit('.', i)[0]))\n"
    "    module = sys.modules[name] = types.ModuleType(name)\n"
    "    exec(compile(src, name, 'exec'), module.__dict__)\n"
    "module.main(sys.argv[1] == 'bwrap')"
)


def zygote_source() -> bytes:
    """The bundle sent to a new zygote: [[module name, source], ...] as JSON."""
    here = Path(__file__).parent
    bundle = [
        [f"streams.sandbox.{name}", (here / f"{name}.py").read_text()]
        for name in SANDBOX_MODULES
    ]
    return json.dumps(bundle).encode("utf-8")


def interpreter(config: SandboxConfig) -> str:
    return os.path.realpath(config.python or sys.executable)


def bwrap_args(python: str) -> list[str]:
    """bubblewrap flags; each one is there for a reason given beside it."""
    args = [
        "bwrap",
        "--die-with-parent",  # the sandbox never outlives the pool that started it
        "--unshare-all",  # new user, pid, net, ipc, uts, cgroup namespaces: no network at all
        # Not --disable-userns: it leaves the zygote unable to mount a private /proc per
        # child. Children drop every capability and set no_new_privs instead.
        "--new-session",  # setsid: no writing into the host's terminal (TIOCSTI)
        "--ro-bind",
        "/usr",
        "/usr",  # the system is read-only and nothing else of the host is visible
        "--tmpfs",
        "/tmp",  # private scratch space (each child mounts a fresh one again)
        "--proc",
        "/proc",
        "--dev",
        "/dev",  # a minimal /dev: null, zero, urandom, ...
        "--chdir",
        "/tmp",
        "--clearenv",  # no host environment (tokens, paths) leaks in
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
    ]
    # Merged-/usr systems have /bin, /lib... as symlinks; others as real folders.
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    prefix = os.path.dirname(
        os.path.dirname(python)
    )  # .../bin/python3 -> the installation
    base = os.path.realpath(sys.base_prefix)
    for path in {prefix, base}:
        if not path.startswith("/usr"):
            args += ["--ro-bind", path, path]
    return args


def make_pids_cgroup(name: str, limit: int) -> Path | None:
    """A pids cgroup capping a worker, or None where none can be made here.

    RLIMIT_NPROC is not enforced for uid 0, which is what processes are inside
    the sandbox's user namespace when the pool runs as root, so a fork bomb is
    capped by the kernel's pids controller instead.
    """
    path = PIDS_CGROUP_ROOT / "reshaper-sandbox" / name
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / "pids.max").write_text(str(limit))
    except OSError as exc:
        log.debug("no pids cgroup at %s: %s", path, exc)
        return None
    return path


def remove_cgroup(path: Path | None, wait_s: float = 2.0) -> None:
    """Kill what is left in the cgroup and remove it (possible only once it is empty)."""
    if path is None:
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            for pid in (path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while the killed processes are still exiting
            if time.monotonic() > deadline:
                log.warning("could not remove cgroup %s", path)
                return
            time.sleep(0.02)


def zygote_command(config: SandboxConfig, cgroup: Path | None) -> list[str]:
    python = interpreter(config)
    size = len(zygote_source())
    command = [python, "-I", "-S", "-c", BOOTSTRAP, config.isolation, str(size)]
    if config.isolation == "bwrap":
        command = bwrap_args(python) + command
    if cgroup is not None:
        # Join the cgroup before exec, so that every descendant is counted.
        command = [
            "/bin/sh",
            "-c",
            'echo $$ > "$0/cgroup.procs" && exec "$@"',
            str(cgroup),
        ] + command
    return command


def zygote_env() -> dict[str, str]:
    """The whole environment a zygote gets: nothing of the host's (tokens, paths)."""
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}


def check_bwrap(config: SandboxConfig) -> None:
    """Raise SandboxUnavailable unless bubblewrap can start the interpreter here."""
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable("bwrap (bubblewrap) is not installed")
    probe = bwrap_args(interpreter(config)) + [
        interpreter(config),
        "-I",
        "-S",
        "-c",
        "pass",
    ]
    try:
        done = subprocess.run(
            probe, capture_output=True, timeout=config.start_timeout_s
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bwrap did not start: {exc}") from exc
    if done.returncode != 0:
        raise SandboxUnavailable(
            f"bwrap failed: {done.stderr.decode(errors='replace').strip()[:500]}"
        )
