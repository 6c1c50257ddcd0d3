import re
import typing

import pytest
import yaml

from infra.platform.topics import Topics
from streams.reshaping.config import ReshapingConfig, config_from_dict, load_config, load_preset
from streams.reshaping.errors import ConfigError

KAFKA_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def test_presets_load_and_differ():
    raw, full = load_preset("raw"), load_preset("full")
    assert raw.name == "raw" and full.name == "full"
    assert raw.weights.start() == {"test": 1.0, "precision": 0.0, "style": 0.0, "hack": 0.0, "progress": 0.0,
                                   "robust": 0.0, "exec": 0.0}
    assert raw.normalisation.mode == "group"
    assert raw.normalisation.warmup_min_std == 0.0 and raw.normalisation.warmup_min_count == 0
    assert raw.transform.amplification == "none"
    assert raw.transform.positive_boost == 1.0 and raw.transform.negative_damp == 1.0
    assert full.transform.clip == (-5.0, 5.0)
    assert full.weights.schedule == "linear"
    assert full.rewards.hack_penalties["except_pass"] == 1.0
    assert raw.config_id != full.config_id
    for cfg in (raw, full):
        assert re.fullmatch(r"[0-9a-f]{12}", cfg.config_id)
        assert KAFKA_TOPIC.match(Topics().advantages(cfg.config_id))


@pytest.mark.parametrize("name", ["raw", "binary", "layered", "full"])
def test_every_preset_states_every_field(name):
    from streams.reshaping.config import PRESETS_DIR

    data = yaml.safe_load((PRESETS_DIR / f"{name}.yaml").read_text())
    assert set(data) == set(ReshapingConfig.model_fields)
    for key, info in ReshapingConfig.model_fields.items():
        if isinstance(data[key], dict) and hasattr(info.annotation, "model_fields"):
            assert set(data[key]) == set(info.annotation.model_fields), key


def test_preset_normalisation_and_governance():
    for name in ("raw", "binary", "layered", "full"):
        cfg = load_preset(name)
        assert cfg.normalisation.mode == "group"
        assert cfg.governance.exclude_environment_failures and cfg.governance.min_comparable == 2
    full = load_preset("full").normalisation
    assert (full.warmup_batches, full.warmup_min_std, full.warmup_min_count) == (100, 0.05, 64)
    assert load_preset("raw").normalisation.warmup_batches == 0


def test_unknown_preset_is_refused():
    with pytest.raises(ConfigError, match="unknown preset"):
        load_preset("nope")


def _reverse_keys(value):
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(list(value))}
    return value


def test_config_id_stable_across_key_order_and_number_spelling(tmp_path):
    data = load_preset("full").model_dump(mode="json")
    reordered = _reverse_keys(data)
    assert list(reordered) != list(data)
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump(data, sort_keys=False))
    b.write_text(yaml.safe_dump(reordered, sort_keys=False))
    assert load_config(a).config_id == load_config(b).config_id == load_preset("full").config_id
    # an integer where a float is meant is the same knob value
    assert (
        config_from_dict({"weights": {"test": 1}}).config_id
        == config_from_dict({"weights": {"test": 1.0}}).config_id
    )


def _variants(value, annotation):
    """Candidate different values for one knob; the first one that validates is used."""
    choices = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return [c for c in choices if c != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1]
    if isinstance(value, float):
        return [value + 0.01, value - 0.01]
    if isinstance(value, tuple):
        return [(value[0] - 1.0, value[1]), (value[0], value[1] + 1.0)]
    if isinstance(value, dict):
        return [{**value, "new_flag": 0.3}, {**value, "precision": 0.25}]  # a penalty map, a weight map
    if isinstance(value, str):
        return [value + "x"]
    raise AssertionError(f"no variant for {value!r}")


def _knobs(data):
    """(path, annotation, value) of every leaf knob; sections are one level deep."""
    for key, info in ReshapingConfig.model_fields.items():
        if isinstance(data[key], dict):
            for sub, sub_info in info.annotation.model_fields.items():
                yield (key, sub), sub_info.annotation, data[key][sub]
        else:
            yield (key,), info.annotation, data[key]


def _with(data, path, value):
    if len(path) == 1:
        return {**data, path[0]: value}
    return {**data, path[0]: {**data[path[0]], path[1]: value}}


def test_config_id_changes_with_every_knob():
    base = ReshapingConfig(weights={"robust": 0.0})  # robust weighted forbids an ensemble outcome
    data = base.model_dump()
    knobs = list(_knobs(data))
    assert len(knobs) >= 35
    for path, annotation, value in knobs:
        for variant in _variants(value, annotation):
            try:
                cfg = config_from_dict(_with(data, path, variant))
            except ConfigError:
                continue
            assert cfg.config_id != base.config_id, f"{'.'.join(path)} does not change the config id"
            break
        else:
            raise AssertionError(f"no valid variant of {'.'.join(path)}")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("normalisation:\n  ema_beta: 1.5\n", "normalisation.ema_beta"),
        ("normalisation:\n  mode: layer\n", "normalisation.mode"),
        ("weights:\n  tset: 1.0\n", "weights.tset"),
        ("weights:\n  style: -0.1\n", "weights.style"),
        ("weights:\n  end: {styel: 0.3}\n", "weights"),
        ("outcome:\n  kind: ternary\n", "outcome.kind"),
        ("outcome:\n  wrong: 0.05\n", "outcome"),
        ("rewards:\n  style_logical: 0.3\n", "rewards.style_logical"),
        ("rewards:\n  hack_penalties: {process_exit: -1.0}\n", "rewards"),
        ("progress:\n  window: 0\n", "progress.window"),
        ("transform:\n  clip: [5, -5]\n", "transform"),
        ("transform:\n  amplification: power\n  amplification_param: 2\n", "transform"),
        ("transform:\n  positive_boost: .nan\n", "transform.positive_boost"),
        ("version: 0\n", "version"),
        ("normalisation:\n  mode: batches\n", "normalisation.mode"),
        ("normalisation:\n  batch_groups: 0\n", "normalisation.batch_groups"),
        ("normalisation:\n  batch_deadline_ms: -1\n", "normalisation.batch_deadline_ms"),
        ("normalisation:\n  warmup_batches: -1\n", "normalisation.warmup_batches"),
        ("governance:\n  min_comparable: 0\n", "governance.min_comparable"),
        ("governance:\n  exclude_failures: true\n", "governance.exclude_failures"),
    ],
)
def test_bad_config_is_refused_with_the_field(tmp_path, text, field):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert field in str(info.value)


def test_bad_reason_is_in_the_message(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("transform:\n  amplification: power\n  amplification_param: 2\n")
    with pytest.raises(ConfigError, match="odd integer"):
        load_config(path)


def test_unparsable_yaml_and_non_mapping_are_refused(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("weights: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(listing)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")


def test_config_is_frozen():
    cfg = ReshapingConfig()
    with pytest.raises(Exception):
        cfg.version = 2  # type: ignore[misc]
    with pytest.raises(Exception):
        cfg.weights.test = 2.0  # type: ignore[misc]


def test_every_hack_flag_has_a_penalty_in_defaults_and_full_preset():
    from streams.reshaping.config import DEFAULT_HACK_PENALTIES
    from streams.signals import HACK_FLAGS

    assert set(HACK_FLAGS) == set(DEFAULT_HACK_PENALTIES)
    assert set(HACK_FLAGS) == set(load_preset("full").rewards.hack_penalties)
