"""The model section of the HTML run report: what a Fellegi-Sunter model learnt.

From the ``model`` entry of a run report (:meth:`.FellegiSunter.report` plus the pairs
nearest the decision boundary that the reduce tasks explained): λ and the training
sessions, a chart and a table of m, u and the match weight of every level, and the
waterfall of each boundary example (prior, then each comparison's weight at its level).
Charts are PNGs embedded as ``data:`` URIs, like the rest of the page.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

from .matchers.scoring.charts import plot_waterfall, plot_weights

__all__ = ["model_section"]


def _png(draw: Any, data: Any, **kw: Any) -> str:
    buf = io.BytesIO()
    draw(data, buf, **kw)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(b64: str, alt: str) -> str:
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{b64}'>"


def _num(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return html.escape(str(v))


def _levels_table(levels: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(str(r.get('comparison')))}</td>"
        f"<td>{html.escape(str(r.get('label')))}</td><td class='num'>{_num(r.get('m'))}</td>"
        f"<td class='num'>{_num(r.get('u'))}</td>"
        f"<td class='num'>{_num(r.get('match_weight'), 3)}</td>"
        f"<td>{html.escape(str(r.get('m_source', '')))}</td></tr>" for r in levels)
    return ("<table class='levels'><tr><th>comparison</th><th>level</th><th>m</th><th>u</th>"
            f"<th>match weight</th><th>m from</th></tr>{rows}</table>")


def _sessions_table(sessions: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(', '.join(map(str, s.get('passes', []))))}</td>"
        f"<td class='num'>{_num(s.get('pairs'))}</td>"
        f"<td>{html.escape(', '.join(s.get('deactivated', [])) or '–')}</td>"
        f"<td class='num'>{_num(s.get('lambda'))}</td><td class='num'>{_num(s.get('n_iter'))}</td>"
        f"<td>{'yes' if s.get('converged') else '<b>no</b>'}</td></tr>" for s in sessions)
    return ("<table><tr><th>passes</th><th>pairs</th><th>selected by the blocking</th>"
            f"<th>λ of the session</th><th>iterations</th><th>converged</th></tr>{rows}</table>")


def model_section(model: Mapping[str, Any] | None) -> str:
    """HTML of the model section ('' when the run had no Fellegi-Sunter model)."""
    if not model or not model.get("levels"):
        return ""
    levels = list(model["levels"])
    lam = model.get("lambda")
    facts = (f"<p>λ (probability that two random records match) = {_num(lam)}, from "
             f"{_num(model.get('n_candidates'))} candidate pairs and "
             f"{_num(model.get('n_u_pairs'))} random pairs for u.</p>")
    warn = "".join(f"<li>{html.escape(str(w))}</li>" for w in model.get("warnings", []))
    parts = ["<section id='model'><h2>Scoring model: Fellegi-Sunter</h2>", facts]
    if warn:
        parts.append(f"<ul class='warnings'>{warn}</ul>")
    parts += [_img(_png(plot_weights, levels), "match weight of each level"),
              _levels_table(levels)]
    if model.get("sessions"):
        parts += ["<h3>Training sessions</h3>", _sessions_table(model["sessions"])]
    examples = list(model.get("examples", []))
    if examples:
        parts.append("<h3>Pairs nearest the decision boundary</h3><div class='row'>")
        for e in examples[:4]:
            title = (f"{e.get('left_id')} ~ {e.get('right_id')}: "
                     f"p = {float(e.get('match_probability', 0.0)):.3f}")
            parts.append("<div class='waterfall'>" + _img(
                _png(plot_waterfall, e.get("steps", []), title=title),
                f"waterfall of {e.get('left_id')} ~ {e.get('right_id')}") + "</div>")
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)
