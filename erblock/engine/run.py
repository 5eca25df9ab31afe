"""One run, start to end: prepare → profile → plan → route and compare → write.

1. **prepare** (:mod:`.inputs`): every input partition is stamped with its number, gets
   its block ids and keeps only the compared columns; kept in cluster memory.
2. **profile** and **plan** (:mod:`.planning`): the BDM, a sketch or a sample, and the
   plan of the job's strategy (``auto``: the lowest predicted makespan under the cost
   model, calibrated on the cluster when the job is worth it, :mod:`.calibrate`); the
   memory fit re-plans from the same profile when a budget asks for it (:mod:`.memory`).
3. **route and compare** (:mod:`.execute`): one Dask task per reduce task, scored by the
   mean, a fitted model, or a model that fits during the run in two phases.
4. **write**: pairs come back to the client, or the workers wrote parquet parts into a
   directory that is moved under its final name only when the run succeeds
   (:mod:`.output`), with the report and the fitted model beside them.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..attrs import SharedDict
from ..balancing.passes import unmet_passes
from ..blocking.neighbourhood import window_of
from ..matchers.assignment import assign
from ..matchers.scoring.base import MODEL_ATTR, PASS_COLUMN, ModelWarning, ScoringModel
from ..report import ATTRS_KEY, REPORT_FILE, RunReport, TaskStats
from .assignment import assign_output
from .cluster import total_threads
from .corpus import with_corpus
from .derivation import derived_keys
from .execute import (
    count_invalid,
    invalid_totals,
    prepare_execution,
    run_fitted,
    run_mean,
    run_two_phase,
)
from .inputs import Source, move_sources, prepare_sources
from .job import Job
from .local import Executor, LocalClient, stays_local
from .memory import fit_plan
from .output import finish_output, start_output
from .planning import first_task_count, plan_job, prediction, profile_for
from .profile import Profile
from .pruning import prune_sources
from .tasks.write import PART_NAME, sort_pairs

MODEL_FILE = "_erblock_model.json"  #: a leading "_" keeps parquet readers off the file
MODEL_KEY = MODEL_ATTR  #: ``pairs.attrs`` key of the fitted model's dict
EXAMPLES = 6  #: pairs near the decision boundary the report explains


@dataclass(frozen=True)
class RunResult:
    """What a run returns: the pairs (None when the workers wrote them), its report and
    the model that scored them (fitted)."""

    pairs: pd.DataFrame | None
    report: RunReport
    model: ScoringModel | None
    id_dtypes: tuple[Any, Any] = (None, None)  #: of left_id and right_id, as they came in

    def written(self) -> Any:
        """A Dask frame of the pairs the workers wrote (``output=``), text ids in the
        dtype they came in (parquet gives them back as strings)."""
        import dask.dataframe as dd

        assert self.report.output is not None  # written by the workers
        pairs = dd.read_parquet(self.report.output)
        want = {c: d for c, d in zip(("left_id", "right_id"), self.id_dtypes)
                if _textual(d) and _textual(pairs[c].dtype) and pairs[c].dtype != d}
        return pairs.astype(want) if want else pairs


def settle(client: Executor, job: Job, sources: list[Source], profile: Profile,
           check_ids: Sequence[bool], cluster: Callable[[], Executor] | None
           ) -> tuple[Executor, list[Source], Profile, str]:
    """Where the rest of a profiled job runs: (client, sources, profile, what the report
    calls it). A job started in this process stays when its comparisons are few
    (:func:`~.local.stays_local`); otherwise its prepared partitions move to ``cluster()``
    (a sketch or sample profile, sized for the threads, is then taken again there)."""
    if not isinstance(client, LocalClient):
        return client, sources, profile, "cluster"
    if stays_local(job, profile.total_comparisons) or cluster is None:
        return client, sources, profile, "local"
    target = cluster()
    moved = move_sources(target, client, sources)
    if profile.kind != "bdm":
        profile = profile_for(target, job, moved, check_ids,
                              first_task_count(job, total_threads(target)))
    return target, moved, profile, "local, then cluster"


def _textual(dtype: Any) -> bool:
    return dtype is not None and (pd.api.types.is_string_dtype(dtype) or
                                  pd.api.types.is_object_dtype(dtype))


def empty_pairs(job: Job, id_dtypes: tuple[object, object], model: ScoringModel | None
                ) -> pd.DataFrame:
    """A pairs frame with no rows and the right columns and dtypes."""
    cols: dict[str, pd.Series] = {
        "left_id": pd.Series([], dtype=id_dtypes[0]),  # type: ignore[call-overload]
        "right_id": pd.Series([], dtype=id_dtypes[1]),  # type: ignore[call-overload]
    }
    for c in job.comparisons:
        cols[c.name] = pd.Series([], dtype=np.float32)
    if not job.candidates:
        cols["score"] = pd.Series([], dtype=np.float32)
    if job.candidates or (model is not None and model.needs_pass):
        cols[PASS_COLUMN] = pd.Series([], dtype=np.int8)
    if model is not None and model.decision != "score":
        cols["match_weight"] = pd.Series([], dtype=np.float64)
        cols["match_probability"] = pd.Series([], dtype=np.float64)
    return pd.DataFrame(cols)


def _settings(job: Job, r: int, m: int) -> dict[str, Any]:
    return {
        "keys": [repr(k) for k in job.keys],
        "comparisons": [c.to_dict() for c in job.comparisons],
        "strategy": job.strategy,
        "n_tasks": r,
        "input_partitions": m,
        "threshold": job.threshold,
        "shuffle_method": job.options.shuffle_method,
    }


def _assignment(job: Job, decision: str, decided: int, links: int) -> dict[str, Any]:
    """The report's account of a cardinality: what it kept of the decided pairs."""
    return {"cardinality": job.cardinality, "decision": decision,
            "threshold": job.threshold, "decided_pairs": int(decided), "links": int(links)}


def run(job: Job, frames: Sequence[Any], client: Executor, *, check_ids: Sequence[bool],
        scoring: ScoringModel | None = None,
        cluster: Callable[[], Executor] | None = None) -> RunResult:
    """Run ``job`` on ``frames`` ([df] or [df_r, df_s]) with ``scoring`` (None: the mean
    score; a model bound to the job's comparisons, fitted during the run if it is not).

    ``client`` is a cluster's client or a :class:`~.local.LocalClient`; a job started on
    the latter moves to ``cluster()`` when its profile says it is too big to stay
    (:func:`~.local.stays_local`)."""
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    threads = total_threads(client)
    persist = job.options.persist and job.options.sample is None  # a sample profiles less
    sources = prepare_sources(client, frames, job, threads, persist)
    sources, pruning = prune_sources(client, job, sources, persist)
    id_dtypes = (sources[0].id_dtype, sources[-1].id_dtype)
    profile = profile_for(client, job, sources, check_ids, first_task_count(job, threads))
    client, sources, profile, executor = settle(client, job, sources, profile, check_ids,
                                                cluster)
    unmet = unmet_passes(profile.passes, job.keys, job.link)
    for line in unmet:  # said before the run: the pairs such a pass would find are lost
        warnings.warn(line, UserWarning, stacklevel=3)
    threads = total_threads(client)
    t1 = time.perf_counter()
    phases["profile"] = t1 - t0
    plan, model, calibration = plan_job(client, job, sources, profile, threads)
    r = plan.n_tasks
    # mean scoring written unsorted streams its kept pairs (bounded whatever the keep rate)
    streamed = scoring is None and job.output is not None and not job.options.sort
    plan, job, memory = fit_plan(client, job, sources, profile, threads, r, plan, model,
                                 streamed=streamed)
    r = plan.n_tasks
    job = with_corpus(client, job, sources)  # e.g. text's token weights, counted once
    phases["plan"] = time.perf_counter() - t1

    out_dir, final_dir = start_output(job.output, job.options.overwrite)
    settings = _settings(job, r, sources[0].n_parts)
    settings["executor"] = executor
    if profile.passes:
        # a sorted-neighbourhood pass's blocks overlap (records repeated at their edges,
        # pairs beyond the window): their counts would not be the pass's; left out
        settings["passes"] = [o.to_dict() for o, k in zip(profile.passes, job.keys)
                              if not k.ordered]
    if unmet:
        settings["unmet_passes"] = unmet
    if any(s.dates_read for s in sources):  # dates written in another order throughout
        names = ("df_r", "df_s") if job.link else ("df",)
        settings["dates_read"] = {names[s.src]: {c: list(f) for c, f in s.dates_read.items()}
                                  for s in sources if s.dates_read}
    t2 = time.perf_counter()
    invalid = count_invalid(client, job, sources)
    results: list[tuple[pd.DataFrame | None, TaskStats]] = []
    threshold = job.threshold
    if plan.total_comparisons > 0:
        ex = prepare_execution(client, job, plan, sources, id_dtypes)
        if scoring is None:
            results = run_mean(client, job, ex, out_dir)
        elif scoring.fitted:
            results = run_fitted(client, job, ex, scoring, threshold, out_dir)
        else:
            read = {s.src: s.dates_read for s in sources}
            fit_keys, derived = derived_keys(client, job, frames,
                                             [read.get(i, {}) for i in range(len(frames))])
            if derived:  # ready-made key columns cut from compared columns
                settings["derived_keys"] = {str(p): c for p, c in derived.items()}
            results, settings["scoring_seconds"] = run_two_phase(
                client, job, ex, scoring, threshold, sources, profile.records, out_dir,
                fit_keys=fit_keys)
    elif scoring is not None and not scoring.fitted:
        warnings.warn("the blocking gives no candidate pairs, so the model has nothing to "
                      "fit and stays unfitted; check the key (records not blocked: "
                      f"{profile.records.get('not_blocked', 0):,})", ModelWarning,
                      stacklevel=3)
    phases["route_compare"] = time.perf_counter() - t2

    t3 = time.perf_counter()
    tasks = tuple(dataclasses.replace(stats, examples=()) for _, stats in results)
    examples = sorted((e for _, stats in results for e in stats.examples),
                      key=lambda e: abs(e.get("match_weight", 0.0)))[:EXAMPLES]
    pairs: pd.DataFrame | None = None
    decision = "score" if scoring is None else scoring.decision
    if out_dir is None:
        frames_out = [p for p, _ in results if p is not None and len(p)]
        pairs = (pd.concat(frames_out, ignore_index=True) if frames_out
                 else empty_pairs(job, id_dtypes, scoring))
        if job.cardinality is not None:
            n_decided = len(pairs)
            # the kernels kept the decided pairs (their threshold is not applied again:
            # a float32 score of 0.9 is 0.89999998 in float64)
            pairs = assign(pairs, job.cardinality, decision).reset_index(drop=True)
            settings["assignment"] = _assignment(job, decision, n_decided, len(pairs))
        if job.options.sort:
            pairs = sort_pairs(pairs)
    else:
        if not any(n.startswith("part-") for n in os.listdir(out_dir)):
            # no pairs (or no tasks): still leave a readable, empty dataset of the right types
            empty_pairs(job, id_dtypes, scoring).to_parquet(
                os.path.join(out_dir, PART_NAME.format(task=0)), index=False)
        if job.cardinality is not None:
            sm = job.options.shuffle_method  # erblock's own routes are not Dask's shuffles
            counts = assign_output(out_dir, job.cardinality, decision, client,
                                   sm if sm in ("tasks", "p2p", "disk") else "tasks",
                                   sort=job.options.sort)
            settings["assignment"] = _assignment(job, decision, counts["decided_pairs"],
                                                 counts["links"])
    phases["write"] = time.perf_counter() - t3
    settings["threads"] = threads
    if pruning:
        settings["pruning"] = pruning
    settings["write_task_seconds"] = float(sum(s.write_seconds for s in tasks))
    if memory is not None:
        settings["memory"] = memory
    invalid_counts, unreadable = invalid_totals(client, invalid, job)
    if unreadable:
        settings["unreadable"] = unreadable  # what the warnings said, kept
    report = RunReport(mode=job.mode, strategy=plan.strategy, n_tasks=r,
                       phases=phases, tasks=tasks, plan=plan.summary(),
                       records={**profile.records, **invalid_counts},
                       settings=settings, output=final_dir,
                       pairs=int(settings["assignment"]["links"] if "assignment" in settings
                                 else sum(s.pairs for s in tasks)),  # what came out
                       model=({**scoring.report(), "examples": examples}
                              if scoring is not None and scoring.fitted else None))
    report = dataclasses.replace(report, prediction=prediction(
        plan, report, calibration, windowed=any(window_of(k) for k in job.keys)))
    if out_dir is not None:
        assert final_dir is not None  # set together with out_dir
        report.to_json(os.path.join(out_dir, REPORT_FILE))
        if scoring is not None and scoring.fitted:
            scoring.to_json(os.path.join(out_dir, MODEL_FILE))
        finish_output(out_dir, final_dir, job.options.overwrite)
    else:
        assert pairs is not None
        # attrs must stay JSON-safe (pandas writes them into parquet metadata), and
        # read-only: every frame pandas derives from the pairs shares them, uncopied
        pairs.attrs[ATTRS_KEY] = SharedDict.of(report.to_dict())
        if scoring is not None:  # erblock.load_model() reads it
            pairs.attrs[MODEL_KEY] = SharedDict.of(scoring.to_dict())
    return RunResult(pairs, report, scoring, id_dtypes)
