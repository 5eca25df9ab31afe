"""Multi-valued blocking (issue 12): balance of token blocking, token and MinHash blocking quality on Abt-Buy, pyJedAI's token blocking pipeline, time as the input grows.

Four parts, each on real runs (nothing here is tuned per data set; every number comes
from ``erblock.plan``, ``erblock.RunReport`` and ``erblock.evaluate``):

(a) **Balance.** ``key=tokens(column)`` (a record in one block per distinct word of its
    normalised text; a pair sharing several words is compared once) with
    ``strategy="pairrange"`` and, for contrast, ``"basic"``, at r = 100 reduce tasks, on
    Abt-Buy product names (link, 1,081 × 1,092) and on generated title-like records
    (``erblock.datasets.generate(20_000, kind="title", seed=TITLE_SEED)``, dedupe: title
    words drawn with Zipf weights, so a few words such as "query", "processing" or "the"
    are in a large share of the records; the most frequent words' record shares are
    stored). Per strategy: the plan's imbalance (planned max/mean comparisons per reduce
    task; the plan counts a pair once per block it shares), its comparisons and
    replication; then a real run (``compare={column: "jaro_winkler"}``, threshold 0.9 so
    the output stays small; every candidate pair is compared either way) and its *actual*
    comparisons imbalance (max/mean of ``RunReport.task_comparisons``, after the
    repeated pairs are skipped), the repeated pairs skipped and the imbalance by seconds.
(b) **Abt-Buy quality** of ``tokens("name")``, ``minhash("name", 0.5)`` and
    ``minhash("name", 0.3)``, one fixed recipe decided before any number was seen:
    the quality benchmark's documented recipe for Abt-Buy (``quality_cases.py``: name
    and description as ``text``, price ``numeric``), ``scoring="em"`` (erblock's
    unsupervised Fellegi-Sunter, defaults; default strategy and reduce tasks), decision
    ``match_probability >= 0.5``. Candidates, pair
    completeness (PC), reduction ratio (RR), precision / recall / F1 at the decision, the
    best F1 over any ``match_weight`` threshold (picked with the truth: an upper bound),
    the model's warnings, and the median wall time of the interleaved repeats.
(c) **pyJedAI** (when installed) on the same Abt-Buy names, its standard blocking
    pipeline as its tutorials show: ``Data`` → ``StandardBlocking`` (token blocking) →
    ``BlockPurging`` → ``BlockFiltering``, default parameters, on the ``name`` attribute
    (progress bars off). Its candidates are the distinct (Abt, Buy) pairs of the filtered
    blocks; PC and RR with ``erblock.evaluate``. Timed: the three steps (median of the
    repeats after one warm-up round; Ray, which pyJedAI 0.3 starts on first use, is
    started once before and timed on its own). Interleaved with erblock's lossless token
    blocking, timed three ways: ``erblock.link(..., key=tokens("name"),
    compare={"name": "jaro_winkler"})`` (every candidate pair out, compared: more work
    than pyJedAI's blocks), ``erblock.candidates(..., key=tokens("name"))`` (every
    candidate pair out, nothing compared) and ``erblock.plan(..., key=tokens("name"))``
    (blocking, profile and plan, no pairs). Target lines: erblock's PC at the closest candidate
    count to pyJedAI's (of the three keys of (b), and the K most similar pairs of the
    lossless run, K = pyJedAI's candidates), and erblock's lossless time over pyJedAI's
    lossy pipeline time, in the same run. Also timed: erblock's own JedAI pipeline,
    ``prune(tokens("name"), "auto", keep=0.8)`` (every candidate compared). Untimed:
    erblock's PC-vs-candidates curves of block filtering over :data:`KEEP_GRID`, without
    purging and after ``"auto"`` purging, each read at pyJedAI's candidate count.
(d) **As the input grows** (``tokens_scale.py``): pyJedAI's pipeline, ``erblock.plan``
    and ``erblock.candidates`` on the generated titles at 2,000 to 50,000 records.

The local cluster is ``distributed.LocalCluster(n_workers=2, threads_per_worker=1)``,
passed as ``client=``; erblock's default ``executor="auto"`` runs jobs of this size in the
calling process (docs/clusters.md, "Small jobs"), so (c) also times ``candidates`` with
``executor="cluster"``, and (a) plans and runs with it. The 1-minute load average is stored next
to every timed run (the machine is shared).

Run (one benchmark at a time; a few minutes on 2 cores)::

    python benchmarks/bench_tokens.py              # writes results/tokens.{json,md}
    python benchmarks/bench_tokens.py --quick      # smoke sizes (< 30 s)
    python benchmarks/bench_tokens.py --no-peers   # without pyJedAI

pyJedAI is a benchmark-only peer: see ``benchmarks/requirements.txt`` for how to install it
without its heavy (LLM / embedding) dependencies.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import logging
import os
import statistics
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # runinfo.py sits beside this script
    sys.path.insert(0, str(HERE))

import runinfo  # noqa: E402
import tokens_scale  # noqa: E402

import erblock  # noqa: E402
from erblock.blocking import minhash, prune, tokens  # noqa: E402

ROOT = HERE.parent
RESULTS = HERE / "results"
TITLE_SEED = 12  # no other benchmark draws generated titles with this seed
FULL = {"titles": 20_000, "n_tasks": 100, "abt_limit": None, "repeats": 5, "warmup": 1,
        "balance_threshold": 0.9, "wait_load_below": 1.0, "wait_seconds": 60,
        "scale_sizes": [2_000, 5_000, 20_000, 50_000], "scale_repeats": 3}
QUICK = {"titles": 1_000, "n_tasks": 20, "abt_limit": 150, "repeats": 1, "warmup": 0,
         "balance_threshold": 0.9, "wait_load_below": None, "wait_seconds": 0,
         "scale_sizes": [300], "scale_repeats": 1}
STRATEGIES = ("pairrange", "basic")
QUALITY_KEYS: dict[str, Callable[[], Any]] = {
    "tokens": lambda: tokens("name"),
    "minhash 0.5": lambda: minhash("name", 0.5),
    "minhash 0.3": lambda: minhash("name", 0.3),
}
KINDS = {"name": "text", "description": "text", "price": "numeric"}  #: quality_cases.py
RECIPE = ("erblock.link(abt, buy, key=KEY, compare={'name': 'text', 'description': 'text', "
          "'price': 'numeric'}, scoring='em') (the quality benchmark's Abt-Buy kinds), "
          "default strategy and reduce tasks; decision match_probability >= 0.5")
PYJEDAI_NOTE = ("Data(name) -> StandardBlocking() -> BlockPurging() -> BlockFiltering(), "
                "default parameters (smoothing_factor 1.025, ratio 0.8), tqdm off")

Log = Callable[[str], None]


# ------------------------------------------------------------------------------ data


def _data_dir(data: str | None) -> str | None:
    """``--data``, else ``$ERBLOCK_DATA``, else ``../shared/datasets`` beside the checkout."""
    if data is not None or os.environ.get("ERBLOCK_DATA"):
        return data
    shared = ROOT.parent / "shared" / "datasets"
    return str(shared) if shared.is_dir() else None


def abt_buy(data: str | None, limit: int | None) -> tuple[pd.DataFrame, pd.DataFrame,
                                                            pd.DataFrame]:
    """Abt and Buy product names (index ``id``) and the true pairs; with ``limit`` only the
    records of the first ``limit`` true pairs (quick runs)."""
    from erblock.datasets import load_abt_buy

    abt, buy, truth = load_abt_buy(_data_dir(data))
    abt, buy = abt[list(KINDS)], buy[list(KINDS)]
    if limit is not None:
        truth = truth.head(limit)
        abt = abt.loc[abt.index.isin(truth["left_id"])]
        buy = buy.loc[buy.index.isin(truth["right_id"])]
    return abt, buy, truth.reset_index(drop=True)


def titles(n: int, seed: int = TITLE_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Generated title-like records (dedupe) and their true pairs."""
    from erblock.datasets import generate

    df, truth = generate(n, kind="title", task="dedupe", seed=seed)
    return df[["title"]], truth


def word_shares(df: pd.DataFrame, column: str, top: int = 10,
                also: Sequence[str] = ("the",)) -> dict[str, Any]:
    """The ``top`` most frequent words of ``column`` (as ``tokens`` splits them) and the
    share of the records holding each (and of the words in ``also``)."""
    pos, keys = tokens(column).items(df)
    counts = pd.Series(np.asarray(keys, dtype=object)).value_counts()
    assert len(pos) == counts.sum()
    return {"top_words": [(str(w), float(c) / len(df)) for w, c in counts.head(top).items()],
            "shares": {w: float(counts.get(w, 0)) / len(df) for w in also},
            "distinct_words": len(counts), "words_per_record": len(pos) / len(df)}


# ------------------------------------------------------------------------- (a) balance


def _run(frames: Sequence[pd.DataFrame], **kw: Any) -> pd.DataFrame:
    if len(frames) == 2:
        return erblock.link(frames[0], frames[1], **kw)
    return erblock.dedupe(frames[0], **kw)


def _plan(frames: Sequence[pd.DataFrame], **kw: Any) -> Any:
    return erblock.plan(frames[0], frames[1] if len(frames) == 2 else None, **kw)


def _imb(x: np.ndarray) -> float:
    return float(x.max() / x.mean()) if len(x) and x.mean() > 0 else 1.0


def balance(frames: Sequence[pd.DataFrame], column: str, p: dict[str, Any], client: Any,
            log: Log) -> dict[str, Any]:
    """Planned and actual balance of ``tokens(column)`` under each of :data:`STRATEGIES`."""
    r = p["n_tasks"]
    out: dict[str, Any] = {}
    for strategy in STRATEGIES:
        key = tokens(column)
        load = runinfo.load()
        t0 = time.perf_counter()
        plan = _plan(frames, key=key, strategy=strategy, n_tasks=r, client=client,
                     executor="cluster")
        plan_s = time.perf_counter() - t0
        load_run = runinfo.load()
        t0 = time.perf_counter()
        pairs = _run(frames, key=key, compare={column: "jaro_winkler"},
                     threshold=p["balance_threshold"], strategy=strategy, n_tasks=r,
                     client=client, executor="cluster")
        run_s = time.perf_counter() - t0
        rep = erblock.RunReport.of(pairs)
        tc = rep.task_comparisons
        skipped = int(rep.prediction.get("repeat_pairs_skipped", 0))
        row = {
            "n_tasks": r, "plan_seconds": plan_s, "load_before_plan": load,
            "planned_comparisons": int(plan.total_comparisons),
            "planned_imbalance": float(plan.imbalance),
            "replication": float(plan.replication),
            "records_in": int(plan.records_in), "records_routed": int(plan.records_routed),
            "run_seconds": run_s, "load_before_run": load_run, "load_after_run": runinfo.load(),
            "performed_comparisons": int(tc.sum()),
            "repeat_pairs_skipped": skipped,
            "actual_imbalance": float(tc.max() / tc.mean()) if tc.mean() > 0 else 1.0,
            "imbalance_seconds": float(rep.imbalance_seconds),
            # similarity cells computed per task: what the time follows (a dense chunk
            # computes its redundant cells too; the batched small tasks skip them first)
            "imbalance_cells": _imb(np.array([t.cells for t in rep.tasks], dtype=float)),
            "cells": int(sum(t.cells for t in rep.tasks)),
            "task_comparisons_max": int(tc.max()), "task_comparisons_mean": float(tc.mean()),
            "task_comparisons_min": int(tc.min()),
            "kept_pairs": len(pairs), "phases": dict(rep.phases),
            "run_strategy": rep.strategy, "run_n_tasks": rep.n_tasks,
        }
        row["counts_match_plan"] = (row["performed_comparisons"] + skipped
                                    == row["planned_comparisons"])
        out[strategy] = row
        log(f"  {strategy:<9} planned {row['planned_comparisons']:,} imb "
            f"{row['planned_imbalance']:.3f} | performed {row['performed_comparisons']:,} "
            f"(+{skipped:,} skipped) imb {row['actual_imbalance']:.3f} | repl "
            f"{row['replication']:.2f} | run {run_s:.1f} s, load {load_run[0]}")
    return out


# ------------------------------------------------------------------------- (b) quality


def quality(abt: pd.DataFrame, buy: pd.DataFrame, truth: pd.DataFrame, repeats: int,
            client: Any, log: Log) -> dict[str, Any]:
    """The fixed recipe (:data:`RECIPE`) with each key of :data:`QUALITY_KEYS`,
    interleaved ``repeats`` times; quality from the first run."""
    from erblock.matchers.evaluate import pr_curve

    out: dict[str, Any] = {name: {"key": repr(make()), "runs": []}
                           for name, make in QUALITY_KEYS.items()}
    for i in range(repeats):
        for name, make in QUALITY_KEYS.items():
            res = out[name]
            load = runinfo.load()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                pairs = erblock.link(abt, buy, key=make(), compare=KINDS, scoring="em",
                                     client=client)
                seconds = time.perf_counter() - t0
            res["runs"].append({"seconds": seconds, "load_before": load,
                                "candidates": len(pairs)})
            if i:
                continue
            m = erblock.evaluate(pairs, truth, threshold=0.5, score_column="match_probability",
                                 n_left=len(abt), n_right=len(buy))
            res.update(candidates=int(m["n_candidates"]),
                       pair_completeness=m["pair_completeness"],
                       reduction_ratio=m["reduction_ratio"],
                       default={k: m[k] for k in ("precision", "recall", "f1", "tp", "fp",
                                                  "fn", "n_predicted")},
                       warnings=sorted({f"{w.category.__name__}: {w.message}"
                                        for w in caught}))
            curve = pr_curve(pairs, truth, score_column="match_weight", dedupe=False)
            if len(curve) and curve["f1"].notna().any():
                b = curve.loc[curve["f1"].idxmax()]
                res["best"] = {"f1": float(b["f1"]), "precision": float(b["precision"]),
                               "recall": float(b["recall"]),
                               "threshold_match_weight": float(b["threshold"])}
            rep = erblock.RunReport.of(pairs)
            res.update(strategy=rep.strategy, n_tasks=rep.n_tasks, phases=dict(rep.phases),
                       repeat_pairs_skipped=int(rep.prediction.get("repeat_pairs_skipped", 0)))
            if name == "tokens":  # kept for the top-K line of (c)
                res["_scored"] = pairs[["left_id", "right_id", "score"]].copy()
            d = res["default"]
            log(f"  {name:<12} candidates {res['candidates']:,} PC "
                f"{res['pair_completeness']:.4f} RR {res['reduction_ratio']:.4f} F1 "
                f"{d['f1']} (predicted {d['n_predicted']}) best "
                f"{res.get('best', {}).get('f1')} {seconds:.2f} s"
                + (f"; {res['warnings']}" if res["warnings"] else ""))
    for res in out.values():
        res["median_seconds"] = float(statistics.median(r["seconds"] for r in res["runs"]))
        res["same_candidates_every_run"] = len({r["candidates"] for r in res["runs"]}) == 1
    return out


# -------------------------------------------------------------------------- (c) pyJedAI


def pyjedai_version() -> str | None:
    return runinfo._version("pyjedai")


def _start_ray() -> tuple[bool, float]:
    """Start Ray as pyJedAI 0.3 does on first use (its own ``ray.init`` arguments); return
    whether this call started it and the seconds it took."""
    import ray

    if ray.is_initialized():
        return False, 0.0
    logging.getLogger("ray").setLevel(logging.ERROR)
    t0 = time.perf_counter()
    ray.init(log_to_driver=False, logging_level=logging.ERROR)
    return True, time.perf_counter() - t0


def pyjedai_data(abt: pd.DataFrame, buy: pd.DataFrame, truth: pd.DataFrame | None) -> Any:
    """pyJedAI's ``Data`` of the names, as its tutorials build it (text columns, ids as
    text, missing values as empty strings; the ground truth only when given)."""
    from pyjedai.datamodel import Data

    d1 = abt.reset_index()[["id", "name"]].fillna("").astype(str)
    d2 = buy.reset_index()[["id", "name"]].fillna("").astype(str)
    gt = None if truth is None else truth[["left_id", "right_id"]].astype(str)
    return Data(dataset_1=d1, id_column_name_1="id", dataset_2=d2, id_column_name_2="id",
                ground_truth=gt)


def pyjedai_with_data(abt: pd.DataFrame, buy: pd.DataFrame) -> dict[str, Any]:
    """pyJedAI's input preparation (``Data`` of the two frames, no ground truth: what
    erblock's own timings include of its input handling) and then the pipeline."""
    t0 = time.perf_counter()
    data = pyjedai_data(abt, buy, None)
    t1 = time.perf_counter()
    r = pyjedai_pipeline(data)
    r["data_seconds"], r["seconds"] = t1 - t0, r["seconds"] + (t1 - t0)
    return r


def pyjedai_pipeline(data: Any) -> dict[str, Any]:
    """StandardBlocking -> BlockPurging -> BlockFiltering with default parameters."""
    from pyjedai.block_building import StandardBlocking
    from pyjedai.block_cleaning import BlockFiltering, BlockPurging

    t0 = time.perf_counter()
    blocks = StandardBlocking().build_blocks(data, attributes_1=["name"],
                                             attributes_2=["name"], tqdm_disable=True)
    t1 = time.perf_counter()
    purged = BlockPurging().process(blocks, data, tqdm_disable=True)
    t2 = time.perf_counter()
    filtered = BlockFiltering().process(purged, data, tqdm_disable=True)
    t3 = time.perf_counter()
    return {"seconds": t3 - t0, "standard_blocking_seconds": t1 - t0,
            "purging_seconds": t2 - t1, "filtering_seconds": t3 - t2,
            "_blocks": {"standard": blocks, "filtered": filtered},
            "blocks": {"standard": len(blocks), "purged": len(purged),
                       "filtered": len(filtered)}}


def block_pairs(blocks: dict, abt: pd.DataFrame, buy: pd.DataFrame, limit: int
                ) -> tuple[pd.DataFrame, int]:
    """The distinct (Abt id, Buy id) pairs of pyJedAI's clean-clean blocks (entity ids are
    row positions: ``0 .. limit-1`` in Abt, ``limit + j`` for Buy's row ``j``), and the
    comparisons the blocks hold counting a pair once per block."""
    codes, total = [], 0
    n_right = len(buy)
    for b in blocks.values():
        left = np.fromiter(b.entities_D1, dtype=np.int64)
        right = np.fromiter(b.entities_D2, dtype=np.int64) - limit
        total += left.size * right.size
        codes.append((left[:, None] * n_right + right[None, :]).ravel())
    flat = np.unique(np.concatenate(codes)) if codes else np.zeros(0, np.int64)
    pairs = pd.DataFrame({"left_id": abt.index.to_numpy()[flat // n_right],
                          "right_id": buy.index.to_numpy()[flat % n_right]})
    return pairs, total


def peer_comparison(abt: pd.DataFrame, buy: pd.DataFrame, truth: pd.DataFrame,
                    repeats: int, warmup: int, client: Any, log: Log) -> dict[str, Any]:
    """pyJedAI's pipeline and erblock's lossless token blocking, interleaved: ``warmup``
    untimed rounds, then ``repeats`` timed rounds."""
    started, ray_s = _start_ray()
    try:
        t0 = time.perf_counter()
        data = pyjedai_data(abt, buy, truth)
        data_s = time.perf_counter() - t0
        limit = int(data.dataset_limit)
        key = tokens("name")
        systems: dict[str, Callable[[], dict[str, Any]]] = {
            "erblock_link": lambda: _timed(lambda: erblock.link(
                abt, buy, key=key, compare={"name": "jaro_winkler"}, client=client)),
            "erblock_plan": lambda: _timed(lambda: erblock.plan(abt, buy, key=key,
                                                                 client=client)),
            # the lossless candidate pairs themselves, nothing compared
            "erblock_candidates": lambda: _timed(lambda: erblock.candidates(
                abt, buy, key=key, client=client)),
            # the same on the cluster: what executor="auto" saves at this size
            "erblock_candidates_cluster": lambda: _timed(lambda: erblock.candidates(
                abt, buy, key=key, client=client, executor="cluster")),
            # erblock's own (lossy, opt-in) JedAI pipeline at pyJedAI's defaults
            "erblock_filtered": lambda: _timed(lambda: erblock.link(
                abt, buy, key=prune(key, "auto", keep=0.8),
                compare={"name": "jaro_winkler"}, client=client)),
            "pyjedai": lambda: pyjedai_pipeline(data),
            "pyjedai_with_data": lambda: pyjedai_with_data(abt, buy),
        }
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n in systems}
        cold: dict[str, float] = {}
        last: dict[str, Any] = {}
        for i in range(warmup + repeats):
            for name, fn in systems.items():
                load = runinfo.load()
                r = fn()
                last[name] = r.pop("_blocks") if "_blocks" in r else r.pop("_result")
                if i == 0:
                    cold[name] = r["seconds"]
                if i < warmup:
                    continue
                r["load_before"] = load
                runs[name].append(r)
                log(f"  {i + 1 - warmup}/{repeats} {name:<13} {r['seconds']:.3f} s  "
                    f"load {load[0]}")
    finally:
        if started:
            import ray

            ray.shutdown()
    med = {n: float(statistics.median(r["seconds"] for r in v)) for n, v in runs.items()}
    for step in ("standard_blocking", "purging", "filtering"):
        med[f"pyjedai_{step}"] = float(statistics.median(r[f"{step}_seconds"]
                                                         for r in runs["pyjedai"]))
    kw = {"n_left": len(abt), "n_right": len(buy)}
    out: dict[str, Any] = {"ray_start_seconds": ray_s, "ray_started_here": started,
                           "data_seconds": data_s, "cold_seconds": cold, "runs": runs,
                           "median_seconds": med, "pipeline": PYJEDAI_NOTE}
    for stage in ("standard", "filtered"):
        pairs, block_cmp = block_pairs(last["pyjedai"][stage], abt, buy, limit)
        m = erblock.evaluate(pairs, truth, **kw)
        out[f"pyjedai_{stage}"] = {"candidates": int(m["n_candidates"]),
                                   "block_comparisons": block_cmp,
                                   "pair_completeness": m["pair_completeness"],
                                   "reduction_ratio": m["reduction_ratio"]}
    m = erblock.evaluate(last["erblock_link"], truth, **kw)
    out["erblock_tokens"] = {"candidates": int(m["n_candidates"]),
                             "pair_completeness": m["pair_completeness"],
                             "reduction_ratio": m["reduction_ratio"]}
    assert len(last["erblock_candidates"]) == out["erblock_tokens"]["candidates"]
    m = erblock.evaluate(last["erblock_filtered"], truth, **kw)
    out["erblock_filtered"] = {"candidates": int(m["n_candidates"]),
                               "pair_completeness": m["pair_completeness"],
                               "reduction_ratio": m["reduction_ratio"]}
    out["erblock_plan_comparisons"] = int(last["erblock_plan"].total_comparisons)
    out["ratios"] = {"erblock_link_over_pyjedai": med["erblock_link"] / med["pyjedai"],
                     "erblock_plan_over_pyjedai": med["erblock_plan"] / med["pyjedai"],
                     "erblock_candidates_over_pyjedai": (med["erblock_candidates"]
                                                         / med["pyjedai"]),
                     "erblock_filtered_over_pyjedai": med["erblock_filtered"] / med["pyjedai"],
                     "erblock_candidates_cluster_over_pyjedai": (
                         med["erblock_candidates_cluster"] / med["pyjedai"]),
                     # pyJedAI with its input preparation, as erblock's times include its
                     "erblock_plan_over_pyjedai_with_data": (med["erblock_plan"]
                                                             / med["pyjedai_with_data"]),
                     "erblock_candidates_over_pyjedai_with_data": (
                         med["erblock_candidates"] / med["pyjedai_with_data"])}
    return out


#: erblock's block filtering settings of the PC-vs-candidates curve, fixed before any run:
#: shares of each record's blocks, then whole blocks
KEEP_GRID: tuple[float | int, ...] = (0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 3, 2, 1)


def filter_curve(abt: pd.DataFrame, buy: pd.DataFrame, truth: pd.DataFrame, client: Any,
                 target: int | None, purge: str | None = None) -> dict[str, Any]:
    """erblock's block filtering ``prune(tokens("name"), purge, keep=x)`` over
    :data:`KEEP_GRID` (untimed, one run each): candidates and PC per setting, and the PC
    at ``target`` candidates (pyJedAI's) interpolated linearly in log(candidates) between
    the two settings around it (None outside the curve)."""
    kw = {"n_left": len(abt), "n_right": len(buy)}
    points = []
    for keep in KEEP_GRID:
        pairs = erblock.link(abt, buy, key=prune(tokens("name"), purge, keep=keep),
                             compare={"name": "exact"}, client=client)
        m = erblock.evaluate(pairs, truth, **kw)
        points.append({"keep": keep, "candidates": int(m["n_candidates"]),
                       "pair_completeness": float(m["pair_completeness"])})
    out: dict[str, Any] = {"points": points, "target": target, "at_target": None,
                           "purge": purge}
    if target:
        pts = sorted(points, key=lambda q: q["candidates"])
        for lo, hi in zip(pts[:-1], pts[1:]):
            if lo["candidates"] <= target <= hi["candidates"] and hi["candidates"] > 0:
                span = np.log(hi["candidates"]) - np.log(max(lo["candidates"], 1))
                f = (np.log(target) - np.log(max(lo["candidates"], 1))) / span if span else 0.0
                out["at_target"] = float(lo["pair_completeness"] + f * (
                    hi["pair_completeness"] - lo["pair_completeness"]))
                out["between"] = [lo["keep"], hi["keep"]]
                break
    return out


def _timed(fn: Callable[[], Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    result = fn()
    return {"seconds": time.perf_counter() - t0, "_result": result}


def closest_to_peer(res: dict[str, Any]) -> None:
    """erblock's PC next to pyJedAI's at comparable candidate counts (in place): the key
    of (b) with the closest count (log scale), and the K most similar pairs of the
    lossless token run, K = pyJedAI's candidates."""
    peer, q = res.get("peer"), res.get("quality")
    if not peer or "pyjedai_filtered" not in peer or not q:
        return
    k = peer["pyjedai_filtered"]["candidates"]
    have = {n: v for n, v in q.items() if "candidates" in v and v["candidates"] > 0}
    if have and k > 0:
        name = min(have, key=lambda n: abs(np.log(have[n]["candidates"] / k)))
        peer["closest_key"] = {"key": name, "candidates": have[name]["candidates"],
                               "pair_completeness": have[name]["pair_completeness"],
                               "candidates_over_pyjedai": have[name]["candidates"] / k}
    scored = q.get("tokens", {}).get("_scored")
    if scored is not None and k > 0:
        top = scored.sort_values(["score", "left_id", "right_id"],
                                 ascending=[False, True, True]).head(k)
        m = erblock.evaluate(top, res["_abt_truth"], n_left=res["abt_buy"]["records"][0],
                             n_right=res["abt_buy"]["records"][1], candidates=top)
        peer["top_k"] = {"k": k, "candidates": int(m["n_candidates"]),
                         "pair_completeness": m["pair_completeness"],
                         "score": "mean similarity of name 'text' (tokens run of (b))"}


# ------------------------------------------------------------------------------ markdown


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def _loads(x: Any) -> list[float]:
    """Every 1-minute load recorded before a timed run (keys ``load_before*``)."""
    if isinstance(x, dict):
        return [y for k, v in x.items()
                for y in ([v[0]] if k.startswith("load_before") and v else _loads(v))]
    if isinstance(x, list):
        return [y for v in x for y in _loads(v)]
    return []


def render(res: dict[str, Any]) -> str:
    p, m = res["params"], res["machine"]
    loads = _loads(res)
    quick = " **Quick (smoke) sizes.**" if res["quick"] else ""
    lines = ["## Multi-valued blocking: token blocking's balance, token and MinHash "
             "quality, pyJedAI", "",
             f"Measured {res['date']} on {m.get('cpu_count')} cores ({m.get('cpu_model', '?')}), "
             f"{m.get('memory_gib')} GiB; local cluster of 2 workers × 1 thread. The machine "
             f"is shared: 1-minute load {res['load_start'][0]} at the start, "
             + (f"{min(loads)}–{max(loads)} before the timed runs, " if loads else "")
             + f"{res['load_end'][0]} at the end (2 = both cores busy; every run's load is "
             f"in the JSON)"
             + (f", after waiting {res['waited_seconds']:.0f} s for a quieter moment"
                if res.get("waited_seconds") else "") + f".{quick}", ""]
    lines += _render_balance(res, p)
    lines += _render_quality(res)
    lines += _render_peer(res)
    lines += tokens_scale.render(res.get("scale"))
    dirty = " (erblock/ had uncommitted changes)" if m.get("erblock_dirty") else ""
    lines += [f"Commit `{(m.get('git_commit') or '?')[:10]}`{dirty}; versions "
              + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + ".", ""]
    return "\n".join(lines)


def _render_balance(res: dict[str, Any], p: dict[str, Any]) -> list[str]:
    lines = [f"### (a) Balance of token blocking at r = {p['n_tasks']}", ""]
    t = res.get("titles_info")
    if t:
        top = dict(t["top_words"][:6])
        shares = ", ".join(f"{w} {s:.0%}" for w, s in
                           [*top.items(), *((w, s) for w, s in t["shares"].items()
                                            if w not in top)])
        lines += [f"`key=tokens(column)`, `strategy` as below, {p['n_tasks']} reduce tasks. "
                  f"Data: Abt-Buy product names (link) and {t['records']:,} generated titles "
                  f"(`erblock.datasets.generate(kind='title', seed={TITLE_SEED})`, dedupe; "
                  f"title words with Zipf weights, {t['words_per_record']:.1f} distinct words "
                  f"a record, {t['distinct_words']:,} in all; records holding the most "
                  f"frequent words: {shares}). *Planned* imbalance: the plan's max/mean comparisons per "
                  f"reduce task, counting a pair once per block it shares; *actual*: max/mean "
                  f"of the comparisons each task performed in a real run "
                  f"(`RunReport.task_comparisons`), after repeated pairs were skipped "
                  f"(compare Jaro-Winkler on the column, threshold "
                  f"{p['balance_threshold']}). Replication = records routed / records in.",
                  ""]
    lines += ["| data | strategy | planned comparisons | repeated pairs skipped | performed "
              "| planned imbalance | **actual imbalance** | imbalance by cells | imbalance "
              "by seconds | replication | run s |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for data, rows in res.get("balance", {}).items():
        if "error" in rows:
            lines.append(f"| {data} | error: {rows['error'][:150]} | | | | | | | | | |")
            continue
        for s, r in rows.items():
            ok = "" if r["counts_match_plan"] else " (≠ plan!)"
            lines.append(
                f"| {data} | {s} | {r['planned_comparisons']:,} | "
                f"{r['repeat_pairs_skipped']:,} | {r['performed_comparisons']:,}{ok} | "
                f"{r['planned_imbalance']:.3f} | **{r['actual_imbalance']:.3f}** | "
                f"{r.get('imbalance_cells', float('nan')):.3f} | "
                f"{r['imbalance_seconds']:.2f} | {r['replication']:.2f} | "
                f"{r['run_seconds']:.1f} |")
    lines.append("")
    pr = [(d, rows["pairrange"]) for d, rows in res.get("balance", {}).items()
          if "pairrange" in rows]
    if pr:
        lines += ["pairrange's plan is balanced over the comparisons *including* the pairs "
                  "that share several words; each such pair is compared once, in the block "
                  "of its smallest shared key, so the skipped pairs fall unevenly on the "
                  "tasks: actual imbalance "
                  + "; ".join(f"{d} {r['actual_imbalance']:.3f} (planned "
                              f"{r['planned_imbalance']:.3f}, "
                              f"{r['repeat_pairs_skipped'] / r['planned_comparisons']:.0%} of "
                              f"the planned comparisons skipped)" for d, r in pr) + ". The "
                  "time follows the similarity cells computed, not the pairs kept: a dense "
                  "chunk of a big block computes its redundant cells and masks them (so "
                  "those tasks are as busy as planned), while batches of small tasks drop "
                  "redundant pairs before comparing; the *imbalance by cells* column shows "
                  "the balance of that work.", ""]
    return lines


def _render_quality(res: dict[str, Any]) -> list[str]:
    q = res.get("quality")
    lines = ["### (b) Abt-Buy: token and MinHash blocking with the fixed recipe", ""]
    if not q:
        return lines + [f"Not run: {res.get('abt_buy', {}).get('error', 'no data')}.", ""]
    ab = res["abt_buy"]
    lines += [f"{ab['records'][0]:,} × {ab['records'][1]:,} records, {ab['true_pairs']:,} "
              f"true pairs. Recipe, fixed before any number was seen: `{RECIPE}`. "
              "PC = pair completeness, RR = reduction ratio; F1 at the default decision; "
              "best F1 = over any match-weight threshold, picked with the truth (an upper "
              f"bound). Seconds: median of {res['params']['repeats']} interleaved runs.", "",
              "| key | candidates | PC | RR | predicted | P | R | **F1** | best F1 | s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in q.items():
        if "error" in r:
            lines.append(f"| `{name}` | error: {r['error'][:150]} | | | | | | | | |")
            continue
        d = r["default"]
        lines.append(f"| `{name}` | {r['candidates']:,} | {_f(r['pair_completeness'])} | "
                     f"{_f(r['reduction_ratio'], 4)} | {d['n_predicted']:,} | "
                     f"{_f(d['precision'])} | {_f(d['recall'])} | **{_f(d['f1'])}** | "
                     f"{_f(r.get('best', {}).get('f1'))} | {r['median_seconds']:.2f} |")
    lines.append("")
    warned = sorted({w for r in q.values() for w in r.get("warnings", ())})
    if warned:
        lines += ["The model warned (every key): " + "; ".join(f"`{w}`" for w in warned)
                  + ". F1 “–” = no pair reached the decision (precision undefined).", ""]
    return lines


def _render_curve(curve: dict[str, Any], what: str, pj_f: dict[str, Any]) -> list[str]:
    """One PC-vs-candidates curve of erblock's block filtering, and its PC at pyJedAI's
    candidate count."""
    if not curve.get("points"):
        return []
    purge = repr(curve["purge"]) + ", " if curve.get("purge") else ""
    lines = [f"erblock's block filtering, `prune(tokens('name'), {purge}keep=x)` for a grid "
             "of x fixed before any run (shares of a record's blocks, then whole blocks; "
             f"{what}), candidates and PC:", "",
             "| keep | " + " | ".join(str(q["keep"]) for q in curve["points"]) + " |",
             "|---|" + "---:|" * len(curve["points"]),
             "| candidates | " + " | ".join(f"{q['candidates']:,}"
                                            for q in curve["points"]) + " |",
             "| PC | " + " | ".join(_f(q["pair_completeness"])
                                    for q in curve["points"]) + " |", ""]
    if curve.get("at_target") is not None:
        lines += [f"- **PC at pyJedAI's candidate count** ({curve['target']:,}, {what}), "
                  "interpolated in log(candidates) between keep = "
                  f"{curve['between'][0]} and {curve['between'][1]}: erblock "
                  f"**{_f(curve['at_target'])}** vs pyJedAI "
                  f"{_f(pj_f['pair_completeness'])}.", ""]
    return lines


def _render_peer(res: dict[str, Any]) -> list[str]:
    lines = ["### (c) pyJedAI's token blocking pipeline on the same names", ""]
    peer = res.get("peer")
    if not peer or "error" in peer or "skipped" in peer:
        why = (peer or {}).get("skipped") or (peer or {}).get("error") or "not run"
        return lines + [f"pyJedAI not measured: {why}", ""]
    med, reps = peer["median_seconds"], len(peer["runs"]["pyjedai"])
    pj_s, pj_f, eb = peer["pyjedai_standard"], peer["pyjedai_filtered"], peer["erblock_tokens"]
    lines += [f"pyJedAI {res['machine']['versions'].get('pyjedai')}: `{PYJEDAI_NOTE}` on "
              "`name`. Its candidates are the distinct pairs of its blocks (the blocks "
              "count a pair once per shared block: in brackets). Seconds: median of "
              f"{reps} interleaved rounds after {res['params']['warmup']} warm-up round(s) "
              "(the first round's times in the JSON as `cold_seconds`); "
              f"pyJedAI's `Data` took {peer['data_seconds']:.2f} s once and Ray, which "
              f"pyJedAI starts on first use, {peer['ray_start_seconds']:.1f} s once, "
              "neither included (nor is erblock's cluster start).", "",
              "| system | candidates | PC | RR | median s |", "|---|---:|---:|---:|---:|",
              f"| erblock `tokens('name')` lossless, `link` (every candidate compared, "
              f"Jaro-Winkler) | {eb['candidates']:,} | {_f(eb['pair_completeness'])} | "
              f"{_f(eb['reduction_ratio'], 4)} | {med['erblock_link']:.3f} |",
              f"| erblock `candidates(abt, buy, key=tokens('name'))` lossless (every "
              f"candidate pair out, nothing compared) | {eb['candidates']:,} | "
              f"{_f(eb['pair_completeness'])} | {_f(eb['reduction_ratio'], 4)} | "
              f"{med['erblock_candidates']:.3f} |",
              f"| the same `candidates` with `executor='cluster'` (on the two-process "
              f"cluster, not in this process) | {eb['candidates']:,} | "
              f"{_f(eb['pair_completeness'])} | {_f(eb['reduction_ratio'], 4)} | "
              f"{med['erblock_candidates_cluster']:.3f} |",
              f"| erblock `tokens('name')`, `plan` only (blocking, profile, plan; no pairs) | "
              f"({peer['erblock_plan_comparisons']:,}) | | | {med['erblock_plan']:.3f} |",
              f"| erblock `prune(tokens('name'), 'auto', keep=0.8)` (JedAI's purging and "
              f"filtering at pyJedAI's defaults; every candidate compared) | "
              f"{peer['erblock_filtered']['candidates']:,} | "
              f"{_f(peer['erblock_filtered']['pair_completeness'])} | "
              f"{_f(peer['erblock_filtered']['reduction_ratio'], 4)} | "
              f"{med['erblock_filtered']:.3f} |",
              f"| pyJedAI StandardBlocking (its lossless token blocks) | "
              f"{pj_s['candidates']:,} ({pj_s['block_comparisons']:,}) | "
              f"{_f(pj_s['pair_completeness'])} | {_f(pj_s['reduction_ratio'], 4)} | "
              f"{med['pyjedai_standard_blocking']:.3f}¹ |",
              f"| **pyJedAI StandardBlocking + BlockPurging + BlockFiltering** | "
              f"{pj_f['candidates']:,} ({pj_f['block_comparisons']:,}) | "
              f"{_f(pj_f['pair_completeness'])} | {_f(pj_f['reduction_ratio'], 4)} | "
              f"{med['pyjedai']:.3f} |",
              f"| pyJedAI `Data` of the two frames (its input preparation, no ground truth) "
              f"+ the same pipeline, timed in every round | {pj_f['candidates']:,} | "
              f"{_f(pj_f['pair_completeness'])} | {_f(pj_f['reduction_ratio'], 4)} | "
              f"{med['pyjedai_with_data']:.3f} |"]
    ck, tk = peer.get("closest_key"), peer.get("top_k")
    if ck:
        lines.append(f"| erblock `{ck['key']}` (the key of (b) closest in candidates) | "
                     f"{ck['candidates']:,} | {_f(ck['pair_completeness'])} | | |")
    if tk:
        lines.append(f"| erblock lossless tokens, then the {tk['k']:,} most similar pairs "
                     f"(after comparing all; not a blocking) | {tk['candidates']:,} | "
                     f"{_f(tk['pair_completeness'])} | | |")
    lines += ["", "¹ the StandardBlocking step of the pipeline alone (median); purging "
              f"{med['pyjedai_purging']:.3f} s, filtering {med['pyjedai_filtering']:.3f} s. "
              "BlockFiltering breaks ties between equal-size blocks in an order that "
              "depends on Python's string hash seed, so its candidates vary slightly from "
              "process to process (a few tens of pairs between PYTHONHASHSEED values; the "
              "same within a process).", ""]
    rat = peer["ratios"]
    for name, what in (("filter_curve", "no purging"),
                       ("purge_filter_curve", "after purging with `'auto'`")):
        lines += _render_curve(res.get(name) or {}, what, pj_f)
    if ck:
        lines.append(f"- **PC at a comparable candidate count**: erblock `{ck['key']}` "
                     f"{_f(ck['pair_completeness'])} with {ck['candidates']:,} candidates "
                     f"({ck['candidates_over_pyjedai']:.2f}× pyJedAI's) vs pyJedAI "
                     f"{_f(pj_f['pair_completeness'])} with {pj_f['candidates']:,}"
                     + (f"; at exactly {tk['k']:,} (erblock's most similar lossless "
                        f"candidates) {_f(tk['pair_completeness'])}" if tk else "")
                     + f". Lossless token blocking: erblock {_f(eb['pair_completeness'])} "
                     f"with {eb['candidates']:,}.")
    lines += [f"- **Time, same run**: erblock lossless `link` / pyJedAI's lossy pipeline = "
              f"**{rat['erblock_link_over_pyjedai']:.2f}** ({med['erblock_link']:.3f} s vs "
              f"{med['pyjedai']:.3f} s; erblock also compares every candidate pair); "
              f"erblock lossless `candidates` / pyJedAI = "
              f"{rat['erblock_candidates_over_pyjedai']:.2f} (on the cluster, "
              f"`executor='cluster'`: {rat['erblock_candidates_cluster_over_pyjedai']:.2f}); "
              f"erblock `plan` only / pyJedAI = {rat['erblock_plan_over_pyjedai']:.2f}. "
              "With pyJedAI's input preparation (`Data`) timed as well, as erblock's times "
              "include its own: `plan` / pyJedAI = "
              f"{rat['erblock_plan_over_pyjedai_with_data']:.2f}, `candidates` / pyJedAI = "
              f"{rat['erblock_candidates_over_pyjedai_with_data']:.2f} "
              f"({med['pyjedai_with_data']:.3f} s). "
              "At this size (2,173 records) every system's time is mostly fixed cost; "
              "(d) shows how it grows.", ""]
    return lines


# ------------------------------------------------------------------------------- main


def _error(e: BaseException) -> dict[str, Any]:
    return {"error": f"{type(e).__name__}: {e}".strip()[:500],
            "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__))[-3000:]}


def wait_for_load(below: float | None, max_seconds: float, poll: float = 5.0) -> float:
    """Sleep until the 1-minute load is below ``below`` (at most ``max_seconds``)."""
    t0 = time.perf_counter()
    while below is not None and os.getloadavg()[0] >= below \
            and time.perf_counter() - t0 < max_seconds:
        time.sleep(poll)
    return time.perf_counter() - t0


def peers_status(no_peers: bool) -> str | None:
    """None when pyJedAI can run, else why not."""
    if no_peers:
        return "--no-peers"
    if pyjedai_version() is None:
        return ("pyjedai is not installed (benchmark environment only: see "
                "benchmarks/requirements.txt)")
    try:
        import pyjedai.block_building  # noqa: F401
        import pyjedai.block_cleaning  # noqa: F401
        import ray  # noqa: F401
    except Exception as e:  # noqa: BLE001  (recorded: a broken install is a reason)
        return f"pyjedai does not import: {type(e).__name__}: {e}"
    return None


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke sizes (checks code paths)")
    ap.add_argument("--no-peers", action="store_true", help="without pyJedAI")
    ap.add_argument("--data", default=None, help="folder of the shared data sets")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="tokens")
    args = ap.parse_args(argv)
    p = dict(QUICK if args.quick else FULL)
    if args.repeats is not None:
        p["repeats"] = max(1, args.repeats)
    log: Log = (lambda s: None) if args.quick else (lambda s: print(s, flush=True))
    skip_peer = peers_status(args.no_peers)
    versions = (*runinfo.DEFAULT_PACKAGES, "pyjedai", "ray")
    waited = wait_for_load(p["wait_load_below"], p["wait_seconds"])
    res: dict[str, Any] = {
        "name": args.name, "quick": args.quick, "params": p, "recipe": RECIPE,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": runinfo.machine_info(versions), "waited_seconds": waited,
        "load_start": runinfo.load(), "balance": {},
    }
    own = None
    if client is None:
        from distributed import Client, LocalCluster

        own = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                           silence_logs=logging.ERROR)
        client = Client(own)
    t_start = time.perf_counter()
    try:
        try:
            abt, buy, truth = abt_buy(args.data, p["abt_limit"])
            res["abt_buy"] = {"records": [len(abt), len(buy)], "true_pairs": len(truth),
                              "limit": p["abt_limit"]}
            res["_abt_truth"] = truth
        except Exception as e:  # noqa: BLE001  (recorded; the generated part still runs)
            res["abt_buy"] = _error(e)
            abt = None
        df, _ = titles(p["titles"])
        res["titles_info"] = {"records": len(df), "seed": TITLE_SEED,
                              **word_shares(df, "title")}
        jobs: list[tuple[str, list[pd.DataFrame], str]] = [("generated titles", [df], "title")]
        if abt is not None:
            jobs.insert(0, ("Abt-Buy names", [abt, buy], "name"))
        for name, frames, column in jobs:
            log(f"(a) {name}")
            try:
                res["balance"][name] = balance(frames, column, p, client, log)
            except Exception as e:  # noqa: BLE001
                res["balance"][name] = _error(e)
        if abt is not None:
            log("(b) Abt-Buy quality")
            res["quality"] = quality(abt, buy, truth, p["repeats"], client, log)
            if skip_peer is None:
                log("(c) pyJedAI")
                try:
                    res["peer"] = peer_comparison(abt, buy, truth, p["repeats"], p["warmup"],
                                                  client, log)
                except Exception as e:  # noqa: BLE001
                    res["peer"] = _error(e)
            else:
                res["peer"] = {"skipped": skip_peer}
            closest_to_peer(res)
            peer_k = (res.get("peer") or {}).get("pyjedai_filtered", {}).get("candidates")
            log("(c) erblock's block filtering curves")
            for name, purge in (("filter_curve", None), ("purge_filter_curve", "auto")):
                try:
                    res[name] = filter_curve(abt, buy, truth, client, peer_k, purge)
                except Exception as e:  # noqa: BLE001
                    res[name] = _error(e)
        else:
            res["peer"] = {"skipped": "Abt-Buy could not be loaded"}
        if skip_peer is None:
            log("(d) as the input grows")
            try:
                res["scale"] = tokens_scale.scaling(p["scale_sizes"], p["scale_repeats"],
                                                    titles, client, runinfo.load, log)
            except Exception as e:  # noqa: BLE001
                res["scale"] = _error(e)
        else:
            res["scale"] = {"skipped": skip_peer}
    finally:
        if own is not None:
            client.close()
            own.close()
    res["seconds"] = time.perf_counter() - t_start
    res["load_end"] = runinfo.load()
    res.pop("_abt_truth", None)
    for r in (res.get("quality") or {}).values():
        r.pop("_scored", None)
    runinfo.write_results(args.out, args.name, res, render(res))
    log(f"wrote {args.out / (args.name + '.json')} and .md ({res['seconds']:.0f} s)")
    return res


if __name__ == "__main__":
    main()
