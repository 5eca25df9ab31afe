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
from ..balancing.sketch import SketchProfile, SketchSpec, as_sketch_spec
from ..balancing.sketch import build as build_sketch
from ..balancing.sketch import merge as merge_sketches
from ..blocking.keys import NULL_BLOCK, KeySpec
from ..matchers import scoring_tasks as _scoring
from ..matchers.compare import DEFAULT_CELL_BUDGET, compare_task, empty_pairs
from ..matchers.comparisons import Comparison
from ..report import RunReport
from .cluster import total_threads
from .planning import make_plan, plan_job, prediction  # noqa: F401 (make_plan: re-export)
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
    memory_budget: Any = None  # bytes per reduce task, "auto" or None (engine/memory.py)
    cost_model: Any = None  # None, "calibrate", "default", CostModel, dict or RunReport
    sample: Any = None  # progressive sampling goal (balancing.sampling.SampleGoal) or None
    sketch: Any = None  # balancing.sketch.SketchSpec for the cell strategies (None: defaults)

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


def to_dask(df: Any, npartitions: int | None, threads: int, sample: bool = False
            ) -> dd.DataFrame:
    """A Dask frame of ``df`` keeping the input order (pandas frames are split in order).

    With ``sample`` (progressive sampling draws whole partitions) a pandas frame is cut
    finer by default: partitions of about 2,000 records (at least 4 per worker thread, at
    most 128).
    """
    if isinstance(df, dd.DataFrame):
        return df
    n = len(df)
    if npartitions is None and sample:
        npartitions = max(1, min(n, max(4 * threads, min(128, -(-n // 2000)))))
    if npartitions is None:
        npartitions = max(1, min(2 * threads, -(-n // 5000))) if n else 1
    # Dask would turn object columns into pyarrow strings (1.0 -> "1.0") before erblock
    # sees them; keep them as they are so keys and values follow erblock's own rules.
    with dask.config.set({"dataframe.convert-string": False}):
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
    futures = client.compute([t for _, t in tasks]) if tasks else []
    if job.progress and futures:
        show_progress(futures, "profile")
    results = client.gather(futures) if futures else []
    cols: dict[str, list[np.ndarray]] = {"block": [], "part": [], "src": [], "count": []}
    records = {"R": 0, "S": 0}
    ids: dict[int, list[np.ndarray]] = {SRC_R: [], SRC_S: []}
    for (src, _), res in zip(tasks, results):
        for k in cols:
            cols[k].append(res[k])
        records["R" if src == SRC_R else "S"] += res["records"]
        if "ids" in res:
            ids[src].append(res["ids"])
    _check_unique_ids(ids, job)
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


def _check_unique_ids(ids: dict[int, list[np.ndarray]], job: Job) -> None:
    """Raise when the id hashes of a source repeat (Dask input is checked while profiling)."""
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


def _sketch_partition(part: pd.DataFrame, spec: SketchSpec, check_ids: bool) -> dict[str, Any]:
    """Sketch of one prepared partition (worker side): O(d·w) whatever its blocks."""
    blk = part["_erb_block"].to_numpy(np.int64)
    keyed = blk != NULL_BLOCK
    out: dict[str, Any] = {
        "sketch": build_sketch(blk[keyed], spec),
        "records": int(part["_erb_rid"].nunique()),
        "not_blocked": int((~keyed).sum()),
    }
    if check_ids:
        first = part.drop_duplicates("_erb_rid")
        out["ids"] = pd.util.hash_pandas_object(first["_erb_id"], index=False).to_numpy()
    return out


def _merge_sketch_results(*results: dict[str, Any]) -> dict[str, Any]:
    """Sum partition results (sketches, record counts; id hashes are concatenated)."""
    out: dict[str, Any] = {
        "sketch": merge_sketches(r["sketch"] for r in results),
        "records": sum(r["records"] for r in results),
        "not_blocked": sum(r["not_blocked"] for r in results),
    }
    ids = [r["ids"] for r in results if "ids" in r]
    if ids:
        out["ids"] = np.concatenate(ids)
    return out


SKETCH_FAN_IN = 8  #: partition sketches summed per task of the merge tree


def profile_sketch(prepared: Sequence[dd.DataFrame], client: Client, job: Job,
                   check_ids: Sequence[bool], r: int) -> tuple[SketchProfile, dict[str, int]]:
    """The sketch profile (paper 003) instead of the BDM, for the cell strategies.

    One task per input partition builds a ``d × w`` sketch of its block ids (``job.sketch``,
    ``w = 64·r`` by default) and a tree of tasks sums them, so the client receives one
    sketch per source: ``O(d·w)`` memory whatever the number of blocks (plus the id
    hashes of Dask input, checked for uniqueness as :func:`profile` does). Returns the
    profile and the same record counts as :func:`profile`.
    """
    spec = as_sketch_spec(job.sketch).resolved(r)
    roots = []
    for src, pdf in enumerate(prepared):
        level = [dask.delayed(_sketch_partition)(d, spec, check_ids[src])
                 for d in pdf.to_delayed()]
        while len(level) > 1:
            level = [dask.delayed(_merge_sketch_results)(*level[i:i + SKETCH_FAN_IN])
                     for i in range(0, len(level), SKETCH_FAN_IN)]
        roots.append(level[0])
    futures = client.compute(roots)
    if job.progress:
        show_progress(futures, "profile")
    results = client.gather(futures)
    _check_unique_ids({src: [res["ids"]] if "ids" in res else []
                       for src, res in enumerate(results)}, job)
    n_parts = (prepared[0].npartitions, prepared[1].npartitions if len(prepared) > 1 else 0)
    prof = SketchProfile(spec, results[SRC_R]["sketch"],
                         results[SRC_S]["sketch"] if job.link else None, job.link, n_parts)
    records = [res["records"] for res in results] + [0]
    not_blocked = [res["not_blocked"] for res in results] + [0]
    stats = {
        "records_r": records[SRC_R],
        "records_s": records[SRC_S],
        "not_blocked_r": not_blocked[SRC_R],
        "not_blocked_s": not_blocked[SRC_S],
        "not_blocked": not_blocked[SRC_R] + not_blocked[SRC_S],
    }
    return prof, stats


# make_plan (strategy or ``auto`` under the cost model) lives in .planning


# -- route + compare ------------------------------------------------------------------


def _routed(prepared: dd.DataFrame, plan_d: Any, r: int, shuffle_method: str) -> dd.DataFrame:
    meta = prepared._meta.assign(_erb_unit=np.zeros(0, np.int64), _erb_task=np.zeros(0, np.int64),
                                 _erb_rank=np.zeros(0, np.int64))
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


def _write_task(result: tuple[pd.DataFrame | None, dict[str, Any]], out_dir: str
                ) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    """Write one reduce task's pairs (from :func:`_run_task`) as its parquet part."""
    pairs, stats = result
    assert pairs is not None
    stats = dict(stats)
    stats["write_seconds"] = _write_part(pairs, out_dir, int(stats["task"]))
    return None, stats


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


def run(job: Job, frames: Sequence[Any], client: Client, *, check_ids: Sequence[bool],
        scoring: Any = None) -> tuple[pd.DataFrame | None, RunReport]:
    """Run ``job`` on ``frames`` ([df] or [df_r, df_s]); return pairs (or None) and report.

    ``scoring``: None for the mean score, or a model bound to ``job.comparisons`` (see
    :func:`_compare_scored`); its fitted form is in ``pairs.attrs["erblock_model"]``.
    """
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    threads = total_threads(client)
    ddfs = [to_dask(f, job.npartitions, threads, sample=job.sample is not None) for f in frames]
    id_dtypes = (_id_dtype(ddfs[0], job.id_columns[0]),
                 _id_dtype(ddfs[-1], job.id_columns[-1] if job.link else job.id_columns[0]))
    prepared = [prepare(d, job, src) for src, d in enumerate(ddfs)]
    if job.persist and job.sample is None:  # a sampled plan profiles only the sample
        prepared = [client.persist(p) for p in prepared]
    r = job.n_tasks or max(1, 4 * threads)
    plan, rec, timing = plan_job(client, job, prepared, check_ids, threads, r, t0)
    from .memory import fit_plan  # memory_budget: chunk size and task count that fit

    plan, r, job = fit_plan(client, job, prepared, check_ids, threads, r, t0, plan)
    phases.update(timing)  # profile, plan

    out_dir, final_dir = _output_dirs(job)
    report = RunReport(mode=job.mode, strategy=plan.strategy, n_tasks=r, plan=plan.summary(),
                       records=rec, settings=_settings(job, r, len(ddfs[0].divisions) - 1),
                       output=final_dir)
    t2 = time.perf_counter()
    results: list[tuple[pd.DataFrame | None, dict[str, Any]]] = []
    if plan.total_comparisons > 0 and scoring is not None:
        results = _compare_scored(client, job, plan, prepared, r, id_dtypes, out_dir, scoring,
                                  rec, report.settings)
    elif plan.total_comparisons > 0:
        plan_d = dask.delayed(plan, name=f"erblock-plan-{uuid.uuid4().hex}")
        routed = [_routed(p, plan_d, r, job.shuffle_method) for p in prepared]
        parts = [rt.to_delayed() for rt in routed]
        compared, tasks = [], []
        for t in range(r):
            right = parts[1][t] if job.link else None
            with dask.annotate(priority=int(plan.loads[t])):
                c = dask.delayed(_run_task, pure=False)(
                    t, plan_d, parts[0][t], right, job, id_dtypes, None)
                compared.append(c)
                # with an output directory: compare, then write on the same worker (the
                # scheduler runs a dependent where its input is), so each phase has a bar
                if out_dir is None:
                    tasks.append(c)
                    continue
            # a finished compare is written before any other compare starts, so a worker
            # holds at most one unwritten result per thread (bounded memory)
            with dask.annotate(priority=int(plan.loads.max()) + 1):
                tasks.append(dask.delayed(_write_task, pure=False)(c, out_dir))
        both = job.progress and out_dir is not None
        futures = client.compute(compared + tasks if both else tasks, optimize_graph=False)
        if job.progress:
            # compare futures are released as they finish: their pairs stay on the
            # workers only until written
            show_progress(futures[:r], "compare", release=both)
            if both:
                show_progress(futures[r:], "write")
        futures = futures[-r:]
        try:
            results = client.gather(futures)
        except BaseException:
            client.cancel(futures)
            if out_dir is not None:
                remove_tree(out_dir)
            raise
    phases["route_compare"] = time.perf_counter() - t2

    t3 = time.perf_counter()
    report.tasks = [stats for _, stats in results]
    report.pairs = int(sum(s["pairs"] for s in report.tasks))
    pairs: pd.DataFrame | None = None
    if out_dir is None:
        frames_out = [p for p, _ in results if p is not None and len(p)]
        pairs = (pd.concat(frames_out, ignore_index=True) if frames_out
                 else _empty_pairs(job, id_dtypes, scoring))
        if job.sort:
            pairs = sort_pairs(pairs)
    else:
        if not results:  # no comparisons: still leave a readable, empty dataset
            _empty_pairs(job, id_dtypes, scoring).to_parquet(
                os.path.join(out_dir, "part-00000.parquet"), index=False)
        if scoring is not None and _fitted(scoring):
            scoring.to_json(os.path.join(out_dir, MODEL_FILE))
        assert final_dir is not None  # set together with out_dir
        _finish_output(out_dir, final_dir, job.overwrite)
    phases["write"] = time.perf_counter() - t3
    report.phases = phases
    report.settings["threads"] = threads
    report.prediction = prediction(plan, report)
    report.settings["write_task_seconds"] = float(sum(s["write_seconds"] for s in report.tasks))
    if scoring is not None:
        report.settings["scoring"] = scoring.report() if _fitted(scoring) else scoring.kind
    if pairs is not None:
        # attrs must stay JSON-safe: pandas writes them into parquet metadata
        pairs.attrs["erblock_report"] = report.attach()
        if scoring is not None:
            pairs.attrs["erblock_model"] = scoring.to_dict()  # erblock.load_model() reads it
    return pairs, report


def show_progress(futures: list[Any], label: str, stream: Any = None,
                  release: bool = False) -> None:
    """A one-line progress bar with ETA on stderr, advanced as Dask futures finish.

    Uses ``distributed.as_completed``, so it works with any client (local or remote)
    without a scheduler-side feed; errors surface later, in ``gather``. With ``release``
    each future is released once finished (its result is then kept only as long as a
    dependent task needs it).
    """
    import sys

    from distributed import as_completed

    stream = stream or sys.stderr
    total, start = len(futures), time.perf_counter()
    width = 30

    def draw(done: int) -> None:
        elapsed = time.perf_counter() - start
        eta = elapsed / done * (total - done) if done else 0.0
        filled = int(width * done / total) if total else width
        eta_text = ("done    " if done >= total else
                    f"ETA {eta:5.1f}s" if done else "ETA     ?")
        stream.write(f"\r{label:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                     f"{elapsed:6.1f}s {eta_text}")
        stream.flush()

    draw(0)
    loop = futures[0].client.loop if futures else None  # erblock's client need not be default
    for done, future in enumerate(as_completed(futures, loop=loop), 1):
        draw(done)
        if release:
            future.release()
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
    # A worker killed while writing leaves its half-written ``*.tmp``; the recomputed task
    # wrote the whole part under its final name, so the leftover is dropped here.
    for leftover in Path(work).glob("*.tmp"):
        leftover.unlink(missing_ok=True)
    if os.path.exists(final):
        if not overwrite and os.listdir(final):
            raise FileExistsError(f"output: {final!r} appeared during the run")
        shutil.rmtree(final)
    os.replace(work, final)


# -- scoring: Fellegi-Sunter EM in two phases, or a fitted model in one ---------------

MODEL_FILE = "_erblock_model.json"  #: a leading "_" keeps parquet readers off the file


def _fitted(model: Any) -> bool:
    return bool(getattr(model, "fitted", False))


def _empty_pairs(job: Job, id_dtypes: tuple[object, object], scoring: Any) -> pd.DataFrame:
    out = empty_pairs(job.comparisons, id_dtypes)
    if scoring is not None:
        out["match_weight"] = pd.Series([], dtype=np.float64)
        out["match_probability"] = pd.Series([], dtype=np.float64)
    return out


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:
        return "local"


def _tf_value_column(job: Job, model: Any) -> str | None:
    """``_erb_v<i>`` holding the term-frequency column's values, if the model adjusts one."""
    k = getattr(model, "tf_index_", None)
    if k is None:
        return None
    from .route import value_column

    return value_column(job.col_index()[job.comparisons[k].column])


def _compare_unscored(task: int, plan: Plan, left: pd.DataFrame, right: pd.DataFrame | None,
                      job: Job, id_dtypes: tuple[object, object], tf_col: str | None
                      ) -> tuple[pd.DataFrame, dict[str, Any], np.ndarray | None]:
    """All candidate pairs of a reduce task (no threshold), stats, tf-column values."""
    pairs, stats = compare_task(task, plan, left, right, job.comparisons, job.col_index(),
                                len(job.keys), None, id_dtypes, job.cell_budget)
    stats.worker = _worker_name()
    tf_values = _scoring.tf_values_for(pairs, left, tf_col) if tf_col else None
    return pairs, stats.to_dict(), tf_values


def _keep_task(task: int, plan: Plan, left: pd.DataFrame, right: pd.DataFrame | None,
               job: Job, id_dtypes: tuple[object, object], model: Any, tf_col: str | None
               ) -> _scoring.KeptTask:
    """EM phase 1 (worker): compare, compute level vectors, keep everything in memory."""
    pairs, stats, tf_values = _compare_unscored(task, plan, left, right, job, id_dtypes, tf_col)
    return _scoring.keep_task(pairs, stats, model, tf_values)


def remove_tree(path: str, timeout: float = 15.0) -> None:
    """Remove ``path`` even while cancelled write tasks may still add a part to it.

    A write that was already running when the run failed cannot be interrupted; it may
    create a file after ``rmtree`` listed the directory, so removal is retried until the
    directory is gone (or ``timeout`` seconds pass). Writes never create the directory
    again: they fail once it is gone.
    """
    deadline = time.monotonic() + timeout
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _write_part(pairs: pd.DataFrame, out_dir: str, task: int) -> float:
    """Write one reduce task's pairs atomically as ``part-<task>.parquet``; seconds taken."""
    start = time.perf_counter()
    final = os.path.join(out_dir, f"part-{task:05d}.parquet")
    tmp = f"{final}.{uuid.uuid4().hex}.tmp"
    pairs.to_parquet(tmp, index=False, engine="pyarrow")
    os.replace(tmp, final)
    return time.perf_counter() - start


def _finish_scored(pairs: pd.DataFrame, stats: dict[str, Any], start: float, job: Job,
                   out_dir: str | None) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    stats = dict(stats)
    if job.sort and len(pairs):
        pairs = sort_pairs(pairs)
    stats["pairs"] = len(pairs)
    stats["seconds"] = stats["seconds"] + (time.perf_counter() - start)
    if out_dir is None:
        return pairs, stats
    stats["write_seconds"] = _write_part(pairs, out_dir, stats["task"])
    return None, stats


def _score_task(kept: _scoring.KeptTask, model: Any, job: Job, out_dir: str | None
                ) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    """EM phase 2 (worker): score the kept pairs, apply the threshold, return or write."""
    start = time.perf_counter()
    pairs = _scoring.score_kept(kept, model, job.threshold)
    return _finish_scored(pairs, kept.stats, start, job, out_dir)


def _model_task(task: int, plan: Plan, left: pd.DataFrame, right: pd.DataFrame | None,
                job: Job, id_dtypes: tuple[object, object], model: Any, tf_col: str | None,
                out_dir: str | None) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    """A fitted model (worker): compare, score, apply the threshold, return or write."""
    pairs, stats, tf_values = _compare_unscored(task, plan, left, right, job, id_dtypes, tf_col)
    start = time.perf_counter()
    if tf_values is not None:
        pairs = pairs.assign(**{_scoring.TF_COLUMN: tf_values})
    scored = _scoring.score_pairs(pairs, model, job.threshold)
    return _finish_scored(scored, stats, start, job, out_dir)


def _u_sample_fractions(job: Job, rec: dict[str, int], u_pairs: int) -> list[float]:
    """Record-sample fraction per source so that the sample gives about ``u_pairs`` pairs."""
    if job.link:
        nr, ns = max(rec.get("records_r", 0), 1), max(rec.get("records_s", 0), 1)
        f = min(1.0, float(np.sqrt(u_pairs / (nr * ns))))
        return [f, f]
    n = max(rec.get("records_r", 0), 2)
    target = (1.0 + np.sqrt(1.0 + 8.0 * u_pairs)) / 2.0  # n(n-1)/2 = u_pairs
    return [min(1.0, float(target / n))]


def _compare_scored(client: Client, job: Job, plan: Plan, prepared: Sequence[dd.DataFrame],
                    r: int, id_dtypes: tuple[object, object], out_dir: str | None, model: Any,
                    rec: dict[str, int], settings: dict[str, Any]
                    ) -> list[tuple[pd.DataFrame | None, dict[str, Any]]]:
    """Compare and score with ``model``; returns per-task (pairs or None, stats).

    A fitted model runs in one phase (compare, score, threshold in each task). An unfitted
    :class:`~erblock.matchers.scoring.FellegiSunter` runs in two: (1) every task compares
    without a threshold, keeps its pairs and their level vectors in worker memory (a
    future) and only its pattern histogram is gathered, while one more task counts levels
    over random record pairs (u) and, with ``tf_adjust``, partitions count values; (2) the
    client fits EM on the summed histogram, scatters the model, and each kept future is
    scored on its worker (``match_probability >= threshold``), returned or written.
    """
    plan_d = dask.delayed(plan, name=f"erblock-plan-{uuid.uuid4().hex}")
    routed = [_routed(p, plan_d, r, job.shuffle_method) for p in prepared]
    parts = [rt.to_delayed() for rt in routed]
    tf_col = _tf_value_column(job, model)
    timing: dict[str, float] = {}
    futures: list[Any] = []
    try:
        if _fitted(model):
            model_d = dask.delayed(model, name=f"erblock-model-{uuid.uuid4().hex}")
            tasks = []
            for t in range(r):
                right = parts[1][t] if job.link else None
                with dask.annotate(priority=int(plan.loads[t])):
                    tasks.append(dask.delayed(_model_task, pure=False)(
                        t, plan_d, parts[0][t], right, job, id_dtypes, model_d, tf_col, out_dir))
            futures = client.compute(tasks, optimize_graph=False)
            if job.progress:
                show_progress(futures, "compare")
            return client.gather(futures)

        t0 = time.perf_counter()
        model_d = dask.delayed(model, name=f"erblock-model-{uuid.uuid4().hex}")
        tasks = []
        for t in range(r):
            right = parts[1][t] if job.link else None
            with dask.annotate(priority=int(plan.loads[t])):
                tasks.append(dask.delayed(_keep_task, pure=False)(
                    t, plan_d, parts[0][t], right, job, id_dtypes, model_d, tf_col))
        kept = client.compute(tasks, optimize_graph=False)
        futures = list(kept)
        hist_f = client.map(_scoring.kept_histogram, kept, pure=False)
        futures += hist_f
        # u from random record pairs: a deterministic record sample, compared in one task
        fractions = _u_sample_fractions(job, rec, model.u_pairs)
        samples = []
        for p, f in zip(prepared, fractions):
            s = p.map_partitions(_scoring.sample_records, f, model.seed, meta=p._meta,
                                 align_dataframes=False)
            samples.append(dask.delayed(pd.concat)(s.to_delayed(), ignore_index=True))
        vcols = [value_column_of(job, c.column) for c in job.comparisons]
        samples = client.persist(samples)  # released with the last reference
        sizes = client.compute([dask.delayed(len)(s) for s in samples], sync=True)
        ranges = _scoring.u_row_ranges(sizes[0], sizes[1] if job.link else None,
                                       2 * total_threads(client))
        u_parts = [dask.delayed(_scoring.u_level_counts)(
            samples[0], samples[1] if job.link else None, job.comparisons, vcols,
            model.specs_, job.cell_budget, rows) for rows in ranges]
        extra = [dask.delayed(_scoring.sum_level_counts)(u_parts) if u_parts
                 else dask.delayed(_scoring.u_level_counts)(
                     samples[0], samples[1] if job.link else None, job.comparisons, vcols,
                     model.specs_, job.cell_budget)]
        if tf_col is not None:
            extra += [dask.delayed(_scoring.tf_counts)(d, tf_col)
                      for p in prepared for d in p.to_delayed()]
        extra_f = client.compute(extra)
        futures += extra_f
        if job.progress:
            show_progress(kept, "compare")
        hists = client.gather(hist_f)
        (u_counts, n_u), *tf_parts = client.gather(extra_f)
        timing["phase1"] = time.perf_counter() - t0

        t1 = time.perf_counter()
        merged = _scoring.PatternHistogram.merge(hists)
        model.set_blocking_columns(_blocking_columns(job))
        model.fit_histogram(merged, u_counts, n_u_pairs=n_u)
        if tf_col is not None:
            counts = pd.concat([c for c in tf_parts if len(c)])
            counts = counts.groupby(level=0, sort=False).sum() if len(counts) else counts
            total = float(counts.sum())
            model.set_tf(counts / total if total else counts.astype(np.float64))
        timing["fit"] = time.perf_counter() - t1
        settings["histogram_bytes"] = int(sum(h.nbytes for h in hists))

        t2 = time.perf_counter()
        [model_f] = client.scatter([model], broadcast=True)
        futures.append(model_f)
        scored = client.map(_score_task, kept, model=model_f, job=job, out_dir=out_dir,
                            pure=False)
        futures += scored
        results = client.gather(scored)
        timing["score"] = time.perf_counter() - t2
        settings["scoring_seconds"] = timing
        return results
    except BaseException:
        client.cancel(futures)  # stop what still runs before removing its directory
        if out_dir is not None:
            remove_tree(out_dir)
        raise
    finally:
        client.cancel(futures)  # frees the kept pairs on the workers


def _blocking_columns(job: Job) -> set[str] | None:
    """Columns any blocking key reads (None when a key function does not declare them)."""
    cols: set[str] = set()
    for k in job.keys:
        if not k.columns:
            return None
        cols.update(k.columns)
    return cols


def value_column_of(job: Job, column: str) -> str:
    """Name of the prepared column holding ``column``'s values (``_erb_v<i>``)."""
    from .route import value_column

    return value_column(job.col_index()[column])
