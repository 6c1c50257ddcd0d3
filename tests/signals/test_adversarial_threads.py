"""Adversarial draws on the worker's AST thread while another thread uses `random`."""

import random
import threading
import warnings

import hypothesis.strategies as st
from hypothesis.errors import HypothesisDeprecationWarning

from streams.signals.adversarial import _draw, ignore_other_threads_random

STRATEGY = st.tuples(st.lists(st.integers(-10_000, 10_000), max_size=8), st.integers(), st.text(max_size=5))


def test_draws_repeat_and_stay_quiet_while_another_thread_uses_random():
    stop = threading.Event()

    def churn() -> None:  # what the event loop's Kafka client does on every fetch
        items = list(range(16))
        while not stop.is_set():
            random.shuffle(items)

    alone = _draw(STRATEGY, 30, seed=7)
    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ignore_other_threads_random()  # what importing the module did, over "always"
            busy = [_draw(STRATEGY, 30, seed=7) for _ in range(5)]
    finally:
        stop.set()
        thread.join()
    assert all(draws == alone for draws in busy)  # Hypothesis' own seeded generator: the same draws
    assert not [w for w in caught if issubclass(w.category, HypothesisDeprecationWarning)]
