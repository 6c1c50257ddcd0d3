import pytest

from consumers.dashboard.source import StoreSource
from consumers.store import ChdbStore
from tests.dashboard import history


@pytest.fixture(scope="module")
def run_source(tmp_path_factory):
    """A StoreSource over the small stored run of tests/dashboard/history.py (one per module:
    chDB runs one data path per process)."""
    store = ChdbStore(tmp_path_factory.mktemp("dashboard") / "chdb")
    history.load(store)
    source = StoreSource(store)
    yield source
    source.close()
