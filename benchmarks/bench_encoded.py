"""Encoded compare (issue 11): person jobs with three comparisons, erblock pair by pair and encoded, the raw kernel, Splink 5.

Real person blocks repeat values, so comparing each distinct value pair once per block
(``encode="auto"``, the default) does a fraction of the string work. Two thresholded
dedupe jobs with several comparisons, mean score >= ``threshold``:

* **generated**: ``erblock.datasets.generate(n, kind="person")`` (first names, surnames
  and cities with realistic frequencies), blocked on its ``block_key`` (b = 100 blocks,
  n_k ∝ e^(−0.5·k)); compared on first_name and surname (Jaro-Winkler), the date of birth
  and the city (exact: names, a date and an exact field);
* **historical_50k** (``../shared/datasets``, when present): Splink's 50,578 historical
  persons, blocked on ``birth_place``; compared on first_name, surname, occupation.

Per job, interleaved and repeated (medians): the raw ``rapidfuzz.process.cdist`` kernel on
the same strings and blocks (upper triangle only, one kernel call per Jaro-Winkler column
and row chunk, numpy equality of factorised codes for exact columns, mean and threshold in
numpy: the fair baseline of the pair-by-pair work), erblock with ``encode="never"`` and
``encode="auto"`` (the same pairs, bit-identical similarities), and Splink 5 on DuckDB
with the same blocking, ``JaroWinklerAtThresholds`` for the Jaro-Winkler columns and
``ExactMatch`` for the exact ones (fixed m/u, no training; it decides on a match
probability, so its kept pairs differ: only its time is comparable). The kernel scores a missing value as an empty
string (Jaro-Winkler 0) and two missing exact values as unequal, where erblock averages
over the present values, so its kept pairs
differ slightly where values are missing. Peak RSS of this process is recorded after
each run (erblock's local cluster runs in-process threads).

Run (one benchmark at a time; ~5 minutes on 2 cores)::

    python benchmarks/bench_encoded.py            # writes results/encoded.{json,md}
    python benchmarks/bench_encoded.py --quick    # smoke sizes
"""

from __future__ import annotations

import datetime as _dt
import logging
import resource
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # runinfo.py sits beside this script
    sys.path.insert(0, str(HERE))

import runinfo  # noqa: E402

RESULTS = HERE / "results"
FULL = {"n": 60_000, "threshold": 0.9, "repeats": 2, "threads": 2, "chunk": 1 << 21}
QUICK = {"n": 3_000, "threshold": 0.9, "repeats": 1, "threads": 2, "chunk": 1 << 16}


def jobs(n: int, data: str | None) -> list[dict[str, Any]]:
    """The benchmark's jobs: frame, blocking column and compared columns."""
    from erblock.datasets import generate

    df, _ = generate(n, kind="person", n_blocks=100, skew=("exp", 0.5), seed=3)
    df = df.assign(dob=df["dob"].astype("string"))
    out = [{"name": "generated persons", "df": df[["first_name", "surname", "dob", "city",
                                                   "block_key"]],
            "key": "block_key",
            "compare": {"first_name": "jaro_winkler", "surname": "jaro_winkler",
                        "dob": "exact", "city": "exact"}}]
    try:
        from erblock.datasets import load_historical_50k

        hist, _ = load_historical_50k(data)
    except (FileNotFoundError, OSError):
        return out
    cols = ["first_name", "surname", "occupation"]
    hist = hist[[*cols, "birth_place"]].dropna(subset=["birth_place"])
    if n < FULL["n"]:  # quick: a slice
        hist = hist.iloc[: 2 * n]
    out.append({"name": "historical_50k", "df": hist, "key": "birth_place",
                "compare": {c: "jaro_winkler" for c in cols}})
    return out


def candidate_pairs(df: pd.DataFrame, key: str) -> int:
    n = df[key].value_counts().to_numpy(np.int64)
    return int((n * (n - 1) // 2).sum())


def distinct_share(df: pd.DataFrame, key: str, col: str) -> float:
    """Distinct value pairs inside the blocks over record pairs, for one column."""
    g = df.groupby(key, observed=True)[col]
    d = g.nunique().to_numpy(np.float64)
    n = g.size().to_numpy(np.float64)
    return float((d * d).sum() / max((n * (n - 1) / 2).sum(), 1))


def run_kernel(job: dict[str, Any], threshold: float, threads: int, chunk: int
               ) -> dict[str, Any]:
    """The raw kernel: per block, upper-triangle row chunks, three cdist calls, mean."""
    from rapidfuzz.distance import JaroWinkler
    from rapidfuzz.process import cdist

    df, key, compare = job["df"], job["key"], job["compare"]
    t0 = time.perf_counter()
    kept = 0
    for _, block in df.groupby(key, observed=True, sort=False):
        vals = {c: (block[c].astype("string").fillna("").tolist() if m == "jaro_winkler"
                    else pd.factorize(block[c])[0]) for c, m in compare.items()}
        k = len(block)
        step = max(1, chunk // max(k, 1))
        for a in range(0, k - 1, step):
            mats = [cdist(v[a:a + step], v[a + 1:], scorer=JaroWinkler.normalized_similarity,
                          dtype=np.float32, workers=threads) if compare[c] == "jaro_winkler"
                    else ((v[a:a + step, None] == v[None, a + 1:])
                          & (v[a:a + step, None] >= 0)).astype(np.float32)  # -1: missing
                    for c, v in vals.items()]
            score = sum(mats) / np.float32(len(mats))
            kept += int(np.count_nonzero(np.triu(score >= np.float32(threshold))))
    return {"seconds": time.perf_counter() - t0, "kept_pairs": kept}


def run_erblock(job: dict[str, Any], threshold: float, encode: str, client: Any
                ) -> dict[str, Any]:
    import erblock

    compare = job["compare"]
    t0 = time.perf_counter()
    pairs = erblock.dedupe(job["df"], key=job["key"], compare=compare, threshold=threshold,
                           client=client, encode=encode)
    seconds = time.perf_counter() - t0
    rep = erblock.RunReport.of(pairs)
    return {"seconds": seconds, "kept_pairs": len(pairs), "comparisons": rep.comparisons,
            "cells": int(sum(t.cells for t in rep.tasks)),
            "imbalance_comparisons": rep.imbalance_comparisons}


def run_splink(job: dict[str, Any], threads: int) -> dict[str, Any]:
    import duckdb
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    comps = [cl.JaroWinklerAtThresholds(c, [0.9]).configure(
        m_probabilities=[0.6, 0.35, 0.05], u_probabilities=[0.0001, 0.001, 0.9989])
        if m == "jaro_winkler" else cl.ExactMatch(c).configure(
            m_probabilities=[0.9, 0.1], u_probabilities=[0.01, 0.99])
        for c, m in job["compare"].items()]
    settings = SettingsCreator(link_type="dedupe_only", unique_id_column_name="unique_id",
                               blocking_rules_to_generate_predictions=[block_on(job["key"])],
                               comparisons=comps, probability_two_random_records_match=0.01,
                               retain_matching_columns=False,
                               retain_intermediate_calculation_columns=False)
    df = job["df"].reset_index(drop=True).rename_axis("unique_id").reset_index()
    t0 = time.perf_counter()
    con = duckdb.connect(":memory:")
    con.execute(f"SET threads TO {int(threads)}")
    con.execute("SET enable_progress_bar = false")
    api = DuckDBAPI(connection=con)
    linker = Linker(api.register(df), settings, log_level=logging.WARNING)
    t1 = time.perf_counter()
    res = linker.inference.predict(threshold_match_probability=0.5, warning_mode="never")
    kept = len(res.as_pandas_dataframe())
    return {"seconds": time.perf_counter() - t0, "predict_seconds": time.perf_counter() - t1,
            "kept_pairs": kept}


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_job(job: dict[str, Any], p: dict[str, Any], client: Any, splink: bool,
              log: Any) -> dict[str, Any]:
    pairs = candidate_pairs(job["df"], job["key"])
    info = {"records": len(job["df"]), "candidate_pairs": pairs, "key": job["key"],
            "compare": job["compare"],
            "distinct_pair_share": {c: distinct_share(job["df"], job["key"], c)
                                    for c in job["compare"]}}
    log(f"{job['name']}: {len(job['df']):,} records, {pairs:,} pairs, distinct share "
        + ", ".join(f"{c} {v:.3%}" for c, v in info["distinct_pair_share"].items()))
    names = ["kernel", "never", "auto"] + (["splink"] if splink else [])
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for i in range(p["repeats"]):
        for name in names:
            load = runinfo.load()
            if name == "kernel":
                r = run_kernel(job, p["threshold"], p["threads"], p["chunk"])
            elif name == "splink":
                r = run_splink(job, p["threads"])
            else:
                r = run_erblock(job, p["threshold"], name, client)
            r.update(load_before=load, peak_rss_mib=_peak_rss_mib())
            runs[name].append(r)
            log(f"  {i + 1}/{p['repeats']} {name:<7} {r['seconds']:7.2f} s  kept "
                f"{r['kept_pairs']:,}  load {load[0]}")
    med = {n: float(statistics.median(r["seconds"] for r in v)) for n, v in runs.items()}
    ratios = {"auto_over_kernel": med["auto"] / med["kernel"],
              "never_over_kernel": med["never"] / med["kernel"],
              "auto_over_never": med["auto"] / med["never"]}
    if splink:
        ratios["auto_over_splink"] = med["auto"] / med["splink"]
    return {"job": info, "runs": runs, "median_seconds": med, "ratios": ratios}


def render(res: dict[str, Any]) -> str:
    lines = ["## Encoded compare: each distinct value pair once per block", "",
             f"Measured {res['date']}, {res['machine'].get('cpu_count')} cores; threshold "
             f"{res['params']['threshold']} on the mean of the comparisons named below; "
             f"medians of {res['params']['repeats']} interleaved runs (see the script's "
             "docstring for what each system runs)."
             + (" **Quick (smoke) sizes.**" if res["quick"] else ""), ""]
    for name, j in res["jobs"].items():
        info, med, rat = j["job"], j["median_seconds"], j["ratios"]
        share = ", ".join(f"{c} {v:.2%}" for c, v in info["distinct_pair_share"].items())
        lines += [f"### {name}", "",
                  f"{info['records']:,} records blocked on `{info['key']}`: "
                  f"{info['candidate_pairs']:,} candidate pairs; compared: "
                  + ", ".join(f"{c} ({m})" for c, m in info["compare"].items())
                  + f"; distinct value pairs in the blocks over record pairs: {share}.", "",
                  "| system | median s | kept pairs | peak RSS MiB |", "|---|---:|---:|---:|"]
        labels = {"kernel": "raw kernel (upper triangle: cdist / numpy equality)",
                  "never": "erblock `encode='never'`", "auto": "erblock `encode='auto'`",
                  "splink": "Splink 5 + DuckDB (the same comparisons)"}
        for n, v in j["runs"].items():
            lines.append(f"| {labels[n]} | {med[n]:.2f} | {v[-1]['kept_pairs']:,} | "
                         f"{v[-1]['peak_rss_mib']:.0f} |")
        lines += ["", f"erblock encoded / raw kernel = **{rat['auto_over_kernel']:.2f}** "
                  f"(pair by pair: {rat['never_over_kernel']:.2f}); encoded / pair by pair "
                  f"= {rat['auto_over_never']:.2f}"
                  + (f"; encoded / Splink = **{rat['auto_over_splink']:.3f}**"
                     if "auto_over_splink" in rat else "") + ".", ""]
    lines.append("Peak RSS is this process's (the local cluster runs in it), cumulative "
                 "over the runs so far: it bounds, not separates, each system's peak.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run every job, write ``<name>.json`` and ``<name>.md``."""
    args = runinfo.job_parser(__doc__, "encoded", RESULTS).parse_args(argv)
    p = dict(QUICK if args.quick else FULL)
    log = (lambda m: None) if args.quick else (lambda m: print(m, flush=True))
    try:
        import splink  # noqa: F401

        splink_ok = not args.no_splink
    except ImportError:
        splink_ok = False
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    res: dict[str, Any] = {"name": args.name, "quick": args.quick, "params": p,
                           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
                               timespec="seconds"),
                           "machine": runinfo.machine_info((*runinfo.DEFAULT_PACKAGES,
                                                            "splink", "duckdb")),
                           "jobs": {}}
    with ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if client is None:
            cluster = stack.enter_context(LocalCluster(
                n_workers=1, threads_per_worker=p["threads"], processes=False,
                dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        for job in jobs(p["n"], args.data):
            res["jobs"][job["name"]] = bench_job(job, p, client, splink_ok, log)
    res["load_end"] = runinfo.load()
    runinfo.write_results(args.out, args.name, res, render(res))
    return res


if __name__ == "__main__":
    main()
