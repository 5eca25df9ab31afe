"""One self-contained HTML page for a run: plan, measured per-task times, phases, quality.

``erblock report run.json --html report.html`` (and :func:`write_html` from Python) turns a
:class:`~erblock.report.RunReport` (or the JSON written by ``--report``) into a single file
that opens anywhere: the charts are PNGs drawn with matplotlib and embedded as base64
``data:`` URIs, the styles are inline, and nothing is fetched from the network. Sections:

* **run**: mode, strategy, reduce tasks, pairs (links of a declared cardinality), keys, compare;
* **plan**: what the planner predicted (total comparisons, match tasks, imbalance, replication)
  and the comparisons per reduce task, measured, next to the predicted loads if reported;
* **tasks**: seconds per reduce task (coloured by worker), comparisons against seconds
  (a straight line means time follows comparisons), the slowest tasks;
* **phases**: wall-clock seconds of profile, plan, route+compare and write;
* **model** (``scoring="em"``): m, u, weight per level, boundary waterfalls;
* **quality**: precision, recall, F1, pair completeness and reduction ratio, when the
  report holds them or ground truth is given (:func:`quality_from_truth`, from
  :mod:`erblock.report_quality`).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .report_model import img_tag as _img
from .report_model import model_section
from .report_quality import as_dict as _as_dict
from .report_quality import quality_from_truth

__all__ = ["BAR_COLOR", "CSS", "PREDICTED_COLOR", "WORKER_COLORS", "load_report",
           "quality_from_truth", "render_html", "write_html"]

#: bar colour of the charts (also what the screenshot test looks for)
BAR_COLOR = "#3b6ea8"
PREDICTED_COLOR = "#e07b39"
WORKER_COLORS = ("#3b6ea8", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2",
                 "#ff9da7", "#9c755f", "#bab0ac", "#4e79a7")


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the JSON written by ``--report`` / ``RunReport.to_json``, checking its shape."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"report: no such file {str(p)!r}")
    try:
        data = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"report: {str(p)!r} is not JSON ({exc})") from exc
    missing = [k for k in ("mode", "strategy", "n_tasks", "tasks", "phases")
               if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(
            f"report: {str(p)!r} is not an erblock run report (missing {missing}); write one "
            "with `erblock link/dedupe … --report run.json`")
    return data


# -- charts -----------------------------------------------------------------------------


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - matplotlib is in the plot/test extras
        raise ImportError(
            "the HTML report draws its charts with matplotlib: pip install 'erblock[plot]'"
        ) from exc
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _task_array(tasks: Sequence[Mapping[str, Any]], n: int, field: str) -> np.ndarray:
    out = np.zeros(n, dtype=np.float64)
    for t in tasks:
        i = int(t["task"])
        if 0 <= i < n:
            out[i] = float(t.get(field, 0.0) or 0.0)
    return out


def _chart_loads(d: Mapping[str, Any]) -> str:
    n = int(d["n_tasks"])
    measured = _task_array(d.get("tasks", []), n, "comparisons")
    predicted = d.get("plan", {}).get("loads")
    fig = _figure(9, 3.2)
    ax = fig.add_subplot()
    x = np.arange(n)
    ax.bar(x, measured, color=BAR_COLOR, width=0.85, label="comparisons performed")
    if predicted is not None and len(predicted) == n:
        ax.plot(x, predicted, linestyle="none", marker="_", markersize=12, mew=2,
                color=PREDICTED_COLOR, label="predicted by the plan")
    if n and measured.mean() > 0:
        ax.axhline(measured.mean(), color="#444", lw=1, ls="--", label="mean")
    ax.set_xlabel("reduce task")
    ax.set_ylabel("comparisons")
    ax.set_title(f"comparisons per reduce task (imbalance max/mean "
                 f"{_imbalance(measured):.3f})")
    ax.legend(loc="upper right", fontsize=8)
    ax.margins(x=0.01)
    return _png(fig)


def _chart_seconds(d: Mapping[str, Any]) -> str:
    n = int(d["n_tasks"])
    tasks = d.get("tasks", [])
    seconds = _task_array(tasks, n, "seconds")
    workers = [""] * n
    for t in tasks:
        if 0 <= int(t["task"]) < n:
            workers[int(t["task"])] = str(t.get("worker", ""))
    names = sorted(set(workers))
    colors = [WORKER_COLORS[names.index(w) % len(WORKER_COLORS)] for w in workers]
    fig = _figure(9, 3.2)
    ax = fig.add_subplot()
    ax.bar(np.arange(n), seconds, color=colors, width=0.85)
    if n and seconds.mean() > 0:
        ax.axhline(seconds.mean(), color="#444", lw=1, ls="--")
    ax.set_xlabel("reduce task")
    ax.set_ylabel("seconds")
    ax.set_title(f"measured seconds per reduce task (imbalance max/mean "
                 f"{_imbalance(seconds):.3f}; colour = worker)")
    if 1 < len(names) <= len(WORKER_COLORS):
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=WORKER_COLORS[i], label=_short(w))
                           for i, w in enumerate(names)], fontsize=7, loc="upper right")
    ax.margins(x=0.01)
    return _png(fig)


def _chart_scatter(d: Mapping[str, Any]) -> str:
    n = int(d["n_tasks"])
    comps = _task_array(d.get("tasks", []), n, "comparisons")
    seconds = _task_array(d.get("tasks", []), n, "seconds")
    fig = _figure(4.6, 3.2)
    ax = fig.add_subplot()
    ax.scatter(comps, seconds, s=14, color=BAR_COLOR, alpha=0.8)
    if n >= 4 and comps.max() > comps.min():
        b, c = np.polyfit(comps, seconds, 1)
        if b > 0:  # a fit only means something when time grows with comparisons
            xs = np.array([comps.min(), comps.max()])
            ax.plot(xs, b * xs + c, color=PREDICTED_COLOR, lw=1.5,
                    label=f"fit: {c * 1e3:.1f} ms + {b * 1e9:.1f} ns/comparison")
            ax.legend(fontsize=8, loc="upper left")
    ax.set_xlabel("comparisons")
    ax.set_ylabel("seconds")
    ax.set_title("time against comparisons, per task")
    return _png(fig)


def _chart_phases(d: Mapping[str, Any]) -> str:
    phases = {k: float(v) for k, v in d.get("phases", {}).items()}
    fig = _figure(4.6, 3.2)
    ax = fig.add_subplot()
    names = list(phases)[::-1]
    ax.barh(names, [phases[k] for k in names], color=BAR_COLOR)
    for i, k in enumerate(names):
        ax.text(phases[k], i, f" {phases[k]:.2f}s", va="center", fontsize=8)
    ax.set_xlabel("seconds")
    ax.set_title("wall-clock seconds per phase")
    ax.margins(x=0.25)
    return _png(fig)


def _imbalance(values: np.ndarray) -> float:
    return float(values.max() / values.mean()) if len(values) and values.mean() > 0 else 1.0


def _short(worker: str) -> str:
    return worker.rsplit("/", 1)[-1] if worker.startswith("inproc") else worker


# -- page -------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
header{background:#1f3b5a;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.85}
main{padding:8px 32px 32px;max-width:1100px}
section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 18px;margin:16px 0}
h2{font-size:17px;margin:4px 0 10px;color:#1f3b5a}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
td,th{padding:3px 12px 3px 0;text-align:left;vertical-align:top}
th{color:#555;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:130px;background:#f5f8fb}
.card b{display:block;font-size:20px;color:#1f3b5a}.card span{font-size:12px;color:#555}
img{max-width:100%;height:auto}.row{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
code{background:#eef;padding:1px 4px;border-radius:3px;font-size:12px}
.note{color:#666;font-size:12px}
ul.warnings{color:#8a4b00;font-size:13px}
"""


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return html.escape(str(v))
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:,.4f}" if abs(v) < 100 else f"{v:,.1f}"
    return html.escape(str(v))


def _table(rows: Sequence[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td class='num'>{_fmt(v)}</td></tr>"
                   for k, v in rows)
    return f"<table>{body}</table>"


def _prediction_table(prediction: Any) -> str:
    """What the planner predicted next to what was measured (scalars only), if reported."""
    if not isinstance(prediction, Mapping) or not prediction:
        return ""
    rows = [(k.replace("_", " "), v) for k, v in prediction.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return f"<div><b>predicted and measured</b>{_table(rows)}</div>" if rows else ""


def render_html(report: Any, *, quality: Mapping[str, Any] | None = None,
                title: str | None = None) -> str:
    """The HTML page (a string) for ``report`` (a RunReport or its dict/JSON form).
    ``quality`` (e.g. from :func:`quality_from_truth` or ``erblock.evaluate``) adds the
    quality section; without it the report's own ``quality`` entry is used if present."""
    d = _as_dict(report)
    quality = quality if quality is not None else d.get("quality")
    n = int(d["n_tasks"])
    tasks = d.get("tasks", [])
    comps = _task_array(tasks, n, "comparisons")
    seconds = _task_array(tasks, n, "seconds")
    plan = d.get("plan", {})
    settings = d.get("settings", {})
    records = d.get("records", {})
    title = title or f"erblock {d.get('mode', '')} run: {d.get('strategy', '')}"

    links = settings.get("assignment") or {}  # a link's declared cardinality
    cards = [
        ("pairs kept", d.get("pairs", 0)),
        *([(f"links ({links['cardinality']})", links["links"])] if links else []),
        ("comparisons", int(comps.sum()) if tasks else d.get("comparisons", 0)),
        ("reduce tasks", n),
        ("imbalance (comparisons)", _imbalance(comps)),
        ("imbalance (seconds)", _imbalance(seconds)),
        ("seconds", float(sum(float(v) for v in d.get("phases", {}).values()))),
    ]
    card_html = "".join(f"<div class='card'><b>{_fmt(v)}</b><span>{html.escape(k)}</span></div>"
                        for k, v in cards)

    run_rows: list[tuple[str, Any]] = [("mode", d.get("mode")), ("strategy", d.get("strategy"))]
    if settings.get("strategy") and settings.get("strategy") != d.get("strategy"):
        run_rows.append(("strategy asked", settings["strategy"]))
    for k in ("records_r", "records_s", "not_blocked"):
        if k in records and (k != "records_s" or d.get("mode") == "link"):
            run_rows.append((k.replace("_", " "), records[k]))
    run_rows += [("input partitions", settings.get("input_partitions")),
                 ("threshold", settings.get("threshold")), ("output", d.get("output"))]
    keys = "".join(f"<li><code>{html.escape(str(k))}</code></li>"
                   for k in settings.get("keys", []))
    comparisons = "".join(
        f"<li><code>{html.escape(str(c.get('name', c)) if isinstance(c, Mapping) else html.escape(str(c)))}"
        f"</code>{' weight ' + _fmt(c.get('weight')) if isinstance(c, Mapping) else ''}</li>"
        for c in settings.get("comparisons", []))

    plan_rows = [(k.replace("_", " "), plan[k]) for k in
                 ("strategy", "total_comparisons", "match_tasks", "max_load", "mean_load",
                  "imbalance", "records_in", "records_routed", "replication", "split_blocks")
                 if k in plan]

    slow = sorted(tasks, key=lambda t: -float(t.get("seconds", 0.0)))[:8]
    slow_rows = "".join(
        f"<tr><td class='num'>{int(t['task'])}</td><td class='num'>{_fmt(int(t.get('comparisons', 0)))}</td>"
        f"<td class='num'>{_fmt(int(t.get('records', 0)))}</td>"
        f"<td class='num'>{float(t.get('seconds', 0.0)):.3f}</td>"
        f"<td>{html.escape(_short(str(t.get('worker', ''))))}</td></tr>"
        for t in slow)

    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>{html.escape(title)}</h1><p>erblock run report</p></header><main>",
        f"<section id='summary'><div class='cards'>{card_html}</div></section>",
        "<section id='run'><h2>Run</h2><div class='row'><div>", _table(run_rows), "</div>",
        f"<div><b>blocking keys</b><ul>{keys}</ul><b>comparisons</b><ul>{comparisons}</ul>"
        "</div></div>",
        _warnings("unreadable", "values that could not be compared", settings.get("unreadable")),
        _warnings("unmet", "blocking passes that find almost nothing",
                  settings.get("unmet_passes")), "</section>",
        "<section id='plan'><h2>Plan</h2><div class='row'><div>", _table(plan_rows),
        "</div>", _prediction_table(d.get("prediction")), "</div>",
        _img(_chart_loads(d), "comparisons per reduce task"), "</section>",
        "<section id='tasks'><h2>Reduce tasks: measured</h2>",
        _img(_chart_seconds(d), "seconds per reduce task"),
        "<div class='row'>", _img(_chart_scatter(d), "seconds against comparisons"),
        "<div><b>slowest tasks</b><table><tr><th>task</th><th>comparisons</th><th>records</th>"
        f"<th>seconds</th><th>worker</th></tr>{slow_rows}</table></div></div></section>",
        "<section id='phases'><h2>Phases</h2><div class='row'>",
        _img(_chart_phases(d), "seconds per phase"),
        _table([(k, float(v)) for k, v in d.get("phases", {}).items()]), "</div></section>",
        model_section(d.get("model")),
    ]
    if quality:
        q_rows = [(k.replace("_", " "), v) for k, v in quality.items()
                  if isinstance(v, (int, float)) or v is None]
        parts += ["<section id='quality'><h2>Quality against the ground truth</h2>",
                  _table(q_rows), "</section>"]
    else:
        parts.append("<section id='quality'><h2>Quality</h2><p class='note'>No ground truth "
                     "given (<code>erblock report run.json --truth truth.csv</code>).</p>"
                     "</section>")
    parts.append("</main></body></html>")
    return "".join(parts)


def _warnings(id_: str, title: str, said: Any) -> str:
    """A run's warnings kept in its settings (a list, or a dict by comparison) as a
    titled list; empty when there are none: values a comparison could not read
    (``unreadable``), blocking passes that find almost nothing (``unmet_passes``)."""
    if not said:
        return ""
    texts = said.values() if isinstance(said, Mapping) else said
    items = "".join(f"<li>{html.escape(str(t))}</li>" for t in texts)
    return f"<div id='{id_}'><b>{title}</b><ul class='warnings'>{items}</ul></div>"


def write_html(report: Any, path: str | os.PathLike[str], *,
               quality: Mapping[str, Any] | None = None, title: str | None = None) -> Path:
    """Write :func:`render_html` of ``report`` to ``path`` (parent directories created)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(report, quality=quality, title=title), encoding="utf-8")
    return p
