import pytest

from consumers.store import ChdbStore
from tests.drift.events import load_history


@pytest.fixture(scope="module")
def history_path(tmp_path_factory):
    return tmp_path_factory.mktemp("drift") / "chdb"


@pytest.fixture(scope="module")
def history(history_path):
    """A chDB store holding the synthetic history of tests/drift/events.py (one per module:
    chDB runs one data path per process, and loading it once keeps the tests fast)."""
    store = ChdbStore(history_path)
    store.init_schema()
    load_history(store)
    yield store
    store.close()
