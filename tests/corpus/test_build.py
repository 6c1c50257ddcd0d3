"""The build on hand-made functions, run through the real sandbox."""

import ast

from producers.corpus.build import build_corpus, normalised_ast
from producers.corpus.config import CorpusBuildConfig
from producers.corpus.functions import SourceFunction
from producers.corpus.records import write_tasks

CLAMP = SourceFunction(
    function_id="custom-0001", source="mbpp", entry_point="clamp",
    reference_code=(
        "def clamp(x, low, high):\n"
        "    if x < low:\n"
        "        return low\n"
        "    if x > high:\n"
        "        return high\n"
        "    return x\n"
    ),
    tests=("assert clamp(5, 0, 10) == 5", "assert clamp(-3, 0, 10) == 0",
           "assert clamp(12, 0, 10) == 10", "assert clamp(0, 0, 10) == 0"),
)
# max(a, b) == max(b, a): the only argument_swap of this function passes every test.
BIGGER = SourceFunction(
    function_id="custom-0002", source="mbpp", entry_point="bigger",
    reference_code="def bigger(a, b):\n    return max(a, b)\n",
    tests=("assert bigger(1, 2) == 2", "assert bigger(3, -1) == 3"),
)
BROKEN = SourceFunction(
    function_id="custom-0003", source="mbpp", entry_point="half",
    reference_code="def half(x):\n    return x / 2\n",
    tests=("assert half(3) == 1",),
)
FUNCTIONS = [CLAMP, BIGGER, BROKEN]
PATTERNS = ("operator_swap", "argument_swap", "boundary_check_deleted", "wrong_return", "missing_colon")


def build(runner, **changes):
    config = CorpusBuildConfig(patterns=PATTERNS, mutants_per_function_per_pattern=2, **changes)
    return build_corpus(config, runner, functions=FUNCTIONS, progress=False)


def fails_some_test(task) -> bool:
    namespace: dict = {}
    try:
        exec(task["buggy_code"], namespace)
        for test in task["tests"]:
            exec(test, namespace)
    except Exception:
        return True
    return False


def test_kept_bugs_are_real_distinct_and_labelled(runner):
    tasks, stats = build(runner)
    assert stats.references_failing == ["custom-0003"]  # half(3) == 1.5, its test is wrong
    assert {t["function_id"] for t in tasks} == {"custom-0001", "custom-0002"}
    # The max(a, b) swap passes every test; it is run, rejected, and nothing else is left.
    assert stats.outcomes[("argument_swap", "rejected_passing")] == 1
    assert stats.outcomes[("argument_swap", "accepted")] == 0
    assert [t["bug_pattern"] for t in tasks if t["function_id"] == "custom-0002"] == [
        "wrong_return", "wrong_return", "missing_colon"]  # only one colon to delete
    tasks = [t for t in tasks if t["function_id"] == "custom-0001"]

    by_pattern = {}
    for task in tasks:
        by_pattern.setdefault(task["bug_pattern"], []).append(task)
        assert fails_some_test(task), task["task_id"]
        assert task["reference_code"] == CLAMP.reference_code
    # clamp has two guards, so both wanted boundary deletions exist.
    assert [t["task_id"] for t in by_pattern["boundary_check_deleted"]] == [
        "custom-0001-boundary_check_deleted-0", "custom-0001-boundary_check_deleted-1"]
    # `x < low` -> `x <= low` (and the same for `>`) returns the same values: both are run,
    # pass every test and are rejected.
    assert "operator_swap" not in by_pattern
    assert stats.outcomes[("operator_swap", "rejected_passing")] == 2
    assert len(by_pattern["missing_colon"]) == 2
    for task in tasks:
        if task["bug_pattern"] == "missing_colon":
            assert normalised_ast(task["buggy_code"]) is None
        else:
            ast.parse(task["buggy_code"])
    asts = [normalised_ast(t["buggy_code"]) or t["buggy_code"] for t in tasks]
    assert len(set(asts)) == len(asts)  # no duplicate bugs
    assert len({t["split"] for t in tasks}) == 1  # one function, one side of the split


def test_same_seed_same_bytes_other_seed_other_bugs(runner, tmp_path):
    first, _ = build(runner, seed=7)
    again, _ = build(runner, seed=7)
    other, _ = build(runner, seed=8)
    write_tasks(tmp_path / "a.jsonl", first)
    write_tasks(tmp_path / "b.jsonl", again)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert [t["buggy_code"] for t in first] != [t["buggy_code"] for t in other]
    assert all(t["seed"] == 7 for t in first)


def test_mbpp_and_humaneval_slice_builds_deterministically(runner, tmp_path):
    config = CorpusBuildConfig(max_functions=3, patterns=("operator_swap", "variable_rename"))
    first, _ = build_corpus(config, runner, progress=False)
    again, _ = build_corpus(config, runner, progress=False)
    assert first == again
    assert {t["source"] for t in first} == {"mbpp", "humaneval"}
    for t in first:
        assert (t["split"] == "heldout") == (t["source"] == "humaneval")


IS_POSITIVE = SourceFunction(
    function_id="custom-0004", source="mbpp", entry_point="is_positive",
    reference_code="def is_positive(x):\n    if x > 0:\n        return True\n    return False\n",
    tests=("assert is_positive(3) is True", "assert is_positive(-3) is False"),
)


def test_the_same_bug_under_two_patterns_is_kept_once(runner):
    # wrong_return and wrong_constant both turn `return True` into `return False`.
    config = CorpusBuildConfig(patterns=("wrong_return", "wrong_constant"),
                               mutants_per_function_per_pattern=2)
    tasks, stats = build_corpus(config, runner, functions=[IS_POSITIVE], progress=False)
    assert [t["bug_pattern"] for t in tasks] == ["wrong_return", "wrong_return"]
    assert stats.outcomes[("wrong_constant", "rejected_duplicate")] == 2


def test_filter_rejects_reformatted_reference_syntax_errors_and_repeats():
    from producers.corpus.build import BuildStats, CandidateFilter, MutantSlot

    stats = BuildStats()
    candidates = iter([
        "def is_positive(x):\n    if (x > 0):\n        return True\n    return False\n",  # same AST
        "def is_positive(x)\n    return True\n",  # does not compile
        "def is_positive(x):\n    return x >= 0\n",
        "def is_positive(x):\n    return (x >= 0)\n",  # repeat of the previous one
    ])
    slot = MutantSlot(IS_POSITIVE, "operator_swap", candidates, wanted=2, attempts_left=6)
    checks = CandidateFilter(stats)
    assert checks.next_candidate(slot) == "def is_positive(x):\n    return x >= 0\n"
    assert checks.next_candidate(slot) is None and slot.exhausted
    assert stats.outcomes == {("operator_swap", "rejected_equivalent"): 1,
                              ("operator_swap", "rejected_syntax"): 1,
                              ("operator_swap", "rejected_duplicate"): 1}


def test_chunks_put_together_are_the_whole_build(runner):
    from producers.corpus.build import BuildStats, iter_corpus

    config = CorpusBuildConfig(patterns=PATTERNS, mutants_per_function_per_pattern=2)
    whole, whole_stats = build(runner)
    for size in (1, 2):
        stats = BuildStats()
        chunks = list(iter_corpus(config, runner, stats, functions=FUNCTIONS, chunk_functions=size, progress=False))
        assert len(chunks) == -(-len(FUNCTIONS) // size)
        assert [t for chunk in chunks for t in chunk] == whole
        assert (stats.functions, stats.outcomes, stats.references_failing) == (
            whole_stats.functions, whole_stats.outcomes, whole_stats.references_failing)


def test_held_out_patterns_are_unseen_in_training_by_function_and_pattern(runner):
    heldout = ("wrong_return",)
    config = CorpusBuildConfig(max_functions=12, validation_fraction=0.4, include_humaneval=False,
                               patterns=("operator_swap", "wrong_return", "missing_colon"), heldout_patterns=heldout)
    tasks, _ = build_corpus(config, runner, progress=False)
    by_split = {}
    for t in tasks:
        by_split.setdefault(t["split"], []).append(t)
    assert set(by_split) == {"train", "validation", "heldout_pattern"}
    train, held = by_split["train"], by_split["heldout_pattern"]
    assert {t["bug_pattern"] for t in held} == set(heldout)
    assert not {t["bug_pattern"] for t in train + by_split["validation"]} & set(heldout)
    # both the function and the pattern of a held-out-pattern task are unseen in training
    assert not {t["function_id"] for t in held} & {t["function_id"] for t in train}
    assert {t["function_id"] for t in held} <= {t["function_id"] for t in by_split["validation"]} | {
        t["function_id"] for t in held}
    # the same build without held-out patterns: those bugs are validation tasks of the same functions
    plain, _ = build_corpus(config.model_copy(update={"heldout_patterns": ()}), runner, progress=False)
    plain_held = [t for t in plain if t["split"] == "validation" and t["bug_pattern"] in heldout]
    assert [t["task_id"] for t in plain_held] == [t["task_id"] for t in held]
