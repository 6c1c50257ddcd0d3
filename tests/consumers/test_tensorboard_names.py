"""Which TensorBoard scalars a Metric record becomes."""

import math

import pytest

from consumers.tensorboard.names import TRL_NAMES, run_name, scalars


def test_learner_values_take_trl_names_and_keep_their_own():
    record = {"source": "learner", "step": 3, "labels": {},
              "values": {"loss/loss": 0.5, "loss/kl_ref": 0.01, "loss/entropy": 1.2, "grad_norm": 2.0,
                         "num_tokens": 300.0, "num_samples": 12.0, "loss/clip_low_frac": 0.1}}
    out = scalars(record)
    assert out["loss"] == 0.5 and out["kl"] == 0.01 and out["entropy"] == 1.2 and out["grad_norm"] == 2.0
    assert out["clip_ratio/low_mean"] == 0.1
    assert out["completions/mean_length"] == 25.0
    assert out["learner/loss/loss"] == 0.5 and out["learner/num_samples"] == 12.0
    assert run_name(record) == "learner"


def test_a_step_that_did_not_measure_kl_writes_no_kl():
    out = scalars({"source": "learner", "step": 1, "values": {"loss/loss": 0.5}})
    assert "kl" not in out and "completions/mean_length" not in out


def test_reshape_windows_give_reward_its_std_and_the_zero_std_share_per_partition():
    record = {"source": "reshape", "step": 40, "labels": {"partition": "2"},
              "values": {"reward_reshaped_mean": 0.3, "reward_reshaped_var": 0.04, "reward_raw_mean": 0.2,
                         "zero_variance_share_reshaped": 0.75}}
    out = scalars(record)
    assert out["reward"] == 0.3 and out["frac_reward_zero_std"] == 0.75
    assert out["reward_std"] == pytest.approx(0.2)
    assert out["reshape/reward_raw_mean"] == 0.2
    assert run_name(record) == "reshape-p2"


def test_other_sources_keep_their_names_and_non_finite_values_are_left_out():
    record = {"source": "generator", "step": 7, "labels": {"generator_id": "run-gen-0"},
              "values": {"lag": 1.0, "bad": math.nan}}
    assert scalars(record) == {"generator/lag": 1.0}
    assert run_name(record) == "generator-run-gen-0"
    assert run_name({"source": "eval", "labels": {}}) == "eval"
    assert set(TRL_NAMES) == {"learner", "reshape"}


def test_records_become_event_files_one_run_per_source_readable_by_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from consumers.tensorboard.writer import ScalarFiles

    files = ScalarFiles(tmp_path)
    for step, partition in ((10, "0"), (20, "0"), (15, "1")):
        files.write({"source": "reshape", "step": step, "created_at_ms": 1_700_000_000_000 + step,
                     "labels": {"partition": partition},
                     "values": {"reward_reshaped_mean": step / 100, "reward_reshaped_var": 0.01}})
    files.close()
    assert sorted(d.name for d in tmp_path.iterdir()) == ["reshape-p0", "reshape-p1"]
    p0 = EventAccumulator(str(tmp_path / "reshape-p0"))
    p0.Reload()
    assert [(e.step, round(e.value, 4)) for e in p0.Scalars("reward")] == [(10, 0.1), (20, 0.2)]
    assert {"reward", "reward_std", "reshape/reward_reshaped_var"} <= set(p0.Tags()["scalars"])
    assert files.records == 3 and files.scalars == 3 * 4
