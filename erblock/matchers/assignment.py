"""From a link's matching pairs to its links, under what the user knows of the sources.

A pairwise model decides each pair alone. When a source holds each entity at most once
(a register, a catalogue without duplicates), a record of the *other* source can match
at most one of its records, and that is evidence no pairwise model uses: of two
candidates that both score above the decision, at most one is right. The people of one
household are the typical case. They share address, phone and surname, so a model that
takes those agreements as independent evidence scores a person's housemates as matches
too; the person's own record, which also agrees on name and date of birth, still scores
higher (see "Where the unsupervised model fails" in docs/guide/scoring.md).

The cardinality names which sources are free of duplicates:

- ``"1:1"``: both. Greedy best-first matching: the best remaining pair whose two records
  are both free is taken, until none is left (each record in at most one link).
- ``"1:n"``: ``df_r`` only. Each record of ``df_s`` keeps its best pair; a record of
  ``df_r`` may keep many (one entity, several records in ``df_s``).
- ``"n:1"``: ``df_s`` only, the mirror.
- ``"n:m"``: neither; every matching pair is kept.

"Best" orders pairs by the ranking column descending, ties by ``left_id`` then
``right_id`` ascending, so the result does not depend on the order of the pairs. The
ranking column is the decision column, except that pairs decided on
``match_probability`` rank by their ``match_weight`` when they carry it: the same order,
but a probability rounds to exactly 1.0 from a weight of about 53 (double precision), so
two confident candidates of one record would tie and the smaller id, not the better pair,
would win.
:func:`erblock.engine.assignment.assign_dask` computes the same links for pairs that
stay on the cluster.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .thresholds import check_threshold, meets

__all__ = ["CARDINALITIES", "IDS", "assign", "check_cardinality", "check_frame",
           "check_ids_present", "check_pairs", "rank_column_of", "unique_sides"]

#: what ``cardinality=`` accepts (None means ``"n:m"``)
CARDINALITIES: tuple[str, ...] = ("1:1", "1:n", "n:1", "n:m")
IDS = ["left_id", "right_id"]


def check_frame(pairs: Any, name: str = "pairs") -> None:
    """Raise a ``TypeError`` naming ``name`` unless ``pairs`` is a frame (has columns)."""
    if not hasattr(pairs, "columns"):
        raise TypeError(f"{name} must be a pandas or Dask DataFrame with columns left_id and "
                        f"right_id, got {type(pairs).__name__} (e.g. pd.DataFrame(list_of_pairs, "
                        "columns=['left_id', 'right_id']))")


def check_pairs(pairs: Any, score_column: str, threshold: float | None) -> None:
    """Raise unless ``pairs`` is a frame with ``left_id``, ``right_id`` and, when a
    ``threshold`` applies, ``score_column``, and ``threshold`` is one that column can be
    cut at (shared by assignment and clustering)."""
    check_frame(pairs)
    missing = {"left_id", "right_id"} - set(pairs.columns)
    if threshold is not None:
        missing |= {score_column} - set(pairs.columns)
    if missing:
        raise ValueError(f"pairs: missing column(s) {sorted(missing)}; got {list(pairs.columns)}")
    check_threshold(threshold, score_column)


def check_ids_present(pairs: Any, who: str, name: str = "pairs",
                      counts: dict[str, int] | None = None) -> None:
    """Raise when a row of ``pairs`` has no ``left_id`` or no ``right_id``: coded -1 by
    ``pd.factorize``, a missing id would stand for another record. The message opens
    with ``who`` (the function refusing, if any) and names the frame ``name``, each
    column and its rows; ``counts``: the missing ids per column when already counted
    (a Dask frame's)."""
    if counts is None:
        counts = {c: int(pairs[c].isna().sum()) for c in IDS}
    said = [f"{n:,} {'row has' if n == 1 else 'rows have'} a missing {c}"
            for c, n in counts.items() if n]
    if said:
        what = "a true pair" if name == "truth" else "a pair"
        raise ValueError(f"{who + ': ' if who else ''}{name} "
                         f"{'holds' if name == 'truth' else 'hold'} missing "
                         f"record ids: {' and '.join(said)}; {what} needs both ids: drop the "
                         "rows without a partner")


def check_cardinality(cardinality: Any, mode: str = "link") -> str | None:
    """``cardinality`` normalised (None for ``"n:m"``: no constraint), or a clear error."""
    if cardinality is None:
        return None
    if not isinstance(cardinality, str) or cardinality.lower() not in CARDINALITIES:
        raise ValueError(
            f"cardinality must be one of {', '.join(repr(c) for c in CARDINALITIES)} or None "
            f"(which of df_r and df_s hold each entity at most once), got {cardinality!r}")
    if mode != "link":
        raise ValueError(
            f"cardinality={cardinality!r} constrains a link between two sources; a dedupe "
            "has one source: group its pairs into entities with erblock.cluster instead")
    c = cardinality.lower()
    return None if c == "n:m" else c


def unique_sides(cardinality: str | None) -> tuple[bool, bool]:
    """Whether ``right_id`` and ``left_id`` may each appear in at most one link.

    ``"1:n"`` (``df_r`` without duplicates) limits each *right* record to one link.
    """
    c = cardinality or "n:m"
    return c in ("1:1", "1:n"), c in ("1:1", "n:1")


def _rankable(s: pd.Series) -> pd.Series:
    """Ids as they sort: themselves, or their ``str`` when their types do not compare."""
    try:
        s.sort_values()
        return s
    except TypeError:
        return s.astype(str)


def rank_column_of(columns: Any, score_column: str, rank_column: str | None = None) -> str:
    """The column that ranks pairs decided on ``score_column`` (see the module doc):
    ``rank_column`` when given, ``match_weight`` for ``match_probability`` when among
    ``columns``, else ``score_column`` itself."""
    if rank_column is not None:
        if rank_column not in columns:
            raise ValueError(f"rank_column: {rank_column!r} is not a column of pairs; got "
                             f"{list(columns)}")
        return rank_column
    if score_column == "match_probability" and "match_weight" in columns:
        return "match_weight"
    return score_column


def assign(pairs: pd.DataFrame, cardinality: str | None, score_column: str = "score", *,
           threshold: float | None = None, rank_column: str | None = None) -> pd.DataFrame:
    """The links among ``pairs`` (columns ``left_id``, ``right_id``, ``score_column``).

    Pairs with a NaN score, or below ``threshold`` when given (compared in the scores'
    precision: a float32 score at the threshold is kept, as the run kept it), are never
    links; a pair with a missing id is refused, as :func:`~.clustering.cluster` refuses
    it, and so is a Dask frame (see the message for what to use). The others rank by ``rank_column`` (default: ``match_weight`` for ``match_probability``
    when the pairs carry it, else ``score_column``; see the module doc). Returns the kept
    rows of ``pairs`` (index and columns as given) ranked best first. The
    two-sided greedy runs in rounds: every pair that is the best remaining one for both
    its records is taken (the sequential greedy takes each of them too, and the best pair
    left is always one), then every pair touching a taken record is dropped; each round
    is vectorised and rounds are few in practice.
    """
    if not isinstance(pairs, pd.DataFrame) and hasattr(pairs, "compute"):
        raise TypeError(
            "pairs: assign works on a pandas DataFrame in memory, got a Dask "
            f"{type(pairs).__name__}; for pairs that stay on the cluster pass cardinality= "
            "to erblock.link (the run applies it) or use "
            "erblock.engine.assignment.assign_dask, or .compute() the pairs")
    check_pairs(pairs, score_column, 0.0)
    check_threshold(threshold, score_column)
    check_cardinality(cardinality)
    check_ids_present(pairs, "assign")
    score = pairs[score_column].to_numpy(dtype=np.float64, na_value=np.nan)
    ok = ~np.isnan(score)
    if threshold is not None:
        ok &= meets(pairs[score_column], threshold)
    rank = pairs[rank_column_of(pairs.columns, score_column, rank_column)].to_numpy(
        dtype=np.float64, na_value=np.nan)
    ok &= ~np.isnan(rank)
    rows = np.flatnonzero(ok)
    lcode = pd.factorize(_rankable(pairs["left_id"].iloc[rows]), sort=True)[0]
    rcode = pd.factorize(_rankable(pairs["right_id"].iloc[rows]), sort=True)[0]
    order = np.lexsort((rcode, lcode, -rank[rows]))
    rows, lcode, rcode = rows[order], lcode[order], rcode[order]
    one_right, one_left = unique_sides(cardinality)
    if not (one_left or one_right):
        return pairs.iloc[rows]
    if not (one_left and one_right):  # one side: each of its records keeps its first pair
        first = ~pd.Series(rcode if one_right else lcode).duplicated().to_numpy()
        return pairs.iloc[rows[first]]
    rank = np.arange(rows.size)
    accepted = []
    alive = rank
    nl, nr = lcode.max(initial=-1) + 1, rcode.max(initial=-1) + 1
    while alive.size:
        best_l = np.full(nl, rows.size)
        best_r = np.full(nr, rows.size)
        np.minimum.at(best_l, lcode[alive], rank[alive])
        np.minimum.at(best_r, rcode[alive], rank[alive])
        a = alive[(best_l[lcode[alive]] == rank[alive]) & (best_r[rcode[alive]] == rank[alive])]
        accepted.append(a)
        used_l = np.zeros(nl, bool)
        used_r = np.zeros(nr, bool)
        used_l[lcode[a]] = True
        used_r[rcode[a]] = True
        alive = alive[~used_l[lcode[alive]] & ~used_r[rcode[alive]]]
    take = np.sort(np.concatenate(accepted)) if accepted else np.empty(0, np.int64)
    return pairs.iloc[rows[take]]
