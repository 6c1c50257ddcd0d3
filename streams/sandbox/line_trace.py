"""Which lines of the candidate's functions ran: measured inside the candidate's process.

Standard library only: this file runs inside the sandbox (see launcher.py). The sandbox
interpreter runs with -I -S, so the `coverage` package is out of reach; sys.settrace is
what Python 3.11 offers (sys.monitoring arrives in 3.12).

What this records shares a process with hostile code, so it is a claim, never a verdict:
the judge passes it on only for tests in which it called the candidate, the host keeps
only lines that are executable lines of the candidate's functions and only tests it saw
pass (streams/signals/exec_path.py), and a candidate that touches tracing APIs has its
coverage voided there.
"""

import sys

# A function's code object, as opposed to a class body or the module's top level.
CO_OPTIMIZED = 0x0001
# Trace events (calls and lines) recorded per test at most; past that the test runs on
# untraced. Python 3.11 runs a traced loop about 6 times slower, and the tests' time limits
# are the untraced run's: the budget keeps tracing's share of a test's time to about 0.1 s,
# at the price of a lower bound for the lines of a test that runs longer.
EVENT_BUDGET = 100_000


def function_codes(code):
    """Every function code object compiled from one source (nested ones, methods, lambdas and
    comprehensions included), found through the constants of `code`."""
    found, stack = [], [code]
    while stack:
        for const in stack.pop().co_consts:
            if type(const) is type(code):
                if const.co_flags & CO_OPTIMIZED:
                    found.append(const)
                stack.append(const)
    return found


class LineTrace:
    """Line numbers run in the candidate's functions since the last `take`.

    Frames of any other code (the server, the standard library, code the candidate builds
    at run time) get no line tracing, which keeps the cost to one call per frame entry.
    Tracing stops for the rest of a test after EVENT_BUDGET events.
    """

    def __init__(self, module_code):
        # Bound now, before the candidate can patch sys.
        self._settrace = sys.settrace
        # By identity: code objects compare by value. The dict keeps them alive, so an id
        # is never reused by another object.
        codes = {id(c): c for c in function_codes(module_code)}
        lines = self._lines = set()
        add = lines.add
        left = self._left = [EVENT_BUDGET]  # a list: the closures below count it down
        settrace = self._settrace

        def spent():
            left[0] -= 1
            if left[0] > 0:
                return False
            settrace(None)
            return True

        def on_line(frame, event, arg):
            if event == "line":
                add(frame.f_lineno)
                if spent():
                    return None
            return on_line

        def on_call(frame, event, arg):
            if spent():
                return None
            return on_line if id(frame.f_code) in codes else None

        self._on_call = on_call

    def start(self):
        if self._left[0] > 0:
            self._settrace(self._on_call)

    def stop(self):
        self._settrace(None)

    def take(self):
        """The lines recorded so far, sorted; the record starts empty again."""
        # Exact ints only: whatever else the candidate put in the set is dropped unread.
        taken = sorted(n for n in self._lines if type(n) is int)
        self._lines.clear()
        self._left[0] = EVENT_BUDGET
        return taken
