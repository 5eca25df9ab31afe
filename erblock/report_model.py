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


def img_tag(b64: str, alt: str) -> str:
    """An inline PNG (base64) as an HTML image tag (shared with the run report page)."""
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{b64}'>"


def _num(v: Any, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return html.escape(str(v))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    """An HTML table of already-escaped cells; columns in ``numeric`` right-aligned."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f"<td class='num'>{c}</td>" if i in numeric else f"<td>{c}</td>"
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _levels_table(levels: Sequence[Mapping[str, Any]]) -> str:
    return _table(("comparison", "level", "m", "u", "match weight", "m from"), [
        (html.escape(str(r.get("comparison"))), html.escape(str(r.get("label"))),
         _num(r.get("m")), _num(r.get("u")), _num(r.get("match_weight"), 3),
         html.escape(str(r.get("m_source", "")))) for r in levels], numeric={2, 3, 4})


def _sessions_table(sessions: Sequence[Mapping[str, Any]]) -> str:
    return _table(("passes", "pairs", "selected by the blocking", "m from other sessions",
                   "λ of the session", "iterations", "converged", "used"), [
        (html.escape(", ".join(map(str, s.get("passes", [])))), _num(s.get("pairs")),
         html.escape(", ".join(s.get("deactivated", [])) or "–"),
         html.escape(", ".join(s.get("m_fixed", [])) or "–"), _num(_session_lambda(s)),
         _num(s.get("n_iter")), "yes" if s.get("converged") else "<b>no</b>",
         _used(s)) for s in sessions], numeric={1, 4, 5})


def _session_lambda(s: Mapping[str, Any]) -> Any:
    """The session's λ; with three classes, the prior its pairs are scored with (matches
    against non-matches: π_M / (π_M + π_U), as
    :func:`erblock.matchers.scoring.weights.pass_sessions` gives it)."""
    rel = s.get("related")
    if not rel or not rel.get("pi"):
        return s.get("lambda")
    pi = rel["pi"]
    return float(pi[0]) / max(float(pi[0]) + float(pi[2]), 1e-300)


def _used(s: Mapping[str, Any]) -> str:
    """Whether a session's fit is used; why not when it is inverted (:mod:`.training`)."""
    if s.get("trusted", s.get("trained")):
        # related records (another pass's, or the random pairs'): scored with them too
        return "yes, its pairs scored with three classes" if s.get("related") else "yes"
    if s.get("set_aside") == "no evidence":
        return "<b>no</b> (its matches agreed far less than those of a pass that found them)"
    if s.get("set_aside") != "inverted":
        return "<b>no</b>"
    inv = html.escape(", ".join(s.get("inverted") or []))
    how = "its pairs scored with three classes" if s.get("related") else "<b>no</b>"
    return f"{how} (its matches agreed less often than random pairs on {inv})"


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
    for g in model.get("groups", []):  # comparisons scored together (a move)
        parts.append(f"<p class='group'>Scored as one group: "
                     f"{html.escape(', '.join(g.get('comparisons', [])))}; μ = "
                     f"{_num(g.get('mu'))} of the matches differ on all of them as random "
                     "pairs do (a move), so together they cost at most −log₂ μ bits.</p>")
    parts += [img_tag(_png(plot_weights, levels), "match weight of each level"),
              _levels_table(levels)]
    if model.get("sessions"):
        parts += ["<h3>Training sessions</h3>", _sessions_table(model["sessions"])]
    examples = list(model.get("examples", []))
    if examples:
        parts.append("<h3>Pairs nearest the decision boundary</h3><div class='row'>")
        for e in examples[:4]:
            title = (f"{e.get('left_id')} ~ {e.get('right_id')}: "
                     f"p = {float(e.get('match_probability', 0.0)):.3f}")
            parts.append("<div class='waterfall'>" + img_tag(
                _png(plot_waterfall, e.get("steps", []), title=title),
                f"waterfall of {e.get('left_id')} ~ {e.get('right_id')}") + "</div>")
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)
