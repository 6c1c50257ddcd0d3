import asyncio
import logging
import os
import signal
from pathlib import Path

import psutil
import pytest

from streams.sandbox import (
    ErrorKind,
    EvalRequest,
    InvalidRequest,
    SandboxConfig,
    SandboxPool,
    SandboxUnavailable,
)
from streams.sandbox import launcher
from tests.sandbox.conftest import NORMAL


def square_request(n: int) -> EvalRequest:
    # Candidate n is right on n's own test only, so each result can be told apart.
    return EvalRequest(
        code=f"def sq(x):\n    return x * x if x == {n} else -1\n",
        tests=[f"assert sq({n}) == {n * n}", "assert sq(-7) == 49"],
        entry_point="sq",
    )


def test_mbpp_task_with_per_test_outcomes(pool):
    code = "def remove_Occ(s, ch):\n    return s.replace(ch, '', 1)\n"
    tests = [
        'assert remove_Occ("hello","l") == "heo"',
        'assert remove_Occ("abcda","a") == "bcd"',
        'assert remove_Occ("PHP","P") == "H"',
    ]
    result = pool.evaluate(
        EvalRequest(code=code, tests=tests, entry_point="remove_Occ")
    )
    assert [o.passed for o in result.outcomes] == [False, False, False]
    assert result.outcomes[0].message == "expected 'heo', got 'helo'"
    fixed = code.replace(
        "s.replace(ch, '', 1)", "s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]"
    )
    result = pool.evaluate(
        EvalRequest(code=fixed, tests=tests, entry_point="remove_Occ")
    )
    assert (result.tests_passed, result.tests_total, result.pass_fraction) == (
        3,
        3,
        1.0,
    )
    assert result.error_kind is ErrorKind.NONE and result.flags == []


def test_setup_code_and_imports(pool):
    code = (
        "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
        "def longest(pairs):\n    return max(p.b - p.a for p in pairs)\n"
    )
    request = EvalRequest(
        code=code,
        setup_code="pairs = [Pair(1, 4), Pair(2, 9)]",
        imports=["import math"],
        tests=[
            "assert longest(pairs) == 7",
            "assert math.isclose(longest(pairs) / 2, 3.5)",
        ],
    )
    result = pool.evaluate(request)
    assert (result.error_kind, result.tests_passed) == (ErrorKind.NONE, 2)


def test_entry_point_may_shadow_a_builtin(pool):
    code = "def sum(xs):\n    return 42\n"
    shadowing = pool.evaluate(
        EvalRequest(code=code, tests=["assert sum([1]) == 42"], entry_point="sum")
    )
    assert shadowing.tests_passed == 1
    # Without being the entry point, the shadowing name is not what tests see.
    other = pool.evaluate(
        EvalRequest(code=code, tests=["assert sum([1]) == 42"], entry_point="f")
    )
    assert other.tests_passed == 0


def test_candidate_exception_inside_a_test_is_a_crash_of_that_test(pool):
    code = "def f(xs):\n    return xs[3]\n"
    result = pool.evaluate(
        EvalRequest(
            code=code, tests=["assert f([1, 2, 3, 4]) == 4", "assert f([]) == 0"]
        )
    )
    assert [o.error_kind for o in result.outcomes] == [ErrorKind.NONE, ErrorKind.CRASH]
    assert "IndexError" in result.outcomes[1].message
    assert result.tests_passed == 1 and result.error_kind is ErrorKind.CRASH


def test_evaluate_many_keeps_order(pool):
    results = pool.evaluate_many([square_request(n) for n in range(6)])
    assert [r.outcomes[0].passed for r in results] == [True] * 6
    assert [r.outcomes[1].message for r in results] == ["expected 49, got -1"] * 6
    assert [r.tests_passed for r in results] == [1] * 6


def test_aevaluate_does_not_block_the_event_loop(pool):
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        slow = EvalRequest(
            code="import time\ndef f():\n    time.sleep(0.3)\n    return 1\n",
            tests=["assert f() == 1"],
        )
        result = await pool.aevaluate(slow)
        task.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result.error_kind is ErrorKind.NONE
    assert ticks >= 5  # the loop kept running while the candidate slept


def test_dead_zygote_is_replaced(pool):
    zygotes = [
        p
        for p in psutil.Process().children(recursive=True)
        if "-c" in p.cmdline()
        and launcher.BOOTSTRAP in p.cmdline()
        and "bwrap" not in p.cmdline()[0]
    ]
    assert len(zygotes) == pool.config.workers
    os.kill(zygotes[0].pid, signal.SIGKILL)
    zygotes[0].wait(5)
    results = [pool.evaluate(NORMAL) for _ in range(pool.config.workers * 2)]
    assert [r.error_kind for r in results] == [ErrorKind.NONE] * len(results), results


def test_invalid_test_is_refused(pool):
    with pytest.raises(InvalidRequest):
        pool.evaluate(EvalRequest(code="x = 1", tests=["assert x =="]))


def test_not_started_pool_refuses():
    with pytest.raises(RuntimeError, match="not started"):
        SandboxPool().evaluate(NORMAL)


def test_missing_bwrap_is_sandbox_unavailable(monkeypatch):
    monkeypatch.setattr(launcher.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="not installed"):
        SandboxPool(SandboxConfig(workers=1)).start()


def test_broken_bwrap_is_sandbox_unavailable():
    with pytest.raises(SandboxUnavailable) as error:
        SandboxPool(SandboxConfig(workers=1, python="/nonexistent/bin/python3")).start()
    assert "bwrap failed" in error.value.reason


def test_rlimits_only_is_flagged_and_logged(caplog):
    caplog.set_level(logging.WARNING, logger="streams.sandbox.pool")
    with SandboxPool(
        SandboxConfig(workers=1, isolation="rlimits-only", timeout_s=1.5)
    ) as weak:
        ok = weak.evaluate(NORMAL)
        looping = weak.evaluate(
            EvalRequest(code="while True:\n    pass\n", tests=["assert f() == 1"])
        )
        scribble = weak.evaluate(
            EvalRequest(
                code="import os\nopen('scribble.txt', 'w').write('x')\nenv = sorted(os.environ)\n",
                tests=["assert set(env) <= {'HOME', 'LANG', 'PATH', 'PWD'}"],
            )
        )
    assert scribble.error_kind is ErrorKind.NONE, scribble
    assert not (
        Path.cwd() / "scribble.txt"
    ).exists()  # it wrote into a scratch folder, now gone
    assert (ok.error_kind, ok.tests_passed) == (ErrorKind.NONE, 3)
    assert "weak_isolation" in ok.flags and "weak_isolation" in looping.flags
    assert looping.error_kind is ErrorKind.TIMEOUT
    assert "rlimits-only" in caplog.text


def test_config_is_validated():
    with pytest.raises(ValueError):
        SandboxConfig(workers=0)
    with pytest.raises(ValueError):
        SandboxConfig(isolation="docker")


def test_builtin_subclasses_compare_as_their_base_and_custom_eq_is_ignored():
    from streams.sandbox import EvalRequest, SandboxConfig, SandboxPool

    code = ("from collections import Counter, namedtuple, defaultdict\nP = namedtuple('P', 'a b')\n"
            "def f(s):\n    return Counter(s)\ndef g():\n    return P(1, 2)\n"
            "def h():\n    d = defaultdict(list)\n    d['a'].append(1)\n    return d\n"
            "class AlwaysEqual(int):\n    def __eq__(self, other):\n        return True\n"
            "def cheat():\n    return AlwaysEqual(5)\n")
    tests = ["assert f('aab') == {'a': 2, 'b': 1}", "assert g() == (1, 2)", "assert h() == {'a': [1]}",
             "assert cheat() == 7", "assert cheat() == 5"]
    with SandboxPool(SandboxConfig(workers=1)) as pool:
        result = pool.evaluate(EvalRequest(code=code, tests=tests))
    assert [o.passed for o in result.outcomes] == [True, True, True, False, True]


def test_parsing_stays_on_the_calling_thread(pool, monkeypatch):
    """compile()/ast from two threads at once can fail on CPython 3.11 (gh-106905), so the
    pool parses tests and replies on the caller's thread and only waits in its executor."""
    import threading

    import streams.sandbox.pool as pool_module

    threads = []
    for name in ("prepare_test", "build_result"):
        real = getattr(pool_module, name)

        def recording(*args, _real=real, **kwargs):
            threads.append(threading.get_ident())
            return _real(*args, **kwargs)

        monkeypatch.setattr(pool_module, name, recording)

    async def many():
        return threading.get_ident(), await asyncio.gather(*(pool.aevaluate(NORMAL) for _ in range(4)))

    loop_thread, results = asyncio.run(many())
    assert all(r.tests_passed == 3 for r in results)
    assert len(threads) == 4 * (3 + 1) and set(threads) == {loop_thread}
    threads.clear()
    assert [r.tests_passed for r in pool.evaluate_many([NORMAL, NORMAL])] == [3, 3]
    assert set(threads) == {threading.get_ident()}


def test_parsing_goes_to_the_executor_a_caller_names(pool, monkeypatch):
    """A caller that parses on a thread of its own too has the pool parse there (parse_in)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import streams.sandbox.pool as pool_module

    threads = []
    for name in ("prepare_test", "build_result"):
        real = getattr(pool_module, name)

        def recording(*args, _real=real, **kwargs):
            threads.append(threading.current_thread().name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(pool_module, name, recording)

    with ThreadPoolExecutor(1, thread_name_prefix="parser") as parser:
        async def many():
            return await asyncio.gather(*(pool.aevaluate(NORMAL, parse_in=parser) for _ in range(4)))

        results = asyncio.run(many())
    assert all(r.tests_passed == 3 for r in results)
    assert len(threads) == 4 * (3 + 1) and {t.split("_")[0] for t in threads} == {"parser"}


def test_a_seed_sets_random_in_the_candidate_s_process_before_its_code_loads(pool):
    import random

    code = "import random\nfirst = random.random()\ndef draw():\n    return random.random()\n"
    expected = random.Random(7)
    tests = [f"assert first == {expected.random()!r}", f"assert draw() == {expected.random()!r}"]
    seeded = pool.evaluate_many([EvalRequest(code=code, tests=tests, seed=7)] * 2)
    assert [r.tests_passed for r in seeded] == [2, 2], seeded
    assert pool.evaluate(EvalRequest(code=code, tests=tests, seed=8)).tests_passed == 0
    assert pool.evaluate(EvalRequest(code=code, tests=tests)).tests_passed == 0  # no seed: fresh OS entropy
