"""Scale on real data (issue 11 (a)): every pair of historical_50k, 1.28 billion, thresholded.

``bench_scale.py`` (a) reaches a billion pairs on *generated* persons. Issue 11 asks for
the same check on the real ``historical_50k`` (Splink's 50,578 historical persons, in
``../shared/datasets``): its values repeat as real registers do, not as the generator
draws them. No blocking: every record in one block (a constant key column), so the job
is the whole upper triangle, 50,578 · 50,577 / 2 = 1,279,041,753 pairs, and the one
giant block is what erblock's planner has to split.

Compared as in ``bench_scale``'s generated job: first_name and surname with Jaro-Winkler,
dob and birth_place exactly (the real set's date and place), score = mean of the four,
kept when >= 0.9. Systems, the same as ``bench_scale`` (a):

* the raw kernel (``bench_encoded.run_kernel``: ``rapidfuzz.process.cdist`` over the
  upper triangle in row chunks, numpy equality of factorised codes, 2 threads, in this
  process);
* erblock ``dedupe(..., encode="auto")`` on a LocalCluster of 2 worker processes × 1
  thread, its cost model calibrated first by an untimed run on 5,000 records;
* once, Splink 5 on DuckDB (``bench_encoded.run_splink``: ``block_on`` the constant
  column, ``JaroWinklerAtThresholds`` / ``ExactMatch`` with fixed m/u, 2 threads,
  ``predict`` at p >= 0.5).

Kernel and erblock interleaved and repeated (medians); peak RSS sampled as in
``bench_scale``. Targets (issue 11 (a)): erblock <= 0.3x the kernel, <= 0.03x Splink.

Run (one benchmark at a time; about 12 minutes on 2 cores with Splink)::

    python benchmarks/bench_scale_real.py            # writes results/scale_real.{json,md}
    python benchmarks/bench_scale_real.py --quick    # smoke: 3,000 records
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # runinfo.py and the other scripts sit beside this one
    sys.path.insert(0, str(HERE))

import bench_encoded as be  # noqa: E402
import bench_scale as bs  # noqa: E402
import runinfo  # noqa: E402

RESULTS = HERE / "results"
COMPARE = {"first_name": "jaro_winkler", "surname": "jaro_winkler", "dob": "exact",
           "birth_place": "exact"}
KEY = "_all"  # a constant column: one block, every pair
FULL: dict[str, Any] = {"records": None, "threshold": 0.9, "threads": 2, "chunk": 1 << 21,
                        "repeats": 2, "poll_seconds": 0.2, "warmup_records": 5_000}
QUICK: dict[str, Any] = {**FULL, "records": 3_000, "chunk": 1 << 16, "repeats": 1,
                         "warmup_records": 1_000}
TARGETS = {"erblock_over_kernel": 0.3, "erblock_over_splink": 0.03}


def frame(data: str | None, records: int | None) -> pd.DataFrame:
    """historical_50k's compared columns and the constant key (all records, or the first
    ``records``)."""
    from erblock.datasets import load_historical_50k

    hist, _ = load_historical_50k(data)
    df = hist[list(COMPARE)]
    if records is not None:
        df = df.iloc[:records]
    return df.assign(**{KEY: 0})


def run_erblock(df: pd.DataFrame, threshold: float, client: Any, cost_model: Any = None,
                executor: str = "auto") -> dict[str, Any]:
    """erblock.dedupe, thresholded, in memory."""
    import erblock

    t0 = time.perf_counter()
    res = erblock.dedupe(df, key=KEY, compare=COMPARE, threshold=threshold, client=client,
                         encode="auto", cost_model=cost_model, executor=executor)
    seconds = time.perf_counter() - t0
    rep = erblock.RunReport.of(res)
    return {"seconds": seconds, "kept_pairs": len(res), "comparisons": int(rep.comparisons),
            "cells": int(sum(t.cells for t in rep.tasks)), "strategy": rep.strategy,
            "n_tasks": rep.n_tasks, "imbalance_seconds": float(rep.imbalance_seconds),
            "phases": {k: float(v) for k, v in rep.phases.items()},
            "auto": auto_choice(rep.prediction)}


COEFFICIENTS = ("overhead_per_task", "per_comparison", "per_small_comparison", "per_record",
                "per_match_task", "overhead_per_job")


def auto_choice(pred: dict[str, Any]) -> dict[str, Any]:
    """What ``auto`` chose from: its cost model and every candidate's predicted makespan
    and imbalance (so that a run's choice can be judged afterwards)."""
    model = pred.get("cost_model") or {}
    return {"chosen": pred.get("auto_choice") or pred.get("strategy"),
            "cost_model": {k: model.get(k) for k in (*COEFFICIENTS, "source")},
            "candidates": [{"label": c.get("label"),
                            "predicted_makespan": c.get("predicted_makespan"),
                            "imbalance": c.get("imbalance")}
                           for c in pred.get("candidates") or []]}


def auto_line(runs: Sequence[dict[str, Any]]) -> str:
    """One sentence: what ``auto`` chose on the timed runs and from what predictions."""
    autos = [r["auto"] for r in runs if r.get("auto")]
    if not autos:
        return ""
    a = autos[0]
    cands = ", ".join(f"{c['label']} {c['predicted_makespan']:.1f} s"
                      for c in sorted(a["candidates"], key=lambda c: c["predicted_makespan"]))
    m = a["cost_model"]
    coef = ", ".join(f"{k} {m[k]:.2g}" for k in COEFFICIENTS if m.get(k) is not None)
    chosen = sorted({str(x["chosen"]) for x in autos})
    return (f"`auto` chose {' and '.join(chosen)} on the timed runs; predicted makespans: "
            f"{cands} (cost model {m.get('source')}: {coef}).")


def bench(p: dict[str, Any], df: pd.DataFrame, client: Any, workers: Sequence[int],
          splink: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Kernel and erblock interleaved ``repeats`` times, Splink once."""
    pairs = len(df) * (len(df) - 1) // 2
    info = {"records": len(df), "candidate_pairs": pairs, "compare": COMPARE,
            "missing_share": {c: float(df[c].isna().mean()) for c in COMPARE},
            "distinct_values": {c: int(df[c].nunique()) for c in COMPARE},
            "distinct_pair_share": {c: be.distinct_share(df, KEY, c) for c in COMPARE}}
    log(f"{len(df):,} records, {pairs:,} pairs, threshold {p['threshold']}")
    job = {"df": df, "key": KEY, "compare": COMPARE}
    runs: dict[str, list[dict[str, Any]]] = {"kernel": [], "erblock": [], "splink": []}
    poll = p["poll_seconds"]
    for i in range(p["repeats"]):
        for name in ["kernel", "erblock"] + (["splink"] if splink and i == 0 else []):
            if name == "kernel":
                r = bs.measured(client, (), poll, be.run_kernel, job, p["threshold"],
                                p["threads"], p["chunk"])
            elif name == "erblock":
                r = bs.measured(client, workers, poll, run_erblock, df, p["threshold"],
                                client)
            else:
                r = bs.measured(client, (), poll, be.run_splink, job, p["threads"])
            r["pairs_per_second"] = pairs / r["seconds"]
            runs[name].append(r)
            log(f"  {i + 1}/{p['repeats']} {name:<8} {r['seconds']:8.2f} s  kept "
                f"{r['kept_pairs']:,}  peak {r['peak_mib']:,.0f} MiB (+{r['added_mib']:,.0f})"
                f"  load {r['load_before'][0]}")
    med = {n: bs._median(v) for n, v in runs.items() if v}
    ratios = {"erblock_over_kernel": med["erblock"] / med["kernel"]}
    if "splink" in med:
        ratios["erblock_over_splink"] = med["erblock"] / med["splink"]
    return {"job": info, "runs": runs, "median_seconds": med, "ratios": ratios}


def render(res: dict[str, Any]) -> str:
    p, m, j = res["params"], res["machine"], res["result"]
    info, med, rat = j["job"], j["median_seconds"], j["ratios"]
    lines = ["## Scale on real data: every pair of historical_50k", "",
             f"Measured {res['date']} on {m.get('cpu_count')} cores; erblock "
             f"{m['versions'].get('erblock')}, rapidfuzz {m['versions'].get('rapidfuzz')}, "
             f"splink {m['versions'].get('splink')}, duckdb {m['versions'].get('duckdb')}. "
             f"Splink's historical_50k, {info['records']:,} records in one block (no "
             f"blocking): **{info['candidate_pairs']:,} pairs**, threshold {p['threshold']} "
             "on the mean of first_name and surname (Jaro-Winkler), dob and birth_place "
             "(exact). Distinct values: "
             + ", ".join(f"{c} {v:,}" for c, v in info["distinct_values"].items())
             + "; missing: " + ", ".join(f"{c} {v:.0%}" for c, v in info["missing_share"].items())
             + f". Median of {p['repeats']} interleaved runs (Splink once); load "
             f"{bs._loads(j['runs'])}; peak memory as in the scale benchmark. See "
             "`benchmarks/bench_scale_real.py`."
             + (" **Quick (smoke) sizes: the figures mean nothing.**" if res["quick"] else ""),
             "", *bs.thresholded_table(j["runs"], med, info["candidate_pairs"]),
             "", bs.ratio_line(rat, TARGETS["erblock_over_kernel"],
                               TARGETS["erblock_over_splink"], res["splink_note"]),
             "Kept pairs differ by design: the kernel scores a missing value as an empty "
             "string (and two missing exact values as unequal), erblock averages over the "
             "present values, Splink decides on a match probability.",
             "", auto_line(j["runs"].get("erblock", []))]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run the job, write ``<name>.json`` and ``<name>.md``."""
    ap = runinfo.job_parser(__doc__, "scale_real", RESULTS, "smoke size (seconds)")
    args = ap.parse_args(argv)
    p = dict(QUICK if args.quick else FULL)
    log = (lambda m: None) if args.quick else (lambda m: print(m, flush=True))
    splink_ok = bs.splink_available() and not args.no_splink
    res = bs.header(args, p, TARGETS)
    df = frame(args.data, p["records"])

    with ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        client, workers = bs.cluster_client(stack, client)
        t0 = time.perf_counter()  # untimed: calibrates auto's cost model for this job
        # on the cluster, where the timed job runs (a job this small would run in this
        # process and calibrate that instead: docs/clusters.md)
        run_erblock(df.iloc[: p["warmup_records"]], p["threshold"], client,
                    cost_model=None if args.quick else "calibrate", executor="cluster")
        res["warmup_seconds"] = time.perf_counter() - t0
        res["result"] = bench(p, df, client, workers, splink_ok, log)
    res["load_end"] = runinfo.load()
    runinfo.write_results(args.out, args.name, res, render(res))
    return res


if __name__ == "__main__":
    main()
