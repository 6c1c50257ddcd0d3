import psutil
import pytest

from streams.sandbox import ErrorKind, EvalRequest, SandboxConfig, SandboxPool

# Small budgets keep hostile cases (loops, bombs) quick.
HOSTILE_CONFIG = SandboxConfig(
    workers=2, timeout_s=1.5, cpu_seconds=2, memory_mb=256, max_processes=8
)

NORMAL = EvalRequest(
    code="def add(a, b):\n    return a + b\n",
    tests=[
        "assert add(1, 2) == 3",
        "assert add(-1, 1) == 0",
        "assert add('a', 'b') == 'ab'",
    ],
    entry_point="add",
)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(HOSTILE_CONFIG) as started:
        yield started


@pytest.fixture
def process_count():
    """Counts processes below this test process (per worker: bwrap's monitor, its init, a zygote)."""
    return lambda: len(psutil.Process().children(recursive=True))


@pytest.fixture
def healthy_after(pool, process_count):
    """Run the case, then check no stray process remains and a normal candidate passes."""
    before = process_count()
    yield
    after = pool.evaluate(NORMAL)
    assert (after.error_kind, after.tests_passed) == (ErrorKind.NONE, 3)
    assert process_count() == before
