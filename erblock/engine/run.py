"""profile → plan → route → compare → write: the only module that moves data with Dask.

1. **prepare**: every input partition is stamped with its partition number *before* any
   projection (so every pass numbers partitions alike), gets its block ids, and keeps only
   the compared columns. The prepared frames are persisted (optional) so keys are
   computed once.
2. **profile**: one small task per partition counts records per (block, partition,
   source): the BDM (paper 004). Records without a key are counted here and dropped.
3. **plan**: a pure-numpy strategy turns the BDM into match tasks on ``r`` reduce tasks.
4. **route**: each record becomes one row per reduce task that needs it and the rows are
   moved with ``set_index("_erb_task", divisions=range(r + 1))``, which places ids exactly
   (``shuffle(on=...)`` would hash them and undo the balance).
5. **compare**: one Dask task per reduce task runs its match tasks and either returns its
   pairs or writes them as a parquet part; tasks get the predicted load as priority, so
   the largest start first.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client

from ..balancing.bdm import BDM, SRC_R, SRC_S
from ..balancing.plan import Plan
from ..balancing.strategies import STRATEGIES
from ..blocking.keys import NULL_BLOCK, KeySpec
from ..matchers.compare import DEFAULT_CELL_BUDGET, compare_task, empty_pairs
from ..matchers.comparisons import Comparison
from ..report import RunReport
from .cluster import total_threads
from .route import prepare_partition, route_partition


@dataclass(frozen=True)
class Job:
    """A checked, normalised request (built by :mod:`erblock.api`)."""

    mode: str  # "link" or "dedupe"
    keys: tuple[KeySpec, ...]
    comparisons: tuple[Comparison, ...]
    strategy: str = "auto"
    n_tasks: int | None = None
    threshold: float | None = None
    output: str | None = None
    overwrite: bool = False
    id_columns: tuple[str | None, str | None] = (None, None)
    npartitions: int | None = None
    shuffle_method: str = "tasks"
    persist: bool = True
    progress: bool = False
    sort: bool = False
    cell_budget: int = DEFAULT_CELL_BUDGET

    @property
    def link(self) -> bool:
        return self.mode == "link"

    def value_columns(self, src: int) -> list[str]:
        """Distinct compared columns, in the names of source ``src``."""
        cols: list[str] = []
        for c in self.comparisons:
            name = c.right_column if src == SRC_S else c.column
            if name not in cols:
                cols.append(name)
        return cols

    def col_index(self) -> dict[str, int]:
        cols: list[str] = []
        for c in self.comparisons:
            if c.column not in cols:
                cols.append(c.column)
        return {c: i for i, c in enumerate(cols)}


# -- prepare --------------------------------------------------------------------------


def to_dask(df: Any, npartitions: int | None, threads: int) -> dd.DataFrame:
    """A Dask frame of ``df`` keeping the input order (pandas frames are split in order)."""
    if isinstance(df, dd.DataFrame):
        return df
    n = len(df)
    if npartitions is None:
        npartitions = max(1, min(2 * threads, -(-n // 5000))) if n else 1
    return dd.from_pandas(df, npartitions=max(1, min(npartitions, max(n, 1))), sort=False)


def _value_columns_for(job: Job, src: int) -> list[str]:
    """Columns of source ``src`` feeding ``_erb_v<i>`` in the order of ``col_index``."""
    index = job.col_index()
    out = [""] * len(index)
    for c in job.comparisons:
        out[index[c.column]] = c.right_column if src == SRC_S else c.column
    return out


def prepare(ddf: dd.DataFrame, job: Job, src: int) -> dd.DataFrame:
    """Stamp partitions, compute block ids, keep compared columns (lazy)."""
    value_columns = _value_columns_for(job, src)
    id_column = job.id_columns[src]
    meta = prepare_partition(ddf._meta, part=0, src=src, keys=job.keys,
                             value_columns=value_columns, id_column=id_column)

    def _prep(part: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
        number = partition_info["number"] if partition_info else 0
        return prepare_partition(part, part=number, src=src, keys=job.keys,
                                 value_columns=value_columns, id_column=id_column)

    return ddf.map_partitions(_prep, meta=meta, enforce_metadata=False,
                              align_dataframes=False)


# -- profile --------------------------------------------------------------------------


def _profile_partition(part: pd.DataFrame, check_ids: bool) -> dict[str, Any]:
    counts = part.groupby(["_erb_block", "_erb_part", "_erb_src"], sort=False).size()
    out: dict[str, Any] = {
        "block": counts.index.get_level_values(0).to_numpy(np.int64),
        "part": counts.index.get_level_values(1).to_numpy(np.int64),
        "src": counts.index.get_level_values(2).to_numpy(np.int8),
        "count": counts.to_numpy(np.int64),
        "records": int(part["_erb_rid"].nunique()),
    }
    if check_ids:
        first = part.drop_duplicates("_erb_rid")
        out["ids"] = pd.util.hash_pandas_object(first["_erb_id"], index=False).to_numpy()
    return out


def profile(prepared: Sequence[dd.DataFrame], client: Client, job: Job,
            check_ids: Sequence[bool]) -> tuple[BDM, dict[str, int]]:
    """Compute the BDM (and record counts, records not blocked, id uniqueness)."""
    tasks = []
    for src, pdf in enumerate(prepared):
        for d in pdf.to_delayed():
            tasks.append((src, dask.delayed(_profile_partition)(d, check_ids[src])))
    results = client.compute([t for _, t in tasks], sync=True) if tasks else []
    cols: dict[str, list[np.ndarray]] = {"block": [], "part": [], "src": [], "count": []}
    records = {"R": 0, "S": 0}
    ids: dict[int, list[np.ndarray]] = {SRC_R: [], SRC_S: []}
    for (src, _), res in zip(tasks, results):
        for k in cols:
            cols[k].append(res[k])
        records["R" if src == SRC_R else "S"] += res["records"]
        if "ids" in res:
            ids[src].append(res["ids"])
    for src, chunks in ids.items():
        if chunks:
            allids = np.concatenate(chunks)
            uniq, counts = np.unique(allids, return_counts=True)
            if (counts > 1).any():
                which = "df_s" if src == SRC_S else ("df_r" if job.link else "df")
                raise ValueError(
                    f"{which}: record ids are not unique ({int((counts > 1).sum())} ids repeat). "
                    "erblock reports pairs by id, so every record needs its own: call "
                    "reset_index(drop=True) on a Dask frame read from files (its index restarts "
                    "in every partition), or pass id='<a unique column>'"
                )
    arr = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
    null = arr["block"] == NULL_BLOCK
    not_blocked = {
        "R": int(arr["count"][null & (arr["src"] == SRC_R)].sum()),
        "S": int(arr["count"][null & (arr["src"] == SRC_S)].sum()),
    }
    keep = ~null
    n_parts = (prepared[0].npartitions, prepared[1].npartitions if len(prepared) > 1 else 0)
    bdm = BDM.from_arrays(arr["block"][keep], arr["part"][keep], arr["src"][keep],
                          arr["count"][keep], n_parts, job.link)
    stats = {
        "records_r": records["R"],
        "records_s": records["S"],
        "not_blocked_r": not_blocked["R"],
        "not_blocked_s": not_blocked["S"],
        "not_blocked": not_blocked["R"] + not_blocked["S"],
    }
    return bdm, stats


def make_plan(bdm: BDM, strategy: str, r: int) -> Plan:
    """Run a planner; ``auto`` picks the strategy with the lowest predicted max load."""
    if strategy == "auto":
        plans = [STRATEGIES[s](bdm, r) for s in ("basic", "blocksplit")]
        # Prefer fewer routed records when max loads tie (basic replicates nothing).
        best = min(plans, key=lambda p: (int(p.loads.max()) if len(p.loads) else 0,
                                         p.records_routed))
        best.info["auto"] = True
        return best
    return STRATEGIES[strategy](bdm, r)


# -- route + compare ------------------------------------------------------------------


def _routed(prepared: dd.DataFrame, plan_d: Any, r: int, shuffle_method: str) -> dd.DataFrame:
    meta = prepared._meta.assign(_erb_unit=np.zeros(0, np.int64), _erb_task=np.zeros(0, np.int64))
    routed = prepared.map_partitions(route_partition, plan_d, meta=meta, align_dataframes=False)
    return routed.set_index("_erb_task", divisions=list(range(r + 1)),
                            shuffle_method=shuffle_method)


def _run_task(task: int, plan: Plan, left: pd.DataFrame, right: pd.DataFrame | None,
              job: Job, id_dtypes: tuple[object, object], out_dir: str | None
              ) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    pairs, stats = compare_task(task, plan, left, right, job.comparisons, job.col_index(),
                                len(job.keys), job.threshold, id_dtypes, job.cell_budget)
    try:
        from distributed import get_worker

        stats.worker = get_worker().address
    except ValueError:
        stats.worker = "local"
    if job.sort and len(pairs):
        pairs = sort_pairs(pairs)
    if out_dir is None:
        return pairs, stats.to_dict()
    start = time.perf_counter()
    final = os.path.join(out_dir, f"part-{task:05d}.parquet")
    tmp = f"{final}.{uuid.uuid4().hex}.tmp"
    pairs.to_parquet(tmp, index=False, engine="pyarrow")
    os.replace(tmp, final)  # atomic: a recomputed task rewrites the same part whole
    stats.write_seconds = time.perf_counter() - start
    return None, stats.to_dict()


def sort_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs in a canonical order: by left id, then right id."""
    try:
        return pairs.sort_values(["left_id", "right_id"], kind="stable").reset_index(drop=True)
    except TypeError:  # ids of mixed types: order by their text
        key = pairs["left_id"].astype(str) + "\x00" + pairs["right_id"].astype(str)
        return pairs.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


def _id_dtype(df: Any, id_column: str | None) -> object:
    if id_column:
        return df[id_column].dtype
    return df.index.dtype


def run(job: Job, frames: Sequence[Any], client: Client, *, check_ids: Sequence[bool]
        ) -> tuple[pd.DataFrame | None, RunReport]:
    """Run ``job`` on ``frames`` ([df] or [df_r, df_s]); return pairs (or None) and report."""
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    threads = total_threads(client)
    ddfs = [to_dask(f, job.npartitions, threads) for f in frames]
    id_dtypes = (_id_dtype(ddfs[0], job.id_columns[0]),
                 _id_dtype(ddfs[-1], job.id_columns[-1] if job.link else job.id_columns[0]))
    prepared = [prepare(d, job, src) for src, d in enumerate(ddfs)]
    if job.persist:
        prepared = [client.persist(p) for p in prepared]
    bdm, rec = profile(prepared, client, job, check_ids)
    phases["profile"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    r = job.n_tasks or max(1, 4 * threads)
    plan = make_plan(bdm, job.strategy, r)
    phases["plan"] = time.perf_counter() - t1

    out_dir, final_dir = _output_dirs(job)
    report = RunReport(mode=job.mode, strategy=plan.strategy, n_tasks=r, plan=plan.summary(),
                       records=rec, settings=_settings(job, r, len(ddfs[0].divisions) - 1),
                       output=final_dir)
    t2 = time.perf_counter()
    results: list[tuple[pd.DataFrame | None, dict[str, Any]]] = []
    if plan.total_comparisons > 0:
        plan_d = dask.delayed(plan, name=f"erblock-plan-{uuid.uuid4().hex}")
        routed = [_routed(p, plan_d, r, job.shuffle_method) for p in prepared]
        parts = [rt.to_delayed() for rt in routed]
        tasks = []
        for t in range(r):
            right = parts[1][t] if job.link else None
            with dask.annotate(priority=int(plan.loads[t])):
                tasks.append(dask.delayed(_run_task, pure=False)(
                    t, plan_d, parts[0][t], right, job, id_dtypes, out_dir))
        futures = client.compute(tasks, optimize_graph=False)
        if job.progress:
            show_progress(futures, "compare")
        try:
            results = client.gather(futures)
        except BaseException:
            client.cancel(futures)
            if out_dir is not None:
                shutil.rmtree(out_dir, ignore_errors=True)
            raise
    phases["route_compare"] = time.perf_counter() - t2

    t3 = time.perf_counter()
    report.tasks = [stats for _, stats in results]
    report.pairs = int(sum(s["pairs"] for s in report.tasks))
    pairs: pd.DataFrame | None = None
    if out_dir is None:
        frames_out = [p for p, _ in results if p is not None and len(p)]
        pairs = (pd.concat(frames_out, ignore_index=True) if frames_out
                 else empty_pairs(job.comparisons, id_dtypes))
        if job.sort:
            pairs = sort_pairs(pairs)
    else:
        if not results:  # no comparisons: still leave a readable, empty dataset
            empty_pairs(job.comparisons, id_dtypes).to_parquet(
                os.path.join(out_dir, "part-00000.parquet"), index=False)
        _finish_output(out_dir, final_dir, job.overwrite)
    phases["write"] = time.perf_counter() - t3
    report.phases = phases
    report.settings["write_task_seconds"] = float(sum(s["write_seconds"] for s in report.tasks))
    if pairs is not None:
        pairs.attrs["erblock_report"] = report
    return pairs, report


def show_progress(futures: list[Any], label: str, stream: Any = None) -> None:
    """A one-line progress bar with ETA on stderr, advanced as Dask futures finish.

    Uses ``distributed.as_completed``, so it works with any client (local or remote)
    without a scheduler-side feed; errors surface later, in ``gather``.
    """
    import sys

    from distributed import as_completed

    stream = stream or sys.stderr
    total, start = len(futures), time.perf_counter()
    width = 30

    def draw(done: int) -> None:
        elapsed = time.perf_counter() - start
        eta = elapsed / done * (total - done) if done else float("nan")
        filled = int(width * done / total) if total else width
        eta_text = f"ETA {eta:5.1f}s" if done < total else "done    "
        stream.write(f"\r{label:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                     f"{elapsed:6.1f}s {eta_text}")
        stream.flush()

    draw(0)
    loop = futures[0].client.loop if futures else None  # erblock's client need not be default
    for done, _ in enumerate(as_completed(futures, loop=loop), 1):
        draw(done)
    stream.write("\n")
    stream.flush()


def _settings(job: Job, r: int, m: int) -> dict[str, Any]:
    return {
        "keys": [repr(k) for k in job.keys],
        "comparisons": [c.to_dict() for c in job.comparisons],
        "strategy": job.strategy,
        "n_tasks": r,
        "input_partitions": m,
        "threshold": job.threshold,
        "shuffle_method": job.shuffle_method,
    }


def _output_dirs(job: Job) -> tuple[str | None, str | None]:
    """(directory the workers write into, final directory) for ``job.output``."""
    if job.output is None:
        return None, None
    final = os.path.abspath(job.output)
    if os.path.exists(final) and os.listdir(final) and not job.overwrite:
        raise FileExistsError(
            f"output: {final!r} exists and is not empty; choose a new directory or pass "
            "overwrite=True"
        )
    work = f"{final}.erblock-tmp-{uuid.uuid4().hex[:12]}"
    Path(work).mkdir(parents=True)
    return work, final


def _finish_output(work: str, final: str, overwrite: bool) -> None:
    """Move the finished parts under the final name (a failed run leaves nothing there)."""
    if os.path.exists(final):
        if not overwrite and os.listdir(final):
            raise FileExistsError(f"output: {final!r} appeared during the run")
        shutil.rmtree(final)
    os.replace(work, final)
