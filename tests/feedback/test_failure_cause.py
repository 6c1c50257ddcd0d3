"""Whose failure an outcome is, through the evaluator and the real sandbox: a candidate that
loops, crashes, exits or kills itself is scored on its first try and never marked; a sandbox
process the host kills mid-evaluation is re-evaluated, and one killed on every try is marked
`environment_failure`. Also seeded repeats: a candidate that draws from `random` has the runs
its seeds give, and is `flaky` when they differ."""

from __future__ import annotations

import random
import threading
import time

import psutil
import pytest

from streams.feedback import EvaluatorConfig, evaluate_rollout
from streams.feedback.evaluate import repeat_seed
from streams.sandbox import SandboxConfig, SandboxPool, launcher
from tests.feedback.test_evaluate import REFERENCE, TASK, rollout

ONE_RUN = dict(adversarial_inputs=0, rename_check=False)  # one sandbox request per evaluation


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(workers=2, timeout_s=2, cpu_seconds=2)) as p:
        yield p


def candidate(body: str, imports: str = "") -> str:
    return f"{imports}def add_up(xs, k):\n    {body}\n"


SELF_INFLICTED = {
    "loops": (candidate("while True:\n        pass"), "timeout"),
    "crashes": (candidate("ctypes.string_at(0)", "import ctypes\n"), "crash"),  # a segmentation fault
    "sys_exit": (candidate("sys.exit(3)", "import sys\n"), "crash"),
    "os_exit": (candidate("os._exit(0)", "import os\n"), "crash"),
    "aborts": (candidate("os.abort()", "import os\n"), "crash"),  # SIGABRT, then glibc's forced fault
    # pid 1 of its own PID namespace: a signal it sends itself is ignored, so it returns None
    "kills_itself": (candidate("os.kill(os.getpid(), signal.SIGKILL)", "import os, signal\n"), "wrong_answer"),
}


@pytest.mark.parametrize("case", sorted(SELF_INFLICTED))
def test_a_candidate_that_fails_itself_is_scored_on_its_first_try_and_never_marked(pool, case):
    code, kind = SELF_INFLICTED[case]
    fb = evaluate_rollout(TASK, rollout(code), pool, EvaluatorConfig(environment_retries=2, **ONE_RUN))
    assert (fb["error_kind"], fb["tests_passed"]) == (kind, 0), fb["error_message"]
    assert fb["environment_failure"] is False and fb["evaluation_attempts"] == 1
    assert fb["flaky"] is False


def test_a_candidate_that_exits_at_load_is_scored_too(pool):
    fb = evaluate_rollout(TASK, rollout("import sys\nsys.exit(0)\n"), pool, EvaluatorConfig(**ONE_RUN))
    assert fb["error_kind"] == "crash" and not fb["environment_failure"] and fb["evaluation_attempts"] == 1


class ZygoteKiller:
    """Kills, from outside, the sandbox zygote of a request in flight: a zygote the pool has
    taken into a slot (so a new one's start-up self-check is left alone) whose children (the
    candidate's process and the judge) have lived `after_s`, at most `limit` times."""

    def __init__(self, pool: SandboxPool, limit: int, after_s: float = 0.3):
        self.pool, self.limit, self.after_s, self.killed = pool, limit, after_s, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ZygoteKiller:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while len(self.killed) < self.limit and not self._stop.wait(0.02):
            in_slots = {slot.zygote.proc.pid for slot in self.pool._slots}  # bubblewrap, started by the pool
            for zygote in _zygotes():
                try:
                    ready = any(parent.pid in in_slots for parent in zygote.parents())
                    busy = [c for c in zygote.children() if time.time() - c.create_time() >= self.after_s]
                    if ready and busy and zygote.pid not in self.killed:
                        zygote.kill()
                        self.killed.append(zygote.pid)
                except psutil.NoSuchProcess:
                    pass


def _zygotes() -> list[psutil.Process]:
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = p.cmdline()
        except psutil.NoSuchProcess:
            continue
        if "-c" in cmd and launcher.BOOTSTRAP in cmd and "bwrap" not in cmd[0]:
            found.append(p)
    return found


SLOW_FIX = REFERENCE.replace("    total = 0\n", "    import time\n    time.sleep(1.0)\n    total = 0\n")


@pytest.fixture
def one_worker_pool():
    with SandboxPool(SandboxConfig(workers=1, timeout_s=6)) as p:
        yield p


def test_a_sandbox_killed_from_outside_is_re_evaluated_and_scored_on_the_retry(one_worker_pool):
    # the first kill is the pool's own retry; the second fails the request, and the evaluator tries again
    with ZygoteKiller(one_worker_pool, limit=2) as killer:
        fb = evaluate_rollout(TASK, rollout(SLOW_FIX), one_worker_pool,
                              EvaluatorConfig(environment_retries=2, **ONE_RUN))
    assert len(killer.killed) == 2
    assert (fb["tests_passed"], fb["error_kind"]) == (3, "none"), fb["error_message"]
    assert fb["evaluation_attempts"] == 2 and fb["environment_failure"] is False
    assert fb["pass_fraction_runs"] == [1.0]


def test_a_sandbox_killed_on_every_try_marks_an_environment_failure(one_worker_pool):
    retries = 1
    # the pool's try and its own retry, on every evaluation
    with ZygoteKiller(one_worker_pool, limit=2 * (retries + 1)) as killer:
        fb = evaluate_rollout(TASK, rollout(SLOW_FIX), one_worker_pool,
                              EvaluatorConfig(environment_retries=retries, **ONE_RUN))
    assert len(killer.killed) == 2 * (retries + 1)
    assert fb["environment_failure"] is True and fb["evaluation_attempts"] == retries + 1
    assert fb["error_kind"] == "sandbox" and "sandbox worker failed" in fb["error_message"]
    assert fb["flaky"] is False  # a spread the host made says nothing about the candidate
    # the pool recovers: the same candidate, left alone, passes
    fb = evaluate_rollout(TASK, rollout(SLOW_FIX), one_worker_pool, EvaluatorConfig(**ONE_RUN))
    assert (fb["tests_passed"], fb["environment_failure"], fb["evaluation_attempts"]) == (3, False, 1)


# fails every test on the runs whose first draw of `random` is below one half
COIN_FLIP = "import random\n_UNLUCKY = random.random() < 0.5\n" + REFERENCE.replace(
    "    return total\n", "    return -1 if _UNLUCKY else total\n")
SEED = 3  # rollout(...)'s sampling seed


def test_repeats_draw_from_random_seeded_by_rollout_seed_and_repeat_index(pool):
    repeats = 8
    expected = [0.0 if random.Random(repeat_seed(SEED, i)).random() < 0.5 else 1.0 for i in range(repeats)]
    assert set(expected) == {0.0, 1.0}  # this seed gives both outcomes, so the candidate is flaky
    cfg = EvaluatorConfig(repeats=repeats, **ONE_RUN)
    fb = evaluate_rollout(TASK, rollout(COIN_FLIP), pool, cfg)
    assert fb["pass_fraction_runs"] == expected and fb["repeats"] == repeats
    assert fb["flaky"] is True and fb["environment_failure"] is False
    # the same rollout evaluated again draws the same numbers: its feedback is the same
    assert evaluate_rollout(TASK, rollout(COIN_FLIP), pool, cfg)["pass_fraction_runs"] == expected
    # a spread of 1 is within a tolerance of 1
    tolerant = EvaluatorConfig(repeats=repeats, signals={"flaky_tolerance": 1.0}, **ONE_RUN)
    assert evaluate_rollout(TASK, rollout(COIN_FLIP), pool, tolerant)["flaky"] is False


def test_a_steady_candidate_is_not_flaky(pool):
    fb = evaluate_rollout(TASK, rollout(REFERENCE), pool, EvaluatorConfig(repeats=3, **ONE_RUN))
    assert fb["pass_fraction_runs"] == [1.0, 1.0, 1.0] and fb["flaky"] is False
    assert fb["evaluation_attempts"] == 1


def test_flaky_is_a_spread_beyond_the_tolerance():
    from streams.feedback.failure_cause import is_flaky

    assert is_flaky([1.0, 0.5], 0.25) and not is_flaky([1.0, 0.75], 0.25) and not is_flaky([0.5], 0.0)


def test_a_check_the_host_failed_counts_as_not_run_and_a_test_run_it_failed_marks_the_feedback():
    from streams.feedback.evaluate import SandboxRuns, build_feedback
    from streams.sandbox import ErrorKind, EvalResult
    from streams.sandbox.verdict import sandbox_failure

    passed = EvalResult(3, 3, [], ErrorKind.NONE, "", 1.0, "", [])
    lost = sandbox_failure(3, "sandbox worker failed: zygote exited", 1.0, [])
    cfg = EvaluatorConfig(repeats=2)

    def feedback(tests, adversarial, renamed):
        runs = SandboxRuns(tests, adversarial, 8, renamed, attempts=3)
        return build_feedback(TASK, rollout(REFERENCE), REFERENCE, runs, cfg)

    fb = feedback([passed, passed], lost, lost)
    assert (fb["adversarial_checked"], fb["adversarial_mismatches"], fb["rename_passed"]) == (0, 0, None)
    assert fb["environment_failure"] is False and fb["evaluation_attempts"] == 3
    fb = feedback([passed, lost], passed, passed)
    assert fb["environment_failure"] is True and fb["pass_fraction_runs"] == [1.0, 0.0]
    assert fb["flaky"] is False and fb["fixed_pattern"] == ""
