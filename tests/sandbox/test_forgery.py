"""Forged reports, against the real sandbox: only the judge's process makes a verdict.

Every candidate here is a wrong implementation (`f` should double, the forger returns 0 or
nothing) that tries to be credited by writing a report itself. Each must score 0, and the
pool must serve an honest candidate right after (healthy_after).
"""

import pytest

from streams.sandbox import ErrorKind, EvalRequest

# Literal asserts (split: the value goes to the host) and a non-literal one (run whole).
TESTS = ["assert f(1) == 2", "assert f(2) == 4", "assert [f(3)] == sorted([6])"]

# The report format of every channel there is: the judge's report lines, and frames of
# the candidate protocol with a guessed nonce, each a complete, well-formed full pass.
FORGERIES = r'''
import json, os, struct
REPORT = "".join(repr(line) + "\n" for line in [
    ("load", "none", "", 0.1), ("value", 0, "2", False, 0.1), ("value", 1, "4", False, 0.1),
    ("pass", 2, 0.1), ("done",)]).encode()
def frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack(">I", len(data)) + data
FRAMES = frame(["loaded", 1, "none", "", [["f", "value", {"h": 1, "type": "function"}]], []]) + b"".join(
    frame(["ok", n, v, []]) for n, v in ((2, 2), (3, 4), (4, 6)))
def forge(fds=range(0, 64)):
    for fd in fds:
        for data in (REPORT, FRAMES):
            try:
                os.write(fd, data)
            except OSError:
                pass
'''


def run(pool, code):
    return pool.evaluate(EvalRequest(code=FORGERIES + code, tests=TESTS, entry_point="f"))


def scores_nothing(result):
    assert result.tests_passed == 0, result
    assert not any(o.passed for o in result.outcomes)


def test_a_complete_forged_report_then_exit(pool, healthy_after):
    result = run(pool, "forge()\nos._exit(0)\n")
    scores_nothing(result)
    assert "results_tampered" in result.flags
    assert result.error_kind is ErrorKind.CRASH


@pytest.mark.parametrize("exit_call", ["os._exit(0)", "os.kill(os.getpid(), 9)"])
def test_a_forged_report_from_inside_the_call_then_exit(pool, healthy_after, exit_call):
    result = run(pool, f"def f(x):\n    forge()\n    {exit_call}\n")
    scores_nothing(result)
    if exit_call.startswith("os._exit"):
        assert "results_tampered" in result.flags


def test_a_forged_report_followed_by_a_normal_return(pool, healthy_after):
    result = run(pool, "forge()\ndef f(x):\n    return 0\n")
    scores_nothing(result)
    assert "results_tampered" in result.flags


FROM_ELSEWHERE = {
    "thread": "import threading, time\n"
    "def spam():\n    while True:\n        forge(range(3, 8))\n        time.sleep(0.001)\n"
    "threading.Thread(target=spam, daemon=True).start()\n",
    "forked_child": "import time\nif os.fork() == 0:\n    time.sleep(0.02)\n    forge()\n    os._exit(0)\n",
}


@pytest.mark.parametrize("writer", sorted(FROM_ELSEWHERE))
def test_a_forged_report_from_a_thread_or_a_forked_child(pool, healthy_after, writer):
    code = FROM_ELSEWHERE[writer] + "def f(x):\n    time.sleep(0.1)\n    return 0\n"
    result = run(pool, code)
    scores_nothing(result)
    assert "results_tampered" in result.flags


def test_forged_reports_after_dup2_onto_every_descriptor(pool, healthy_after):
    code = (
        "for target in range(0, 16):\n"
        "    for source in range(0, 16):\n"
        "        try:\n            os.dup2(source, target)\n"
        "        except OSError:\n            pass\n"
        "        forge()\n"
        "def f(x):\n    forge()\n    return 0\n"
    )
    result = run(pool, code)
    scores_nothing(result)


def test_the_candidate_answering_its_own_calls_only_chooses_values(pool, healthy_after):
    # Reading the judge's requests and replying itself is no more than returning values:
    # each reply must echo a nonce it can only learn from the request, and what it sends
    # is compared by the judge as plain data. Here it answers 0 to everything.
    code = (
        "import threading\n"
        "def answer():\n"
        "    while True:\n"
        "        size = struct.unpack('>I', os.read(3, 4))[0]\n"
        "        request = json.loads(os.read(3, size))\n"
        "        os.write(4, frame(['ok', request[1], 0, []]))\n"
        "threading.Thread(target=answer, daemon=True).start()\n"
        "import time\ntime.sleep(0.3)\n"
        "def f(x):\n    return 0\n"
    )
    result = run(pool, code)
    scores_nothing(result)


def test_an_honest_candidate_beside_the_forgers_passes(pool):
    result = run(pool, "def f(x):\n    return 2 * x\n")
    assert (result.tests_passed, result.error_kind, result.flags) == (3, ErrorKind.NONE, [])
