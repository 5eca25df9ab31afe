"""The peers of the quality benchmark: Splink 5 (DuckDB) and recordlinkage 0.16.

Both are configured the same way on every data set, from the column kinds of the case
(``quality_cases.Case.kinds``) and nothing else, following each tool's own tutorials;
neither is tuned per data set. Both get erblock's candidate pairs: every blocking pass's
key is computed with erblock's key specs into a column ``_bk<p>`` (:func:`add_key_columns`;
an empty key is missing), and

* Splink predicts with ``blocking_rules_to_generate_predictions=[block_on("_bk0"), …]``,
* recordlinkage indexes with the union of ``Index().block("_bk<p>")``,

so a record without a key takes no part in that pass, as in erblock. The key columns are
never compared.

Splink (:func:`run_splink`), from its DuckDB examples (``febrl3``, ``febrl4``,
``deduplicate_50k_synthetic``):

==========  =======================================================================
kind        comparison
==========  =======================================================================
name        ``NameComparison(col)`` with term-frequency adjustments
date        ``DateOfBirthComparison(col, input_is_string=True, datetime_format=F)``;
            ``F`` is ``%Y%m%d`` when the values are 8 digits, else ``%Y-%m-%d``
            (the inputs of a link that write dates differently get them rewritten
            ``%Y-%m-%d`` first, for both peers: :func:`_one_date_writing`)
postcode    ``PostcodeComparison(col)`` with term-frequency adjustments
email       ``EmailComparison(col)``
phone       ``LevenshteinAtThresholds(col, [1, 2])``
text        ``JaroWinklerAtThresholds(col)`` (thresholds 0.9, 0.7)
exact       ``ExactMatch(col)`` with term-frequency adjustments
numeric     ``ExactMatch(col)`` (Splink 5's library has no numeric-difference comparison)
==========  =======================================================================

Training as in those examples: ``estimate_probability_two_random_records_match`` on
deterministic rules with ``recall=0.7``; the rules are exact agreement on two of the
three most identifying columns (:func:`identifying_columns`: the most distinct non-missing
values per record over all input records; no truth is used), i.e. ``block_on(a, b)``,
``block_on(a, c)``, ``block_on(b, c)``; ``estimate_u_using_random_sampling(max_pairs=1e6)``;
EM sessions (``estimate_without_term_frequencies=True``) blocked on the first one or two
blocking passes, ``block_on("_bk0")`` and ``block_on("_bk1")``; ``predict()``; decision
``match_probability >= 0.5``.

recordlinkage (:func:`run_recordlinkage`), from its tutorial: ``Compare`` with
``string(method="jarowinkler", threshold=0.85)`` for name, text, postcode, email and
phone columns and ``exact`` for exact, date and numeric columns (binary features; a
missing value gives 0), ``ECMClassifier()``; decision: its ``fit_predict``; score for the
best threshold: the ECM posterior ``prob``.

Each ``run_*`` returns the metrics of :func:`quality_cases.metrics`, ``seconds`` (wall
time of the tool's own work: loading into DuckDB, training and prediction for Splink;
indexing, comparing and classifying for recordlinkage; the key columns are computed
before the clock starts), ``config`` (what was configured, as text) and ``_pairs`` (the
candidate pairs, for the candidate check; not for the JSON).
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from quality_cases import Case, metrics, prob_from_weight  # noqa: E402

from erblock.blocking.dates import unformatted_date_keys  # noqa: E402
from erblock.blocking.make import as_key_spec  # noqa: E402
from erblock.engine.dateorders import orders_read  # noqa: E402
from erblock.engine.tasks.dates import date_order_counts, with_dates_read  # noqa: E402

__all__ = ["add_key_columns", "identifying_columns", "run_recordlinkage", "run_splink",
           "splink_comparisons", "rl_features", "SPLINK_NOTE", "RL_NOTE"]

SPLINK_NOTE = (
    "by kind: name NameComparison (+tf), date DateOfBirthComparison(input_is_string, "
    "format from the data), postcode PostcodeComparison (+tf), email EmailComparison, "
    "phone LevenshteinAtThresholds [1, 2], text JaroWinklerAtThresholds [0.9, 0.7], "
    "exact ExactMatch (+tf), numeric ExactMatch; λ from exact agreement on two of the "
    "three most distinct columns (recall 0.7); u from {u} random pairs; EM on the first "
    "one or two blocking passes; decision p >= 0.5")
RL_NOTE = ("by kind: jarowinkler >= 0.85 for name/text/postcode/email/phone, exact for "
           "exact/date/numeric; ECMClassifier() fit_predict")

RL_STRING_KINDS = ("name", "text", "postcode", "email", "phone")
TF_KINDS = ("name", "postcode", "exact")


# ------------------------------------------------------------------------ shared input


def add_key_columns(case: Case) -> tuple[list[pd.DataFrame], list[str]]:
    """Copies of the frames with each pass's key (erblock's key specs) in ``_bk<p>``."""
    frames = [_dates_as_erblock_reads(case, f.copy()) for f in case.frames]
    names = []
    for p, k in enumerate(case.blocking):
        spec = as_key_spec(k)
        col = f"_bk{p}"
        for df in frames:
            v = spec.values(df).astype("string")
            df[col] = v.where(v.str.len() > 0, pd.NA).astype(object).where(v.notna(), None)
        names.append(col)
    for col, kind in case.kinds.items():
        if kind == "date":
            _one_date_writing(frames, col)
    return frames, names


def _dates_as_erblock_reads(case: Case, df: pd.DataFrame) -> pd.DataFrame:
    """The frame with its date columns (compared as dates or read by a date key) as
    erblock reads them (:mod:`erblock.engine.dateorders`): a column the frame writes in
    the other order of an ambiguous writing throughout (``MMDDYYYY``) read so, so that the
    peers block on, and compare, the dates erblock does (identical candidates). The
    frame is one partition, decided by the engine's own
    :func:`erblock.engine.dateorders.orders_read` on the same counts."""
    keys = unformatted_date_keys([as_key_spec(k) for k in case.blocking])
    cols = [c for c in dict.fromkeys([c for c, kind in case.kinds.items() if kind == "date"]
                                     + [k.column for k in keys]) if c in df.columns]
    return with_dates_read(df, orders_read([date_order_counts(df, cols)]))


#: how a frame writes its dates, by the shape most of its values have
_WRITINGS = {"%Y%m%d": r"\d{8}", "%m/%d/%Y": r"\d{1,2}/\d{1,2}/\d{4}",
             "%Y-%m-%d": r"\d{4}-\d{2}-\d{2}"}


def _writing(values: pd.Series) -> str | None:
    vals = values.dropna().astype(str)
    if not len(vals):
        return None
    share = {f: vals.str.fullmatch(rx).mean() for f, rx in _WRITINGS.items()}
    best = max(share, key=lambda f: share[f])
    return best if share[best] > 0.5 else None


def _one_date_writing(frames: list[pd.DataFrame], col: str) -> None:
    """Dates written differently by the frames of a link (a census ``MM/DD/YYYY``, a
    register ``YYYYMMDD``) are rewritten ``YYYY-MM-DD`` in every frame, as a Splink user
    must (its ``DateOfBirthComparison`` takes one ``datetime_format``) and a recordlinkage
    user would (its exact feature compares the text); a value that does not read in its
    frame's writing becomes missing. Frames that write dates alike are left as they are.
    erblock reads each input's dates as written."""
    forms = [_writing(df[col]) for df in frames]
    if len(set(forms)) < 2 or None in forms:
        return
    for df, form in zip(frames, forms):
        got = pd.to_datetime(df[col], format=form, errors="coerce")
        df[col] = got.dt.strftime("%Y-%m-%d").astype(object).where(got.notna(), None)


def identifying_columns(case: Case, n: int = 3) -> list[str]:
    """The ``n`` columns with the most distinct non-missing values per record (all
    records of all frames together; ties: the order of ``case.kinds``)."""
    allf = pd.concat([f[list(case.kinds)] for f in case.frames], ignore_index=True)
    share = {c: allf[c].nunique(dropna=True) / max(len(allf), 1) for c in case.kinds}
    order = sorted(case.kinds, key=lambda c: (-share[c], list(case.kinds).index(c)))
    return order[:n]


def _date_format(case: Case, col: str) -> str:
    vals = pd.concat([f[col] for f in case.frames]).dropna().astype(str)
    if len(vals) and vals.str.fullmatch(r"\d{8}").mean() > 0.5:
        return "%Y%m%d"
    return "%Y-%m-%d"


# --------------------------------------------------------------------------- Splink


def splink_comparisons(case: Case) -> tuple[list[Any], list[str]]:
    """Splink comparisons for the case's kinds (see the module docstring) and their text."""
    import splink.comparison_library as cl

    comps, text = [], []
    for col, kind in case.kinds.items():
        if kind == "name":
            c, t = cl.NameComparison(col), f"NameComparison({col})"
        elif kind == "date":
            fmt = _date_format(case, col)
            c = cl.DateOfBirthComparison(col, input_is_string=True, datetime_format=fmt)
            t = f"DateOfBirthComparison({col}, {fmt})"
        elif kind == "postcode":
            c, t = cl.PostcodeComparison(col), f"PostcodeComparison({col})"
        elif kind == "email":
            c, t = cl.EmailComparison(col), f"EmailComparison({col})"
        elif kind == "phone":
            c, t = cl.LevenshteinAtThresholds(col, [1, 2]), f"LevenshteinAtThresholds({col}, [1, 2])"
        elif kind == "text":
            c, t = cl.JaroWinklerAtThresholds(col), f"JaroWinklerAtThresholds({col})"
        elif kind in ("exact", "numeric"):
            c, t = cl.ExactMatch(col), f"ExactMatch({col})"
        else:
            raise ValueError(f"{case.name}: no Splink comparison for kind {kind!r}")
        if kind in TF_KINDS:
            c = c.configure(term_frequency_adjustments=True)
            t += " +tf"
        comps.append(c)
        text.append(t)
    return comps, text


def _splink_table(df: pd.DataFrame) -> pd.DataFrame:
    t = df.copy()
    t.insert(0, "unique_id", t.index.astype(str))
    t = t.reset_index(drop=True)
    for c in t.columns:  # DuckDB wants plain dtypes
        if pd.api.types.is_string_dtype(t[c]) or t[c].dtype == object:
            t[c] = t[c].astype(object).where(t[c].notna(), None)
        elif pd.api.types.is_extension_array_dtype(t[c]):  # nullable Int64 etc.
            t[c] = t[c].astype("float64")
    return t


def _quiet_splink() -> None:
    for name in ("splink", "duckdb"):
        logging.getLogger(name).setLevel(logging.ERROR)


def run_splink(case: Case, threads: int = 2, u_pairs: float = 1e6) -> dict[str, Any]:
    """Splink 5 on DuckDB with the by-kind configuration (module docstring)."""
    import duckdb
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    _quiet_splink()
    frames, key_cols = add_key_columns(case)
    comps, comp_text = splink_comparisons(case)
    ident = identifying_columns(case, 3)
    pairs_of = [(a, b) for i, a in enumerate(ident) for b in ident[i + 1:]] or [tuple(ident)]
    em_cols = key_cols[:2]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        con = duckdb.connect(":memory:")
        con.execute(f"SET threads TO {int(threads)}")
        con.execute("SET enable_progress_bar = false")
        db_api = DuckDBAPI(connection=con)
        link = case.mode == "link"
        names = ("src_left", "src_right") if link else ("df",)
        tables = [db_api.register(_splink_table(df), dataset_display_name=names[i])
                  for i, df in enumerate(frames)]
        settings = SettingsCreator(
            link_type="link_only" if link else "dedupe_only",
            blocking_rules_to_generate_predictions=[block_on(c) for c in key_cols],
            comparisons=comps,
        )
        step = "Linker(settings)"
        try:
            linker = Linker(tables if link else tables[0], settings, log_level=logging.ERROR)
            step = "estimate_probability_two_random_records_match"
            linker.training.estimate_probability_two_random_records_match(
                [block_on(*p) for p in pairs_of], recall=0.7)
            step = "estimate_u_using_random_sampling"
            linker.training.estimate_u_using_random_sampling(max_pairs=u_pairs, seed=1)
            for c in em_cols:
                step = f"EM session block_on({c})"
                linker.training.estimate_parameters_using_expectation_maximisation(
                    block_on(c), estimate_without_term_frequencies=True)
            t1 = time.perf_counter()
            step = "predict"
            pred = linker.inference.predict().as_pandas_dataframe()
        except Exception as e:
            lam = ""
            if step.startswith(("estimate_u", "EM", "predict")):
                lam = (" (λ from the deterministic rules = "
                       f"{linker._settings_obj._probability_two_random_records_match:.3g})")
            raise SplinkStepError(
                f"Splink failed in {step}{lam}: {type(e).__name__}: {e}") from e
    seconds = time.perf_counter() - t0
    if link:
        flip = pred["source_dataset_l"].astype(str).to_numpy() == "src_right"
        l_raw = np.where(flip, pred["unique_id_r"], pred["unique_id_l"])
        r_raw = np.where(flip, pred["unique_id_l"], pred["unique_id_r"])
        left = _ids_back(l_raw, case.frames[0].index)
        right = _ids_back(r_raw, case.frames[1].index)
    else:
        left = _ids_back(pred["unique_id_l"].to_numpy(), case.frames[0].index)
        right = _ids_back(pred["unique_id_r"].to_numpy(), case.frames[0].index)
    pairs = pd.DataFrame({"left_id": left, "right_id": right,
                          "match_weight": pred["match_weight"].to_numpy(np.float64),
                          "match_probability": pred["match_probability"].to_numpy(np.float64)})
    out = metrics(case, pairs, pairs["match_probability"].to_numpy() >= 0.5, "match_weight",
                  prob_from_weight)
    lam = linker._settings_obj._probability_two_random_records_match
    out.update(
        seconds=seconds, train_seconds=t1 - t0,
        config=SPLINK_NOTE.format(u=f"{u_pairs:.0e}"),
        comparisons=comp_text,
        deterministic_rules=[" AND ".join(p) for p in pairs_of],
        em_sessions=[f"block_on({c})" for c in em_cols],
        parameters={"lambda": float(lam)},
        _pairs=pairs,
    )
    return out


class SplinkStepError(RuntimeError):
    """A Splink call failed; the message names the step (training session, predict)."""


def _ids_back(raw: np.ndarray, index: pd.Index) -> pd.Index:
    """Map Splink's string ids back to the frame's own index values."""
    lookup = pd.Series(index, index=index.astype(str))
    return pd.Index(lookup.reindex(pd.Index(np.asarray(raw).astype(str))).to_numpy(),
                    dtype=index.dtype)


# --------------------------------------------------------------------- recordlinkage


def rl_features(case: Case, compare: Any) -> list[str]:
    """Add one recordlinkage feature per column, by kind; return their text."""
    text = []
    for col, kind in case.kinds.items():
        if kind in RL_STRING_KINDS:
            compare.string(col, col, method="jarowinkler", threshold=0.85, label=col)
            text.append(f"string({col}, jarowinkler, 0.85)")
        elif kind in ("exact", "date", "numeric"):
            compare.exact(col, col, label=col)
            text.append(f"exact({col})")
        else:
            raise ValueError(f"{case.name}: no recordlinkage feature for kind {kind!r}")
    return text


def _rl_candidates(case: Case, frames: list[pd.DataFrame], key_cols: list[str]) -> pd.MultiIndex:
    """Union over passes of recordlinkage's Block index (records with a key only)."""
    import recordlinkage

    parts = []
    for col in key_cols:
        sub = [df[df[col].notna()] for df in frames]
        indexer = recordlinkage.Index()
        indexer.block(col)
        parts.append(indexer.index(*sub))
    out = parts[0]
    for p in parts[1:]:
        out = out.append(p)
    if case.dedupe:  # one orientation per unordered pair (input order, as erblock)
        pos = pd.Series(np.arange(len(frames[0])), index=frames[0].index)
        a, b = out.get_level_values(0), out.get_level_values(1)
        pa, pb = pos.reindex(a).to_numpy(), pos.reindex(b).to_numpy()
        lo = np.where(pa < pb, a, b)
        hi = np.where(pa < pb, b, a)
        out = pd.MultiIndex.from_arrays([lo, hi])
    return out.unique()


def run_recordlinkage(case: Case) -> dict[str, Any]:
    """recordlinkage with the by-kind features and ECM (module docstring)."""
    import recordlinkage

    frames, key_cols = add_key_columns(case)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        candidates = _rl_candidates(case, frames, key_cols)
        compare = recordlinkage.Compare()
        feat_text = rl_features(case, compare)
        features = compare.compute(candidates, *[f[list(case.kinds)] for f in frames])
        ecm = recordlinkage.ECMClassifier()
        matches = ecm.fit_predict(features)
        prob = ecm.prob(features)
    seconds = time.perf_counter() - t0
    idx = features.index
    pairs = pd.DataFrame({"left_id": idx.get_level_values(0), "right_id": idx.get_level_values(1),
                          "probability": prob.reindex(idx).to_numpy(np.float64)})
    decision = np.asarray(idx.isin(matches))
    out = metrics(case, pairs, decision, "probability")
    out.update(seconds=seconds, config=RL_NOTE, features=feat_text,
               parameters={"lambda": float(getattr(ecm, "p", np.nan))}, _pairs=pairs)
    return out


def pair_set(pairs: pd.DataFrame, dedupe: bool) -> set[tuple[str, str]]:
    """Candidate pairs as a set of string tuples (unordered for dedupe)."""
    a = pairs["left_id"].astype(str).to_numpy()
    b = pairs["right_id"].astype(str).to_numpy()
    if dedupe:
        a, b = np.minimum(a, b), np.maximum(a, b)
    return set(zip(a.tolist(), b.tolist()))

