"""Which arithmetic the learner picks, and that bf16 autocast really runs on a CPU."""

import pytest
import torch

from learner.config import LearnerConfig
from learner.model import load_policy, token_logprobs
from learner.precision import attention_implementation, autocast_dtype, cpu_flags

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_cpu_flags_are_read_from_the_kernel_list(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\nbugs\t\t: none\n")
    assert cpu_flags(info) == {"fpu", "sse2", "avx2", "avx512f", "avx512_bf16"}
    assert cpu_flags(tmp_path / "missing") == frozenset()


@pytest.mark.parametrize(
    "precision, device, flags, expected",
    [
        ("auto", CPU, {"avx2", "avx512f"}, None),  # bf16 would be emulated: float32
        ("auto", CPU, {"avx2", "avx512_bf16"}, torch.bfloat16),
        ("auto", CPU, {"amx_bf16"}, torch.bfloat16),
        ("auto", CUDA, set(), torch.bfloat16),
        ("float32", CUDA, set(), None),
        ("bfloat16", CPU, set(), torch.bfloat16),
    ],
)
def test_auto_takes_bf16_only_where_the_hardware_has_it(precision, device, flags, expected):
    assert autocast_dtype(precision, device, frozenset(flags)) == expected


def test_an_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="precision must be"):
        autocast_dtype("fp8", CPU, frozenset())
    with pytest.raises(ValueError):
        LearnerConfig(precision="fp8")


def test_bf16_on_a_cpu_uses_matmul_attention():
    assert attention_implementation(CPU, torch.bfloat16) == "eager"
    assert attention_implementation(CPU, None) is None
    assert attention_implementation(CUDA, torch.bfloat16) is None


def test_bf16_autocast_changes_the_logits_by_bf16_rounding_only(tiny_model_dir):
    model = load_policy(tiny_model_dir, LearnerConfig(precision="bfloat16"), "cpu")
    assert model.config._attn_implementation == "eager"
    ids = torch.tensor([[5, 9, 14, 3, 7, 21, 8, 30]])
    args = (model, ids, torch.ones_like(ids), 3, 1.0)
    with torch.no_grad():
        fp32 = token_logprobs(*args)
        bf16 = token_logprobs(*args, compute_dtype=torch.bfloat16)
    assert fp32.dtype == bf16.dtype == torch.float32  # the log-softmax itself stays float32
    gap = (fp32 - bf16).abs()
    assert 0 < gap.max() < 0.05  # it did run in bf16, and bf16 is close
