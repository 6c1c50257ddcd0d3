"""The feedback agent: rollouts in, one Feedback event per rollout out (key group_id).

A rollout names its task by id; tasks arrive on their own topic keyed by task_id, which
partitions differently from the group-keyed rollouts, so the task table is a Faust
*global* table (every worker holds every task). Evaluation runs in the sandbox pool via
``aevaluate_rollout`` with ``eval_concurrency`` actors, so several candidates are tested
at once and the event loop only awaits, with the run's evaluator config
(``StreamSettings.evaluator_config``). If the evaluator itself fails, the rollout still gets a
feedback event, with error kind ``sandbox`` and marked ``environment_failure``, so the group is
never left waiting and the failure is never scored as the candidate's.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import time
from typing import Any, Callable

import faust

from schemas.codec import CODEC, DecodeError
from streams.agents.deadletters import dead_letter_value
from streams.agents.supervision import crash_the_worker
from streams.feedback.ast_thread import AST_THREAD
from streams.feedback.reviewed import completion_fingerprint, latest_verdict, with_reviewed_flag
from streams.settings import Evaluate, StreamSettings

TASKS_TABLE = "tasks"
REVIEWED_TABLE = "reviewed"
EVALUATOR_FAILURE_VERSION = "evaluator-failure"


def import_object(path: str) -> Any:
    """``"package.module:name"`` -> the object."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def default_pool(workers: int | None = None):
    """The sandbox pool, started: ``workers`` warm workers, or the sandbox's default number."""
    from streams.sandbox.config import SandboxConfig
    from streams.sandbox.pool import SandboxPool

    config = SandboxConfig() if workers is None else SandboxConfig(workers=workers)
    return SandboxPool(config).start()


def feedback_event_id(rollout_id: str, evaluator_version: str) -> str:
    return hashlib.sha256(f"feedback:{evaluator_version}:{rollout_id}".encode()).hexdigest()[:32]


def install_feedback(app: faust.App, settings: StreamSettings, evaluate: Evaluate | None = None,
                     pool: object | None = None) -> None:
    tasks_topic = app.topic(settings.topics.tasks)
    rollouts_topic = app.topic(settings.topics.rollouts)
    feedback_topic = app.topic(settings.topics.feedback)
    deadletter = app.topic(settings.topics.deadletter)
    reviews_topic = app.topic(settings.topics.reviews)
    # Global tables: every worker holds all of them. With several workers Faust's GlobalTable can
    # loop in recovery (faust-streaming/faust#283); its documented remedy is one partition and a
    # recovery buffer of one, so the tasks and reviews topics have one partition too.
    tasks = app.GlobalTable(TASKS_TABLE, default=None, partitions=1, recovery_buffer_size=1)  # task_id -> Task
    # code fingerprint -> the latest verdict people gave on that code (global: any worker may see the code again)
    reviewed = app.GlobalTable(REVIEWED_TABLE, default=None, partitions=1, recovery_buffer_size=1)
    sandbox: dict[str, Any] = {"pool": pool}

    def evaluator() -> Evaluate:
        return evaluate or import_object(settings.evaluator)

    def get_pool():
        if sandbox["pool"] is None:  # started on first use: a reshape-only worker never needs it
            sandbox["pool"] = import_object(settings.pool_factory)(settings.sandbox_workers)
        return sandbox["pool"]

    async def dead_letter(event, exc: Exception) -> None:
        msg = event.message
        await deadletter.send(key=msg.topic.encode(), value=dead_letter_value(
            msg.topic, msg.partition, msg.offset, app.conf.id, msg.key, event.value, exc))

    async def decoded(stream, payload: str):
        """The stream's records decoded as `payload`; one that does not decode is dead-lettered."""
        async for event in stream.events():
            try:
                yield CODEC.decode(event.value, payload)
            except DecodeError as exc:
                await dead_letter(event, exc)

    @app.agent(tasks_topic)
    @crash_the_worker(app)
    async def remember_tasks(stream):
        async for task in decoded(stream, "Task"):
            tasks[task["task_id"]] = task

    @app.agent(reviews_topic)
    @crash_the_worker(app)
    async def remember_reviews(stream):
        async for review in decoded(stream, "Review"):
            kept = latest_verdict(reviewed.get(review["code_fingerprint"]), review)
            if kept is not None:
                reviewed[review["code_fingerprint"]] = kept

    async def task_for(task_id: str) -> dict | None:
        """The task, waiting up to ``task_wait_s`` for it: tasks and rollouts race on separate topics."""
        deadline = time.monotonic() + settings.task_wait_s
        while True:
            task = tasks.get(task_id)
            if task is not None:
                return task
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.1)

    @app.agent(rollouts_topic, concurrency=settings.eval_concurrency)
    @crash_the_worker(app)
    async def evaluate_rollouts(stream):
        async for event in stream.events():
            try:
                rollout = CODEC.decode(event.value, "Rollout")
            except DecodeError as exc:
                await dead_letter(event, exc)
                continue
            task = await task_for(rollout["task_id"])
            value = await feedback_value(task, rollout, evaluator(), get_pool, settings, reviewed.get)
            await feedback_topic.send(key=rollout["group_id"].encode(), value=value)


async def feedback_value(task: dict | None, rollout: dict, evaluate: Evaluate, pool: Callable[[], object],
                         settings: StreamSettings,
                         verdict_of: Callable[[str], dict | None] = lambda fingerprint: None) -> bytes:
    """The encoded Feedback event of one rollout; never raises. ``task`` None: it never arrived.
    ``pool``: gives the sandbox pool (started on first use). ``verdict_of``: the latest
    verdict people gave on code of a fingerprint (``reviewed_hack`` flags a match)."""
    try:
        if task is None:
            raise LookupError(f"task {rollout['task_id']!r} not seen within {settings.task_wait_s}s")
        feedback = await evaluate(task, rollout, pool(), settings.evaluator_config)
        fingerprint = await asyncio.get_running_loop().run_in_executor(
            AST_THREAD, completion_fingerprint, rollout["completion_text"])
        with_reviewed_flag(feedback, fingerprint, verdict_of)  # the table is read on the loop
        feedback.setdefault("event_id", feedback_event_id(rollout["rollout_id"], feedback["evaluator_version"]))
        feedback.setdefault("created_at_ms", rollout["created_at_ms"])
        return CODEC.encode("Feedback", feedback)
    except Exception as exc:  # any evaluator failure becomes a sandbox feedback, never a stuck group
        # imported here: the evaluator's module loads the signal libraries, which a
        # worker whose evaluations all succeed (or that never evaluates) need not load
        from streams.feedback.evaluate import sandbox_failure_feedback

        return CODEC.encode("Feedback", sandbox_failure_feedback(
            task, rollout, f"{type(exc).__name__}: {exc}", EVALUATOR_FAILURE_VERSION,
            event_id=feedback_event_id(rollout["rollout_id"], EVALUATOR_FAILURE_VERSION)))
