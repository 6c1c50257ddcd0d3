#!/usr/bin/env bash
# The GPU check (benchmarks/device_check.py) in one command, for a machine with torch,
# transformers and peft but no network, Java or Kafka.
#
#   bash benchmarks/device_check.sh prepare   # here, with PyPI: fills .device/ (under 64 MiB)
#   bash benchmarks/device_check.sh           # there, with .device/ carried along: about 8 min
#   bash benchmarks/device_check.sh --tiny    # anywhere: the same path at smoke-test sizes
#
# .device/ (git-ignored, so it travels only when named) holds the wheels of the Python packages that machine lacks (trl and what its import
# needs, pydantic, the evaluator's libcst/black/flake8), the tokenizer, and the corpus's train
# split. The policy's weights do not fit in 64 MiB: set RESHAPER_DEVICE_MODEL to a model folder
# there, or a tiny random Llama stands in (the timings then describe a toy, and the sanity
# check says it is smoke only). Extra arguments go to device_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=.device
PYTHON=${PYTHON:-python3}

# Packages the GPU image lacks (its package list names torch, transformers, peft, accelerate,
# pandas, pyarrow, rich, pyyaml, xxhash, hypothesis). Versions are the ones installed here.
WHEELS=(trl datasets dill multiprocess pydantic pydantic_core annotated_types typing_inspection
        libcst black pytokens platformdirs mypy_extensions flake8 pycodestyle pyflakes mccabe apted)

prepare() {
  local target_python=${TARGET_PYTHON:-3.12}
  rm -rf "$BUNDLE" && mkdir -p "$BUNDLE/wheels" "$BUNDLE/tokenizer"
  local specs=()
  for name in "${WHEELS[@]}"; do
    specs+=("$name==$("$PYTHON" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")")
  done
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version "$target_python" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$BUNDLE/wheels" "${specs[@]}"
  local model=.cache/models/smollm2-135m-instruct
  [ -d "$model" ] || { echo "no $model: run 'bash infra/run.sh' once first (it installs the model)" >&2; exit 1; }
  cp "$model"/tokenizer.json "$model"/tokenizer_config.json "$BUNDLE/tokenizer/"
  [ -f "$model/chat_template.jinja" ] && cp "$model/chat_template.jinja" "$BUNDLE/tokenizer/"
  # the largest cached corpus is the full build; the check uses its train split
  local corpus
  corpus=$(ls -S .cache/corpus/*.jsonl 2>/dev/null | head -1 || true)
  [ -n "$corpus" ] || { echo "no corpus under .cache/corpus: run 'bash infra/run.sh' once first" >&2; exit 1; }
  "$PYTHON" - "$corpus" "$BUNDLE/tasks.jsonl" <<'EOF'
import json, sys
rows = [line for line in open(sys.argv[1]) if json.loads(line)["split"] == "train"]
open(sys.argv[2], "w").writelines(rows)
print(f"{len(rows)} train tasks from {sys.argv[1]}")
EOF
  du -sh "$BUNDLE"
}

run() {
  [ -f "$BUNDLE/tasks.jsonl" ] || { echo "$BUNDLE/ is missing: run 'bash benchmarks/device_check.sh prepare' first" >&2; exit 1; }
  local site=/tmp/device-check-site
  if ! "$PYTHON" -c "import trl, pydantic, libcst, black, flake8" 2>/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" "$BUNDLE"/wheels/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  local model_args=(--tokenizer "$BUNDLE/tokenizer")
  if [ -n "${RESHAPER_DEVICE_MODEL:-}" ]; then model_args=(--model "$RESHAPER_DEVICE_MODEL"); fi
  # 8 minutes in all: the parts share a 400 s budget, the rest is start-up and the install
  timeout 480 "$PYTHON" benchmarks/device_check.py --tasks "$BUNDLE/tasks.jsonl" "${model_args[@]}" \
    --budget-s 400 --out "${OUT:-runs/device-check}" "$@"
}

case "${1:-}" in
  prepare) prepare ;;
  *) run "$@" ;;
esac
