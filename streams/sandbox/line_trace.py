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
    """

    def __init__(self, module_code):
        # Bound now, before the candidate can patch sys.
        self._settrace = sys.settrace
        # By identity: code objects compare by value. The dict keeps them alive, so an id
        # is never reused by another object.
        codes = {id(c): c for c in function_codes(module_code)}
        lines = self._lines = set()
        add = lines.add

        def on_line(frame, event, arg):
            if event == "line":
                add(frame.f_lineno)
            return on_line

        def on_call(frame, event, arg):
            return on_line if id(frame.f_code) in codes else None

        self._on_call = on_call

    def start(self):
        self._settrace(self._on_call)

    def stop(self):
        self._settrace(None)

    def take(self):
        """The lines recorded so far, sorted; the record starts empty again."""
        taken = sorted(self._lines)
        self._lines.clear()
        return taken
