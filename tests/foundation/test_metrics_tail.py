"""The run's metrics tail may be closed once the loop ends and again on the way out."""

from infra.compose.orchestrator import MetricsTail
from infra.platform.topics import Topics


def test_the_tail_closes_once_and_a_second_close_is_harmless():
    tail = MetricsTail("127.0.0.1:1", "cfg", Topics())  # no broker is needed to make or close it
    tail.close()
    assert tail.consumer is None
    tail.close()
    assert tail.consumer is None
