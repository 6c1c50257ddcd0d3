"""`reshaper learn --config learner.yaml`: the GRPO learner service."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import typer


def learn(config: Path = typer.Option(..., "--config", exists=True, dir_okay=False, help="LearnRunConfig YAML"),
          steps: int = typer.Option(None, help="override the number of learner steps")) -> None:
    """Train on advantages.<config_id> until the step budget is spent (resumes from its checkpoint)."""
    from learner.service import LearnerService, load_learn_config

    run = load_learn_config(config)
    if steps is not None:
        run = run.model_copy(update={"steps": steps})
    if run.threads:
        import torch

        torch.set_num_threads(run.threads)
    ckpt_dir = Path(run.learner.checkpoint_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    (ckpt_dir / "run_config.json").write_text(run.model_dump_json(indent=2))  # every run records its config
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    service = LearnerService(run)
    learner = service.learner
    # which arithmetic `precision: auto` chose on this machine (learner/precision.py)
    typer.echo(f"learner on {learner.device}, autocast {learner.compute_dtype or 'off (float32)'}; "
               f"from step {learner.step_count}, policy version {learner.policy_version}", err=True)
    try:
        done = service.run(lambda: stopping["now"])
    finally:
        service.close()
    typer.echo(json.dumps({"steps": done, "policy_version": service.learner.policy_version}))
