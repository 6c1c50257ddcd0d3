"""A chDB folder held by a running sink: the dashboard reads it through the sink's query
service, since no second process can open the folder (this module opens no store of its
own before the sink starts, so the folder is free for it)."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from consumers.dashboard.app import create_app
from consumers.dashboard.config import DashboardConfig
from consumers.dashboard.source import RemoteSource, open_source, query_url_file
from consumers.store import ChdbStore
from tests.dashboard import history

pytestmark = pytest.mark.kafka


@pytest.fixture
def held_store(tmp_path, kafka_bootstrap):
    folder = tmp_path / "chdb"
    store = ChdbStore(folder)
    history.load(store)
    store.close()
    tag = uuid.uuid4().hex[:8]
    sink = subprocess.Popen(
        [sys.executable, "-m", "infra.compose.cli", "sink", "--store", str(folder), "--group-id", f"g-{tag}",
         "--topic-prefix", f"test-held-{tag}.", "--serve-queries", "--idle-exit", "120"],
        env={**os.environ, "PYTHONPATH": os.getcwd()}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    address = query_url_file(str(folder))
    deadline = time.monotonic() + 120
    while not address.exists() and sink.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert address.exists(), sink.stdout.read() if sink.poll() is not None else "no query service address"
    yield str(folder), sink
    if sink.poll() is None:
        sink.send_signal(signal.SIGTERM)
        sink.wait(timeout=60)


def test_the_dashboard_reads_a_store_the_sink_holds_through_its_query_service(held_store):
    folder, sink = held_store
    source = open_source(folder)
    assert isinstance(source, RemoteSource) and not source.holds_store
    client = create_app(DashboardConfig(store=folder), source).test_client()
    assert client.get("/api/panel/pass_rate").get_json()["rows"]
    samples = client.get("/api/samples?kind=hacked&limit=3").get_json()["samples"]
    assert len(samples) == 3 and all(s["hack_flags"] for s in samples)

    # the service runs named queries only, never SQL it is sent
    request = urllib.request.Request(f"{source.url}/query", json.dumps({"query": "SELECT 1", "params": {}}).encode(),
                                     {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 404

    sink.send_signal(signal.SIGTERM)
    sink.wait(timeout=60)
    assert not query_url_file(folder).exists()  # a stopped service leaves no stale address


def test_a_store_written_before_the_reviews_table_gains_it_when_the_dashboard_opens_it(tmp_path):
    from consumers.store import ChdbStore, QueryError

    folder = tmp_path / "old"
    store = ChdbStore(folder)
    store.init_schema()
    store.command("DROP TABLE reviews")
    try:
        with pytest.raises(QueryError):
            store.query("SELECT count() FROM reviews")
    finally:
        store.close()
    source = open_source(str(folder))
    try:
        assert source.store.query("SELECT count() FROM reviews").rows == [(0,)]
    finally:
        source.close()
