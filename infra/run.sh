#!/usr/bin/env bash
# The main job on the embedded default: packages, the local Kafka broker, chDB, then
# `reshaper run` (extra arguments go to it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO"
"$PY" -m infra.compose.cli run "$@"
