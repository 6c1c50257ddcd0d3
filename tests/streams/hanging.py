"""An evaluator for the liveness test: a rollout whose completion is HANG is never finished,
any other fails at once (and so gets a sandbox feedback); no sandbox pool."""

import asyncio

HANG = "HANG"


async def evaluate_or_hang(task: dict, rollout: dict, pool: object, cfg: object) -> dict:
    if rollout["completion_text"] == HANG:
        await asyncio.Event().wait()
    raise RuntimeError("not evaluated in this test")


def no_pool(workers: int | None = None) -> None:
    return None
