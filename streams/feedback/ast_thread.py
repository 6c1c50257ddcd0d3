"""The one thread of a worker process that builds Python syntax trees.

CPython 3.11 counts the depth of the AST objects it builds in interpreter-wide state, so
``ast.parse`` (``literal_eval``, ``compile`` to an AST) on two threads at once can fail with
"SystemError: AST constructor recursion depth mismatch" (python/cpython#106905, fixed in later
releases). Everything in the feedback stage that parses code — the candidate's extraction, the
signals, the sandbox's test and reply parsing, the reviewed-code fingerprint — runs here, never
on the event loop. One thread also keeps the signals' CPU (libcst, black, flake8, hypothesis
draws: up to a second per rollout) off the loop, whose commits, heartbeats and timers it would
stall; the signal libraries keep module-level state and are not documented as thread-safe.
Light on purpose: the feedback agent imports it without loading the signal libraries.
"""

from concurrent.futures import ThreadPoolExecutor

AST_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ast")
