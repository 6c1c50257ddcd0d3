"""Shared fixtures of the learner tests: a tiny on-disk Llama and advantage records."""

import pytest

from learner.tiny import build_tiny_llama
from tests.factories import advantage as advantage_record


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny_llama"), seed=0)


def _make_record(
    group_id,
    sample_index,
    prompt,
    completion,
    advantage,
    policy_version=0,
    finish_reason="stop",
    group_members=2,
    behaviour=None,
    reward_enhanced=None,
    excluded=False,
):
    """An advantage record (schemas/advantage.avsc), given the fields the learner reads; the
    reward before normalisation is the advantage unless given."""
    return advantage_record(
        rollout_id=f"{group_id}-r{sample_index}",
        group_id=group_id,
        sample_index=sample_index,
        group_members=group_members,
        group_size=group_members,
        prompt_token_ids=list(prompt),
        completion_token_ids=list(completion),
        behaviour_logprobs=(
            list(behaviour) if behaviour is not None else [-5.5] * len(completion)
        ),
        advantage=advantage,
        reward_enhanced=float(advantage if reward_enhanced is None else reward_enhanced),
        excluded=excluded,
        policy_version=policy_version,
        finish_reason=finish_reason,
    )


@pytest.fixture
def make_record():
    return _make_record
