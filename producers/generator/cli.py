"""`reshaper generate --config gen.yaml`: run the generator service with a progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from confluent_kafka.admin import AdminClient
from tqdm import tqdm

from infra.platform.settings import bootstrap_servers
from infra.platform.topics import TopicSpec, ensure_topics
from producers.generator.backends import make_backend
from producers.generator.service import GenerateRunConfig, GeneratorService, RunState


def topic_specs(run: GenerateRunConfig) -> list[TopicSpec]:
    """The specs of the topics this run touches, in its namespace."""
    touched = {run.topics.tasks, run.topics.rollouts, run.topics.policy, run.topics.metrics}
    return [spec for spec in run.topics.event_specs() if spec.name in touched] + [
        run.topics.advantages_spec(run.config_id)]


def generate(
    config: Annotated[Path, typer.Option(help="YAML file of a GenerateRunConfig.")],
    bootstrap: Annotated[
        Optional[str], typer.Option(help="Kafka bootstrap servers (default: RESHAPER_BOOTSTRAP).")
    ] = None,
    max_groups: Annotated[Optional[int], typer.Option(help="Override the config's max_groups.")] = None,
    create_topics: Annotated[bool, typer.Option(help="Create missing topics before starting.")] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> RunState:
    """Sample rollout groups for the tasks on the log until max_groups, the idle timeout or Ctrl-C."""
    run = GenerateRunConfig.from_yaml(config)
    if max_groups is not None:
        run = run.model_copy(update={"max_groups": max_groups})
    bootstrap = bootstrap or bootstrap_servers()
    if create_topics:
        # Subscribing to a topic that does not exist yet is an error for the consumer.
        ensure_topics(AdminClient({"bootstrap.servers": bootstrap}), topic_specs(run))
    service = GeneratorService(run, make_backend(run.generator), bootstrap=bootstrap)
    bar = tqdm(total=run.max_groups, desc="generate", unit="group", disable=not progress)

    def show(state: RunState) -> None:
        bar.update(state.groups - bar.n)
        bar.set_postfix(
            v=state.policy_version,
            lag=state.lag,
            inflight=state.inflight,
            idle=f"{state.idle_s:.0f}s",
            wait=state.waiting or "-",
            refresh=False,
        )

    try:
        state = service.run(on_progress=show)
    except KeyboardInterrupt:
        state = service.state
        state.stopped = "stopped"
    finally:
        bar.close()
        service.close()
    typer.echo(
        f"{state.groups} groups, {state.rollouts} rollouts, {state.tokens} tokens, "
        f"idle {state.idle_s:.1f}s, policy v{state.policy_version} ({state.stopped})"
    )
    return state


if __name__ == "__main__":
    typer.run(generate)
