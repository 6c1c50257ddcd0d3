"""What a finished run left in its store, its topics and its learner checkpoints, for the fault tests."""

import json
from pathlib import Path

from consumers.store import open_store
from infra.platform.kafka_io import ConsumedEvent, read_topic
from learner.checkpoint import load_latest
from learner.service import CLOSED_KEY, DROPPED_KEY, PENDING_KEY, RELEASED_KEY, learner_group_id
from streams.agents.liveness import group_offsets


def stored_counts(run_dir: Path, config_id: str) -> tuple[dict[str, tuple[int, int]], int]:
    """(rows, distinct rollout ids) of rollouts, feedback and the run's advantages; dead letters."""
    counts = {}
    with open_store(str(run_dir / "chdb")) as store:
        for table, where in (("rollouts", ""), ("feedback", ""), ("advantages", f"WHERE config_id = '{config_id}'")):
            plain, distinct = store.query(f"SELECT count(), uniqExact(rollout_id) FROM {table} {where}").rows[0]
            counts[table] = (plain, distinct)
        dead = store.query("SELECT count() FROM dead_letters").rows[0][0]
    return counts, dead


def learner_read_audit(checkpoints: Path, events: list[ConsumedEvent], committed: dict[int, int]) -> dict:
    """How the learner read its advantages topic (`events`: all of it), from its step checkpoints.

    The learner reads each partition in order and checkpoints, at every step, the next offset
    to read, the records of groups not yet complete and the ids of the groups released or
    dropped. It read the topic without a gap or a second take when every record below the
    last checkpoint's offsets belongs to a closed group or is pending, every closed group lies
    wholly below them, pending records are not in closed groups, and the offsets never went
    back; and Kafka holds the last checkpoint's offsets as the learner group's (`committed`).
    Returns the figures a test asserts on."""
    steps = sorted(p for p in checkpoints.iterdir() if p.name.startswith("step-"))
    topic = events[0].topic
    offsets = [json.loads((p / "state.json").read_text())["offsets"].get(topic, {}) for p in steps]
    backwards = sum(1 for before, after in zip(offsets, offsets[1:])
                    for part, o in before.items() if int(after.get(part, -1)) < int(o))
    last = load_latest(checkpoints)
    position = last.offsets.get(topic, {})
    closed = set(last.extra.get(CLOSED_KEY, []))
    pending = {r["rollout_id"] for r in last.extra.get(PENDING_KEY, [])}
    read = [e for e in events if e.offset < position.get(e.partition, 0)]
    read_ids = {e.record["rollout_id"] for e in read}
    in_closed = {e.record["rollout_id"] for e in events if e.record["group_id"] in closed}
    started = {p: o for p, o in position.items() if o >= 0}  # a partition never read keeps a logical offset
    return {
        "steps": len(steps),
        "offsets_gone_back": backwards,
        "records_read": len(read),
        "copies_read": len(read) - len(read_ids),
        "read_but_unaccounted": len(read_ids - in_closed - pending),
        "closed_beyond_position": len(in_closed - read_ids),
        "pending_in_closed": len(pending & in_closed),
        "closed_groups": len(closed),
        "released_and_dropped": int(last.extra.get(RELEASED_KEY, 0)) + int(last.extra.get(DROPPED_KEY, 0)),
        "committed_is_checkpoint": {p: committed.get(p) for p in started} == started,
    }


def read_without_gaps(audit: dict) -> bool:
    return (audit["offsets_gone_back"] == 0 and audit["read_but_unaccounted"] == 0
            and audit["closed_beyond_position"] == 0 and audit["pending_in_closed"] == 0
            and audit["closed_groups"] == audit["released_and_dropped"] and audit["committed_is_checkpoint"])


def learner_read_of_run(cfg, config_id: str, bootstrap: str) -> dict:
    """`learner_read_audit` of a finished run (`cfg`: its RunConfig), its topic read back from `bootstrap`."""
    topic = cfg.topics.advantages(config_id)
    events = read_topic(topic, bootstrap)
    partitions = sorted({(topic, e.partition) for e in events})
    committed = {p: c for (_, p), (c, _) in group_offsets(bootstrap, learner_group_id(cfg.topics, config_id),
                                                          partitions).items()}
    return learner_read_audit(cfg.run_dir / "learner", events, committed)
