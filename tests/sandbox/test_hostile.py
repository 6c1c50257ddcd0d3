"""Hostile candidates: each yields a structured result with the right kind, escapes
nothing, leaks no process and leaves the pool healthy for the next candidate."""

import os
from pathlib import Path

import pytest

from streams.sandbox import ErrorKind, EvalRequest

ZYGOTE_SOURCE = (
    Path(__file__).resolve().parents[2] / "streams" / "sandbox" / "zygote.py"
)


def run(pool, code, tests, **kw):
    return pool.evaluate(EvalRequest(code=code, tests=tests, **kw))


def test_syntax_error(pool, healthy_after):
    result = run(pool, "def f(:\n    return 1\n", ["assert f() == 1"])
    assert result.error_kind is ErrorKind.SYNTAX
    assert (
        result.tests_passed == 0 and result.outcomes[0].error_kind is ErrorKind.SYNTAX
    )


def test_nesting_too_deep_to_compile(pool, healthy_after):
    result = run(pool, "x = " + "(" * 5000 + ")" * 5000 + "\n", ["assert x == 1"])
    assert result.error_kind is ErrorKind.SYNTAX


def test_non_utf8_bytes(pool, healthy_after):
    raw = b"def f():\n    return '\xff\xfe'\n\xc3\x28 = 1\n"
    as_bytes = run(
        pool, raw, ["assert f() == 1"]
    )  # decoded with replacement characters
    with_surrogates = run(
        pool, raw.decode("utf-8", "surrogateescape"), ["assert f() == 1"]
    )
    assert as_bytes.error_kind is ErrorKind.SYNTAX
    assert with_surrogates.error_kind is ErrorKind.SYNTAX


def test_output_flood_is_capped(pool, healthy_after):
    code = "import sys\nsys.stdout.write('x' * 10_000_000)\nprint('y' * 1000)\ndef f():\n    return 1\n"
    result = run(pool, code, ["assert f() == 1"])
    assert (result.error_kind, result.tests_passed) == (ErrorKind.NONE, 1)
    assert "output_truncated" in result.flags
    assert len(result.stdout) == pool.config.max_output_bytes


def test_infinite_loop_in_a_test(pool, healthy_after):
    code = "def f(n):\n    while True:\n        n += 1\n"
    result = run(pool, code, ["assert f(1) == 2", "assert f(2) == 3"])
    assert result.error_kind is ErrorKind.TIMEOUT
    assert [o.error_kind for o in result.outcomes] == [
        ErrorKind.TIMEOUT,
        ErrorKind.TIMEOUT,
    ]


def test_infinite_loop_that_swallows_the_timeout(pool, healthy_after):
    # `except BaseException` eats the per-test alarm; the zygote's wall clock still kills it.
    code = "def f():\n    while True:\n        try:\n            while True: pass\n        except BaseException:\n            pass\n"
    result = run(pool, code, ["assert f() == 1"])
    assert result.error_kind is ErrorKind.TIMEOUT


def test_fork_bomb(pool, healthy_after):
    code = "import os, time\ndef f():\n    while True:\n        os.fork()\n"
    result = run(pool, code, ["assert f() == 1"])
    assert result.error_kind is ErrorKind.CRASH
    assert "BlockingIOError" in result.error_message  # fork refused at the process cap


def test_process_escaping_by_setsid_is_killed(pool, healthy_after):
    code = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
        "def f():\n    return 1\n"
    )
    result = run(pool, code, ["assert f() == 1"])
    assert (
        result.error_kind is ErrorKind.NONE
    )  # the check that it is gone is in healthy_after


def test_memory_bomb(pool, healthy_after):
    result = run(pool, "def f():\n    return [0] * (10 ** 10)\n", ["assert f() == 1"])
    assert result.error_kind is ErrorKind.MEMORY


def test_memory_bomb_grown_slowly(pool, healthy_after):
    code = "def f():\n    chunks = []\n    while True:\n        chunks.append(bytearray(10 ** 8))\n"
    # Filling ~256 MB page by page takes a while on a busy machine: more time.
    result = run(pool, code, ["assert f() == 1"], timeout_s=6.0)
    assert result.error_kind is ErrorKind.MEMORY


def test_deep_recursion(pool, healthy_after):
    result = run(pool, "def f(n):\n    return f(n + 1) + 1\n", ["assert f(0) == 1"])
    assert result.error_kind is ErrorKind.CRASH
    assert "RecursionError" in result.error_message


def test_recursion_past_the_c_stack(pool, healthy_after):
    # Recursing through a C function (sorted) uses the C stack, which overflows.
    code = (
        "import sys\nsys.setrecursionlimit(10 ** 7)\n"
        "def f(n):\n    return sorted([n], key=lambda x: f(x + 1))\n"
    )
    result = run(pool, code, ["assert f(0) == 1"])
    assert result.error_kind is ErrorKind.CRASH  # SIGSEGV, reported, not raised


@pytest.mark.parametrize("exit_call", ["sys.exit(0)", "os._exit(0)", "os.abort()"])
def test_exits(pool, healthy_after, exit_call):
    result = run(
        pool, f"import os, sys\ndef f():\n    {exit_call}\n", ["assert f() == 1"]
    )
    assert result.error_kind is ErrorKind.CRASH


def test_os_system_cannot_write_to_the_host(pool, healthy_after, tmp_path):
    target = tmp_path / "from_shell"
    code = f"import os\ndef f():\n    return os.system('echo owned > {target}; echo owned > /usr/owned')\n"
    result = run(pool, code, ["assert f() == 0"])
    assert (
        result.error_kind is ErrorKind.WRONG_ANSWER
    )  # the shell ran, but both writes failed
    assert not target.exists() and not Path("/usr/owned").exists()


def test_writing_outside_tmp(pool, healthy_after, tmp_path):
    target = tmp_path / "written"
    code = f"def f():\n    open({str(target)!r}, 'w').write('x')\n    return 1\n"
    result = run(pool, code, ["assert f() == 1"])
    assert result.error_kind is ErrorKind.CRASH
    assert not target.exists()


def test_tmp_is_private_to_each_candidate(pool, healthy_after):
    write = "def f():\n    open('/tmp/left_behind', 'w').write('x')\n    return 1\n"
    read = "import os\ndef f():\n    return os.path.exists('/tmp/left_behind')\n"
    assert run(pool, write, ["assert f() == 1"]).error_kind is ErrorKind.NONE
    for _ in range(pool.config.workers):  # whichever worker runs it
        assert run(pool, read, ["assert f() == False"]).error_kind is ErrorKind.NONE


def test_no_network(pool, healthy_after):
    code = (
        "import socket\ndef f():\n    socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
        "    return 1\n"
    )
    result = run(pool, code, ["assert f() == 1"])
    assert result.error_kind is ErrorKind.CRASH
    assert "OSError" in result.error_message


def test_harness_source_and_other_processes_are_invisible(pool, healthy_after):
    code = (
        "import os\n"
        "def read():\n    try:\n        return open("
        + repr(str(ZYGOTE_SOURCE))
        + ").read()[:10]\n"
        "    except OSError as exc:\n        return type(exc).__name__\n"
        "def pids():\n    return sorted(p for p in os.listdir('/proc') if p.isdigit())\n"
    )
    result = run(
        pool, code, ["assert read() == 'FileNotFoundError'", "assert pids() == ['1']"]
    )
    assert result.error_kind is ErrorKind.NONE, result


def test_expected_value_never_reaches_the_candidate(pool, healthy_after):
    code = (
        "import gc\ndef find():\n"
        "    prefix = 'zq-secret-'\n"
        "    for obj in gc.get_objects():\n"
        "        for item in (obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()):\n"
        "            if isinstance(item, str) and item.startswith(prefix) and item != prefix:\n"
        "                return item\n"
        "    return None\n"
    )
    result = run(pool, code, ["assert find() == 'zq-secret-7781'"])
    assert result.error_kind is ErrorKind.WRONG_ANSWER
    assert result.outcomes[0].message.endswith("got None")


def test_patching_builtins_does_not_change_the_verdict(pool, healthy_after):
    code = (
        "import builtins, math, sys\n"
        "builtins.AssertionError = type('Never', (Exception,), {})\n"
        "builtins.print = None\n"
        "builtins.set = lambda *args: 1\n"
        "builtins.repr = lambda obj: '1'\n"
        "math.isclose = lambda *args, **kw: True\n"
        "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "def f():\n    return Yes()\n"
    )
    tests = [
        "assert f() == 1",
        "assert set([f()]) == set([1, 2])",
        "assert math.isclose(2, 1)",
    ]
    result = run(pool, code, tests, imports=["import math"])
    assert "patched_builtins" in result.flags
    assert [o.passed for o in result.outcomes] == [False, False, False]
    assert result.error_kind is ErrorKind.WRONG_ANSWER


def test_a_correct_candidate_that_patches_still_passes(pool, healthy_after):
    code = "import builtins\nbuiltins.print = None\nset = None\ndef f():\n    return {1, 2}\n"
    result = run(pool, code, ["assert f() == {2, 1}", "assert set(f()) == set([1, 2])"])
    assert (result.error_kind, result.tests_passed) == (ErrorKind.NONE, 2)
    assert "patched_builtins" in result.flags


def test_segfault(pool, healthy_after):
    result = run(pool, "import ctypes\nctypes.string_at(0)\n", ["assert f() == 1"])
    assert result.error_kind is ErrorKind.CRASH
    assert "SIGSEGV" in result.error_message


def test_import_error(pool, healthy_after):
    result = run(
        pool,
        "import numpy_that_is_not_here\ndef f():\n    return 1\n",
        ["assert f() == 1"],
    )
    assert result.error_kind is ErrorKind.IMPORT


def test_environment_is_empty(pool, healthy_after):
    code = "import os\ndef f():\n    return sorted(os.environ)\n"
    result = run(pool, code, ["assert f() == ['HOME', 'LANG', 'PATH', 'PWD']"])
    assert result.error_kind is ErrorKind.NONE, result
    assert os.environ.get("HOME") is not None  # the host's own is untouched
