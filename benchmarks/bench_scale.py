"""Scale (issue 11): a billion thresholded person pairs, every pair written, peak memory, growth to 5 M records.

The remaining checks of issue 11 ("beyond the kernel: compare each distinct value once"),
on the generated person data of ``bench_encoded.py`` (``erblock.datasets.generate(n,
kind="person", seed=3)``, compared on first_name and surname with Jaro-Winkler, dob and
city exactly, score = mean of the four, the same dict as there); erblock runs with
``encode="auto"`` (the default) on a ``distributed.LocalCluster`` of 2 worker processes
with 1 thread each, started before anything is timed:

* **(a) >= 1e9 candidate pairs, thresholded** (score >= 0.9): bench_encoded's blocking
  (b = 100 blocks, n_k ∝ e^(−0.5·k)) with n chosen so that the pairs, counted exactly
  from the drawn block sizes before anything runs, reach 1e9. erblock next to the raw
  kernel of ``bench_encoded.run_kernel`` (``rapidfuzz.process.cdist`` per block over the
  upper triangle, numpy equality for the exact columns, 2 threads, in this process) and,
  once, Splink 5 on DuckDB (``bench_encoded.run_splink``: the same blocking and
  comparisons, ``JaroWinklerAtThresholds`` / ``ExactMatch`` with fixed m/u, 2 threads).
  Targets: erblock <= 0.3x the kernel, <= 0.03x Splink.
* **(b) every pair written** (no threshold), >= 5e7 candidate pairs, same blocking:
  erblock with ``output=<dir>`` (the workers write parquet; nothing large reaches the
  client) next to Splink 5 ``linker.inference.predict()`` (no threshold) then
  ``SplinkDataFrame.to_parquet`` (DuckDB ``COPY ... (FORMAT PARQUET)``); bytes and rows
  written by each. Target: erblock <= 0.1x Splink.
* **(c) peak memory next to every time**: a thread samples RSS every 0.2 s. erblock:
  the sum over this process (client and scheduler) and the worker processes (their
  nannies excluded); the kernel and Splink run in this process, so their figure is its
  RSS. Each run reports its peak and its peak over the RSS just before it ("added"); the
  processes are garbage-collected and ``malloc_trim``-ed before every run. Sampling can
  miss a spike shorter than 0.2 s.
* **(d) growth from 0.5 M to 5 M records** (thresholded as in (a)): ``n_blocks = n //
  800`` and ``skew = ("exp", 5 / n_blocks)``, i.e. the same block-size *shape* at every
  n (mean block 800 records, the largest ≈ 4,000, the smallest ≈ 27), so the candidate
  pairs grow linearly, ≈ 1,000 per record (5 e8 at 0.5 M, 5 e9 at 5 M). bench_encoded's
  ``("exp", 0.5)`` with ``n_blocks = n / 5000`` would not: block 0 keeps 39 % of the
  records whatever the number of blocks, so the pairs would grow with n² (3 e10 at
  0.5 M, 3 e12 at 5 M). The records are generated on the workers
  (``npartitions``, ≈ 250,000 records a partition) and persisted before erblock is timed;
  the kernel gets them computed into this process and runs only where its predicted time
  (the pairs times its seconds per pair at the previous size) is under 2 minutes. A
  table, and a chart written to ``docs/img/scale.png``.

Per the conventions: ratios from the same run, (a) and (b) interleaved and repeated
(medians), the load average before and after every timed run. The auto strategy's
cost model is calibrated once per job signature (threshold, written or not) by an
untimed warm-up run on 5,000 records, as a session would, so no timed run pays for it.

Run (one benchmark at a time; about 25 minutes on 2 cores with Splink, 15 without)::

    python benchmarks/bench_scale.py              # writes results/scale.{json,md}, docs/img/scale.png
    python benchmarks/bench_scale.py --no-splink
    python benchmarks/bench_scale.py --quick      # smoke sizes (PNG next to the results)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import logging
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # runinfo.py and bench_encoded.py sit beside this script
    sys.path.insert(0, str(HERE))

import bench_encoded as be  # noqa: E402
import runinfo  # noqa: E402

RESULTS = HERE / "results"
ROOT = HERE.parent
DOCS = ROOT / "docs"
PNG = DOCS / "img" / "scale.png"

#: what is compared, exactly as bench_encoded's generated job
COMPARE = {"first_name": "jaro_winkler", "surname": "jaro_winkler", "dob": "exact",
           "city": "exact"}
COLUMNS = [*COMPARE, "block_key"]
KEY = "block_key"
SEED = 3
A_BLOCKS, A_SKEW = 100, ("exp", 0.5)  # bench_encoded's blocking, for (a) and (b)

FULL: dict[str, Any] = {
    "threshold": 0.9, "threads": 2, "chunk": 1 << 21, "poll_seconds": 0.2,
    "a_min_pairs": 1_000_000_000, "a_repeats": 2,
    "b_min_pairs": 50_000_000, "b_repeats": 2,
    "d_sizes": [500_000, 1_000_000, 2_000_000, 5_000_000], "d_block_mean": 800,
    "d_shape": 5.0, "d_repeats": 1, "d_records_per_partition": 250_000,
    "kernel_max_seconds": 120.0, "warmup_records": 5_000,
}
QUICK: dict[str, Any] = {
    **FULL, "chunk": 1 << 16,
    "a_min_pairs": 500_000, "a_repeats": 1,
    "b_min_pairs": 200_000, "b_repeats": 1,
    "d_sizes": [2_000, 4_000], "d_block_mean": 400, "d_records_per_partition": 5_000,
    "warmup_records": 1_000,
}
TARGETS = {"a_erblock_over_kernel": 0.3, "a_erblock_over_splink": 0.03,
           "b_erblock_over_splink": 0.1}


# --------------------------------------------------------------------------- data


def person_frame(n: int, n_blocks: int = A_BLOCKS, skew: Any = A_SKEW,
                 npartitions: int | None = None) -> Any:
    """bench_encoded's generated person records (the compared columns and the key); a
    Dask frame built on the workers with ``npartitions``."""
    from erblock.datasets import generate

    df, _ = generate(n, kind="person", n_blocks=n_blocks, skew=skew, seed=SEED,
                     npartitions=npartitions)
    df = df[COLUMNS]
    return df.assign(dob=df["dob"].astype("string"))


def pairs_of(sizes: np.ndarray) -> int:
    """Candidate pairs of a dedupe: n(n−1)/2 per block."""
    n = np.asarray(sizes, dtype=np.int64)
    return int((n * (n - 1) // 2).sum())


def frame_for_pairs(min_pairs: int, n_blocks: int = A_BLOCKS, skew: Any = A_SKEW
                    ) -> tuple[pd.DataFrame, int]:
    """The smallest-ish n whose drawn blocks hold at least ``min_pairs`` pairs, its frame
    and its exact pairs: start from the expected block sizes, redraw a little larger until
    the drawn sizes reach the target."""
    from erblock.datasets import block_shares

    share2 = float((block_shares(n_blocks, skew) ** 2).sum())
    n = math.ceil(math.sqrt(2 * min_pairs / share2)) + 1
    for _ in range(50):
        df = person_frame(n, n_blocks, skew)
        pairs = be.candidate_pairs(df, KEY)
        if pairs >= min_pairs:
            return df, pairs
        n = math.ceil(n * math.sqrt(min_pairs / pairs) * 1.001) + 1
    raise RuntimeError(f"no n found with {min_pairs:,} pairs")  # pragma: no cover


def block_info(sizes: np.ndarray) -> dict[str, Any]:
    sizes = np.asarray(sizes, dtype=np.int64)
    pairs = pairs_of(sizes)
    big = int(sizes.max()) if sizes.size else 0
    return {"candidate_pairs": pairs, "nonempty_blocks": int((sizes > 0).sum()),
            "largest_block": big,
            "largest_block_pair_share": big * (big - 1) / 2 / max(pairs, 1)}


def distinct_shares_dask(client: Any, ddf: Any) -> dict[str, float]:
    """bench_encoded.distinct_share of every Jaro-Winkler column, for a Dask frame."""
    cols = [c for c, m in COMPARE.items() if m == "jaro_winkler"]
    g = ddf.groupby(KEY)
    size, *uniq = client.gather(client.compute([g.size(), *(g[c].nunique() for c in cols)]))
    n = size.to_numpy(np.float64)
    denom = max(float((n * (n - 1) / 2).sum()), 1.0)
    return {c: float((u.reindex(size.index).to_numpy(np.float64) ** 2).sum() / denom)
            for c, u in zip(cols, uniq)}


# --------------------------------------------------------------------------- memory


def _trim_here() -> None:
    import ctypes

    gc.collect()
    with suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def trim(client: Any, workers: Sequence[int]) -> None:
    """Collect garbage and give freed heap back to the OS, here and on the workers."""

    def on_worker() -> None:  # nested: cloudpickle sends it by value
        import contextlib
        import ctypes
        import gc as _gc

        _gc.collect()
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)

    _trim_here()
    if client is not None and any(p != os.getpid() for p in workers):
        client.run(on_worker)


class PeakRSS:
    """Largest summed RSS of this process and ``workers`` (pids), sampled every ``poll`` s
    by a thread while the ``with`` block runs."""

    def __init__(self, workers: Sequence[int] = (), poll: float = 0.2) -> None:
        import psutil

        me = os.getpid()
        self.client = psutil.Process(me)
        self.workers = [psutil.Process(p) for p in sorted(set(workers)) if p != me]
        self.poll = poll
        self.peak = self.peak_client = self.peak_workers = self.base = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss(procs: Sequence[Any]) -> int:
        total = 0
        for p in procs:
            with suppress(Exception):  # a process gone between samples
                total += p.memory_info().rss
        return total

    def sample(self) -> int:
        c, w = self._rss([self.client]), self._rss(self.workers)
        self.peak_client = max(self.peak_client, c)
        self.peak_workers = max(self.peak_workers, w)
        self.peak = max(self.peak, c + w)
        return c + w

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.sample()

    def __enter__(self) -> PeakRSS:
        self.base = self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def result(self) -> dict[str, float]:
        mib = 2.0 ** 20
        out = {"peak_mib": self.peak / mib, "base_mib": self.base / mib,
               "added_mib": (self.peak - self.base) / mib}
        if self.workers:
            out.update(client_peak_mib=self.peak_client / mib,
                       workers_peak_mib=self.peak_workers / mib)
        return out


def measured(client: Any, workers: Sequence[int], poll: float,
             fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """``fn(*args)`` with the load before/after and the peak RSS of this process and of
    the ``workers`` (pids; none for what runs in this process)."""
    trim(client, workers)
    load = runinfo.load()
    with PeakRSS(workers, poll) as peak:
        r = fn(*args)
    r.update(peak.result(), load_before=load, load_after=runinfo.load())
    return r


# --------------------------------------------------------------------------- runs


def run_erblock(df: Any, threshold: float | None, client: Any, output: Path | None = None
                ) -> dict[str, Any]:
    """erblock.dedupe with encode='auto'; in memory, or written by the workers."""
    import erblock

    t0 = time.perf_counter()
    res = erblock.dedupe(df, key=KEY, compare=COMPARE, threshold=threshold, client=client,
                         encode="auto", output=None if output is None else str(output),
                         **({} if output is None else {"overwrite": True}))
    seconds = time.perf_counter() - t0
    rep = erblock.read_report(res if output is None else str(output))
    r: dict[str, Any] = {
        "seconds": seconds, "kept_pairs": int(rep.pairs) if output is not None else len(res),
        "comparisons": int(rep.comparisons), "cells": int(sum(t.cells for t in rep.tasks)),
        "strategy": rep.strategy, "n_tasks": rep.n_tasks,
        "phases": {k: float(v) for k, v in rep.phases.items()},
        "calibration_seconds": float(rep.prediction.get("calibration_seconds", 0.0) or 0.0),
        "imbalance_seconds": float(rep.imbalance_seconds)}
    if output is not None:
        files = [p for p in output.rglob("*") if p.is_file()]
        r.update(bytes_written=sum(p.stat().st_size for p in files),
                 parquet_bytes=sum(p.stat().st_size for p in files if p.suffix == ".parquet"),
                 files_written=len(files), columns=list(res.columns))
    return r


def splink_available() -> bool:
    try:
        import duckdb  # noqa: F401
        import splink  # noqa: F401
    except ImportError:
        return False
    return True


def run_splink_written(df: pd.DataFrame, threads: int, path: Path) -> dict[str, Any]:
    """Splink 5 + DuckDB scoring every blocked pair and writing them all to parquet; the
    settings of ``bench_encoded.run_splink`` (fixed m/u, no training)."""
    import duckdb
    import pyarrow.parquet as pq
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    comps = [cl.JaroWinklerAtThresholds(c, [0.9]).configure(
        m_probabilities=[0.6, 0.35, 0.05], u_probabilities=[0.0001, 0.001, 0.9989])
        if m == "jaro_winkler" else cl.ExactMatch(c).configure(
            m_probabilities=[0.9, 0.1], u_probabilities=[0.01, 0.99])
        for c, m in COMPARE.items()]
    settings = SettingsCreator(link_type="dedupe_only", unique_id_column_name="unique_id",
                               blocking_rules_to_generate_predictions=[block_on(KEY)],
                               comparisons=comps, probability_two_random_records_match=0.01,
                               retain_matching_columns=False,
                               retain_intermediate_calculation_columns=False)
    data = df.reset_index(drop=True).rename_axis("unique_id").reset_index()
    t0 = time.perf_counter()
    con = duckdb.connect(":memory:")
    con.execute(f"SET threads TO {int(threads)}")
    con.execute("SET enable_progress_bar = false")
    api = DuckDBAPI(connection=con)
    linker = Linker(api.register(data), settings, log_level=logging.WARNING)
    t1 = time.perf_counter()
    res = linker.inference.predict(warning_mode="never")
    t2 = time.perf_counter()
    res.to_parquet(str(path), overwrite=True)
    t3 = time.perf_counter()
    con.close()
    meta = pq.read_metadata(str(path))
    return {"seconds": t3 - t0, "predict_seconds": t2 - t1, "write_seconds": t3 - t2,
            "kept_pairs": int(meta.num_rows), "bytes_written": path.stat().st_size,
            "files_written": 1, "columns": list(meta.schema.names)}


def warm_up(client: Any, p: dict[str, Any], tmp: Path, calibrate: bool = True
            ) -> dict[str, float]:
    """Calibrate the auto strategy's cost model for the two job signatures (thresholded
    in memory, unthresholded written) on a small frame, untimed (``calibrate=False``:
    just run them; quick sizes are too small for auto to calibrate)."""
    df = person_frame(p["warmup_records"])
    out = {}
    for name, threshold, output in (("thresholded", p["threshold"], None),
                                    ("written", None, tmp / "warmup")):
        import erblock

        t0 = time.perf_counter()
        # on the cluster, where the timed jobs run (a job this small would run in this
        # process and calibrate that instead: docs/clusters.md)
        erblock.dedupe(df, key=KEY, compare=COMPARE, threshold=threshold, client=client,
                       cost_model="calibrate" if calibrate else None, output=None if output is None else str(output),
                       executor="cluster", **({} if output is None else {"overwrite": True}))
        out[name] = time.perf_counter() - t0
        if output is not None:
            shutil.rmtree(output, ignore_errors=True)
    return out


def _median(runs: list[dict[str, Any]], key: str = "seconds") -> float:
    return float(statistics.median(r[key] for r in runs))


# --------------------------------------------------------------------------- sections


def bench_a(p: dict[str, Any], client: Any, workers: Sequence[int], splink: bool,
            log: Callable[[str], None]) -> dict[str, Any]:
    """(a) >= a_min_pairs thresholded: kernel and erblock interleaved, Splink once."""
    df, pairs = frame_for_pairs(p["a_min_pairs"])
    info = {"records": len(df), "n_blocks": A_BLOCKS, "skew": list(A_SKEW),
            **block_info(df[KEY].value_counts().to_numpy()),
            "distinct_pair_share": {c: be.distinct_share(df, KEY, c) for c in COMPARE}}
    log(f"(a) {len(df):,} records, {pairs:,} candidate pairs (>= {p['a_min_pairs']:,}), "
        f"threshold {p['threshold']}")
    job = {"df": df, "key": KEY, "compare": COMPARE}
    runs: dict[str, list[dict[str, Any]]] = {"kernel": [], "erblock": [], "splink": []}
    poll = p["poll_seconds"]
    for i in range(p["a_repeats"]):
        plan = ["kernel", "erblock"] + (["splink"] if splink and i == 0 else [])
        for name in plan:
            if name == "kernel":
                r = measured(client, (), poll, be.run_kernel, job, p["threshold"],
                             p["threads"], p["chunk"])
            elif name == "erblock":
                r = measured(client, workers, poll, run_erblock, df, p["threshold"], client)
            else:
                r = measured(client, (), poll, be.run_splink, job, p["threads"])
            r["pairs_per_second"] = pairs / r["seconds"]
            runs[name].append(r)
            log(f"  {i + 1}/{p['a_repeats']} {name:<8} {r['seconds']:8.2f} s  kept "
                f"{r['kept_pairs']:,}  peak {r['peak_mib']:,.0f} MiB (+{r['added_mib']:,.0f})"
                f"  load {r['load_before'][0]}")
    med = {n: _median(v) for n, v in runs.items() if v}
    ratios = {"erblock_over_kernel": med["erblock"] / med["kernel"]}
    if "splink" in med:
        ratios["erblock_over_splink"] = med["erblock"] / med["splink"]
    return {"job": info, "runs": runs, "median_seconds": med, "ratios": ratios}


def bench_b(p: dict[str, Any], client: Any, workers: Sequence[int], splink: bool,
            tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """(b) >= b_min_pairs, no threshold, every pair written to parquet."""
    df, pairs = frame_for_pairs(p["b_min_pairs"])
    info = {"records": len(df), "n_blocks": A_BLOCKS, "skew": list(A_SKEW),
            **block_info(df[KEY].value_counts().to_numpy())}
    log(f"(b) {len(df):,} records, {pairs:,} candidate pairs, no threshold, all written")
    runs: dict[str, list[dict[str, Any]]] = {"erblock": [], "splink": []}
    poll = p["poll_seconds"]
    for i in range(p["b_repeats"]):
        for name in ["erblock"] + (["splink"] if splink else []):
            target = tmp / f"b-{name}-{i}" if name == "erblock" else tmp / f"b-splink-{i}.parquet"
            try:
                if name == "erblock":
                    r = measured(client, workers, poll, run_erblock, df, None, client, target)
                else:
                    r = measured(client, (), poll, run_splink_written, df, p["threads"],
                                 target)
            finally:
                if target.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                elif target.exists():
                    target.unlink()
            r["pairs_per_second"] = pairs / r["seconds"]
            runs[name].append(r)
            log(f"  {i + 1}/{p['b_repeats']} {name:<8} {r['seconds']:8.2f} s  rows "
                f"{r['kept_pairs']:,}  {r['bytes_written'] / 2**20:,.0f} MiB written  peak "
                f"{r['peak_mib']:,.0f} MiB (+{r['added_mib']:,.0f})  load {r['load_before'][0]}")
    med = {n: _median(v) for n, v in runs.items() if v}
    ratios = {}
    if "splink" in med:
        ratios["erblock_over_splink"] = med["erblock"] / med["splink"]
    return {"job": info, "runs": runs, "median_seconds": med, "ratios": ratios}


def bench_d(p: dict[str, Any], client: Any, workers: Sequence[int],
            log: Callable[[str], None]) -> dict[str, Any]:
    """(d) erblock (and the kernel while it is under kernel_max_seconds) per size."""
    from distributed import wait

    rows = []
    kernel_rate: float | None = None  # seconds per pair of the last kernel run
    poll = p["poll_seconds"]
    for n in p["d_sizes"]:
        n_blocks = max(1, n // p["d_block_mean"])
        skew = ("exp", p["d_shape"] / n_blocks)
        parts = max(2, -(-n // p["d_records_per_partition"]))
        t0 = time.perf_counter()
        ddf = client.persist(person_frame(n, n_blocks, skew, npartitions=parts))
        with client.as_current():  # the client need not be the default one
            wait(ddf)
        sizes = client.compute(ddf[KEY].value_counts()).result().to_numpy()
        gen_seconds = time.perf_counter() - t0
        row: dict[str, Any] = {"records": n, "n_blocks": n_blocks, "skew": list(skew),
                               "partitions": parts, "generate_seconds": gen_seconds,
                               **block_info(sizes),
                               "distinct_pair_share": distinct_shares_dask(client, ddf)}
        pairs = row["candidate_pairs"]
        predicted = None if kernel_rate is None else kernel_rate * pairs
        row["kernel_predicted_seconds"] = predicted
        do_kernel = predicted is None or predicted < p["kernel_max_seconds"]
        log(f"(d) {n:,} records, {n_blocks:,} blocks (largest {row['largest_block']:,}), "
            f"{pairs:,} candidate pairs; kernel "
            + ("runs" if do_kernel else f"skipped (predicted {predicted:.0f} s)"))
        pdf = client.compute(ddf).result() if do_kernel else None
        runs: dict[str, list[dict[str, Any]]] = {"kernel": [], "erblock": []}
        for i in range(p["d_repeats"]):
            for name in (["kernel"] if do_kernel else []) + ["erblock"]:
                if name == "kernel":
                    job = {"df": pdf, "key": KEY, "compare": COMPARE}
                    r = measured(client, (), poll, be.run_kernel, job, p["threshold"],
                                 p["threads"], p["chunk"])
                else:
                    r = measured(client, workers, poll, run_erblock, ddf, p["threshold"],
                                 client)
                r["pairs_per_second"] = pairs / r["seconds"]
                runs[name].append(r)
                log(f"  {i + 1}/{p['d_repeats']} {name:<8} {r['seconds']:8.2f} s  kept "
                    f"{r['kept_pairs']:,}  peak {r['peak_mib']:,.0f} MiB "
                    f"(+{r['added_mib']:,.0f})  load {r['load_before'][0]}")
        row["runs"] = runs
        row["median_seconds"] = {k: _median(v) for k, v in runs.items() if v}
        if runs["kernel"]:
            kernel_rate = row["median_seconds"]["kernel"] / pairs
            row["erblock_over_kernel"] = (row["median_seconds"]["erblock"]
                                          / row["median_seconds"]["kernel"])
        rows.append(row)
        del pdf
        client.cancel(ddf)
        del ddf
        trim(client, workers)
    first, last = rows[0], rows[-1]
    growth = None
    if len(rows) > 1 and last["records"] > first["records"]:
        growth = (math.log(last["median_seconds"]["erblock"] / first["median_seconds"]["erblock"])
                  / math.log(last["records"] / first["records"]))
    return {"design": {"block_mean": p["d_block_mean"], "shape": p["d_shape"],
                       "records_per_partition": p["d_records_per_partition"],
                       "kernel_max_seconds": p["kernel_max_seconds"]},
            "rows": rows, "erblock_time_exponent": growth}


# --------------------------------------------------------------------------- output


def plot(d: dict[str, Any], path: Path) -> None:
    """Seconds and peak memory against records (log-log), erblock and the kernel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = d["rows"]
    n = np.array([r["records"] for r in rows], dtype=float)
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    e_t = [r["median_seconds"]["erblock"] for r in rows]
    ax_t.plot(n, e_t, "o-", label="erblock encode='auto'")
    kn = [(r["records"], r["median_seconds"]["kernel"]) for r in rows
          if "kernel" in r["median_seconds"]]
    if kn:
        ax_t.plot(*zip(*kn), "s--", label="raw kernel (cdist, upper triangle)")
    ax_t.plot(n, e_t[0] * n / n[0], ":", color="grey", label="linear in records")
    for r, t in zip(rows, e_t):
        ax_t.annotate(f"{r['candidate_pairs'] / 1e9:.2g} G pairs", (r["records"], t),
                      textcoords="offset points", xytext=(4, -12), fontsize=7)
    ax_t.set(xscale="log", yscale="log", xlabel="records", ylabel="seconds (median)",
             title="time, threshold 0.9")
    ax_t.legend(fontsize=8)
    ax_m.plot(n, [r["runs"]["erblock"][-1]["peak_mib"] for r in rows], "o-",
              label="erblock: client + 2 workers, peak")
    ax_m.plot(n, [r["runs"]["erblock"][-1]["added_mib"] for r in rows], "o:",
              label="erblock: added over the idle cluster")
    km = [(r["records"], r["runs"]["kernel"][-1]["added_mib"]) for r in rows
          if r["runs"]["kernel"]]
    if km:
        ax_m.plot(*zip(*km), "s--", label="kernel: added over this process")
    ax_m.set(xscale="log", yscale="log", xlabel="records", ylabel="MiB",
             title="peak resident memory")
    ax_m.legend(fontsize=8)
    per_record = sum(r["candidate_pairs"] for r in rows) / n.sum()
    fig.suptitle("erblock scaling: generated persons, 4 comparisons, "
                 f"~{per_record:,.0f} candidate pairs a record", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _met(value: float | None, target: float) -> str:
    if value is None:
        return "not measured"
    return "met" if value <= target else "**not met**"


def _mem(r: dict[str, Any]) -> str:
    return f"{r['peak_mib']:,.0f} (+{r['added_mib']:,.0f})"


def _loads(runs: dict[str, list[dict[str, Any]]]) -> str:
    vals = [x["load_before"][0] for v in runs.values() for x in v]
    return f"{min(vals):.2f}–{max(vals):.2f}" if vals else "?"


def thresholded_table(runs: dict[str, list[dict[str, Any]]], med: dict[str, float],
                      pairs: int) -> list[str]:
    """The table of a thresholded job: kernel, erblock, Splink (the median seconds)."""
    labels = {"kernel": "raw kernel", "erblock": "erblock `encode='auto'`",
              "splink": "Splink 5 + DuckDB (predict at p ≥ 0.5)"}
    lines = ["| system | s | M pairs/s | kept pairs | peak MiB (+added) |",
             "|---|---:|---:|---:|---:|"]
    for name, v in runs.items():
        if v:
            lines.append(f"| {labels[name]} | {med[name]:.1f} | "
                         f"{pairs / med[name] / 1e6:,.0f} | "
                         f"{v[-1]['kept_pairs']:,} | {_mem(max(v, key=lambda r: r['peak_mib']))} |")
    return lines


def ratio_line(ratios: dict[str, float], kernel_target: float, splink_target: float,
               splink_note: str) -> str:
    """erblock over the kernel and over Splink, each against its target."""
    return (f"erblock / kernel = **{ratios['erblock_over_kernel']:.3f}** (target ≤ "
            f"{kernel_target}: {_met(ratios['erblock_over_kernel'], kernel_target)}); "
            + (f"erblock / Splink = **{ratios['erblock_over_splink']:.4f}** (target ≤ "
               f"{splink_target}: {_met(ratios['erblock_over_splink'], splink_target)})."
               if "erblock_over_splink" in ratios else
               f"Splink not measured ({splink_note})."))


def render(res: dict[str, Any]) -> str:
    p, m = res["params"], res["machine"]
    thr = p["threshold"]
    lines = ["## Scale: a billion person pairs, every pair written, memory, growth", "",
             f"Measured {res['date']} on {m.get('cpu_count')} cores "
             f"({m.get('cpu_model', 'unknown CPU')}), {m.get('memory_gib', '?')} GiB; "
             f"erblock {m['versions'].get('erblock')}, rapidfuzz "
             f"{m['versions'].get('rapidfuzz')}, splink {m['versions'].get('splink')}, duckdb "
             f"{m['versions'].get('duckdb')}. Generated persons "
             "(`erblock.datasets.generate(kind='person', seed=3)`), compared on first_name and "
             "surname (Jaro-Winkler), dob and city (exact), score = their mean. erblock: "
             "`encode='auto'` on a LocalCluster of 2 worker processes × 1 thread; the raw "
             "kernel (`rapidfuzz.process.cdist` per block, upper triangle, numpy equality, "
             "2 threads) and Splink 5 + DuckDB (2 threads) run in the benchmark process. "
             "Peak memory = largest resident set sampled every "
             f"{p['poll_seconds']} s, in MiB, with the increase over the idle state in "
             "brackets (erblock: client process with the scheduler + both workers; kernel and "
             "Splink: the benchmark process). See the script's docstring for details."
             + (" **Quick (smoke) sizes: the figures mean nothing.**" if res["quick"] else ""),
             ""]
    if "a" not in res:
        lines += ["### (a) not run (--skip a)", ""]
    else:
        a = res["a"]
        ai, am, ar = a["job"], a["median_seconds"], a["ratios"]
        lines += [f"### (a) {ai['candidate_pairs']:,} candidate pairs, threshold {thr}", "",
                  f"{ai['records']:,} records in b = {ai['n_blocks']} blocks, n_k ∝ "
                  f"e^(−{ai['skew'][1]}·k) (largest {ai['largest_block']:,} records, "
                  f"{ai['largest_block_pair_share']:.0%} of the pairs); distinct value pairs in "
                  "the blocks over record pairs: "
                  + ", ".join(f"{c} {v:.2%}" for c, v in ai["distinct_pair_share"].items())
                  + f". Median of {p['a_repeats']} interleaved runs (Splink once); load "
                  f"{_loads(a['runs'])}.", "",
                  *thresholded_table(a["runs"], am, ai["candidate_pairs"]),
                  "", ratio_line(ar, TARGETS["a_erblock_over_kernel"],
                                 TARGETS["a_erblock_over_splink"], res["splink_note"]),
                  "Kept pairs differ by design: the kernel scores a missing value as an empty "
                  "string, Splink decides on a match probability.", ""]
    if "b" not in res:
        lines += ["### (b) not run (--skip b)", ""]
    else:
        b = res["b"]
        bi, bm, br = b["job"], b["median_seconds"], b["ratios"]
        lines += [f"### (b) every pair written: {bi['candidate_pairs']:,} pairs, no threshold", "",
                  f"{bi['records']:,} records, the same blocking as (a). erblock "
                  "`dedupe(..., threshold=None, output=dir)` (the workers write parquet parts); "
                  "Splink `predict()` without a threshold, then `to_parquet` (DuckDB COPY). "
                  f"Median of {p['b_repeats']} interleaved runs; load {_loads(b['runs'])}.", "",
                  "| system | s | rows written | MiB written | columns | peak MiB (+added) |",
                  "|---|---:|---:|---:|---:|---:|"]
        labels_b = {"erblock": "erblock `output=dir`", "splink": "Splink 5 predict + to_parquet"}
        for name, v in b["runs"].items():
            if v:
                lines.append(f"| {labels_b[name]} | {bm[name]:.1f} | {v[-1]['kept_pairs']:,} | "
                             f"{v[-1]['bytes_written'] / 2**20:,.0f} | {len(v[-1]['columns'])} | "
                             f"{_mem(max(v, key=lambda r: r['peak_mib']))} |")
        if b["runs"]["splink"]:
            sp = b["runs"]["splink"]
            lines += ["", f"Splink: predict {_median(sp, 'predict_seconds'):.1f} s, write "
                      f"{_median(sp, 'write_seconds'):.1f} s. erblock / Splink = "
                      f"**{br['erblock_over_splink']:.3f}** (target ≤ "
                      f"{TARGETS['b_erblock_over_splink']}: "
                      f"{_met(br['erblock_over_splink'], TARGETS['b_erblock_over_splink'])}).", ""]
        else:
            lines += ["", f"Splink not measured ({res['splink_note']}).", ""]
    d = res["d"]
    des = d["design"]
    lines += ["### (c, d) Growth from "
              f"{d['rows'][0]['records']:,} to {d['rows'][-1]['records']:,} records", "",
              f"Threshold {thr}; `n_blocks = n // {des['block_mean']}`, `skew = ('exp', "
              f"{des['shape']:g} / n_blocks)`: the same block-size shape at every size, so "
              "the pairs grow linearly with the records (bench_encoded's `('exp', 0.5)` "
              "keeps 39 % of the records in block 0 whatever the number of blocks: pairs "
              "would grow with n²). Records generated on the workers "
              f"(≈ {des['records_per_partition']:,} a partition) and persisted before the "
              "timed runs. The kernel runs while its predicted time (pairs × its seconds per "
              f"pair at the previous size) is under {des['kernel_max_seconds']:.0f} s. "
              f"{p['d_repeats']} run(s) per size (median); load {_loads_rows(d['rows'])}.", "",
              "| records | blocks | largest | candidate pairs | erblock s | M pairs/s | "
              "erblock peak MiB (+added) | kernel s | kernel peak MiB (+added) | "
              "erblock / kernel |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in d["rows"]:
        ms, er = r["median_seconds"], r["runs"]["erblock"][-1]
        kr = r["runs"]["kernel"][-1] if r["runs"]["kernel"] else None
        lines.append(
            f"| {r['records']:,} | {r['nonempty_blocks']:,} | {r['largest_block']:,} | "
            f"{r['candidate_pairs']:,} | {ms['erblock']:.1f} | "
            f"{r['candidate_pairs'] / ms['erblock'] / 1e6:,.0f} | {_mem(er)} | "
            + (f"{ms['kernel']:.1f} | {_mem(kr)} | {r['erblock_over_kernel']:.2f} |" if kr else
               f"— (≈ {r['kernel_predicted_seconds']:.0f} s predicted) | — | — |"))
    if d["erblock_time_exponent"] is not None:
        lines += ["", f"erblock's time grows as records^{d['erblock_time_exponent']:.2f} "
                  "from the smallest to the largest size (1.00 = linear, like the pairs)."]
    calib = sum(r.get("calibration_seconds", 0.0)
                for sec in ([res[k] for k in ("a", "b") if k in res] + d["rows"])
                for r in sec["runs"]["erblock"])
    lines += ["", "Untimed warm-up (full runs: calibrates the cost model): "
              + ", ".join(f"{k} {v:.1f} s" for k, v in res["warmup_seconds"].items())
              + f"; calibration inside the timed erblock runs: {calib:.1f} s."]
    rel = os.path.relpath(res["png"], DOCS) if res.get("png") else None
    if rel:
        lines += ["", f"![erblock time and peak memory against records]({rel})"]
    return "\n".join(lines) + "\n"


def _loads_rows(rows: list[dict[str, Any]]) -> str:
    vals = [x["load_before"][0] for r in rows for v in r["runs"].values() for x in v]
    return f"{min(vals):.2f}–{max(vals):.2f}" if vals else "?"


def cluster_client(stack: ExitStack, client: Any = None) -> tuple[Any, list[int]]:
    """``client``, or one of a LocalCluster of 2 worker processes × 1 thread closed with
    ``stack``; and the pids of the processes its workers run in."""
    from distributed import Client, LocalCluster

    if client is None:
        cluster = stack.enter_context(LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=logging.ERROR))
        client = stack.enter_context(Client(cluster))
    return client, sorted(set(client.run(os.getpid).values()))


def header(args: argparse.Namespace, params: dict[str, Any], targets: dict[str, float]
           ) -> dict[str, Any]:
    """What every scale result opens with: name, parameters, targets, date, machine and
    why Splink was not measured (empty when it was)."""
    return {
        "name": args.name, "quick": args.quick, "params": params, "targets": targets,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": runinfo.machine_info((*runinfo.DEFAULT_PACKAGES, "splink", "duckdb",
                                         "psutil")),
        "splink_note": ("--no-splink" if args.no_splink else
                        "Splink 5 is not installed" if not splink_available() else "")}


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run (a), (b), (d) (with (c) throughout), write ``<name>.json``, ``<name>.md`` and
    the chart."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke sizes (seconds)")
    ap.add_argument("--no-splink", action="store_true")
    ap.add_argument("--skip", default="", help="sections to skip, e.g. 'a' or 'a,b' (d is "
                    "always run: it makes the chart)")
    ap.add_argument("--sizes", default=None,
                    help="(d) record counts, comma-separated (default 500000,...,5000000)")
    ap.add_argument("--tmp", type=Path, default=None,
                    help="where (b) writes its pairs (default: the system temp dir; needs "
                    "a few GB)")
    ap.add_argument("--png", type=Path, default=None,
                    help=f"chart path (default {PNG.relative_to(ROOT)}; with --quick: "
                    "next to the results)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="scale")
    args = ap.parse_args(argv)
    p = dict(QUICK if args.quick else FULL)
    if args.sizes:
        p["d_sizes"] = [int(float(x)) for x in args.sizes.split(",")]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    log = (lambda m: None) if args.quick else (lambda m: print(m, flush=True))
    splink_ok = splink_available() and not args.no_splink
    png = args.png or (args.out / f"{args.name}.png" if args.quick else PNG)
    res = header(args, p, TARGETS)
    res["png"] = str(png)

    with ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tmp = Path(tempfile.mkdtemp(prefix="erblock-bench-scale-", dir=args.tmp))
        stack.callback(shutil.rmtree, tmp, True)
        client, workers = cluster_client(stack, client)
        res["worker_processes"] = len([w for w in workers if w != os.getpid()])
        t0 = time.perf_counter()
        res["warmup_seconds"] = warm_up(client, p, tmp, calibrate=not args.quick)
        log(f"warm-up (cost model calibration) {time.perf_counter() - t0:.1f} s")
        if "a" not in skip:
            res["a"] = bench_a(p, client, workers, splink_ok, log)
        if "b" not in skip:
            res["b"] = bench_b(p, client, workers, splink_ok, tmp, log)
        res["d"] = bench_d(p, client, workers, log)
    res["load_end"] = runinfo.load()
    res["skipped"] = sorted(skip & {"a", "b"})
    plot(res["d"], png)
    runinfo.write_results(args.out, args.name, res, render(res))
    return res


if __name__ == "__main__":
    main()
