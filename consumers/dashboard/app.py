"""The dashboard's web app (Flask): the pages and the JSON they load. I/O only: the queries,
panels, figures, samples and verdicts are built by the pure modules beside it.

Why Flask: the project already installs it, the page is a handful of JSON routes and two
templates, and its test client drives every route without a server; a framework for
reactive Python apps (Dash, Panel) would bring a second web stack for the same charts.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from flask import Flask, Response, abort, jsonify, render_template, request
from pydantic import ValidationError

from consumers.dashboard.config import DashboardConfig
from consumers.dashboard.figures import figure_json
from consumers.dashboard.panels import PANELS, PANELS_BY_NAME
from consumers.dashboard.queries import (
    LATEST_VERSION,
    SAMPLE_KINDS,
    chart_query_parameters,
    sample_parameters,
)
from consumers.dashboard.reviews import ReviewPublisher
from consumers.dashboard.samples import sample_view
from consumers.dashboard.source import QuerySource
from consumers.dashboard.verdicts import Verdict, review_record
from consumers.drift.charts import CHARTS
from consumers.drift.queries import DriftError, parse_since, query_names
from consumers.store import StoreError

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    # the plotly.js bundled with the Python package: the page works without a network
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _since(text: str | None) -> datetime | None:
    return parse_since(text, datetime.now(timezone.utc)) if text else None


def _int_arg(name: str, default: int) -> int:
    value = request.args.get(name, "")
    try:
        return int(value) if value.strip() else default
    except ValueError:
        abort(Response(f"{name} must be a whole number, got {value!r}", 400))


def create_app(cfg: DashboardConfig, source: QuerySource, publisher: ReviewPublisher | None = None) -> Flask:
    app = Flask(__name__)
    app.json.sort_keys = False  # keep columns in the query's order

    def default_config() -> str:
        configs = source.run("panel:configs", {})
        return configs[0]["config_id"] if configs else ""

    def chart_rows(query: str, config: str | None, config_b: str | None = None) -> list[dict[str, Any]]:
        params = chart_query_parameters(query, _since(request.args.get("since")), config or None, config_b,
                                        _int_arg("window_s", cfg.window_s))
        return source.run(query, params)

    @app.errorhandler(DriftError)
    def bad_request(exc: DriftError):
        return jsonify(error=str(exc)), 400

    @app.errorhandler(StoreError)
    def store_failed(exc: StoreError):
        log.warning("query failed: %s", exc)
        return jsonify(error=str(exc)), 502

    @app.get("/")
    def index():
        return render_template("index.html", panels=PANELS, drift_names=query_names(), refresh_s=cfg.refresh_s,
                               store=cfg.store)

    @app.get("/samples")
    def samples_page():
        return render_template("samples.html", kinds=SAMPLE_KINDS[:-1], reviewing=publisher is not None,
                               store=cfg.store)

    @app.get("/plotly.js")
    def plotly_js():
        return Response(_plotly_js(), mimetype="application/javascript",
                        headers={"Cache-Control": "max-age=86400"})

    @app.get("/api/configs")
    def configs():
        return jsonify(configs=source.run("panel:configs", {}))

    @app.get("/api/panel/<name>")
    def panel(name: str):
        found = PANELS_BY_NAME.get(name)
        if found is None:
            abort(404)
        config = request.args.get("config") or (default_config() if found.needs_config else None)
        rows = chart_rows(found.query, config)
        return jsonify(name=name, config=config, rows=rows, figure=figure_json(found.chart, rows))

    @app.get("/api/drift/<name>")
    def drift(name: str):
        if name not in query_names():
            abort(404)
        config = request.args.get("config") or default_config()
        rows = chart_rows(f"drift:{name}", config, request.args.get("config_b") or None)
        return jsonify(name=name, rows=rows, figure=figure_json(CHARTS[name], rows) if name in CHARTS else None)

    @app.get("/api/samples")
    def samples():
        kind = request.args.get("kind", "top")
        if kind not in SAMPLE_KINDS[:-1]:
            return jsonify(error=f"kind must be one of {SAMPLE_KINDS[:-1]}"), 400
        config = request.args.get("config") or default_config()
        params = sample_parameters(
            kind, config, _since(request.args.get("since")), request.args.get("pattern", ""),
            _int_arg("version_min", 0), _int_arg("version_max", LATEST_VERSION),
            _int_arg("limit", cfg.sample_limit), _int_arg("seed", 0))
        return jsonify(kind=kind, config=config, samples=[sample_view(r) for r in source.run(f"samples:{kind}", params)])

    @app.get("/api/facets")
    def facets():
        config = request.args.get("config") or default_config()
        return jsonify(config=config, configs=[c["config_id"] for c in source.run("panel:configs", {})],
                       facets=source.run("panel:facets", {"config_id": config}))

    @app.post("/api/reviews")
    def review():
        if publisher is None:
            return jsonify(error="reviewing is off: the dashboard was started without a Kafka broker"), 409
        try:
            verdict = Verdict.model_validate(request.get_json(force=True, silent=True) or {})
        except ValidationError as exc:
            return jsonify(error=exc.errors(include_url=False, include_context=False)), 400
        found = source.run("samples:one", sample_parameters("one", verdict.config_id, rollout_id=verdict.rollout_id))
        if not found:
            return jsonify(error=f"no sample {verdict.rollout_id} under config {verdict.config_id}"), 404
        record = publisher.publish(review_record(verdict, sample_view(found[0])))
        return jsonify(review=record), 201

    return app
