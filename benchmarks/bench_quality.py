"""Quality benchmark: erblock's unsupervised Fellegi-Sunter model against Splink 5 and
recordlinkage, on data with ground truth, with the same blocking.

Data sets (``../shared/datasets`` or ``$ERBLOCK_DATA``; DBLP-ACM is bundled):

* **DBLP-ACM** (link, 2,616 × 2,294, 2,224 true pairs), blocked on year AND the first
  word of the title;
* **Abt-Buy** (link, 1,081 × 1,092, 1,097 true pairs), blocked on the first word of the
  product name (the brand);
* **historical_50k** (dedupe, 50,578 records, 303,961 true pairs), blocked with the ten
  rules of Splink's own tutorial for this data set (``deduplicate_50k_synthetic``), as
  ten erblock key passes (a list of keys = OR).

All three systems get the *same input* (text lower-cased, punctuation replaced by
spaces, white space collapsed: the cleaning each tool's tutorials ask for) and the *same
candidate pairs*: the blocking key of every pass is computed once with erblock's key
specs into a column ``_bk<p>``, and Splink blocks with ``block_on("_bk<p>")``,
recordlinkage with ``Index().block("_bk<p>")`` (records without a key are left out of
that pass, as in erblock). The candidate counts are reported and checked to be equal.

Each system is configured as its own documentation does it:

* **erblock**: ``scoring="em"`` (``FellegiSunter``: levels from thresholds, u from random
  record pairs, λ and m by EM on the candidate pairs); comparisons chosen per data set as
  erblock's docs suggest (token-based methods for long text, Jaro-Winkler for names, exact
  for codes), one optional term-frequency column. Default decision
  ``match_probability >= 0.5``.
* **Splink 5 on DuckDB**: comparison library (``NameComparison``,
  ``ForenameSurnameComparison``, ``DateOfBirthComparison``, ``JaroWinklerAtThresholds``, …),
  ``estimate_probability_two_random_records_match`` on deterministic rules,
  ``estimate_u_using_random_sampling``, EM training sessions on blocking rules,
  ``predict()``; default decision ``match_probability >= 0.5``. For historical_50k the
  tutorial's settings verbatim.
* **recordlinkage**: ``Compare`` with ``string(method="jarowinkler", threshold=0.85)`` and
  ``exact`` features, ``ECMClassifier()`` (its tutorial); default decision: its
  ``fit_predict`` (posterior >= 0.5).

Measured for each: pair completeness and reduction ratio of the blocking, precision,
recall and F1 at the default decision and at the best threshold (over the system's own
score: match weight for erblock and Splink, the ECM posterior for recordlinkage), and
wall-clock seconds (for context; quality is the point here). Every number comes from
``erblock.evaluate`` / ``erblock.matchers.evaluate.pr_curve`` on each system's pairs.

Target: erblock's F1 at its default decision >= the better peer's on each data set.

Run: ``python benchmarks/bench_quality.py`` (a few minutes on 2 cores; ``--quick`` runs
DBLP-ACM alone with fewer random pairs, ``--no-peers`` skips Splink and recordlinkage).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import erblock
from erblock import FellegiSunter, composite, prefix, token
from erblock.blocking.keys import KeySpec, as_key_spec
from erblock.matchers.evaluate import pr_curve

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TEXT_COLUMNS = {
    "dblp_acm": ("title", "authors", "venue"),
    "abt_buy": ("name", "description"),
    "historical_50k": (),  # already lower-case and clean (Splink's example data)
}


def clean_text(s: pd.Series) -> pd.Series:
    """Lower-case, punctuation to spaces, white space collapsed (missing stays missing)."""
    out = s.astype("string").str.lower().str.replace(r"[^\w\s]", " ", regex=True)
    return out.str.split().str.join(" ").replace("", pd.NA)


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    """One data set: input, truth, blocking, and each system's configuration."""

    name: str
    task: str  # "link" or "dedupe"
    key_text: str
    keys: list[Any]
    frames: list[pd.DataFrame] = field(default_factory=list)
    truth: pd.DataFrame | None = None
    erblock_compare: Any = None
    erblock_model: Callable[[], FellegiSunter] | None = None
    erblock_note: str = ""
    splink: Callable[..., Any] | None = None
    splink_note: str = ""
    rl_features: Callable[..., Any] | None = None
    rl_note: str = ""


def dblp_acm_case(data: str | None) -> Case:
    from erblock.datasets import load_dblp_acm

    dblp, acm, truth = load_dblp_acm()
    for df in (dblp, acm):
        for c in TEXT_COLUMNS["dblp_acm"]:
            df[c] = clean_text(df[c])
    return Case(
        name="dblp_acm", task="link",
        key_text="year AND first word of the title: `composite('year', token('title', 0))`",
        keys=[composite("year", token("title", 0))],
        frames=[dblp, acm], truth=truth,
        # titles and author lists: word order and small edits differ between the sources
        # (token_sort); recurring titles ("book review column") are weak evidence, so the
        # title gets the term-frequency adjustment. Venues are spelled differently by the two
        # sources ("vldb" / "very large data bases"): left out.
        erblock_compare={"title": "token_sort", "authors": "token_sort"},
        erblock_model=lambda: FellegiSunter(tf_adjust="title"),
        erblock_note="title token_sort, authors token_sort, tf adjustment on title; default levels",
        splink=splink_dblp_acm,
        splink_note=("JaroWinklerAtThresholds on title and authors, ExactMatch year (venue "
                     "left out: its levels cannot be trained, the sources spell venues "
                     "differently); λ from exact title (recall 0.7); u from 1e6 random pairs; "
                     "EM session blocked on the prediction blocking key (the best of the "
                     "variants tried: sessions on year and on title gave F1 0.93-0.94)"),
        rl_features=rl_dblp_acm,
        rl_note=("string levenshtein ≥ 0.85 on title, jarowinkler ≥ 0.85 on authors and "
                 "venue (best of the variants tried; jarowinkler on all three and exact year: "
                 "0.937)"),
    )


def abt_buy_case(data: str | None) -> Case:
    from erblock.datasets import load_abt_buy

    abt, buy, truth = load_abt_buy(data)
    buy = buy.drop(columns=["manufacturer"])  # Abt has no such column
    for df in (abt, buy):
        for c in TEXT_COLUMNS["abt_buy"]:
            df[c] = clean_text(df[c])
    return Case(
        name="abt_buy", task="link",
        key_text="first word of the product name (the brand): `token('name', 0)`",
        keys=[token("name", 0)],
        frames=[abt, buy], truth=truth,
        # product names: one side often has extra words (a model number, "black"), so
        # token_set; prices: relative difference. Descriptions are missing or rewritten
        # in Buy: left out.
        erblock_compare=[erblock.comparison("name", "token_set"),
                         erblock.comparison("price", "numeric", mode="rel")],
        erblock_model=lambda: FellegiSunter(),
        erblock_note="name token_set, price numeric (mode='rel'); default levels",
        splink=splink_abt_buy,
        splink_note=("LevenshteinAtThresholds(name, [2, 5, 10]), ExactMatch(price); λ set to "
                     "1/1,092 (about one match per record; λ from exact names left nothing "
                     "above 0.5); u from 1e6 random pairs; EM session blocked on the blocking "
                     "key (best of the variants tried: Jaro-Winkler or Jaccard on name, with "
                     "description: F1 ≤ 0.03 at 0.5)"),
        rl_features=rl_abt_buy,
        rl_note=("string jarowinkler ≥ 0.9 and qgram ≥ 0.7 on name (best of the variants "
                 "tried; jarowinkler ≥ 0.85 alone, or with description or price: F1 < 0.08)"),
    )


def _P(col: str, n: int) -> KeySpec:
    return prefix(col, n, normalize=False)  # Splink's substr(col, 1, n)


def historical_case(data: str | None) -> Case:
    from erblock.datasets import load_historical_50k

    df, truth = load_historical_50k(data)
    keys = [  # Splink's tutorial blocking rules, one erblock key pass each
        (_P("first_name", 3), _P("surname", 4)),
        ("surname", "dob"),
        ("first_name", "dob"),
        ("postcode_fake", "first_name"),
        ("postcode_fake", "surname"),
        ("dob", "birth_place"),
        (_P("postcode_fake", 3), "dob"),
        (_P("postcode_fake", 3), "first_name"),
        (_P("postcode_fake", 3), "surname"),
        (_P("first_name", 2), _P("surname", 2), _P("dob", 4)),
    ]
    return Case(
        name="historical_50k", task="dedupe",
        key_text=("Splink's tutorial rules as 10 passes (OR): first_name[:3]+surname[:4], "
                  "surname+dob, first_name+dob, postcode+first_name, postcode+surname, "
                  "dob+birth_place, postcode[:3]+dob, postcode[:3]+first_name, "
                  "postcode[:3]+surname, first_name[:2]+surname[:2]+dob[:4]"),
        keys=keys, frames=[df], truth=truth,
        erblock_compare={"first_name": "jaro_winkler", "surname": "jaro_winkler",
                         "dob": "levenshtein", "postcode_fake": "jaro_winkler",
                         "birth_place": "exact", "occupation": "exact"},
        erblock_model=lambda: FellegiSunter(levels={"dob": (0.8, 0.9, 1.0)},
                                            tf_adjust="surname"),
        erblock_note=("first_name, surname, postcode jaro_winkler; dob levenshtein with "
                      "levels 0.8/0.9/1.0 (one or two wrong digits); birth_place, occupation "
                      "exact; term-frequency adjustment on surname"),
        splink=splink_historical,
        splink_note="the tutorial's settings and training, verbatim (see the module docstring)",
        rl_features=rl_historical,
        rl_note=("string jarowinkler ≥ 0.85 on first_name, surname, postcode; exact dob, "
                 "birth_place, occupation"),
    )


CASES = {"dblp_acm": dblp_acm_case, "abt_buy": abt_buy_case,
         "historical_50k": historical_case}


# --------------------------------------------------------------------- blocking keys


def add_key_columns(case: Case) -> list[str]:
    """Write each pass's key value (erblock's own key specs) into ``_bk<p>`` columns."""
    names = []
    for p, k in enumerate(case.keys):
        spec = as_key_spec(k)
        col = f"_bk{p}"
        for df in case.frames:
            v = spec.values(df).astype("string")
            df[col] = v.where(v.str.len() > 0, pd.NA)
        names.append(col)
    return names


def n_possible(case: Case) -> int:
    if case.task == "link":
        return len(case.frames[0]) * len(case.frames[1])
    n = len(case.frames[0])
    return n * (n - 1) // 2


# ------------------------------------------------------------------------- metrics


def metrics(case: Case, pairs: pd.DataFrame, decision: np.ndarray, score_col: str,
            to_probability: Callable[[float], float] | None = None) -> dict[str, Any]:
    """Blocking and classification quality of one system's candidate ``pairs``."""
    dedupe = case.task == "dedupe"
    n_left = len(case.frames[0])
    n_right = len(case.frames[1]) if not dedupe else None
    kw = {"n_left": n_left, "n_right": n_right, "dedupe": dedupe}
    predicted = pairs[decision]
    at_default = erblock.evaluate(predicted, case.truth, candidates=pairs, **kw)
    curve = pr_curve(pairs, case.truth, score_column=score_col, dedupe=dedupe)
    best = curve.loc[curve["f1"].idxmax()] if len(curve) else None
    out = {
        "candidates": at_default["n_candidates"],
        "pair_completeness": at_default["pair_completeness"],
        "reduction_ratio": at_default["reduction_ratio"],
        "default": {k: at_default[k] for k in ("precision", "recall", "f1", "tp", "fp", "fn")},
    }
    if best is not None:
        thr = float(best["threshold"])
        out["best"] = {"precision": float(best["precision"]), "recall": float(best["recall"]),
                       "f1": float(best["f1"]), "threshold": thr, "score": score_col}
        if to_probability is not None:
            out["best"]["threshold_probability"] = to_probability(thr)
    return out


def _prob_from_weight(w: float) -> float:
    return float(1.0 / (1.0 + 2.0 ** -w))


# -------------------------------------------------------------------------- erblock


def run_erblock(case: Case, client: Any, u_pairs: int | None) -> dict[str, Any]:
    model = case.erblock_model()
    if u_pairs is not None:
        model.u_pairs = u_pairs
    t0 = time.perf_counter()
    if case.task == "link":
        pairs = erblock.link(case.frames[0], case.frames[1], key=case.keys,
                             compare=case.erblock_compare, scoring=model, client=client)
    else:
        pairs = erblock.dedupe(case.frames[0], key=case.keys, compare=case.erblock_compare,
                               scoring=model, client=client)
    seconds = time.perf_counter() - t0
    report = erblock.RunReport.of(pairs)
    out = metrics(case, pairs, pairs["match_probability"].to_numpy() >= 0.5, "match_weight",
                  _prob_from_weight)
    out.update(seconds=seconds, config=case.erblock_note, compare=_jsonable(case.erblock_compare),
               model=model.report(), phases=report.phases,
               scoring_seconds=report.settings.get("scoring_seconds"))
    out["model"]["levels"] = model.summary().round(6).to_dict(orient="records")
    return out


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str))


# --------------------------------------------------------------------------- Splink


def _splink_linker(case: Case, settings: Any, threads: int) -> Any:
    import duckdb
    from splink import DuckDBAPI, Linker

    con = duckdb.connect(":memory:")
    con.execute(f"SET threads TO {int(threads)}")
    con.execute("SET enable_progress_bar = false")
    db_api = DuckDBAPI(connection=con)
    tables = []
    for i, df in enumerate(case.frames):
        t = df.copy()
        t.insert(0, "unique_id", t.index.astype(str))
        t = t.reset_index(drop=True)
        for c in t.columns:  # DuckDB wants plain dtypes
            if pd.api.types.is_string_dtype(t[c]):
                t[c] = t[c].astype(object).where(t[c].notna(), None)
        name = ("src_left", "src_right")[i] if case.task == "link" else "df"
        tables.append(db_api.register(t, dataset_display_name=name))
    return Linker(tables if len(tables) > 1 else tables[0], settings,
                  log_level=logging.WARNING)


def splink_dblp_acm(case: Case, key_cols: list[str], threads: int) -> Any:
    import splink.comparison_library as cl
    from splink import SettingsCreator, block_on

    settings = SettingsCreator(
        link_type="link_only",
        blocking_rules_to_generate_predictions=[block_on(c) for c in key_cols],
        comparisons=[
            cl.JaroWinklerAtThresholds("title"),
            cl.JaroWinklerAtThresholds("authors"),
            cl.ExactMatch("year"),
        ],
    )
    linker = _splink_linker(case, settings, threads)
    linker.training.estimate_probability_two_random_records_match(
        [block_on("title")], recall=0.7)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=1)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on(key_cols[0]))
    return linker


def splink_abt_buy(case: Case, key_cols: list[str], threads: int) -> Any:
    import splink.comparison_library as cl
    from splink import SettingsCreator, block_on

    n_left, n_right = (len(f) for f in case.frames)
    settings = SettingsCreator(
        link_type="link_only",
        blocking_rules_to_generate_predictions=[block_on(c) for c in key_cols],
        comparisons=[
            cl.LevenshteinAtThresholds("name", [2, 5, 10]),
            cl.ExactMatch("price"),
        ],
        # about one match per record: no deterministic rule has good recall here
        probability_two_random_records_match=min(n_left, n_right) / (n_left * n_right),
    )
    linker = _splink_linker(case, settings, threads)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=1)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on(key_cols[0]))
    return linker


def splink_historical(case: Case, key_cols: list[str], threads: int) -> Any:
    import splink.comparison_library as cl
    from splink import SettingsCreator, block_on

    settings = SettingsCreator(
        link_type="dedupe_only",
        blocking_rules_to_generate_predictions=[block_on(c) for c in key_cols],
        comparisons=[
            cl.ForenameSurnameComparison(
                "first_name", "surname",
                forename_surname_concat_col_name="first_name_surname_concat"),
            cl.DateOfBirthComparison("dob", input_is_string=True),
            cl.PostcodeComparison("postcode_fake"),
            cl.ExactMatch("birth_place").configure(term_frequency_adjustments=True),
            cl.ExactMatch("occupation").configure(term_frequency_adjustments=True),
        ],
        retain_intermediate_calculation_columns=True,
    )
    df = case.frames[0]
    df["first_name_surname_concat"] = df["first_name"] + " " + df["surname"]
    try:
        linker = _splink_linker(case, settings, threads)
    finally:
        del df["first_name_surname_concat"]
    linker.training.estimate_probability_two_random_records_match(
        [block_on("first_name", "surname", "dob"),
         block_on("substr(first_name,1,2)", "surname", "substr(postcode_fake,1,2)"),
         block_on("dob", "postcode_fake")],
        recall=0.6)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e7)
    linker.training.estimate_parameters_using_expectation_maximisation(
        block_on("first_name", "surname"), estimate_without_term_frequencies=True)
    linker.training.estimate_parameters_using_expectation_maximisation(
        block_on("dob"), estimate_without_term_frequencies=True)
    return linker


def run_splink(case: Case, key_cols: list[str], threads: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        linker = case.splink(case, key_cols, threads)
        t1 = time.perf_counter()
        pred = linker.inference.predict().as_pandas_dataframe()
    seconds = time.perf_counter() - t0
    if case.task == "link":
        flip = pred["source_dataset_l"].to_numpy() == "src_right"
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
                  _prob_from_weight)
    out.update(seconds=seconds, train_seconds=t1 - t0, config=case.splink_note)
    return out


def _ids_back(raw: np.ndarray, index: pd.Index) -> pd.Index:
    """Map Splink's string ids back to the frame's own index values."""
    lookup = pd.Series(index, index=index.astype(str))
    return pd.Index(lookup.reindex(pd.Index(raw.astype(str))).to_numpy(), dtype=index.dtype)


# --------------------------------------------------------------------- recordlinkage


def rl_dblp_acm(compare: Any) -> None:
    compare.string("title", "title", method="levenshtein", threshold=0.85, label="title")
    compare.string("authors", "authors", method="jarowinkler", threshold=0.85, label="authors")
    compare.string("venue", "venue", method="jarowinkler", threshold=0.85, label="venue")


def rl_abt_buy(compare: Any) -> None:
    compare.string("name", "name", method="jarowinkler", threshold=0.9, label="name_jw")
    compare.string("name", "name", method="qgram", threshold=0.7, label="name_qgram")


def rl_historical(compare: Any) -> None:
    compare.string("first_name", "first_name", method="jarowinkler", threshold=0.85,
                   label="first_name")
    compare.string("surname", "surname", method="jarowinkler", threshold=0.85, label="surname")
    compare.string("postcode_fake", "postcode_fake", method="jarowinkler", threshold=0.85,
                   label="postcode_fake")
    compare.exact("dob", "dob", label="dob")
    compare.exact("birth_place", "birth_place", label="birth_place")
    compare.exact("occupation", "occupation", label="occupation")


def rl_candidates(case: Case, key_cols: list[str]) -> pd.MultiIndex:
    """Union over passes of recordlinkage's Block index (records with a key only)."""
    import recordlinkage

    parts = []
    for col in key_cols:
        frames = [df[df[col].notna()] for df in case.frames]
        indexer = recordlinkage.Index()
        indexer.block(col)
        parts.append(indexer.index(*frames))
    out = parts[0]
    for p in parts[1:]:
        out = out.append(p)
    out = out.unique()
    if case.task == "dedupe":  # one orientation per unordered pair
        a, b = out.get_level_values(0), out.get_level_values(1)
        sa, sb = a.astype(str), b.astype(str)
        lo = np.where(sa < sb, a, b)
        hi = np.where(sa < sb, b, a)
        out = pd.MultiIndex.from_arrays([lo, hi]).unique()
    return out


def run_recordlinkage(case: Case, key_cols: list[str]) -> dict[str, Any]:
    import recordlinkage

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        candidates = rl_candidates(case, key_cols)
        compare = recordlinkage.Compare()
        case.rl_features(compare)
        features = compare.compute(candidates, *case.frames)
        ecm = recordlinkage.ECMClassifier()
        matches = ecm.fit_predict(features)
        prob = ecm.prob(features)
    seconds = time.perf_counter() - t0
    idx = features.index
    pairs = pd.DataFrame({"left_id": idx.get_level_values(0), "right_id": idx.get_level_values(1),
                          "probability": prob.reindex(idx).to_numpy(np.float64)})
    decision = idx.isin(matches)
    out = metrics(case, pairs, np.asarray(decision), "probability")
    out.update(seconds=seconds, config=case.rl_note,
               parameters={"lambda": float(getattr(ecm, "p", np.nan))})
    return out


# ---------------------------------------------------------------------- orchestration


def run_case(case: Case, client: Any, peers: bool, threads: int, u_pairs: int | None,
             log: Callable[[str], None]) -> dict[str, Any]:
    key_cols = add_key_columns(case)
    res: dict[str, Any] = {"task": case.task, "blocking": case.key_text,
                           "records": [len(f) for f in case.frames],
                           "true_pairs": len(case.truth), "possible_pairs": n_possible(case),
                           "systems": {}}
    log(f"[{case.name}] erblock …")
    res["systems"]["erblock"] = run_erblock(case, client, u_pairs)
    _log_system(log, case.name, "erblock", res["systems"]["erblock"])
    if peers:
        for name, fn in (("splink", lambda: run_splink(case, key_cols, threads)),
                         ("recordlinkage", lambda: run_recordlinkage(case, key_cols))):
            log(f"[{case.name}] {name} …")
            try:
                res["systems"][name] = fn()
                _log_system(log, case.name, name, res["systems"][name])
            except ImportError as e:
                res["systems"][name] = {"error": f"not installed: {e}"}
    cands = {k: v.get("candidates") for k, v in res["systems"].items() if "candidates" in v}
    res["same_candidates"] = len(set(cands.values())) <= 1
    res["candidates"] = cands
    peer_f1 = [v["default"]["f1"] for k, v in res["systems"].items()
               if k != "erblock" and "default" in v]
    if peer_f1:
        res["best_peer_f1"] = max(peer_f1)
        res["target_met"] = bool(res["systems"]["erblock"]["default"]["f1"] >= max(peer_f1))
    return res


def _log_system(log: Callable[[str], None], case: str, name: str, r: dict[str, Any]) -> None:
    d, b = r["default"], r.get("best", {})
    log(f"[{case}] {name}: candidates {r['candidates']:,}, PC {r['pair_completeness']:.4f}, "
        f"F1 default {d['f1']:.4f} (P {d['precision']:.4f} R {d['recall']:.4f}), "
        f"best {b.get('f1', float('nan')):.4f}, {r['seconds']:.1f} s")


def machine() -> dict[str, Any]:
    def version(mod: str) -> str | None:
        try:
            return __import__(mod).__version__
        except Exception:
            return None

    return {"cpu_count": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()],
            "python": sys.version.split()[0],
            "versions": {m: version(m) for m in ("erblock", "pandas", "numpy", "rapidfuzz",
                                                 "dask", "splink", "duckdb", "recordlinkage")},
            "git_commit": os.environ.get("ERBLOCK_BENCH_COMMIT") or _git_head()}


def _git_head() -> str | None:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def _g(x: Any) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:.3g}"


def render_markdown(res: dict[str, Any]) -> str:
    lines = ["## Quality: unsupervised Fellegi-Sunter against Splink 5 and recordlinkage", ""]
    lines += [
        "Same cleaned input and the *same candidate pairs* for the three systems (each pass's "
        "blocking key is computed once with erblock's key specs; Splink and recordlinkage "
        "block on those columns). Default decision: `match_probability >= 0.5` (erblock, "
        "Splink), ECM's own `fit_predict` (recordlinkage). Best threshold: the best F1 over "
        "every threshold on the system's score (match weight; ECM posterior). "
        "PC = pair completeness, RR = reduction ratio. "
        "Target: erblock's F1 at its default decision ≥ the better peer's.", ""]
    for name, r in res["datasets"].items():
        lines += [f"### {name} ({r['task']}, {' × '.join(f'{n:,}' for n in r['records'])} "
                  f"records, {r['true_pairs']:,} true pairs)", "",
                  f"Blocking: {r['blocking']}.", ""]
        lines += ["| system | candidates | PC | RR | P | R | **F1 default** | best F1 "
                  "(P / R, at) | seconds |", "|---|---|---|---|---|---|---|---|---|"]
        for sys_name, s in r["systems"].items():
            if "error" in s:
                lines.append(f"| {sys_name} | {s['error']} | | | | | | | |")
                continue
            d, b = s["default"], s.get("best", {})
            at = b.get("threshold_probability", b.get("threshold"))
            lines.append(
                f"| {sys_name} | {s['candidates']:,} | {_f(s['pair_completeness'])} | "
                f"{_f(s['reduction_ratio'], 4)} | {_f(d['precision'])} | {_f(d['recall'])} | "
                f"**{_f(d['f1'])}** | {_f(b.get('f1'))} ({_f(b.get('precision'))} / "
                f"{_f(b.get('recall'))}, p ≥ {_g(at)}) | {s['seconds']:.1f} |")
        lines.append("")
        if "target_met" in r:
            verdict = "met" if r["target_met"] else "**missed**"
            lines.append(f"Target {verdict}: erblock {_f(r['systems']['erblock']['default']['f1'])}"
                         f" vs best peer {_f(r['best_peer_f1'])}. Same candidate pairs in all "
                         f"systems: {'yes' if r['same_candidates'] else 'NO'}.")
            lines.append("")
        e = r["systems"]["erblock"]
        sc = e.get("scoring_seconds") or {}
        lines.append(
            f"erblock's {e['seconds']:.1f} s: planning {e['phases'].get('plan', 0):.1f} s "
            f"(strategy `auto`), compare + level histograms {sc.get('phase1', 0):.1f} s "
            f"(with u from {e['model']['n_u_pairs']:,} random pairs), EM fit "
            f"{sc.get('fit', 0):.2f} s ({len(e['model']['sessions'])} EM session(s), "
            f"{sum(s['n_iter'] for s in e['model']['sessions'])} iterations), scoring {sc.get('score', 0):.2f} s.")
        lines.append("")
        lines.append("Configurations: " + "; ".join(
            f"**{k}**: {v.get('config', '')}" for k, v in r["systems"].items()) + ".")
        lines.append("")
    m = res["machine"]
    lines.append(f"Machine: {m['cpu_count']} cores, load {m['load']}; versions "
                 + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + ".")
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="*", default=list(CASES), choices=list(CASES))
    ap.add_argument("--data", default=None, help="folder with abt_buy/ and historical_50k/")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="DBLP-ACM only, 200k random pairs for u (checks code paths)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--name", default="quality")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    datasets = ["dblp_acm"] if args.quick else args.datasets
    u_pairs = 200_000 if args.quick else None
    own = None
    if client is None:
        from distributed import Client, LocalCluster

        own = LocalCluster(n_workers=1, threads_per_worker=args.threads, processes=False,
                           dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(own)
    try:
        res: dict[str, Any] = {"machine": machine(), "quick": args.quick, "datasets": {}}
        for name in datasets:
            case = CASES[name](args.data)
            res["datasets"][name] = run_case(case, client, not args.no_peers, args.threads,
                                             u_pairs, print)
    finally:
        if own is not None:
            client.close()
            own.close()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(_jsonable(res), indent=2))
    (out / f"{args.name}.md").write_text(render_markdown(res))
    print(f"wrote {out / (args.name + '.json')} and .md")
    return res


if __name__ == "__main__":
    main()
