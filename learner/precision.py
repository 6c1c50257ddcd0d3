"""The learner's compute precision: which autocast dtype a device gets, and the context for it.

Weights, gradients and AdamW state stay float32 in every mode; only the arithmetic of the
forward and backward passes changes. bf16 pays off where the hardware multiplies in bf16:
CUDA, and CPUs with avx512_bf16 or AMX. Elsewhere a CPU would emulate it, slower than float32.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The instruction-set flags the kernel reports for the first CPU (empty where unknown).
    torch reports only a coarse capability ("AVX512"), which says nothing of bf16, hence
    the kernel's own list."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def autocast_dtype(precision: str, device: torch.device, flags: frozenset[str] | None = None) -> torch.dtype | None:
    """The autocast dtype of `precision` ("auto", "float32", "bfloat16") on `device`; None: plain float32."""
    if precision == "float32":
        return None
    if precision == "bfloat16":
        return torch.bfloat16
    if precision != "auto":
        raise ValueError(f"precision must be auto, float32 or bfloat16, got {precision!r}")
    if device.type == "cuda":
        return torch.bfloat16
    if device.type == "cpu" and NATIVE_BF16_CPU_FLAGS & (cpu_flags() if flags is None else flags):
        return torch.bfloat16
    return None


def autocast(device: torch.device, dtype: torch.dtype | None):
    """The autocast context for `dtype` on `device`, or a no-op for plain float32."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def attention_implementation(device: torch.device, dtype: torch.dtype | None) -> str | None:
    """The attention kernel to load the model with; None keeps transformers' default (sdpa).
    On a CPU under bf16, sdpa's flash kernel spends a quarter of a learner step in its
    backward; plain matmul attention ("eager") made the step 1.35x faster there (8.1 s
    against 11.0 s, SmolLM2-135M, 2 groups x 4, one thread). In float32 the two were even."""
    return "eager" if device.type == "cpu" and dtype == torch.bfloat16 else None
