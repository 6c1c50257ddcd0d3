"""Typed knobs of the sandbox."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SandboxConfig(BaseModel):
    """How hostile candidate code is isolated and limited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workers: int = Field(
        2, ge=1, description="warm zygote processes, i.e. candidates run in parallel"
    )
    isolation: Literal["bwrap", "rlimits-only"] = Field(
        "bwrap",
        description="'bwrap': namespaces + read-only system + rlimits (refuses to run without "
        "bubblewrap); 'rlimits-only': resource limits and process groups only, flagged weak",
    )
    timeout_s: float = Field(
        5.0, gt=0, description="wall-clock budget of one candidate with all its tests"
    )
    cpu_seconds: int = Field(5, ge=1, description="RLIMIT_CPU of the candidate process")
    memory_mb: int = Field(
        512, ge=64, description="RLIMIT_AS (address space) of the candidate process"
    )
    max_processes: int = Field(
        16, ge=1, description="processes and threads a candidate may have at once"
    )
    max_file_mb: int = Field(
        1, ge=0, description="RLIMIT_FSIZE: largest file a candidate may write"
    )
    max_open_files: int = Field(
        64, ge=8, description="RLIMIT_NOFILE of the candidate process"
    )
    max_output_bytes: int = Field(
        64_000,
        ge=1_000,
        description="captured stdout+stderr kept; also caps one value's repr",
    )
    python: str = Field(
        "",
        description="interpreter run in the sandbox; empty: the host's own (sys.executable)",
    )
    start_timeout_s: float = Field(
        30.0, gt=0, description="how long a zygote may take to start and self-check"
    )
