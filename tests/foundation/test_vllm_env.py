"""Which interpreter a generator runs in: the project's own, or vLLM's CPU environment."""

import sys

import pytest

from infra.platform.vllm_env import VllmEnvironmentMissing, generator_python, vllm_cpu_python


def test_engines_other_than_vllm_run_in_the_projects_interpreter():
    assert generator_python("ctranslate2") == generator_python("transformers") == sys.executable


def test_vllm_runs_in_its_cpu_environment_or_says_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RESHAPER_HOME", str(tmp_path))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # vLLM not importable here
    with pytest.raises(VllmEnvironmentMissing, match="infra/vllm_cpu/setup.sh"):
        generator_python("vllm")
    python = vllm_cpu_python()
    python.parent.mkdir(parents=True)
    python.write_text("")
    assert generator_python("vllm") == str(python) == str(tmp_path.resolve() / "vllm-cpu" / "bin" / "python")
