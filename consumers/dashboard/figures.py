"""Plotly figures of query rows, described by the drift report's ``ChartSpec``.

Why plotly: its Python package builds the figure (traces, subplots, layout) on the server
and ships plotly.js inside the wheel, so the page needs no network and no charting code of
its own; the browser only hands the figure to ``Plotly.react``, which also redraws in place
when the page refreshes. Bokeh would do the same, but its server-side model needs
``bokeh serve`` or a matching BokehJS per version, while a plotly figure is plain JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from consumers.drift.charts import ChartSpec

PANEL_COLUMNS = 3


def _number(value: Any) -> float | None:
    # None stays None: plotly leaves a gap, which is what an unmeasured value is
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _lines(fig: go.Figure, spec: ChartSpec, rows: Sequence[dict[str, Any]]) -> None:
    if spec.series is None:
        xs = [r[spec.x] for r in rows]
        for column in spec.y:
            fig.add_trace(go.Scatter(x=xs, y=[_number(r[column]) for r in rows], mode="lines+markers", name=column))
    else:
        for name in sorted({str(r[spec.series]) for r in rows}):
            mine = [r for r in rows if str(r[spec.series]) == name]
            fig.add_trace(go.Scatter(x=[r[spec.x] for r in mine], y=[_number(r[spec.y[0]]) for r in mine],
                                     mode="lines+markers", name=name))


def _bars(fig: go.Figure, spec: ChartSpec, rows: Sequence[dict[str, Any]]) -> None:
    for row in rows:
        fig.add_trace(go.Bar(x=list(spec.y), y=[_number(row[c]) for c in spec.y], name=str(row[spec.x])))
    fig.update_layout(barmode="group")


def figure(spec: ChartSpec, rows: Sequence[dict[str, Any]]) -> go.Figure:
    """The figure of ``rows`` (dicts) under ``spec``; with no rows, an empty chart saying so."""
    if spec.kind == "panels":
        fig = make_subplots(rows=math.ceil(len(spec.y) / PANEL_COLUMNS), cols=PANEL_COLUMNS, subplot_titles=spec.y)
        xs = [r[spec.x] for r in rows]
        for i, column in enumerate(spec.y):
            fig.add_trace(go.Scatter(x=xs, y=[_number(r[column]) for r in rows], mode="lines+markers", name=column),
                          row=i // PANEL_COLUMNS + 1, col=i % PANEL_COLUMNS + 1)
        fig.update_layout(showlegend=False)
    else:
        fig = go.Figure()
        (_bars if spec.kind == "bars" else _lines)(fig, spec, rows)
        fig.update_xaxes(title_text=spec.xlabel)
        fig.update_yaxes(title_text=spec.ylabel)
    fig.update_layout(title_text=spec.title, margin={"l": 50, "r": 20, "t": 50, "b": 40}, height=340,
                      template="plotly_white")
    if not rows or all(_number(r.get(c)) is None for r in rows for c in spec.y):
        fig.add_annotation(text="no values yet", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    return fig


def figure_json(spec: ChartSpec, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figure as the plain ``{"data": [...], "layout": {...}}`` that ``Plotly.react`` takes."""
    return json.loads(figure(spec, rows).to_json())
