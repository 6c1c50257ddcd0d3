"""What an agent that crashes does: it takes its worker down, loudly.

Faust's default supervisor restarts a crashed agent in place, inside the same process, and
logs it among thousands of lines: a crash loop (one per batch) then looks like a healthy
run. Here an agent's unexpected exception ends the worker with AGENT_CRASHED_EXIT, after
logging it. Nothing is lost: the worker resumes from committed offsets and its tables'
changelogs exactly as after a SIGKILL (the crash test), and the process supervisor
(`reshaper run`) restarts it, counts the restart and reports it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os

log = logging.getLogger(__name__)

AGENT_CRASHED_EXIT = 70  # EX_SOFTWARE


def end_the_worker(exit_code: int) -> None:
    """Exit now, logs flushed: no shutdown that could hang or commit what was not done."""
    logging.shutdown()
    os._exit(exit_code)


def crash_the_worker(app):
    """Decorator for an agent coroutine `async def agent(stream)` of `app`."""

    def wrap(agent):
        @functools.wraps(agent)
        async def supervised(stream):
            try:
                await agent(stream)
            except asyncio.CancelledError:
                raise
            except BaseException:
                if app.should_stop:  # an error while the worker stops is part of stopping
                    raise
                log.critical("agent %s crashed; stopping the worker (exit %d)", agent.__name__,
                             AGENT_CRASHED_EXIT, exc_info=True)
                end_the_worker(AGENT_CRASHED_EXIT)

        return supervised

    return wrap
