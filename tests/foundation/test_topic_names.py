"""Topic names of one namespace: what an advantage stream's config id may be."""

import pytest

from infra.platform.topics import Topics


@pytest.mark.parametrize("config_id", ["base", "v2-ema", "a_b-3", "0f3c9a"])
def test_a_config_id_of_letters_digits_dash_and_underscore_names_a_stream(config_id):
    assert Topics(prefix="exp.").advantages(config_id) == f"exp.advantages.{config_id}"


@pytest.mark.parametrize("config_id", ["", "a.b", "a b", "a/b", "caf\u00e9", "x\n"])
def test_any_other_config_id_is_refused(config_id):
    with pytest.raises(ValueError, match="invalid reshaping config id"):
        Topics().advantages(config_id)
