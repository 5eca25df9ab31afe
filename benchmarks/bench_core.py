"""Core benchmarks of issue 2: plan balance, throughput against the kernel, and Splink 5.

Run from the repository root (takes a few minutes on 2 cores)::

    pip install -e . && pip install -r benchmarks/requirements.txt
    python benchmarks/bench_core.py            # writes benchmarks/results/core.{json,md}
    python benchmarks/summarize.py             # rebuilds docs/benchmarks.md

Three measurements, all in one process and one run, so ratios compare like with like:

(a) **Plan imbalance** (planner only, no cluster): b = 100 blocks whose sizes follow
    n_k ∝ e^(−s·k), k = 0…b−1, for s ∈ {0, 0.25, 0.5, 0.75, 1}; n ≈ 100k records placed in
    m = 20 input partitions uniformly at random; r = 100 reduce tasks. Imbalance is
    max/mean comparisons per reduce task; replication is records routed / records in.
    Target: ``blocksplit`` ≤ 1.15 at every s.
(b) **Throughput**: a skewed dedupe job (person-like names, exponential block sizes, one
    block dominating) with ≥ 50 M candidate pairs, run by ``erblock.dedupe(strategy=
    "blocksplit")`` on erblock's default local cluster, and by the raw
    ``rapidfuzz.process.cdist`` kernel on the same strings and blocks (full square per
    block, 2 threads, float32, same score_cutoff). Both rates count *useful* pairs: the
    n(n−1)/2 pairs of each block, however many cells a method computes.
    Target: erblock ≥ 50 % of the kernel rate.
(c) **Splink 5 + DuckDB** on the same job: same blocking (the block column), one
    Jaro-Winkler comparison on the name with a level at the same threshold, m/u fixed so
    that ``threshold_match_probability=0.5`` keeps exactly the pairs with JW ≥ threshold.
    Target: erblock wall time ≤ 1/5 of Splink's prediction wall time.

The three throughput runs are interleaved (kernel, erblock, Splink, then again) ``repeats``
times and the medians are reported; the load average is recorded next to every run because
the machine may be shared.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT / "benchmarks") not in sys.path:  # runinfo.py sits beside this script
    sys.path.insert(0, str(ROOT / "benchmarks"))

import runinfo  # noqa: E402

#: Full-size parameters (the numbers in docs/benchmarks.md) and the tiny smoke-test ones.
FULL: dict[str, Any] = {
    "imbalance": {"n": 100_000, "b": 100, "m": 20, "r": 100,
                  "skews": [0.0, 0.25, 0.5, 0.75, 1.0], "seeds": [0, 1, 2]},
    "throughput": {"n": 40_000, "b": 100, "s": 0.5, "dup_rate": 0.05, "threshold": 0.9,
                   "strategy": "blocksplit", "threads": 2, "repeats": 3, "seed": 7,
                   "kernel_chunk_cells": 1 << 23},
}
QUICK: dict[str, Any] = {
    "imbalance": {"n": 5_000, "b": 100, "m": 20, "r": 100,
                  "skews": [0.0, 0.5, 1.0], "seeds": [0]},
    "throughput": {"n": 1_500, "b": 10, "s": 0.5, "dup_rate": 0.05, "threshold": 0.9,
                   "strategy": "blocksplit", "threads": 2, "repeats": 1, "seed": 7,
                   "kernel_chunk_cells": 1 << 16},
}

TARGETS = {"blocksplit_imbalance_max": 1.15, "erblock_over_kernel_min": 0.5,
           "erblock_over_splink_max": 0.2}


# -- (a) plan imbalance ----------------------------------------------------------------


def exponential_sizes(n: int, b: int, s: float) -> np.ndarray:
    """Block sizes n_k ∝ e^(−s·k) for k = 0…b−1 summing exactly to ``n``.

    Rounded by largest remainder so the skew is exactly the stated law up to one record.
    """
    w = np.exp(-s * np.arange(b, dtype=np.float64))
    exact = n * w / w.sum()
    sizes = np.floor(exact).astype(np.int64)
    short = n - int(sizes.sum())
    if short:
        sizes[np.argsort(-(exact - sizes), kind="stable")[:short]] += 1
    return sizes


def skewed_bdm(n: int, b: int, s: float, m: int, seed: int) -> Any:
    """A dedupe BDM: exponential block sizes, each record in one of ``m`` partitions at random.

    Block k has the id erblock gives the key ``str(k)``, so ``basic``'s hashing of blocks
    onto reduce tasks is the one a real run does."""
    from erblock.balancing.bdm import BDM, SRC_R
    from erblock.blocking.ids import hash_keys

    sizes = exponential_sizes(n, b, s)
    rng = np.random.default_rng(seed)
    counts = np.stack([rng.multinomial(int(k), np.full(m, 1.0 / m)) for k in sizes])
    block, part = np.nonzero(counts)
    # real block ids: erblock's 64-bit hash of the key text, as a run would compute them
    ids = hash_keys(pd.Series(np.arange(b).astype(str)))
    return BDM.from_arrays(ids[block], part, np.full(len(block), SRC_R), counts[block, part],
                           (m, 0), link=False)


def bench_imbalance(n: int, b: int, m: int, r: int, skews: Sequence[float],
                    seeds: Sequence[int]) -> list[dict[str, Any]]:
    """Plan ``basic`` and ``blocksplit`` on exponential skews; one row per (s, strategy, seed)."""
    from erblock.balancing.strategies import STRATEGIES

    rows = []
    for s in skews:
        for seed in seeds:
            bdm = skewed_bdm(n, b, s, m, seed)
            _, comps = bdm.comparisons()
            for name in ("basic", "blocksplit"):
                t0 = time.perf_counter()
                plan = STRATEGIES[name].make(bdm, r)
                seconds = time.perf_counter() - t0
                rows.append({
                    "s": s, "seed": seed, "strategy": name,
                    "records": bdm.n_records,
                    "total_comparisons": plan.total_comparisons,
                    "largest_block_share": float(comps.max() / comps.sum()),
                    "imbalance": plan.imbalance,
                    "max_load": int(plan.loads.max()),
                    "mean_load": float(plan.loads.mean()),
                    "replication": plan.replication,
                    "match_tasks": len(plan.match),
                    "plan_seconds": seconds,
                })
    return rows


def imbalance_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worst case over seeds per skew: one row per s with both strategies side by side."""
    out = []
    for s in sorted({r["s"] for r in rows}):
        sel = [r for r in rows if r["s"] == s]
        basic = [r for r in sel if r["strategy"] == "basic"]
        split = [r for r in sel if r["strategy"] == "blocksplit"]
        out.append({
            "s": s,
            "total_comparisons": sel[0]["total_comparisons"],
            "largest_block_share": sel[0]["largest_block_share"],
            "basic_imbalance": max(r["imbalance"] for r in basic),
            "blocksplit_imbalance": max(r["imbalance"] for r in split),
            "blocksplit_replication": max(r["replication"] for r in split),
            "blocksplit_match_tasks": max(r["match_tasks"] for r in split),
            "blocksplit_plan_seconds": max(r["plan_seconds"] for r in split),
        })
    return out


# -- the skewed dedupe job ---------------------------------------------------------------

_SYLLABLES = np.array([
    "an", "ber", "ca", "dor", "el", "fi", "gan", "ha", "is", "jo", "ka", "lin", "mo", "ne",
    "or", "pa", "qui", "ra", "so", "ta", "ul", "vi", "wen", "xa", "yo", "ze", "ston", "son",
    "ley", "mar", "ric", "ter", "bel", "dan", "ov", "ski", "al", "bro", "chen", "da", "ed",
    "fos", "gu", "hal", "ina", "jen", "kle", "lo", "mi", "nor", "os", "pet", "rey", "sa",
    "tho", "ur", "van", "wil", "yan", "zo",
])


def _names_from(syl: np.ndarray, n_first: np.ndarray, n_last: np.ndarray) -> np.ndarray:
    """'first last' strings from a syllable-index matrix (3 first + 3 last columns)."""
    parts = _SYLLABLES[syl]
    pos = np.arange(3)
    parts[:, :3][pos[None, :] >= n_first[:, None]] = ""
    parts[:, 3:][pos[None, :] >= n_last[:, None]] = ""
    first = np.strings.add(np.strings.add(parts[:, 0], parts[:, 1]), parts[:, 2])
    last = np.strings.add(np.strings.add(parts[:, 3], parts[:, 4]), parts[:, 5])
    return np.strings.add(np.strings.add(first, " "), last)


def skewed_job(n: int, b: int, s: float, dup_rate: float, seed: int) -> pd.DataFrame:
    """``n`` person-like names in ``b`` blocks of exponential sizes (block 0 the largest).

    A share ``dup_rate`` of the records are near-duplicates of another record of the same
    block (one syllable of the name replaced), so a high Jaro-Winkler threshold keeps the
    duplicates and few other pairs. Records come in random order, so every block spreads
    over all input partitions. Columns: ``name`` (str, 9–20 characters), ``block`` (int64).
    """
    rng = np.random.default_rng(seed)
    sizes = exponential_sizes(n, b, s)
    block = np.repeat(np.arange(b, dtype=np.int64), sizes)
    syl = rng.integers(0, len(_SYLLABLES), size=(n, 6))
    n_first = rng.integers(2, 4, size=n)
    n_last = rng.integers(2, 4, size=n)
    # near-duplicates: copy a random record of the same block, replace one syllable
    dup = np.flatnonzero(rng.random(n) < dup_rate)
    lo = np.repeat(np.cumsum(sizes) - sizes, sizes)
    src = lo[dup] + (rng.random(len(dup)) * sizes[block[dup]]).astype(np.int64)
    syl[dup], n_first[dup], n_last[dup] = syl[src], n_first[src], n_last[src]
    col = rng.integers(0, 6, size=len(dup))
    col = np.where(col < 3, col % n_first[dup], 3 + (col - 3) % n_last[dup])
    syl[dup, col] = rng.integers(0, len(_SYLLABLES), size=len(dup))
    names = _names_from(syl, n_first, n_last)
    order = rng.permutation(n)
    return pd.DataFrame({"name": pd.array(names[order], dtype="str"), "block": block[order]})


def job_pairs(df: pd.DataFrame) -> int:
    """Candidate pairs of a dedupe job blocked on ``block``: Σ n_k(n_k − 1)/2."""
    n = df["block"].value_counts().to_numpy(np.int64)
    return int((n * (n - 1) // 2).sum())


# -- (b) the raw kernel ------------------------------------------------------------------


def run_kernel(df: pd.DataFrame, threshold: float, threads: int, chunk_cells: int,
               triangle: bool = False) -> dict[str, Any]:
    """``rapidfuzz.process.cdist`` Jaro-Winkler over every block, block by block.

    ``triangle=False`` (the kernel of issue 2): the full n × n square of each block, in row
    chunks of about ``chunk_cells`` cells; JW is symmetric with 1 on the diagonal, so pairs
    kept = (cells ≥ threshold − n) / 2. ``triangle=True``: a row chunk [a, b) is compared
    only with columns a + 1 … n − 1 (the staircase erblock computes for a triangle), and
    kept pairs are counted above the diagonal. Either way ``pairs_per_second`` counts the
    useful pairs n(n − 1)/2 per block; ``cells`` is what was actually computed.
    """
    from rapidfuzz.distance import JaroWinkler
    from rapidfuzz.process import cdist

    names = df["name"].to_numpy(dtype=object)
    order = np.argsort(df["block"].to_numpy(), kind="stable")
    blocks = df["block"].to_numpy()[order]
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    ends = np.r_[starts[1:], len(blocks)]
    cut = np.float32(threshold)
    cells = useful = kept = 0
    t0 = time.perf_counter()
    for lo, hi in zip(starts.tolist(), ends.tolist()):
        vals = names[order[lo:hi]].tolist()
        k = hi - lo
        step = max(1, chunk_cells // k)
        hits = 0
        for a in range(0, k, step):
            c0 = a + 1 if triangle else 0
            if c0 >= k:
                break
            mat = cdist(vals[a:a + step], vals[c0:], scorer=JaroWinkler.normalized_similarity,
                        dtype=np.float32, workers=threads, score_cutoff=threshold)
            cells += mat.size
            if triangle:  # column c0 + j is after row a + i  <=>  j >= i
                hits += int(np.count_nonzero(np.triu(mat >= cut)))
            else:
                hits += int(np.count_nonzero(mat >= cut))
        useful += k * (k - 1) // 2
        kept += hits if triangle else (hits - k) // 2
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "useful_pairs": useful, "cells": cells, "kept_pairs": kept,
            "pairs_per_second": useful / seconds, "cells_per_second": cells / seconds}


# -- (b) erblock -------------------------------------------------------------------------


def run_erblock(df: pd.DataFrame, threshold: float, strategy: str, client: Any = None
                ) -> dict[str, Any]:
    """One ``erblock.dedupe`` call, timed as a whole, with its run report."""
    import erblock

    t0 = time.perf_counter()
    pairs = erblock.dedupe(df, key="block", compare={"name": "jaro_winkler"},
                           threshold=threshold, strategy=strategy, client=client)
    seconds = time.perf_counter() - t0
    report = erblock.RunReport.of(pairs)
    comparisons = report.comparisons
    return {
        "seconds": seconds,
        "comparisons": comparisons,
        "kept_pairs": len(pairs),
        "pairs_per_second": comparisons / seconds,
        "phases": dict(report.phases),
        "n_tasks": report.n_tasks,
        "input_partitions": report.settings.get("input_partitions"),
        "imbalance_comparisons": report.imbalance_comparisons,
        "imbalance_seconds": report.imbalance_seconds,
        "task_seconds_sum": float(report.task_seconds.sum()),
        "task_seconds_max": float(report.task_seconds.max()),
        "replication": report.plan.get("replication"),
        "match_tasks": report.plan.get("match_tasks"),
    }


# -- (c) Splink 5 + DuckDB ---------------------------------------------------------------

#: m/u per non-null level of JaroWinklerAtThresholds(name, [t]): exact, JW ≥ t, else. With
#: the prior below, both similar levels have match probability > 0.5 and "else" < 0.001, so
#: ``threshold_match_probability=0.5`` keeps exactly the pairs with JW ≥ t (as erblock's
#: ``threshold=t`` does).
SPLINK_M = [0.6, 0.35, 0.05]
SPLINK_U = [0.0001, 0.001, 0.9989]
SPLINK_PRIOR = 0.01


def splink_available() -> bool:
    """Whether Splink (≥ 5) and DuckDB can be imported in this environment."""
    try:
        import duckdb  # noqa: F401
        import splink
    except ImportError:
        return False
    return int(splink.__version__.split(".")[0]) >= 5


def _splink_settings(threshold: float) -> Any:
    import splink.comparison_library as cl
    from splink import SettingsCreator, block_on

    name = cl.JaroWinklerAtThresholds("name", [threshold]).configure(
        m_probabilities=SPLINK_M, u_probabilities=SPLINK_U)
    return SettingsCreator(
        link_type="dedupe_only",
        unique_id_column_name="unique_id",
        blocking_rules_to_generate_predictions=[block_on("block")],
        comparisons=[name],
        probability_two_random_records_match=SPLINK_PRIOR,
        retain_matching_columns=False,
        retain_intermediate_calculation_columns=False,
    )


def _splink_linker(df: pd.DataFrame, threshold: float, threads: int) -> Any:
    import duckdb
    from splink import DuckDBAPI, Linker

    con = duckdb.connect(":memory:")
    con.execute(f"SET threads TO {int(threads)}")
    con.execute("SET enable_progress_bar = false")
    db_api = DuckDBAPI(connection=con)
    table = db_api.register(df.rename_axis("unique_id").reset_index())
    return Linker(table, _splink_settings(threshold), log_level=logging.WARNING)


def run_splink(df: pd.DataFrame, threshold: float, threads: int) -> dict[str, Any]:
    """Splink 5 on DuckDB: setup (register + Linker), then predict (blocking + comparison +
    scoring + threshold) timed alone, then fetching the kept pairs into pandas."""
    t0 = time.perf_counter()
    linker = _splink_linker(df, threshold, threads)
    t1 = time.perf_counter()
    result = linker.inference.predict(threshold_match_probability=0.5, warning_mode="never")
    t2 = time.perf_counter()
    kept = result.as_pandas_dataframe()
    t3 = time.perf_counter()
    return {
        "setup_seconds": t1 - t0,
        "predict_seconds": t2 - t1,
        "fetch_seconds": t3 - t2,
        "seconds": t3 - t0,
        "kept_pairs": len(kept),
        "pairs_per_second": job_pairs(df) / (t2 - t1),
    }


def splink_training_seconds(df: pd.DataFrame, threshold: float, threads: int,
                            max_pairs: float) -> float:
    """Wall time of ``estimate_u_using_random_sampling(max_pairs)`` on a separate linker.

    Reported for context only: the timed predictions use fixed m/u (see ``SPLINK_M``)."""
    linker = _splink_linker(df, threshold, threads)
    t0 = time.perf_counter()
    linker.training.estimate_u_using_random_sampling(max_pairs=max_pairs)
    return time.perf_counter() - t0


# -- orchestration -----------------------------------------------------------------------


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def wait_for_load(below: float, max_seconds: float, poll: float = 5.0) -> float:
    """Sleep until the 1-minute load average is below ``below`` (at most ``max_seconds``);
    return the seconds waited."""
    t0 = time.perf_counter()
    while os.getloadavg()[0] >= below and time.perf_counter() - t0 < max_seconds:
        time.sleep(poll)
    return time.perf_counter() - t0


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def bench_throughput(n: int, b: int, s: float, dup_rate: float, threshold: float,
                     strategy: str, threads: int, repeats: int, seed: int,
                     kernel_chunk_cells: int, splink: bool = True, client: Any = None,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    """(b) and (c): kernel, erblock and Splink on one skewed job, interleaved ``repeats``
    times; medians and every run."""
    df = skewed_job(n, b, s, dup_rate, seed)
    pairs = job_pairs(df)
    sizes = df["block"].value_counts().to_numpy()
    lengths = df["name"].str.len()
    job = {"records": len(df), "blocks": int(df["block"].nunique()), "candidate_pairs": pairs,
           "largest_block": int(sizes.max()),
           "largest_block_pair_share": float(sizes.max() * (sizes.max() - 1) / 2 / pairs),
           "name_length_mean": float(lengths.mean()), "name_length_min": int(lengths.min()),
           "name_length_max": int(lengths.max())}
    log(f"job: {len(df):,} records, {pairs:,} candidate pairs, largest block "
        f"{job['largest_block']:,} records ({job['largest_block_pair_share']:.0%} of pairs)")

    import erblock

    t0 = time.perf_counter()  # start the cluster outside the timed runs
    erblock.dedupe(df.head(50), key="block", compare={"name": "jaro_winkler"},
                   threshold=threshold, strategy=strategy, client=client)
    warmup = time.perf_counter() - t0
    use_splink = splink and splink_available()
    names = ("kernel", "kernel_triangle", "erblock", "splink")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for i in range(repeats):
        for name in names:
            if name == "splink" and not use_splink:
                continue
            load = _load()
            if name.startswith("kernel"):
                res = run_kernel(df, threshold, threads, kernel_chunk_cells,
                                 triangle=name == "kernel_triangle")
            elif name == "erblock":
                res = run_erblock(df, threshold, strategy, client)
            else:
                res = run_splink(df, threshold, threads)
            res["load_before"] = load
            res["load_after"] = _load()
            runs[name].append(res)
            log(f"  run {i + 1}/{repeats} {name:<15} {res['seconds']:7.2f} s "
                f"{res['pairs_per_second'] / 1e6:7.1f} M pairs/s  kept {res['kept_pairs']:,}  "
                f"load {load[0]}")
    out: dict[str, Any] = {"job": job, "warmup_seconds": warmup, "runs": runs}
    k_rate, e_rate = _median(runs["kernel"], "pairs_per_second"), _median(runs["erblock"],
                                                                          "pairs_per_second")
    e_wall = _median(runs["erblock"], "seconds")
    out["median"] = {
        "kernel_seconds": _median(runs["kernel"], "seconds"),
        "kernel_pairs_per_second": k_rate,
        "kernel_cells_per_second": _median(runs["kernel"], "cells_per_second"),
        "kernel_triangle_seconds": _median(runs["kernel_triangle"], "seconds"),
        "kernel_triangle_pairs_per_second": _median(runs["kernel_triangle"],
                                                    "pairs_per_second"),
        "kernel_triangle_cells_per_second": _median(runs["kernel_triangle"],
                                                    "cells_per_second"),
        "erblock_seconds": e_wall,
        "erblock_pairs_per_second": e_rate,
        "erblock_over_kernel": e_rate / k_rate,
        "erblock_over_kernel_triangle": e_rate / _median(runs["kernel_triangle"],
                                                         "pairs_per_second"),
        "erblock_imbalance_seconds": _median(runs["erblock"], "imbalance_seconds"),
        "erblock_imbalance_comparisons": _median(runs["erblock"], "imbalance_comparisons"),
        "erblock_phases": {k: float(statistics.median(r["phases"][k] for r in runs["erblock"]))
                           for k in runs["erblock"][0]["phases"]},
    }
    if use_splink:
        sp_pred = _median(runs["splink"], "predict_seconds")
        sp_all = _median(runs["splink"], "seconds")
        out["median"].update({
            "splink_predict_seconds": sp_pred,
            "splink_seconds": sp_all,
            "splink_setup_seconds": _median(runs["splink"], "setup_seconds"),
            "splink_pairs_per_second": _median(runs["splink"], "pairs_per_second"),
            "erblock_over_splink_predict": e_wall / sp_pred,
            "erblock_over_splink_total": e_wall / sp_all,
        })
        out["splink_u_training_seconds"] = splink_training_seconds(
            df, threshold, threads, max_pairs=1e5)
    kept = {k: sorted({r["kept_pairs"] for r in v}) for k, v in runs.items() if v}
    out["kept_pairs"] = kept
    return out


def machine_info() -> dict[str, Any]:
    """Cores, memory, CPU model, versions, the commit measured and the load (runinfo.py)."""
    import erblock

    info = runinfo.machine_info((*runinfo.DEFAULT_PACKAGES, "splink", "duckdb"))
    info["erblock_path"] = str(Path(erblock.__file__).resolve().parent)
    return info


def _fmt_pairs(x: float) -> str:
    return f"{x / 1e6:,.1f} M"


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _load_sentence(res: dict[str, Any]) -> str:
    runs = [r for v in res["throughput"]["runs"].values() for r in v]
    loads = [x for r in runs for x in (r["load_before"][0], r["load_after"][0])]
    text = "The machine is shared: 1-minute load average "
    if loads:
        text += f"during the timed runs {min(loads)}–{max(loads)} (2 = both cores busy)"
    if res.get("waited_seconds") is not None:
        text += f", after waiting {res['waited_seconds']:.0f} s for a quiet moment"
    return text + "."


def render_markdown(res: dict[str, Any]) -> str:
    """The ``core.md`` fragment: the three tables and the targets."""
    p = res["params"]
    pa_, pb = p["imbalance"], p["throughput"]
    lines = ["## Core: balance, throughput against the kernel, Splink 5", ""]
    lines.append(f"Measured {res['date']} on {res['machine'].get('cpu_count')} cores "
                 f"({res['machine'].get('cpu_model', 'unknown CPU')}), "
                 f"{res['machine'].get('memory_gib', '?')} GiB; erblock "
                 f"{res['machine']['versions'].get('erblock')} "
                 f"(commit {(res['machine'].get('git_commit') or '?')[:10]}, "
                 f"{res['machine'].get('erblock_source', '?')}), dask "
                 f"{res['machine']['versions'].get('dask')}, rapidfuzz "
                 f"{res['machine']['versions'].get('rapidfuzz')}, splink "
                 f"{res['machine']['versions'].get('splink')}, duckdb "
                 f"{res['machine']['versions'].get('duckdb')}. {_load_sentence(res)}"
                 + (" **Quick (smoke) sizes, not the real figures.**" if res["quick"] else ""))
    lines += ["", "### (a) Plan imbalance on exponential skew", ""]
    lines.append(f"b = {pa_['b']} blocks, block k ∝ e^(−s·k), n = {pa_['n']:,} records in "
                 f"m = {pa_['m']} input partitions at random, r = {pa_['r']} reduce tasks; "
                 f"imbalance = max/mean comparisons per reduce task (worst of "
                 f"{len(pa_['seeds'])} random placements); replication = records routed / "
                 f"records in. Target: blocksplit ≤ {TARGETS['blocksplit_imbalance_max']}.")
    lines += ["", "| s | comparisons | largest block | basic | blocksplit | replication "
              "| match tasks |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in res["imbalance"]["table"]:
        lines.append(f"| {row['s']:g} | {row['total_comparisons']:,} | "
                     f"{row['largest_block_share']:.0%} | {row['basic_imbalance']:.2f} | "
                     f"{row['blocksplit_imbalance']:.3f} | {row['blocksplit_replication']:.2f} | "
                     f"{row['blocksplit_match_tasks']:,} |")
    worst = max(r["blocksplit_imbalance"] for r in res["imbalance"]["table"])
    lines += ["", f"Worst blocksplit imbalance {worst:.3f}: target "
              f"{_verdict(worst <= TARGETS['blocksplit_imbalance_max'])}."]

    t = res["throughput"]
    j, med = t["job"], t["median"]
    lines += ["", "### (b) Throughput against the raw kernel", ""]
    lines.append(
        f"Dedupe of {j['records']:,} person-like names ({j['name_length_min']}–"
        f"{j['name_length_max']} characters, mean {j['name_length_mean']:.1f}) in "
        f"b = {pb['b']} blocks of exponential sizes, n_k ∝ e^(−{pb['s']}·k) ({j['blocks']} "
        f"non-empty: the tail rounds to zero records; the largest block has "
        f"{j['largest_block']:,} records and {j['largest_block_pair_share']:.0%} of the "
        f"pairs): {j['candidate_pairs']:,} candidate pairs, one Jaro-Winkler comparison on "
        f"the name, threshold {pb['threshold']}. erblock: `erblock.dedupe(df, key='block', "
        f"compare={{'name': 'jaro_winkler'}}, threshold={pb['threshold']}, "
        f"strategy='{pb['strategy']}')` on its default local cluster ({pb['threads']} "
        f"threads), wall time of the whole call (the cluster is started before, "
        f"{t['warmup_seconds']:.1f} s). Kernel: `rapidfuzz.process.cdist` (Jaro-Winkler, "
        f"float32, workers={pb['threads']}, score_cutoff={pb['threshold']}) block by block "
        f"over the upper triangle of each block (each useful pair once: the fair baseline), "
        f"in row chunks of {pb['kernel_chunk_cells']:,} cells, and over the full n × n "
        f"square (the kernel first used here, which computes every pair twice). **All rates count useful pairs, n(n−1)/2 per block**, whatever a method "
        f"computes for them (the full square computes n²). Median of {pb['repeats']} "
        f"interleaved runs (kernel, triangle kernel, erblock, Splink, repeated).")
    lines += ["", "| | wall s | useful pairs/s | kept pairs |", "|---|---:|---:|---:|"]
    kept = t["kept_pairs"]
    lines.append(f"| cdist kernel, upper triangle (fair baseline) | {med['kernel_triangle_seconds']:.2f} | "
                 f"{_fmt_pairs(med['kernel_triangle_pairs_per_second'])} | "
                 f"{', '.join(f'{k:,}' for k in kept['kernel_triangle'])} |")
    lines.append(f"| cdist kernel, full square | {med['kernel_seconds']:.2f} | "
                 f"{_fmt_pairs(med['kernel_pairs_per_second'])} | "
                 f"{', '.join(f'{k:,}' for k in kept['kernel'])} |")
    lines.append(f"| erblock {pb['strategy']} | {med['erblock_seconds']:.2f} | "
                 f"{_fmt_pairs(med['erblock_pairs_per_second'])} | "
                 f"{', '.join(f'{k:,}' for k in kept['erblock'])} |")
    if "splink_predict_seconds" in med:
        lines.append(f"| Splink predict | {med['splink_predict_seconds']:.2f} | "
                     f"{_fmt_pairs(med['splink_pairs_per_second'])} | "
                     f"{', '.join(f'{k:,}' for k in kept['splink'])} |")
    ph = ", ".join(f"{k} {v:.2f} s" for k, v in med["erblock_phases"].items())
    ratio = med["erblock_over_kernel_triangle"]
    lines += ["", f"erblock / upper-triangle kernel = **{ratio:.2f}** (target ≥ "
              f"{TARGETS['erblock_over_kernel_min']}: "
              f"{_verdict(ratio >= TARGETS['erblock_over_kernel_min'])}): this is the fair "
              f"baseline, a kernel that computes each useful pair once (the same staircase "
              f"of row chunks erblock computes). Against the full-square kernel, which "
              f"computes {_fmt_pairs(med['kernel_cells_per_second'])} cells/s and so wastes "
              f"half of them on a dedupe, the ratio would read "
              f"{med['erblock_over_kernel']:.2f}; that figure flatters erblock. erblock "
              f"phases: {ph}; imbalance on its {t['runs']['erblock'][0]['n_tasks']} reduce "
              f"tasks {med['erblock_imbalance_comparisons']:.2f} by comparisons, "
              f"{med['erblock_imbalance_seconds']:.2f} by seconds."]
    lines += ["", "### (c) Splink 5 with DuckDB on the same job", ""]
    if "splink_predict_seconds" in med:
        r_pred, r_all = med["erblock_over_splink_predict"], med["erblock_over_splink_total"]
        lines.append(
            "Same data, `block_on('block')`, one `JaroWinklerAtThresholds('name', "
            f"[{pb['threshold']}])` comparison with fixed m/u chosen so that "
            "`predict(threshold_match_probability=0.5)` keeps exactly the pairs with "
            f"Jaro-Winkler ≥ {pb['threshold']} (DuckDB's `jaro_winkler_similarity`); DuckDB "
            f"with {pb['threads']} threads, a fresh in-memory database per run. No training "
            f"in the timed runs (m/u fixed); for context `estimate_u_using_random_sampling("
            f"max_pairs=1e5)` took {t['splink_u_training_seconds']:.2f} s once.")
        lines += ["", "| Splink phase | median s |", "|---|---:|",
                  f"| register + Linker | {med['splink_setup_seconds']:.2f} |",
                  f"| predict (blocking + comparison + scoring + threshold) | "
                  f"{med['splink_predict_seconds']:.2f} |",
                  f"| total incl. fetching kept pairs to pandas | {med['splink_seconds']:.2f} |"]
        lines += ["", f"erblock wall / Splink predict wall = **{r_pred:.3f}** (target ≤ "
                  f"{TARGETS['erblock_over_splink_max']}: "
                  f"{_verdict(r_pred <= TARGETS['erblock_over_splink_max'])}); against "
                  f"Splink's total (pandas in → pandas out, like erblock) {r_all:.3f}."]
    else:
        lines.append("Splink 5 is not installed in this environment (or `--no-splink` was "
                     "given): not measured.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run the benchmarks and write ``core.json`` and ``core.md`` into ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes (smoke test): checks the code paths, not the speed")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    ap.add_argument("--name", default="core", help="file stem of the results")
    ap.add_argument("--no-splink", action="store_true", help="skip Splink even if installed")
    ap.add_argument("--repeats", type=int, default=None, help="override the repeats")
    ap.add_argument("--records", type=int, default=None,
                    help="override the number of records of the throughput job")
    ap.add_argument("--wait-load", type=float, default=None, metavar="LOAD",
                    help="before the throughput runs, wait until the 1-minute load average "
                         "is below LOAD (the machine may be shared)")
    ap.add_argument("--max-wait", type=float, default=1800.0,
                    help="seconds to wait at most for --wait-load (then run anyway)")
    ap.add_argument("--render-only", action="store_true",
                    help="only rewrite <name>.md from an existing <name>.json")
    args = ap.parse_args(argv)
    if args.render_only:
        res = json.loads((args.out / f"{args.name}.json").read_text())
        (args.out / f"{args.name}.md").write_text(render_markdown(res))
        return res
    params = json.loads(json.dumps(QUICK if args.quick else FULL))
    if args.repeats:
        params["throughput"]["repeats"] = args.repeats
    if args.records:
        params["throughput"]["n"] = args.records
    log = (lambda msg: None) if args.quick else (lambda msg: print(msg, flush=True))
    res: dict[str, Any] = {
        "name": args.name,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": bool(args.quick),
        "machine": machine_info(),
        "params": params,
        "targets": TARGETS,
        "load_start": _load(),
        "counting": "pairs/s counts useful pairs: n(n-1)/2 per block for every method "
                    "(the kernel computes n^2 cells for them); erblock pairs/s = comparisons "
                    "from its run report / wall time of the whole dedupe call",
    }
    log("(a) plan imbalance")
    rows = bench_imbalance(**params["imbalance"])
    res["imbalance"] = {"rows": rows, "table": imbalance_table(rows)}
    for row in res["imbalance"]["table"]:
        log(f"  s={row['s']:<5} basic {row['basic_imbalance']:.3f}  blocksplit "
            f"{row['blocksplit_imbalance']:.3f}  replication {row['blocksplit_replication']:.2f}")
    if args.wait_load is not None:
        res["waited_seconds"] = wait_for_load(args.wait_load, args.max_wait)
        log(f"waited {res['waited_seconds']:.0f} s for load < {args.wait_load}: now {_load()}")
    log("(b, c) throughput: kernel, erblock, Splink")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)  # Splink/duckdb chatter
        res["throughput"] = bench_throughput(**params["throughput"], splink=not args.no_splink,
                                             client=client, log=log)
    res["load_end"] = _load()
    med = res["throughput"]["median"]
    worst = max(r["blocksplit_imbalance"] for r in res["imbalance"]["table"])
    res["verdict"] = {
        "blocksplit_imbalance_max": worst,
        "blocksplit_imbalance_ok": worst <= TARGETS["blocksplit_imbalance_max"],
        "erblock_over_kernel_triangle": med["erblock_over_kernel_triangle"],
        "erblock_over_kernel_full_square": med["erblock_over_kernel"],
        "erblock_over_kernel_ok": (med["erblock_over_kernel_triangle"]
                                   >= TARGETS["erblock_over_kernel_min"]),
    }
    if "erblock_over_splink_predict" in med:
        res["verdict"]["erblock_over_splink"] = med["erblock_over_splink_predict"]
        res["verdict"]["erblock_over_splink_ok"] = (
            med["erblock_over_splink_predict"] <= TARGETS["erblock_over_splink_max"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    (args.out / f"{args.name}.md").write_text(render_markdown(res))
    log(json.dumps(res["verdict"], indent=2))
    return res


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
