"""The data sets of the quality benchmark, as cases: records, truth, column kinds, blocking.

A :class:`Case` holds what every system gets, and nothing system-specific:

* ``frames``: one frame (dedupe) or two (link) with the *evidence columns only* (ids,
  truth labels and derived helper columns are dropped), exactly as loaded: no cleaning
  beyond what the loader itself does (the held-out loaders strip, lower-case and collapse
  white space; the shared sets come as their files have them);
* ``truth``: ``left_id``, ``right_id``;
* ``kinds``: column -> semantic type, one of ``name``, ``date``, ``postcode``, ``email``,
  ``phone``, ``text``, ``exact``, ``numeric`` (see ``heldout.py``); every system maps
  these to its own comparisons by type, never by data set;
* ``blocking``: a list of erblock key specs, one pass each (OR).

Shared sets (``../shared/datasets`` or ``$ERBLOCK_DATA``; DBLP-ACM is bundled with
erblock) use the blocking the earlier quality benchmark used; their kinds are declared
here the way ``heldout.py`` declares them (from what a column holds, never from a score):

* ``dblp_acm``: title, authors, venue text; year exact. Blocking: year AND first word of
  the title.
* ``abt_buy``: name, description text; price numeric (Buy's ``manufacturer`` is dropped:
  Abt has no such column). Blocking: first word of the product name.
* ``historical_50k``: first_name, surname, birth_place name; dob date; postcode_fake
  postcode; gender, occupation exact (``cluster``, ``full_name``, ``first_and_surname``
  dropped). Blocking: the ten rules of Splink's tutorial for this data set, as ten
  passes.

Held-out sets: every loader of :data:`heldout.LOADERS`, with its ``kinds`` and
``blocking`` as given.

Loading is lazy: :func:`load_case` loads one set; nothing is read at import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # heldout.py sits next to this file
    sys.path.insert(0, str(HERE))

import heldout  # noqa: E402

from erblock import composite, prefix, token  # noqa: E402
from erblock.blocking.make import as_key_spec  # noqa: E402

__all__ = ["Case", "NAMES", "SHARED", "HELDOUT", "declared_cardinality", "describe_key",
           "link_metrics", "load_case", "n_possible", "metrics"]


@dataclass
class Case:
    """One data set as every system sees it (see the module docstring)."""

    name: str
    mode: str  # "link" or "dedupe"
    frames: list[pd.DataFrame]
    truth: pd.DataFrame
    kinds: dict[str, str]
    blocking: list[Any]
    source: str
    group: str  # "shared" or "held-out"

    @property
    def dedupe(self) -> bool:
        return self.mode == "dedupe"

    @property
    def blocking_text(self) -> str:
        return " OR ".join(describe_key(k) for k in self.blocking)


# ------------------------------------------------------------------------- shared sets


def _dblp_acm(data: str | None) -> Case:
    from erblock.datasets import load_dblp_acm

    dblp, acm, truth = load_dblp_acm()
    kinds = {"title": "text", "authors": "text", "venue": "text", "year": "exact"}
    return Case("dblp_acm", "link", [dblp[list(kinds)], acm[list(kinds)]], truth, kinds,
                [composite("year", token("title", 0))],
                "erblock.datasets.load_dblp_acm() (bundled)", "shared")


def _abt_buy(data: str | None) -> Case:
    from erblock.datasets import load_abt_buy

    abt, buy, truth = load_abt_buy(data)
    kinds = {"name": "text", "description": "text", "price": "numeric"}
    return Case("abt_buy", "link", [abt[list(kinds)], buy[list(kinds)]], truth, kinds,
                [token("name", 0)], "erblock.datasets.load_abt_buy() (shared/datasets)",
                "shared")


def _P(col: str, n: int) -> Any:
    return prefix(col, n, normalize=False)  # Splink's substr(col, 1, n)


def _historical_50k(data: str | None) -> Case:
    from erblock.datasets import load_historical_50k

    df, truth = load_historical_50k(data)
    kinds = {"first_name": "name", "surname": "name", "dob": "date", "birth_place": "name",
             "postcode_fake": "postcode", "gender": "exact", "occupation": "exact"}
    keys = [  # Splink's tutorial blocking rules, one erblock key pass each
        composite(_P("first_name", 3), _P("surname", 4)),
        composite("surname", "dob"),
        composite("first_name", "dob"),
        composite("postcode_fake", "first_name"),
        composite("postcode_fake", "surname"),
        composite("dob", "birth_place"),
        composite(_P("postcode_fake", 3), "dob"),
        composite(_P("postcode_fake", 3), "first_name"),
        composite(_P("postcode_fake", 3), "surname"),
        composite(_P("first_name", 2), _P("surname", 2), _P("dob", 4)),
    ]
    return Case("historical_50k", "dedupe", [df[list(kinds)]], truth, kinds, keys,
                "erblock.datasets.load_historical_50k() (shared/datasets)", "shared")


SHARED: dict[str, Callable[[str | None], Case]] = {
    "dblp_acm": _dblp_acm,
    "abt_buy": _abt_buy,
    "historical_50k": _historical_50k,
}
HELDOUT: tuple[str, ...] = tuple(heldout.LOADERS)
#: Every data set, in the order of the report.
NAMES: tuple[str, ...] = (*SHARED, *HELDOUT)


def load_case(name: str, data: str | None = None) -> Case:
    """One data set by name (``data``: folder of the shared sets, default as erblock's)."""
    if name in SHARED:
        return SHARED[name](data)
    if name in heldout.LOADERS:
        ds = heldout.load(name)
        frames = [f.copy() for f in ds.frames]
        return Case(ds.name, ds.mode, frames, ds.truth.copy(), dict(ds.kinds),
                    list(ds.blocking), ds.source, "held-out")
    raise ValueError(f"unknown data set {name!r}; known: {', '.join(NAMES)}")


# --------------------------------------------------------------------------- helpers


def describe_key(k: Any) -> str:
    """A short text for one erblock key spec (``surname+dob``, ``first_name[:3]``, …)."""
    spec = as_key_spec(k)
    kind = type(spec).__name__
    if kind == "Composite":
        return "+".join(describe_key(p) for p in spec.parts)
    if kind == "Column":
        return spec.column
    if kind == "Prefix":
        return f"{spec.column}[:{spec.n}]"
    if kind == "Token":
        where = f"word{spec.i + 1}" if spec.i >= 0 else (
            "last_word" if spec.i == -1 else f"word{-spec.i}_from_end")
        return f"{where}({spec.column})"
    if kind == "Phonetic":
        return f"{spec.algorithm}({spec.column})"
    if kind == "Tokens":
        return f"words({spec.column})"
    if kind == "DigitsKey":
        return f"digits({spec.column})" if spec.last is None else \
            f"digits({spec.column})[-{spec.last}:]"
    if kind == "DateKey":
        return f"date({spec.column})" if spec.part == "day" else f"{spec.part}({spec.column})"
    return repr(spec)


def n_possible(case: Case) -> int:
    if case.mode == "link":
        return len(case.frames[0]) * len(case.frames[1])
    n = len(case.frames[0])
    return n * (n - 1) // 2


def metrics(case: Case, pairs: pd.DataFrame, decision: np.ndarray, score_col: str,
            to_probability: Callable[[float], float] | None = None) -> dict[str, Any]:
    """Blocking and classification quality of one system's candidate ``pairs``
    (``left_id``, ``right_id``, ``score_col``) and its default ``decision`` (bool per row),
    with :func:`erblock.evaluate` and :func:`erblock.matchers.evaluate.pr_curve`."""
    import erblock
    from erblock.matchers.evaluate import pr_curve

    kw = {"n_left": len(case.frames[0]),
          "n_right": None if case.dedupe else len(case.frames[1]), "dedupe": case.dedupe}
    at_default = erblock.evaluate(pairs[np.asarray(decision, dtype=bool)], case.truth,
                                  candidates=pairs, **kw)
    out: dict[str, Any] = {
        "candidates": int(at_default["n_candidates"]),
        "pair_completeness": at_default["pair_completeness"],
        "reduction_ratio": at_default["reduction_ratio"],
        "default": {k: at_default[k] for k in ("precision", "recall", "f1", "tp", "fp", "fn")},
    }
    curve = pr_curve(pairs, case.truth, score_column=score_col, dedupe=case.dedupe)
    if len(curve) and curve["f1"].notna().any():
        best = curve.loc[curve["f1"].idxmax()]
        thr = float(best["threshold"])
        out["best"] = {"precision": float(best["precision"]), "recall": float(best["recall"]),
                       "f1": float(best["f1"]), "threshold": thr, "score": score_col}
        if to_probability is not None:
            out["best"]["threshold_probability"] = to_probability(thr)
    return out


def declared_cardinality(case: Case) -> str | None:
    """What a user who knows their sources declares for a link (None for a dedupe, or
    when both sources repeat entities): ``"1:1"`` when neither source holds an entity
    twice, ``"1:n"`` when only the left one is free of duplicates, ``"n:1"`` the mirror.
    Our cases have no documentation of their own, so the truth's structure stands in
    for that knowledge: a source is free of duplicates when no record of the *other*
    source is in two true pairs (two of its records would then be one entity). Nothing
    is learnt from any system's output."""
    if case.dedupe:
        return None
    left_once = not case.truth.iloc[:, 0].duplicated().any()
    right_once = not case.truth.iloc[:, 1].duplicated().any()
    # a source without duplicates lets each record of the *other* source link once
    return {(True, True): "1:1", (True, False): "1:n", (False, True): "n:1"}.get(
        (right_once, left_once))


def link_metrics(case: Case, pairs: pd.DataFrame, column: str, cardinality: str
                 ) -> dict[str, Any]:
    """Precision, recall and F1 of the links among a system's ``pairs``: its decided pairs
    (``column >= 0.5``) under ``cardinality``, by erblock's assignment (the same greedy for
    every system)."""
    import erblock
    from erblock.matchers.assignment import assign

    links = assign(pairs, cardinality, column, threshold=0.5)
    got = erblock.evaluate(links, case.truth, candidates=pairs, n_left=len(case.frames[0]),
                           n_right=len(case.frames[1]), dedupe=False)
    return {"cardinality": cardinality, "links": len(links),
            **{k: got[k] for k in ("precision", "recall", "f1", "tp", "fp", "fn")}}


def prob_from_weight(w: float) -> float:
    """``match_probability`` of a ``match_weight`` (log2 Bayes factor incl. the prior)."""
    return float(1.0 / (1.0 + 2.0 ** -w))
