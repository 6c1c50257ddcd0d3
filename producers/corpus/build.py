"""Building the corpus: inject bugs into every source function and keep the real ones.

For each function and pattern, the mutator's sites are shuffled by an RNG seeded with
(seed, function, pattern) and tried in that order. A candidate is dropped when it
- does not compile (or, for the syntax-error pattern, does compile),
- has the same normalised AST as the reference (an equivalent mutant),
- duplicates another mutant of the same function (under any pattern), or
- passes every test in the sandbox (a mutant the tests cannot tell from the reference).
Candidates are run in rounds, one batch per round, so the sandbox always has a full queue.
What went wrong on each failing test is kept with the bug: one failing test may become the
task's visible test with its error (see visible.py). Patterns held out of training are
built for validation functions only (see split.py).
"""

from __future__ import annotations

import ast
import random
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from tqdm import tqdm

from producers.corpus.config import CorpusBuildConfig
from producers.corpus.difficulty import difficulty
from producers.corpus.functions import SourceFunction
from producers.corpus.humaneval import load_humaneval
from producers.corpus.mbpp import load_mbpp
from producers.corpus.mutators import MutationError, ParsedSource, get_mutator
from producers.corpus.records import make_task
from producers.corpus.runner import TestFailure, TestJob, TestOutcome, TestRunner
from producers.corpus.split import split_of, task_split
from producers.corpus.visible import TestSplit, compile_failures, split_tests

EVAL_CHUNK = 64  # jobs per sandbox call: small enough for a live progress bar
SANDBOX_FAILURE = "sandbox"  # the sandbox's ErrorKind for its own failures


def load_functions(config: CorpusBuildConfig) -> list[SourceFunction]:
    """MBPP (then HumanEval, if included), each cut to ``max_functions``."""
    functions = load_mbpp()[: config.max_functions]
    if config.include_humaneval:
        functions += load_humaneval()[: config.max_functions]
    return functions


def normalised_ast(code: str) -> str | None:
    """The AST without positions or formatting; None if the code does not parse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of the MBPP sources, e.g. "\\d"
        try:
            return ast.dump(ast.parse(code))
        except SyntaxError:
            return None


def compiles(code: str) -> bool:
    # compile(), not ast.parse(): `return` outside a function or `break` outside a loop
    # only fail at compile time.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SyntaxWarning for `x is 1` in the sources
        try:
            compile(code, "<mutant>", "exec")
        except (SyntaxError, ValueError):
            return False
    return True


@dataclass
class BuildStats:
    """Counts of what happened to the candidates, keyed by (pattern, outcome)."""

    outcomes: Counter = field(default_factory=Counter)
    error_kinds: Counter = field(default_factory=Counter)  # of the accepted mutants run
    functions: int = 0  # functions with a reference that passes its tests
    references_failing: list[str] = field(default_factory=list)
    # libcst is stricter than CPython about mixed tabs and spaces; a few MBPP files trip it.
    unparseable: list[str] = field(default_factory=list)

    def count(self, pattern: str, outcome: str, n: int = 1) -> None:
        self.outcomes[(pattern, outcome)] += n


@dataclass(frozen=True)
class Mutant:
    """A kept bug and what went wrong on each test it fails."""

    code: str
    failures: tuple[TestFailure, ...]


@dataclass
class MutantSlot:
    """The bugs still wanted for one (function, pattern), in the split its tasks go to."""

    function: SourceFunction
    pattern: str
    candidates: Iterator[str]
    wanted: int
    attempts_left: int
    split: str = "train"
    accepted: list[Mutant] = field(default_factory=list)
    exhausted: bool = False

    @property
    def open(self) -> bool:
        return not self.exhausted and self.attempts_left > 0 and len(self.accepted) < self.wanted


def _candidates(parsed: ParsedSource, pattern: str, rng: random.Random) -> Iterator[str]:
    sites = get_mutator(pattern).sites(parsed)
    order = list(range(len(sites)))
    rng.shuffle(order)
    for i in order:
        yield sites[i].apply(parsed)


class CandidateFilter:
    """The static checks, with the per-function memory that finds duplicates."""

    def __init__(self, stats: BuildStats):
        self.stats = stats
        # function_id -> normalised ASTs already taken (the reference's first of all)
        self._seen: dict[str, set[str]] = {}
        self._reference: dict[str, str] = {}

    def next_candidate(self, slot: MutantSlot) -> str | None:
        mutator = get_mutator(slot.pattern)
        function_id = slot.function.function_id
        if function_id not in self._seen:
            self._reference[function_id] = normalised_ast(slot.function.reference_code)
            self._seen[function_id] = {self._reference[function_id]}
        seen = self._seen[function_id]
        for code in slot.candidates:
            if compiles(code) != mutator.keeps_valid_syntax:
                self.stats.count(slot.pattern, "rejected_syntax")
                continue
            # A non-parsing mutant is keyed by its text: no AST to compare.
            key = normalised_ast(code) if mutator.keeps_valid_syntax else code
            if key in seen:
                equivalent = key == self._reference[function_id]
                outcome = "rejected_equivalent" if equivalent else "rejected_duplicate"
                self.stats.count(slot.pattern, outcome)
                continue
            seen.add(key)
            return code
        slot.exhausted = True
        return None


def _run(runner: TestRunner, jobs: Sequence[TestJob], bar: tqdm) -> list[TestOutcome]:
    bar.total = (bar.total or 0) + len(jobs)
    bar.refresh()
    outcomes: list[TestOutcome] = []
    for start in range(0, len(jobs), EVAL_CHUNK):
        chunk = jobs[start : start + EVAL_CHUNK]
        outcomes += runner(chunk)
        bar.update(len(chunk))
    return outcomes


def _working_references(functions, runner, bar, stats) -> list[SourceFunction]:
    """Functions whose reference passes its own tests in this sandbox (a bug can only be
    told apart from a reference that works)."""
    outcomes = _run(runner, [TestJob(f.reference_code, f) for f in functions], bar)
    working = []
    for function, outcome in zip(functions, outcomes):
        if outcome.passed_all:
            working.append(function)
        else:
            stats.references_failing.append(function.function_id)
    return working


def _open_slots(functions, config: CorpusBuildConfig, stats: BuildStats) -> list[MutantSlot]:
    slots = []
    for function in functions:
        try:
            parsed = ParsedSource(function.reference_code)
        except MutationError:
            stats.unparseable.append(function.function_id)
            continue
        function_split = split_of(function.function_id, function.source, config.seed,
                                  config.validation_fraction)
        for pattern in config.patterns:
            split = task_split(function_split, pattern, config.heldout_patterns)
            if split is None:  # a held-out pattern in a train function: never built
                continue
            # A string seed: random.Random hashes it with SHA-512, stable across runs.
            rng = random.Random(f"{config.seed}:{function.function_id}:{pattern}")
            wanted = config.mutants_per_function_per_pattern
            slots.append(MutantSlot(function, pattern, _candidates(parsed, pattern, rng), wanted,
                                    attempts_left=wanted * config.max_attempts_per_mutant, split=split))
    return slots


def _fill_slots(slots: list[MutantSlot], runner: TestRunner, bar: tqdm, stats: BuildStats) -> None:
    checks = CandidateFilter(stats)
    while open_slots := [s for s in slots if s.open]:
        jobs: list[tuple[MutantSlot, str]] = []
        for slot in open_slots:
            for _ in range(slot.wanted - len(slot.accepted)):
                code = checks.next_candidate(slot)
                if code is None:
                    break
                slot.attempts_left -= 1
                if get_mutator(slot.pattern).keeps_valid_syntax:
                    jobs.append((slot, code))
                else:
                    # Code that does not compile fails every test; no need to run it.
                    slot.accepted.append(Mutant(code, compile_failures(code, slot.function.tests)))
                    stats.count(slot.pattern, "accepted")
        outcomes = _run(runner, [TestJob(code, slot.function) for slot, code in jobs], bar)
        for (slot, code), outcome in zip(jobs, outcomes):
            if outcome.passed_all:
                stats.count(slot.pattern, "rejected_passing")
            elif outcome.error_kind == SANDBOX_FAILURE:
                # The sandbox itself failed: no verdict on the mutant, so it is not kept.
                stats.count(slot.pattern, "rejected_unverified")
            else:
                slot.accepted.append(Mutant(code, outcome.failures))
                stats.count(slot.pattern, "accepted")
                stats.error_kinds[outcome.error_kind] += 1


def iter_corpus(config: CorpusBuildConfig, runner: TestRunner, stats: BuildStats,
                functions: Sequence[SourceFunction] | None = None, chunk_functions: int = 64,
                progress: bool = True) -> Iterator[list[dict]]:
    """The task records chunk by chunk (``chunk_functions`` source functions at a time), so a
    consumer can use the first tasks while the rest are still being tested.

    Every choice of the build is per function (a seeded RNG per function and pattern, the
    duplicate memory per function), so the chunks put together are exactly the tasks of a
    whole build in the same order, whatever ``chunk_functions`` is. ``stats`` accumulates.
    """
    functions = list(load_functions(config) if functions is None else functions)
    with tqdm(desc="running tests", unit="run", disable=not progress) as bar:
        for start in range(0, len(functions), chunk_functions):
            working = _working_references(functions[start : start + chunk_functions], runner, bar, stats)
            stats.functions += len(working)
            slots = _open_slots(working, config, stats)
            _fill_slots(slots, runner, bar, stats)
            yield _tasks_of(slots, config)


def _tasks_of(slots: list[MutantSlot], config: CorpusBuildConfig) -> list[dict]:
    tasks = []
    for slot in slots:  # slots are in function order, then pattern order
        base = get_mutator(slot.pattern).base_difficulty
        for index, mutant in enumerate(slot.accepted):
            tests = (split_tests(slot.function.tests, mutant.failures) if config.visible_failing_test
                     else TestSplit(slot.function.tests))
            tasks.append(make_task(slot.function, split=slot.split, pattern=slot.pattern, index=index,
                                   buggy_code=mutant.code, seed=config.seed,
                                   difficulty=difficulty(base, slot.function.reference_code),
                                   tests=tests.hidden, visible_tests=tests.visible,
                                   error_context=tests.error_context))
    return tasks


def build_corpus(config: CorpusBuildConfig, runner: TestRunner,
                 functions: Sequence[SourceFunction] | None = None,
                 progress: bool = True) -> tuple[list[dict], BuildStats]:
    """Task records (in function, pattern, index order) and what happened on the way.

    ``functions`` defaults to ``load_functions(config)``.
    """
    stats = BuildStats()
    tasks = [t for chunk in iter_corpus(config, runner, stats, functions, progress=progress) for t in chunk]
    return tasks, stats
