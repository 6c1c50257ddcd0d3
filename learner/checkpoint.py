"""Atomic learner checkpoints and published policy weights.

A checkpoint is a directory ``step-<n>`` holding the trainable weights, the optimiser and
scheduler state, every RNG state, the consumed Kafka offsets, the step/version counters and
the adaptive KL controller's state. It is written under a temporary name, fsynced, then
renamed into place with ``os.replace``, so a reader sees either the whole checkpoint or none
of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from peft import PeftModel, get_peft_model_state_dict, set_peft_model_state_dict
from safetensors.torch import load_file, load_model, save_file, save_model

ADAPTER_FILE = "adapter.safetensors"
MODEL_FILE = "model.safetensors"
STATE_FILE = "state.json"
EXTRA_FILE = "extra.json"
STEP_PREFIX = "step-"

Offsets = dict[str, dict[int, int]]  # topic -> partition -> next offset to consume


class CheckpointError(RuntimeError):
    """A checkpoint directory that is incomplete or does not match the model."""


@dataclass
class Checkpoint:
    path: Path
    step: int
    policy_version: int
    published_step: int = 0  # learner step of the latest published policy
    offsets: Offsets = field(default_factory=dict)
    extra: dict[str, Any] = field(
        default_factory=dict
    )  # caller's JSON state, e.g. pending records
    # learner.kl_control.KLCoefficient.state_dict(); empty when beta does not adapt
    kl_controller: dict[str, float] = field(default_factory=dict)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as f:
                os.fsync(f.fileno())
        _fsync_dir(Path(dirpath))


def _atomic_publish(tmp: Path, final: Path) -> None:
    """fsync ``tmp`` and rename it to ``final`` (replacing an older copy of the same name)."""
    _fsync_tree(tmp)
    if final.exists():
        # os.replace cannot replace a non-empty directory: move the old one aside first.
        trash = final.with_name(f".trash-{final.name}-{uuid.uuid4().hex}")
        os.replace(final, trash)
        os.replace(tmp, final)
        shutil.rmtree(trash)
    else:
        os.replace(tmp, final)
    _fsync_dir(final.parent)


def _rng_state() -> dict:
    state = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    root: str | Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    step: int,
    policy_version: int,
    offsets: Offsets | None = None,
    published_step: int = 0,
    extra: dict[str, Any] | None = None,
    kl_controller: dict[str, float] | None = None,
) -> Path:
    """Write checkpoint ``root/step-<step>`` atomically and return its path.

    ``extra`` is any JSON-serialisable state of the caller (for instance records of
    groups still being accumulated) that must survive a restart with the offsets."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{STEP_PREFIX}{step:08d}"
    tmp = root / f".tmp-{final.name}-{uuid.uuid4().hex}"
    tmp.mkdir()
    if isinstance(model, PeftModel):
        save_file(get_peft_model_state_dict(model), str(tmp / ADAPTER_FILE))
    else:
        save_model(model, str(tmp / MODEL_FILE))  # handles tied weights
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    torch.save(_rng_state(), tmp / "rng.pt")
    state = {
        "step": step,
        "policy_version": policy_version,
        "published_step": published_step,
        "kl_controller": kl_controller or {},
        # JSON keys are strings; partitions are turned back into ints on load.
        "offsets": {
            t: {str(p): o for p, o in parts.items()}
            for t, parts in (offsets or {}).items()
        },
    }
    (tmp / STATE_FILE).write_text(json.dumps(state, indent=2, sort_keys=True))
    (tmp / EXTRA_FILE).write_text(json.dumps(extra or {}))
    _atomic_publish(tmp, final)
    return final


def load_latest(root: str | Path) -> Checkpoint | None:
    """The newest complete checkpoint under ``root`` (None when there is none)."""
    root = Path(root)
    if not root.is_dir():
        return None
    candidates = sorted(
        p for p in root.iterdir() if p.is_dir() and p.name.startswith(STEP_PREFIX)
    )
    if not candidates:
        return None
    path = candidates[-1]
    state_file, extra_file = path / STATE_FILE, path / EXTRA_FILE
    if not state_file.is_file():
        raise CheckpointError(f"{path} has no {STATE_FILE}")
    state = json.loads(state_file.read_text())
    offsets = {
        t: {int(p): int(o) for p, o in parts.items()}
        for t, parts in state["offsets"].items()
    }
    return Checkpoint(
        path=path,
        step=int(state["step"]),
        policy_version=int(state["policy_version"]),
        published_step=int(state.get("published_step", 0)),
        offsets=offsets,
        kl_controller={k: float(v) for k, v in state.get("kl_controller", {}).items()},
        extra=json.loads(extra_file.read_text()) if extra_file.is_file() else {},
    )


def restore(
    checkpoint: Checkpoint,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
) -> None:
    """Load weights, optimiser, scheduler and RNG states of ``checkpoint`` in place."""
    path = checkpoint.path
    device = next(model.parameters()).device
    if isinstance(model, PeftModel):
        if not (path / ADAPTER_FILE).is_file():
            raise CheckpointError(
                f"{path} holds no adapter, but the model is a LoRA model"
            )
        result = set_peft_model_state_dict(
            model, load_file(str(path / ADAPTER_FILE), device=str(device))
        )
        if getattr(result, "unexpected_keys", None):
            raise CheckpointError(
                f"adapter keys that do not fit the model: {result.unexpected_keys[:5]}"
            )
    else:
        if not (path / MODEL_FILE).is_file():
            raise CheckpointError(
                f"{path} holds no full model, but the model is not a LoRA model"
            )
        load_model(model, str(path / MODEL_FILE), device=str(device))
    # Our own files: weights_only=False is needed for the numpy RNG state.
    optimizer.load_state_dict(
        torch.load(path / "optimizer.pt", map_location=device, weights_only=False)
    )
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=False))
    _set_rng_state(torch.load(path / "rng.pt", weights_only=False))


def weights_sha256(directory: str | Path) -> str:
    """sha256 over the ``*.safetensors`` files of ``directory``, in name order."""
    digest = hashlib.sha256()
    files = sorted(Path(directory).glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"no weight files in {directory}")
    for f in files:
        digest.update(f.name.encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def publish_policy_weights(
    model: torch.nn.Module, directory: str | Path, version: int
) -> tuple[str, str]:
    """Save the adapter (or full model) in Hugging Face format to ``directory/v-<version>``
    atomically, for generators to hot-swap. Returns ``(location, sha256)``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"v-{version:08d}"
    tmp = directory / f".tmp-{final.name}-{uuid.uuid4().hex}"
    model.save_pretrained(
        tmp
    )  # peft writes adapter_config.json + adapter_model.safetensors
    sha = weights_sha256(tmp)
    _atomic_publish(tmp, final)
    return str(final.resolve()), sha
