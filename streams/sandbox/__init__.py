"""Running hostile candidate code: bubblewrap-isolated, resource-limited warm workers.

with SandboxPool(SandboxConfig(workers=2)) as pool:
    result = pool.evaluate(EvalRequest(code=src, tests=["assert f(1) == 2"]))
"""

from streams.sandbox.config import SandboxConfig
from streams.sandbox.errors import InvalidRequest, SandboxUnavailable
from streams.sandbox.models import ErrorKind, EvalRequest, EvalResult, TestResult
from streams.sandbox.pool import SandboxPool

__all__ = [
    "SandboxConfig",
    "SandboxPool",
    "EvalRequest",
    "EvalResult",
    "TestResult",
    "ErrorKind",
    "SandboxUnavailable",
    "InvalidRequest",
]
