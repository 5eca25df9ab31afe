"""Profiles of the input (driver side): the BDM, a sketch, or a progressive sample.

* :func:`profile_bdm` — one small task per prepared partition counts records per
  (block, partition, source): the block distribution matrix (paper 004).
* :func:`profile_sketch` — one task per partition builds a ``d × w`` sketch of its block
  ids and a tree of tasks sums them (paper 003): ``O(d·w)`` memory whatever the number of
  blocks.
* :func:`profile_sample` — progressive sampling (paper 001): profile a growing random
  sample of partitions until the plan built from it meets the goal.

Each returns a :class:`Profile`: what the planners need, the record counts (records,
records without any key) and, for Dask input, the check that record ids are unique.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

from ..balancing.bdm import BDM, SRC_R, SRC_S
from ..balancing.passes import PassOverlap, pass_overlaps
from ..balancing.progressive import SampleEstimate, SampleGoal, estimate, goal_test
from ..balancing.sampled import plan_sampled
from ..balancing.sketch import SketchProfile, as_sketch_spec
from ..blocking.keys import NULL_BLOCK
from .inputs import Source
from .job import Job
from .local import Executor
from .progress import show_progress
from .tasks.prepare import (
    MISSING_ID,
    merge_sketch_results,
    profile_partition,
    sketch_partition,
)

SKETCH_FAN_IN = 8  #: partition sketches summed per task of the merge tree


@dataclass(frozen=True)
class Profile:
    """What a planner plans on: a :class:`BDM`, a :class:`SketchProfile` or a
    :class:`SampleEstimate` (``kind``), the record counts, and how the sample was drawn."""

    kind: str
    data: Any
    records: dict[str, int]
    sample: dict[str, Any] | None = field(default=None, repr=False)
    #: what each pass finds (from the BDM; empty for a sketch or a sample)
    passes: tuple[PassOverlap, ...] = field(default=(), repr=False)

    @property
    def records_with_key(self) -> int:
        """Distinct records that have a key in at least one pass."""
        r = self.records
        return int(r.get("records_r", 0) + r.get("records_s", 0) - r.get("not_blocked", 0))

    @property
    def total_comparisons(self) -> float:
        """Comparisons the profile implies (estimated for sketches and samples)."""
        if isinstance(self.data, BDM):
            return float(self.data.comparisons()[1].sum())
        if isinstance(self.data, SketchProfile):
            return float(self.data.work().total)
        return float(np.sum(self.data.comparisons))


def _record_counts(records: Sequence[int], not_blocked: Sequence[int]) -> dict[str, int]:
    r = list(records) + [0]
    nb = list(not_blocked) + [0]
    return {"records_r": int(r[SRC_R]), "records_s": int(r[SRC_S]),
            "not_blocked_r": int(nb[SRC_R]), "not_blocked_s": int(nb[SRC_S]),
            "not_blocked": int(nb[SRC_R] + nb[SRC_S])}


def check_unique_ids(ids: dict[int, list[np.ndarray]], link: bool, where: str = "",
                     id_columns: Sequence[str | None] = (None, None)) -> None:
    """Raise when the id hashes of a source repeat (Dask input is checked while profiling);
    ``id_columns``: the id column of each source (None: its index), for the message."""
    for src, chunks in ids.items():
        if not chunks:
            continue
        which = "df_s" if src == SRC_S else ("df_r" if link else "df")
        hashes = np.concatenate(chunks)
        missing = int((hashes == MISSING_ID).sum())
        if missing:
            raise ValueError(f"{which}: record ids must not be missing ({missing} are{where}); "
                             "pass id='<a unique column without missing values>'")
        _, counts = np.unique(hashes, return_counts=True)
        column = id_columns[src]
        if (counts > 1).any() and column is not None:
            raise ValueError(
                f"{which}: the id column {column!r} holds repeated values "
                f"({int((counts > 1).sum())} ids repeat{where}; ids are told apart by a hash "
                "of their text, so 1 and '1' in one object column count as one); erblock "
                "reports pairs by id, so every record needs its own: pass id= a column whose "
                "values are unique")
        if (counts > 1).any():
            raise ValueError(
                f"{which}: record ids are not unique ({int((counts > 1).sum())} ids repeat"
                f"{where}). erblock reports pairs by id, so every record needs its own: a "
                "Dask frame read from files restarts its index in every partition (and so "
                "does reset_index on it), and ids are told apart by a hash of their text (1 "
                "and '1' in one object index count as one); pass id='<a unique column>', or "
                "number the records first, e.g. df = df.assign(row=1); df['row'] = "
                "df['row'].cumsum() and id='row'"
            )


def _bdm_rows(results: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    names = ("block", "part", "src", "count", "pass")
    cols = {k: [r[k] for r in results if k in r] for k in names}
    return {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}


def _overlaps(rows: dict[str, np.ndarray], job: Job) -> tuple[PassOverlap, ...]:
    if len(rows["pass"]) != len(rows["block"]):
        return ()
    return pass_overlaps(rows["block"], rows["src"], rows["count"], rows["pass"],
                         len(job.keys), job.link)


def _bdm(rows: dict[str, np.ndarray], n_parts: tuple[int, int], link: bool) -> BDM:
    keyed = rows["block"] != NULL_BLOCK
    return BDM.from_arrays(rows["block"][keyed], rows["part"][keyed], rows["src"][keyed],
                           rows["count"][keyed], n_parts, link)


def _not_blocked(rows: dict[str, np.ndarray]) -> list[int]:
    null = rows["block"] == NULL_BLOCK
    return [int(rows["count"][null & (rows["src"] == s)].sum()) for s in (SRC_R, SRC_S)]


def _n_parts(sources: Sequence[Source]) -> tuple[int, int]:
    return sources[0].n_parts, sources[1].n_parts if len(sources) > 1 else 0


def profile_bdm(client: Executor, job: Job, sources: Sequence[Source],
                check_ids: Sequence[bool]) -> Profile:
    """The BDM of the prepared input (and record counts, records not blocked, id check)."""
    tasks, srcs = [], []
    for s in sources:
        for p in s.parts:
            tasks.append(dask.delayed(profile_partition)(p, check_ids[s.src]))
            srcs.append(s.src)
    futures = client.compute(tasks, optimize_graph=False) if tasks else []
    if job.options.progress and futures:
        show_progress(futures, "profile")
    results = client.gather(futures) if futures else []
    records = [0, 0]
    ids: dict[int, list[np.ndarray]] = {SRC_R: [], SRC_S: []}
    for src, res in zip(srcs, results):
        records[src] += res["records"]
        if "ids" in res:
            ids[src].append(res["ids"])
    check_unique_ids(ids, job.link, id_columns=job.id_columns)
    rows = _bdm_rows(results)
    return Profile("bdm", _bdm(rows, _n_parts(sources), job.link),
                   _record_counts(records[: len(sources)], _not_blocked(rows)),
                   passes=_overlaps(rows, job))


def profile_sketch(client: Executor, job: Job, sources: Sequence[Source],
                   check_ids: Sequence[bool], r: int, sketch: Any = None) -> Profile:
    """The sketch profile (paper 003) instead of the BDM, for the cell strategies (``w =
    64·r`` by default)."""
    spec = as_sketch_spec(sketch).resolved(r)
    roots = []
    for s in sources:
        level = [dask.delayed(sketch_partition)(p, spec, check_ids[s.src]) for p in s.parts]
        while len(level) > 1:
            level = [dask.delayed(merge_sketch_results)(*level[i:i + SKETCH_FAN_IN])
                     for i in range(0, len(level), SKETCH_FAN_IN)]
        roots.append(level[0])
    futures = client.compute(roots, optimize_graph=False)
    if job.options.progress:
        show_progress(futures, "profile")
    results = client.gather(futures)
    check_unique_ids({s.src: [res["ids"]] if "ids" in res else []
                      for s, res in zip(sources, results)}, job.link,
                     id_columns=job.id_columns)
    prof = SketchProfile(spec, results[SRC_R]["sketch"],
                         results[SRC_S]["sketch"] if job.link else None, job.link,
                         _n_parts(sources))
    return Profile("sketch", prof, _record_counts([r["records"] for r in results],
                                                  [r["not_blocked"] for r in results]))


def profile_sample(client: Executor, job: Job, sources: Sequence[Source],
                   check_ids: Sequence[bool], r: int) -> Profile:
    """Sample, estimate and test until ``job.options.sample`` is met (paper 001).

    Each round profiles only the newly drawn partitions; the sample grows by
    ``goal.growth`` until the plan built from it passes the stopping test, the
    partitions run out or ``goal.max_fraction`` is reached. Partitions are drawn in a
    random order fixed by ``goal.seed``; for link both sources at the same fraction. Ids
    are only checked within the sampled partitions, and the record counts are estimates
    (``records_estimated``).
    """
    goal: SampleGoal = job.options.sample  # type: ignore[assignment]
    m = list(_n_parts(sources))
    rng = np.random.default_rng(goal.seed)
    order = [rng.permutation(mi) for mi in m]
    cap = [min(mi, max(1, math.ceil(goal.max_fraction * mi))) for mi in m]
    taken = [0, 0]
    results: list[dict[str, Any]] = []
    srcs: list[int] = []
    rounds: list[dict[str, Any]] = []
    fraction = goal.initial
    plan_seconds = 0.0
    while True:
        want = [min(c, max(min(goal.min_partitions, mi), math.ceil(fraction * mi), t + 1))
                for c, mi, t in zip(cap, m, taken)]
        tasks = []
        for s in sources:
            for i in order[s.src][taken[s.src]:want[s.src]].tolist():
                tasks.append(dask.delayed(profile_partition)(s.parts[i], check_ids[s.src]))
                srcs.append(s.src)
        if tasks:
            results += client.gather(client.compute(tasks, optimize_graph=False))
        taken = want
        t0 = time.perf_counter()
        rows = _bdm_rows(results)
        est = estimate(_bdm(rows, (m[0], m[1]), job.link), (taken[0], taken[1]), (m[0], m[1]))
        test = goal_test(plan_sampled(est, r, goal), goal)
        plan_seconds += time.perf_counter() - t0
        records_seen = int(sum(res["records"] for res in results))
        rounds.append({"partitions": list(taken), "records": records_seen,
                       "upper_imbalance": test["upper_imbalance"],
                       "predicted_imbalance": test["predicted_imbalance"], "met": test["met"]})
        if test["met"] or taken == cap:
            break
        fraction *= goal.growth
    ids: dict[int, list[np.ndarray]] = {SRC_R: [], SRC_S: []}
    records = [0.0, 0.0]
    for src, res in zip(srcs, results):
        records[src] += res["records"]
        if "ids" in res:
            ids[src].append(res["ids"])
    check_unique_ids(ids, job.link, " in the sampled partitions", job.id_columns)
    scale = [mi / t if t else 0.0 for mi, t in zip(m, taken)]
    nb = _not_blocked(rows)
    counts = _record_counts([round(records[s] * scale[s]) for s in (SRC_R, SRC_S)],
                            [round(nb[s] * scale[s]) for s in (SRC_R, SRC_S)])
    counts["records_estimated"] = 1
    sample = {"goal": goal.to_dict(), "goal_met": test["met"], "partitions_sampled": list(taken),
              "partitions": list(m), "fraction": est.fraction, "records_sampled": records_seen,
              "rounds": rounds, "z": test["z"], "upper_imbalance": test["upper_imbalance"],
              "max_relative_error": test["max_relative_error"],
              "planning_seconds": plan_seconds}
    return Profile("sample", est, counts, sample)


def sample_estimate(profile: Profile) -> SampleEstimate:
    """The block estimates of a sampled profile."""
    assert isinstance(profile.data, SampleEstimate)
    return profile.data
