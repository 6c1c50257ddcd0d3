"""The dashboard's named queries answered by the process that holds a chDB folder.

The sink opens a second client on its own folder (chDB shares one engine per process)
and serves ``POST /query {"query": NAME, "params": {...}}`` on loopback, in a thread
beside its consume loop. Only names of ``consumers.dashboard.queries`` run: the service
never runs SQL text it is sent. Its address goes to ``<folder>.queries`` for the
dashboard to find, and is removed when the service stops.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from flask import Flask, jsonify, request
from werkzeug.serving import BaseWSGIServer, make_server

from consumers.dashboard.queries import UnknownDashboardQuery
from consumers.dashboard.source import StoreSource, query_url_file
from consumers.drift.queries import DriftError
from consumers.store import ChdbStore, StoreError

log = logging.getLogger(__name__)


def query_app(source: StoreSource) -> Flask:
    app = Flask(__name__)

    @app.post("/query")
    def query():
        body = request.get_json(force=True, silent=True) or {}
        name, params = body.get("query"), body.get("params") or {}
        if not isinstance(name, str) or not isinstance(params, dict):
            return jsonify(error="expected {query: name, params: {...}}"), 400
        try:
            return jsonify(rows=source.run(name, params))
        except UnknownDashboardQuery as exc:
            return jsonify(error=str(exc)), 404
        except (DriftError, StoreError) as exc:
            return jsonify(error=str(exc)), 400

    return app


class QueryService:
    """The query service of a chDB folder this process holds, on a free loopback port."""

    def __init__(self, folder: str, host: str = "127.0.0.1", port: int = 0):
        self.folder = folder
        self.source = StoreSource(ChdbStore(folder))
        self._server: BaseWSGIServer = make_server(host, port, query_app(self.source), threaded=False)
        self.url = f"http://{host}:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="query-service", daemon=True)
        self._address: Path = query_url_file(folder)

    def start(self) -> "QueryService":
        self._thread.start()
        self._address.write_text(self.url + "\n")
        log.info("serving dashboard queries of %s at %s", self.folder, self.url)
        return self

    def stop(self) -> None:
        self._address.unlink(missing_ok=True)
        self._server.shutdown()
        self._thread.join(timeout=10)
        self.source.close()
