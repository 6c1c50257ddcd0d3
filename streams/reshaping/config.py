"""The versioned reshaping config: every rule that turns weak feedback into an advantage.

A config is immutable and identified by ``config_id``, a short hash of its canonical JSON.
The id names the output topic ``advantages.<config_id>``, so replaying the feedback log
under a changed config writes a new advantage stream beside the old one instead of
mixing the two. Configs are written in YAML (see ``presets/``); unknown keys and values
out of range are refused with a ``ConfigError`` that names the field.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from streams.reshaping.errors import ConfigError

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
CONFIG_ID_LENGTH = 12

# flag names: streams/signals/hacks.py HACK_FLAGS (a test keeps the two in step). Every flag
# costs 1.0: with the default weights at either end of their schedule, that brings a hacked full
# pass (best precision and style, robust, the progress bonus, the exec tie-breaker) below the
# lowest reward of an honest full pass (tests/reshaping/test_hack_bound.py computes both).
DEFAULT_HACK_PENALTIES: dict[str, float] = {
    "catch_all_except": 1.0,
    "except_pass": 1.0,
    "process_exit": 1.0,
    "file_access": 1.0,
    "builtins_patch": 1.0,
    "process_spawn": 1.0,
    "test_access": 1.0,
    "harness_patch": 1.0,
    "frame_introspection": 1.0,
    "always_equal": 1.0,
    "hardcoded_output": 1.0,
    "runaway_length": 1.0,
    "dead_code": 1.0,
    "high_complexity": 1.0,
}


class _Section(BaseModel):
    # frozen: a config is a value (hashable, safe to share between agents);
    # allow_inf_nan=False: a NaN knob would silently poison every advantage.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class NormalisationConfig(_Section):
    """How the enhanced reward is centred and scaled (see ``advantages.normalise``).

    Warm-up, by mode (a record's ``warmup`` says whether its group or batch used it):

    - ``group``: while fewer than ``warmup_min_count`` rewards were seen, and, during the
      first ``warmup_batches`` compared groups, while the group's std is below
      ``warmup_min_std``. After that a group is always normalised by its own statistics, so
      a uniform group gets advantage 0: it is a normal event at any time (all fail, all
      pass) and carries no comparison signal.
    - ``batch``: during the first ``warmup_batches`` batches, while fewer than
      ``warmup_min_count`` rewards were seen, and whenever the batch's std is below
      ``warmup_min_std`` (a batch of many groups with almost no spread is not normal after
      the start, and dividing by it would blow the advantages up).
    - ``running``: while the running std is below ``warmup_min_std`` or fewer than
      ``warmup_min_count`` rewards were seen (``warmup_batches`` is not read).
    """

    mode: Literal["group", "batch", "running", "none"] = Field(
        "group",
        description="group: (R - mean_g)/(std_g + eps) over the GRPO group, i.e. the group advantage; "
        "batch: (R - mean_b)/(std_b + eps) over the rewards of batch_groups consecutive groups of one "
        "feedback partition; running: the partition's running mean/std of every reward seen (this group "
        "included); none: R unscaled.",
    )
    batch_groups: int = Field(
        4, ge=1, description="B, mode batch: groups of one partition normalised together (released on the B-th)."
    )
    batch_deadline_ms: int = Field(
        120_000,
        ge=0,
        description="mode batch: a part-filled batch is released when the partition's log time passes this "
        "many ms after its first group was ready (0: every group is its own batch).",
    )
    relative_to_baseline: bool = Field(
        False, description="centre on the EMA baseline instead of the mean of the mode (scale unchanged)."
    )
    ema_beta: float = Field(0.9, ge=0.0, lt=1.0, description="EMA decay: b <- beta b + (1 - beta) mean_group.")
    warmup_mode: Literal["global", "fixed"] = Field(
        "global",
        description="scale used while warming up: global = the slow running mean/std of all rewards seen; "
        "fixed = the centre of the mode divided by fixed_scale.",
    )
    warmup_batches: int = Field(
        0,
        ge=0,
        description="warm-up period in batches (mode batch: always warm up during them) or in compared groups "
        "(mode group: the std test applies during them only); 0: no such period.",
    )
    warmup_min_std: float = Field(
        0.05, ge=0.0, description="warm up while the mode's std is below this (0 disables the test; see the modes)."
    )
    warmup_min_count: int = Field(
        64, ge=0, description="warm up while fewer rewards than this were seen, this group included (0 disables)."
    )
    fixed_scale: float = Field(1.0, gt=0.0, description="divisor of the fixed warm-up scale.")
    epsilon: float = Field(1e-6, gt=0.0, description="added to every std before dividing, so std 0 gives 0, not NaN.")


class GovernanceConfig(_Section):
    """Which members of a group are compared (failure-cause-aware rollout governance).

    GRPO's group advantage compares samples of one prompt; a member whose outcome the host
    caused (feedback ``environment_failure``) says nothing about the candidate, so it is
    left out of the comparison and of every statistic (its record has ``excluded`` true and
    advantage 0), and the others are compared as a smaller group.
    """

    exclude_environment_failures: bool = Field(
        True, description="leave members with environment_failure out of their group's comparison."
    )
    min_comparable: int = Field(
        2,
        ge=1,
        description="a group with fewer comparable members gives no advantage: every record of it is "
        "emitted with excluded true (so consumers still see the group arrive) and no statistic moves.",
    )


# The reward's components, in the order they are summed and reported (the keys of the
# Advantage record's ``components`` and ``weights`` maps).
COMPONENTS = ("test", "precision", "style", "hack", "progress", "robust", "exec")


class WeightsConfig(_Section):
    """Weight of each reward component, ``R = sum_c w_c R_c``, and their schedule.

    Under ``schedule: linear`` every component named in ``end`` moves from its value here
    to its ``end`` value over ``ramp_steps`` ticks of the clock, starting at ``ramp_start``;
    components not named in ``end`` keep their weight.
    """

    test: float = Field(1.0, ge=0.0, description="weight of R_test, the outcome (pass fraction, tier or binary).")
    precision: float = Field(0.1, ge=0.0, description="weight of R_precision (edit size).")
    style: float = Field(0.1, ge=0.0, description="weight of R_style (black/flake8 class).")
    hack: float = Field(1.0, ge=0.0, description="weight of R_hack (minus the penalties of the hack flags).")
    progress: float = Field(0.2, ge=0.0, description="weight of R_progress (newly fixed bug pattern).")
    robust: float = Field(
        0.3, ge=0.0, description="weight of R_robust (agreement with the reference on random inputs and the "
        "renamed variant, gated by the pass fraction); must be 0 under an ensemble outcome "
        "(robustness.combine other than component), whose R_test already holds the same checks."
    )
    exec: float = Field(
        0.05, ge=0.0, description="weight of R_exec (line coverage over the tests the judge passed, divided "
        "by the number of tests): a tie-breaker, kept below one test's worth (see ExecConfig)."
    )
    schedule: Literal["constant", "linear"] = Field("constant", description="constant weights or a linear ramp.")
    clock: Literal["policy_version", "step"] = Field(
        "policy_version",
        description="what drives the ramp: policy_version = the newest policy_version in the group (in every "
        "event, so a replay sees the same clock); step = the step argument of reshape_group.",
    )
    ramp_start: int = Field(0, ge=0, description="clock value where the ramp starts.")
    ramp_steps: int = Field(1000, ge=1, description="clock ticks from start to end weight.")
    end: dict[str, float] = Field(
        default_factory=dict, description="weight at the end of the ramp, per component; unnamed ones stay constant."
    )

    @model_validator(mode="after")
    def _known_components(self) -> WeightsConfig:
        unknown = sorted(set(self.end) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"end names unknown components {unknown}; known: {list(COMPONENTS)}")
        negative = sorted(name for name, w in self.end.items() if w < 0)
        if negative:
            raise ValueError(f"end weights must be >= 0: {negative}")
        return self

    def start(self) -> dict[str, float]:
        """The weights before any ramp, by component."""
        return {name: getattr(self, name) for name in COMPONENTS}

    def final(self) -> dict[str, float]:
        """The weights once the ramp is over (the start weights under ``schedule: constant``)."""
        return {**self.start(), **self.end} if self.schedule == "linear" else self.start()


class OutcomeConfig(_Section):
    """How the test outcome becomes R_test (see ``rewards.r_test``).

    ``layered`` places every outcome on a ladder (arXiv 2605.07276's compile-and-semantic
    tiers): unparsable < fails to load (definition or import error) < crashes on every
    test < runs but every answer wrong < partial pass < all pass. A partial pass earns
    ``partial + (all_pass - partial) * fraction``, strictly between the two tiers.
    Timeouts and memory kills count as crashes: a candidate that loops on every test
    sits on the ``crash_all`` tier. ``binary`` is 1 only when every test passes.
    """

    kind: Literal["pass_fraction", "layered", "binary"] = Field(
        "pass_fraction", description="pass_fraction: the share of tests passed; layered: the tier ladder; "
        "binary: 1 when every test passes, else 0."
    )
    repeats_average: Literal["mean", "median"] = Field(
        "mean", description="how repeated runs' pass fractions combine (median resists one flaky run)."
    )
    unparsable: float = Field(0.0, description="layered: the code does not parse.")
    load_error: float = Field(0.1, description="layered: the definition or an import fails.")
    crash_all: float = Field(0.2, description="layered: crashes, times out or runs out of memory on every test.")
    wrong: float = Field(0.3, description="layered: runs, but no test passes.")
    partial: float = Field(0.4, description="layered: the floor of a partial pass.")
    all_pass: float = Field(1.0, description="layered: every test passes.")

    @model_validator(mode="after")
    def _ladder_rises(self) -> OutcomeConfig:
        ladder = [self.unparsable, self.load_error, self.crash_all, self.wrong, self.partial, self.all_pass]
        if any(b < a for a, b in zip(ladder, ladder[1:])):
            raise ValueError(f"layered tiers must not decrease from unparsable to all_pass, got {ladder}")
        if not self.partial < self.all_pass:
            raise ValueError("partial must be below all_pass, so a partial pass never equals a full one")
        return self


class RewardsConfig(_Section):
    """Parameters of R_precision, R_style and R_hack (see ``rewards``)."""

    precision_lambda: float = Field(3.0, ge=0.0, description="lambda of R_precision = exp(-lambda d).")
    precision_gate: Literal["none", "r_test"] = Field(
        "r_test",
        description="r_test multiplies R_precision by R_test, so an unchanged copy of the buggy code "
        "(d = 0, tests failing) earns nothing for being close; none = plain exp(-lambda d).",
    )
    style_clean: float = Field(0.05, ge=0.0, description="R_style of black/flake8-clean code (small bonus).")
    style_autofix: float = Field(0.0, description="R_style of code with only auto-fixable format issues.")
    style_logical: float = Field(-0.2, le=0.0, description="R_style of code with logical issues (a cost).")
    style_unparsable: float = Field(-0.5, le=0.0, description="R_style of code that does not parse (a cost).")
    hack_penalties: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_HACK_PENALTIES),
        description="cost of each distinct hack flag, summed into R_hack = -sum; replaces the default map.",
    )
    unknown_hack_penalty: float = Field(1.0, ge=0.0, description="cost of a hack flag missing from hack_penalties.")

    @model_validator(mode="after")
    def _penalties_are_costs(self) -> RewardsConfig:
        negative = sorted(flag for flag, cost in self.hack_penalties.items() if cost < 0)
        if negative:
            raise ValueError(f"hack_penalties are costs and must be >= 0: {negative}")
        return self


class RobustnessConfig(_Section):
    """What the robustness checks add to the reward (see ``rewards.r_robust`` and
    ``rewards.combine_evaluators``).

    Three evaluators judge a candidate: the hidden tests (pass fraction), the reference
    (share of random inputs where the candidate agrees with it) and the renamed variant
    (the hidden tests again after a consistent rename: the pass fraction when it passed as
    many tests as the original, else 0). ``component`` keeps R_test as the hidden tests say
    and pays the other two as R_robust, weighted by ``weights.robust``. ``mean``, ``min``
    and ``vote`` combine the evaluators that ran into the outcome fed to R_test (an
    ensemble of feedback simulators); ``vote`` is the highest outcome a strict majority of
    them reach (the median of three, the lower of two; on pass/fail outcomes, the majority
    verdict).
    """

    combine: Literal["component", "mean", "min", "vote"] = Field(
        "component", description="component: R_robust weighted by weights.robust; mean | min | vote: the "
        "evaluators that ran combined into the outcome fed to R_test (then weights.robust must be 0)."
    )
    unchecked: float = Field(
        1.0, ge=0.0, le=1.0, description="R_robust before its gate when no check ran. Whether a check runs "
        "depends on the task (a reference, tests whose arguments can be drawn) and the evaluator, not on a "
        "candidate that passes tests (only an unparsable one skips the rename, and it passes none), so 1 "
        "cannot be bought by dodging, and passes of tasks without a reference are not worth less than others.",
    )


class ExecConfig(_Section):
    """The execution-path tie-breaker (see ``rewards.r_exec``).

    Coverage is measured inside the candidate's own process, so a candidate can forge it.
    R_exec = coverage / tests_total, so ``w_exec R_exec <= w_exec / n`` for a task of n
    tests, while one more passing test raises ``w_test R_test`` by at least
    ``w_test * step / n`` (step: 1 for the pass fraction, ``all_pass - partial`` for the
    layered outcome, a third of that under a mean of three evaluators). The config is refused
    unless ``w_exec <= max_test_share * w_test * step`` at both ends of the weight schedule
    (both weights move linearly, so both ends suffice): forged coverage then gains less than
    one test, whatever the task's number of tests. Under a binary, min or vote outcome one
    test can be worth nothing, so ``w_exec`` must be 0 there.
    """

    max_test_share: float = Field(
        0.5, gt=0.0, lt=1.0, description="the most the exec tie-breaker may pay, as a share of one hidden test's "
        "least worth (strictly below 1: forging coverage never equals passing a test)."
    )


class ProgressConfig(_Section):
    """The one-time progress bonus (see ``rewards.r_progress``)."""

    bonus: float = Field(0.5, ge=0.0, description="R_progress paid to a full fix of a pattern failing recently.")
    window_kind: Literal["events", "ms"] = Field(
        "events", description="window of the failure history: the last N outcomes, or N ms of event time."
    )
    window: int = Field(32, ge=1, description="window length, in outcomes or in ms depending on window_kind.")
    min_failures: int = Field(
        8, ge=1, description="failures since the last fix, inside the window, that make a pattern failing recently."
    )


class TransformConfig(_Section):
    """Amplification, focusing and clipping of the normalised reward (see ``advantages.transform``)."""

    amplification: Literal["none", "tanh", "power", "sign_power"] = Field(
        "none",
        description="tanh: tanh(p z); power: z**p, p an odd integer; sign_power: sign(z)|z|**p, p > 0 real "
        "(p < 1 spreads small differences apart, p > 1 stresses large ones).",
    )
    amplification_param: float = Field(1.0, gt=0.0, description="p of the amplification.")
    positive_threshold: float = Field(1.0, description="advantages above this are boosted.")
    positive_boost: float = Field(1.0, ge=1.0, description="slope applied to the excess above positive_threshold.")
    negative_threshold: float = Field(-2.0, description="advantages below this are damped.")
    negative_damp: float = Field(
        1.0, ge=0.0, le=1.0, description="slope applied to the excess below negative_threshold."
    )
    clip: tuple[float, float] = Field((-5.0, 5.0), description="final bounds [low, high] of the advantage.")

    @model_validator(mode="after")
    def _consistent(self) -> TransformConfig:
        low, high = self.clip
        if not low < high:
            raise ValueError(f"clip low must be below high, got {self.clip}")
        if self.negative_threshold > self.positive_threshold:
            raise ValueError("negative_threshold must not exceed positive_threshold")
        p = self.amplification_param
        if self.amplification == "power" and not (p == int(p) and int(p) % 2 == 1):
            # an even or fractional power would lose the sign of z (or be complex for z < 0)
            raise ValueError(f"power amplification needs an odd integer amplification_param, got {p}")
        return self


class ReshapingConfig(_Section):
    """Every reshaping rule, versioned and content-addressed by ``config_id``."""

    name: str = Field("custom", pattern=r"^[A-Za-z0-9._-]+$", description="human label, e.g. the preset name.")
    version: int = Field(2, ge=1, description="version of this config's rules; bump it when they change.")
    normalisation: NormalisationConfig = Field(default_factory=NormalisationConfig)
    weights: WeightsConfig = Field(default_factory=WeightsConfig)
    outcome: OutcomeConfig = Field(default_factory=OutcomeConfig)
    rewards: RewardsConfig = Field(default_factory=RewardsConfig)
    robustness: RobustnessConfig = Field(default_factory=RobustnessConfig)
    exec: ExecConfig = Field(default_factory=ExecConfig)
    progress: ProgressConfig = Field(default_factory=ProgressConfig)
    governance: GovernanceConfig = Field(default_factory=GovernanceConfig)
    transform: TransformConfig = Field(default_factory=TransformConfig)

    @model_validator(mode="after")
    def _robustness_counted_once(self) -> ReshapingConfig:
        if self.robustness.combine != "component":
            weighted = [w for w in (self.weights.start()["robust"], self.weights.final()["robust"]) if w]
            if weighted:
                raise ValueError(
                    f"robustness.combine {self.robustness.combine!r} puts the checks into R_test; "
                    "weights.robust (and weights.end.robust) must be 0, else they count twice"
                )
        return self

    def outcome_step_per_test(self) -> float:
        """The least rise of R_test per hidden test passed, times the number of tests
        (see ``ExecConfig``); 0 where one test can be worth nothing."""
        if self.outcome.kind == "binary" or self.robustness.combine in ("min", "vote"):
            return 0.0
        step = 1.0 if self.outcome.kind == "pass_fraction" else self.outcome.all_pass - self.outcome.partial
        return step / 3 if self.robustness.combine == "mean" else step

    @model_validator(mode="after")
    def _exec_below_one_test(self) -> ReshapingConfig:
        step, share = self.outcome_step_per_test(), self.exec.max_test_share
        for when, weights in (("start", self.weights.start()), ("end", self.weights.final())):
            if weights["exec"] > share * weights["test"] * step:
                raise ValueError(
                    f"weights.exec {weights['exec']} at the {when} of the schedule exceeds exec.max_test_share "
                    f"{share} x weights.test {weights['test']} x the outcome's per-test step {step:.4g}: "
                    "forged coverage could pay as much as a passing test"
                )
        return self

    def canonical_json(self) -> str:
        """The content as JSON with sorted keys and no spaces: equal configs give equal text."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @cached_property
    def config_id(self) -> str:
        """First 12 hex digits of the sha256 of the canonical JSON (a valid Kafka topic suffix)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:CONFIG_ID_LENGTH]


def _describe(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"]) or "<config>"
        lines.append(f"{field}: {err['msg']}")
    return "; ".join(lines)


def config_from_dict(data: Any) -> ReshapingConfig:
    """Validate a mapping (parsed YAML/JSON) into a config, or raise ``ConfigError`` naming the field."""
    if not isinstance(data, dict):
        raise ConfigError(f"a reshaping config must be a mapping, got {type(data).__name__}")
    try:
        return ReshapingConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid reshaping config: {_describe(exc)}") from exc


def load_config(path: str | Path) -> ReshapingConfig:
    """Load and validate a YAML config file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read reshaping config {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    try:
        return config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def load_preset(name: str) -> ReshapingConfig:
    """Load a shipped preset by name (a file of ``presets/``, e.g. ``raw`` or ``full``)."""
    path = PRESETS_DIR / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))
        raise ConfigError(f"unknown preset {name!r}; known: {known}")
    return load_config(path)
