"""Public functions: check inputs, build specs, hand over to the engine.

Everything a user can get wrong is checked here, before any Dask work starts, and the
error names the argument or column, shows the value and says what was expected.

``link`` and ``dedupe`` return the pairs: a pandas DataFrame (the run report in
``pairs.attrs["erblock_report"]``, read with :meth:`erblock.RunReport.of`), or, with
``output=``, a Dask DataFrame over the parquet parts the workers wrote (the report is
``_erblock_report.json`` in the directory: :func:`read_report`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, overload

import pandas as pd

from .balancing.plan import Plan
from .balancing.progressive import SampleGoal
from .balancing.strategies import AUTO, STRATEGIES, get_strategy, strategy_names
from .blocking.keys import KeySpec
from .blocking.make import as_key_spec
from .engine.calibrate import as_cost_model
from .engine.cluster import connector, total_threads
from .engine.inputs import prepare_sources
from .engine.job import SHUFFLE_METHODS, Job, RunOptions
from .engine.local import LocalClient, starts_local
from .engine.memory import parse_budget
from .engine.planning import first_task_count, plan_job, profile_for, with_block_labels
from .engine.pruning import prune_sources
from .engine.run import RunResult, run, settle
from .matchers.assignment import check_cardinality
from .matchers.comparisons import Comparison, as_comparisons
from .matchers.scoring import as_scoring
from .report import RunReport
from .scalars import is_int, is_number
from .validate import (
    check_comparisons,
    check_frame,
    check_ids,
    check_keys,
    check_writable_ids,
    id_columns,
    named_index_ids,
)

#: what ``strategy=`` accepts: ``auto`` and every registered strategy
STRATEGY_NAMES = strategy_names()
#: a model's default decision: ``match_probability >= DECISION``
DECISION = 0.5
#: keyword options of ``link``/``dedupe`` (the fields of :class:`RunOptions` a user sets)
OPTION_NAMES = ("npartitions", "persist", "progress", "sort", "overwrite", "memory_budget",
                "cost_model", "sample", "sketch", "cell_budget", "shuffle_method", "encode",
                "executor")


def _as_keys(key: Any) -> tuple[KeySpec, ...]:
    if key is None:
        raise ValueError("key is required: a column name, a tuple of columns, a callable, "
                         "a spec such as erblock.blocking.prefix('title', 3), or a list of these")
    if isinstance(key, list):
        if not key:
            raise ValueError("key: an empty list gives no blocking pass; give at least one key")
        return tuple(as_key_spec(k) for k in key)
    return (as_key_spec(key),)


def _check_common(strategy: str, n_tasks: Any, threshold: Any
                  ) -> tuple[int | None, float | None]:
    """Checks ``strategy``, ``n_tasks`` and ``threshold``; the last two as Python numbers
    (NumPy's are accepted: a threshold read from the pairs is ``np.float32``)."""
    if strategy not in STRATEGY_NAMES:
        get_strategy(strategy)  # raises, naming the choices
    if n_tasks is not None and (not is_int(n_tasks) or n_tasks < 1):
        raise ValueError(f"n_tasks must be an integer >= 1 (or None for automatic), got {n_tasks!r}")
    if threshold is not None and (not is_number(threshold) or not 0.0 <= float(threshold) <= 1.0):
        raise ValueError(
            f"threshold must be a number in [0, 1] (scores are in [0, 1]), got {threshold!r}"
        )
    return (None if n_tasks is None else int(n_tasks),
            None if threshold is None else float(threshold))


def run_options(strategy: str, options: Mapping[str, Any]) -> RunOptions:
    """The typed :class:`RunOptions` of ``link``/``dedupe``/``plan`` keyword options."""
    unknown = set(options) - set(OPTION_NAMES)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {sorted(unknown)}; options are "
                        f"{', '.join(OPTION_NAMES)}")
    opts = {k: v for k, v in options.items() if v is not None or k == "sketch"}
    shuffle = opts.get("shuffle_method", "auto")
    if shuffle not in SHUFFLE_METHODS:
        raise ValueError(f"shuffle_method must be one of {', '.join(SHUFFLE_METHODS)}, "
                         f"got {shuffle!r}")
    if "memory_budget" in opts:
        opts["memory_budget"] = parse_budget(opts["memory_budget"])
    if "cost_model" in opts:
        opts["cost_model"] = as_cost_model(opts["cost_model"])
    if opts.get("sample") is not None:
        opts["sample"] = SampleGoal.from_option(opts["sample"])
        if strategy != AUTO:
            raise ValueError(
                f"sample= builds its own plan from the sample (large blocks chopped, medium "
                f"packed, small hashed), so strategy must be 'auto', got {strategy!r}; "
                "drop sample= to use that strategy on a full profile")
    sketch = opts.pop("sketch", None)
    if sketch is not None:
        sketched = [n for n, s in STRATEGIES.items() if s.profile == "sketch"]
        if strategy not in (*sketched, AUTO):
            raise ValueError(
                f"sketch= sets the sketch profile of the cell strategies "
                f"({', '.join(sketched)}), but strategy is {strategy!r}, which plans "
                "on the exact block counts; drop sketch= or choose a cell strategy"
            )
        if strategy != AUTO:
            opts["strategy_options"] = get_strategy(strategy).parse_options({"sketch": sketch})
        else:  # auto plans on the exact block counts: say so rather than drop it unseen
            warnings.warn(f"sketch= has no effect with strategy='auto', which plans on the "
                          f"exact block counts; choose {' or '.join(map(repr, sketched))} "
                          "to plan on a sketch", UserWarning, stacklevel=3)
    return RunOptions(**opts)


def _named(frames: Sequence[Any]) -> tuple[str, list[tuple[str, Any]]]:
    """The mode of ``[df_r, df_s]`` or ``[df]`` and the frames with the names errors use."""
    if len(frames) == 2:
        return "link", [("df_r", frames[0]), ("df_s", frames[1])]
    return "dedupe", [("df", frames[0])]


def _build_job(mode: str, frames: list[tuple[str, Any]], key: Any, compare: Any, strategy: str,
               n_tasks: int | None, threshold: float | None, output: str | None,
               id: Any, options: Mapping[str, Any]) -> tuple[Job, list[bool]]:
    for name, df in frames:
        check_frame(df, name)
    n_tasks, threshold = _check_common(strategy, n_tasks, threshold)
    keys = _as_keys(key)
    check_keys(keys, frames)
    comparisons = as_comparisons(compare) if compare is not None else ()  # None: candidates
    check_comparisons(comparisons, frames)
    ids = named_index_ids(id_columns(id, mode == "link"), frames)
    check = [check_ids(df, name, ids[src]) for src, (name, df) in enumerate(frames)]
    for src, (name, df) in enumerate(frames if output is not None else ()):
        check_writable_ids(df, name, ids[src])
    job = Job(mode=mode, keys=keys, comparisons=comparisons, strategy=strategy,
              n_tasks=n_tasks, threshold=threshold,
              output=output, id_columns=(ids[0], ids[1]),
              options=run_options(strategy, options))
    return job, check


@overload
def link(df_r: Any, df_s: Any, key: Any = ..., compare: Any = ..., scoring: Any = ...,
         strategy: str = ..., n_tasks: int | None = ..., threshold: float | None = ...,
         client: Any = ..., output: None = ..., id: Any = ...,
         cardinality: str | None = ..., **options: Any) -> pd.DataFrame: ...
@overload
def link(df_r: Any, df_s: Any, key: Any = ..., compare: Any = ..., scoring: Any = ...,
         strategy: str = ..., n_tasks: int | None = ..., threshold: float | None = ...,
         client: Any = ..., *, output: str, id: Any = ..., cardinality: str | None = ...,
         **options: Any) -> Any: ...


def link(
    df_r: Any,
    df_s: Any,
    key: Any = None,
    compare: Any = None,
    scoring: Any = "mean",
    strategy: str = AUTO,
    n_tasks: int | None = None,
    threshold: float | None = None,
    client: Any = None,
    output: str | None = None,
    id: str | tuple[str | None, str | None] | None = None,
    cardinality: str | None = None,
    **options: Any,
) -> Any:
    """Link two sources: every pair (r, s) of records that share a block, compared.

    Returns the pairs: ``left_id`` (index label of ``df_r``, or its ``id=`` column),
    ``right_id`` (of ``df_s``), one similarity column per comparison and ``score``. In
    memory this is a pandas DataFrame whose ``attrs["erblock_report"]`` is the run report
    (:meth:`erblock.RunReport.of` reads it). With ``output="dir"`` the workers write
    parquet parts into that directory (with ``_erblock_report.json``) and a Dask
    DataFrame over them is returned.

    ``scoring="em"`` fits an unsupervised Fellegi-Sunter model during the run (see
    :mod:`erblock.matchers.scoring.fellegi_sunter`) and adds ``match_weight`` and
    ``match_probability``; the default decision is ``match_probability >= 0.5`` and
    ``threshold`` then applies to ``match_probability``. The fitted model is in
    ``pairs.attrs["erblock_model"]`` as a dict for ``erblock.load_model`` (or
    ``_erblock_model.json`` in the output directory); pass it, or any model from
    :func:`erblock.load_model`, as ``scoring=`` to score without refitting.

    ``cardinality`` says which sources hold each entity at most once, and the result is
    then the *links*: the pairs at or above the decision (``threshold``, or
    ``match_probability >= 0.5`` for a model; the mean score needs a ``threshold``) that
    the constraint keeps, best first in memory (by ids with ``sort=True``; written parts
    hold them in no particular order unless ``sort=True`` sorts each part).
    ``"1:1"``: neither source has duplicates, each record is in at most one link (greedy
    best-first); ``"1:n"``: ``df_r`` has none, each record of ``df_s`` keeps its best pair;
    ``"n:1"``: the mirror; None or ``"n:m"`` (default): no constraint. Declaring what you
    know of your sources is what rescues a link of two registers whose people share
    households (see :mod:`erblock.matchers.assignment`); the report's
    ``settings["assignment"]`` counts the decided pairs and the links.

    Options: ``npartitions`` (input partitions for pandas input), ``persist`` (keep the
    prepared records in cluster memory between profile and route; default True),
    ``progress`` (progress bar), ``sort`` (canonical order), ``shuffle_method``
    (``"auto"``, ``"direct"``, ``"tasks"`` or ``"p2p"``: how records move to their reduce
    tasks, exactly in every case), ``overwrite`` (replace an earlier output directory,
    never one holding files erblock did not write),
    ``memory_budget`` (the most one reduce task may use, e.g. ``"512MB"`` or ``"auto"``:
    chunks and the number of tasks are sized to fit, see docs/memory.md),
    ``sketch`` (the sketch profile of ``strategy="cellblock"``/``"cellrange"``, e.g.
    ``{"kind": "countmin", "d": 5, "w": 4096, "seed": 0}``; default FastAGMS, d = 5,
    w = 64 × n_tasks; see :mod:`erblock.balancing.sketch`), ``cost_model`` (what
    ``strategy="auto"`` predicts makespans with: None calibrates once per session on the
    cluster, ``"calibrate"`` forces it, ``"default"`` skips it, or pass a
    :class:`~erblock.balancing.cost.CostModel`, a dict of its fields or a previous
    :class:`~erblock.report.RunReport`; the prediction is in ``report.prediction``),
    ``sample`` (plan from a progressive sample of input partitions instead of a full
    profile, e.g. ``{"delta": 0.1, "alpha": 0.95}``: every reduce task within 10 % of the
    mean load with 95 % confidence; see :mod:`erblock.balancing.progressive`),
    ``cell_budget`` (cells of one compare chunk), ``encode`` (``"auto"``: inside a block,
    compare each distinct value pair once and look the pairs' similarities up when the
    distinct pairs are few, e.g. first names in a surname block; ``"always"``;
    ``"never"``: pair by pair; the similarities are bit-identical either way), ``executor``
    (``"auto"``: small pandas jobs run in this process, moving to the cluster when their
    profile counts many comparisons; ``"cluster"``; ``"local"``; docs/clusters.md).
    """
    return _result(run_frames([df_r, df_s], key, compare, scoring, strategy, n_tasks,
                              threshold, client, output, id, cardinality=cardinality,
                              **options))


@overload
def dedupe(df: Any, key: Any = ..., compare: Any = ..., scoring: Any = ...,
           strategy: str = ..., n_tasks: int | None = ..., threshold: float | None = ...,
           client: Any = ..., output: None = ..., id: str | None = ..., **options: Any
           ) -> pd.DataFrame: ...
@overload
def dedupe(df: Any, key: Any = ..., compare: Any = ..., scoring: Any = ...,
           strategy: str = ..., n_tasks: int | None = ..., threshold: float | None = ...,
           client: Any = ..., *, output: str, id: str | None = ..., **options: Any) -> Any: ...


def dedupe(
    df: Any,
    key: Any = None,
    compare: Any = None,
    scoring: Any = "mean",
    strategy: str = AUTO,
    n_tasks: int | None = None,
    threshold: float | None = None,
    client: Any = None,
    output: str | None = None,
    id: str | None = None,
    **options: Any,
) -> Any:
    """Find duplicates in one source: each unordered pair of records in a block, once.

    ``left_id`` always comes before ``right_id`` in the input order and no record is
    paired with itself. Otherwise as :func:`link`.
    """
    return _result(run_frames([df], key, compare, scoring, strategy, n_tasks, threshold,
                              client, output, id, **options))


def run_frames(frames: Sequence[Any], key: Any = None, compare: Any = None,
               scoring: Any = "mean", strategy: str = AUTO, n_tasks: int | None = None,
               threshold: float | None = None, client: Any = None, output: str | None = None,
               id: Any = None, cardinality: str | None = None, **options: Any) -> RunResult:
    """Link ``[df_r, df_s]`` or deduplicate ``[df]`` and return the full result: pairs
    (None with ``output=``), report and fitted model (what the command line uses)."""
    if compare is None:
        example = "{'title': 'jaro_winkler'}" if len(frames) == 2 else "{'name': 'jaro_winkler'}"
        raise ValueError(f"compare is required, e.g. compare={example} (erblock.candidates "
                         "returns the candidate pairs without comparing them)")
    mode, named = _named(frames)
    job, check = _build_job(mode, named, key, compare, strategy, n_tasks, threshold, output,
                            id, options)
    job = dataclasses.replace(job, cardinality=check_cardinality(cardinality, mode))
    return execute(job, list(frames), client, check, scoring)


def candidates(df_r: Any, df_s: Any = None, key: Any = None, strategy: str = AUTO,
               n_tasks: int | None = None, client: Any = None, output: str | None = None,
               id: str | tuple[str | None, str | None] | None = None, **options: Any) -> Any:
    """The candidate pairs of a blocking, each once, without comparing them.

    For a matcher of your own: the same pairs :func:`link` (with ``df_s``) or
    :func:`dedupe` would compare, planned and balanced the same way, but nothing is
    computed on them. Returns ``left_id``, ``right_id`` and ``match_key`` (the key pass
    that found the pair: the first one that puts both records in one block); a pair that
    shares several blocks of a multi-valued key, or of several passes, is there once.
    Options as for :func:`link` (``output="dir"`` writes parquet parts and returns a
    Dask DataFrame over them).
    """
    frames = [df_r] if df_s is None else [df_r, df_s]
    return _result(run_candidates(frames, key, strategy, n_tasks, client, output, id,
                                  **options))


def run_candidates(frames: Sequence[Any], key: Any = None, strategy: str = AUTO,
                   n_tasks: int | None = None, client: Any = None, output: str | None = None,
                   id: Any = None, **options: Any) -> RunResult:
    """:func:`candidates` of ``[df_r, df_s]`` or ``[df]``, the full result (pairs or None
    with ``output=``, and the report; what the command line uses)."""
    for name in ("compare", "scoring", "threshold", "cardinality"):
        if name in options:
            raise ValueError(f"candidates compares nothing, so it takes no {name}=; use "
                             "erblock.link or erblock.dedupe to compare and score pairs")
    mode, named = _named(frames)
    job, check = _build_job(mode, named, key, None, strategy, n_tasks, None, output, id,
                            options)
    return execute(job, list(frames), client, check, "mean")


def execute(job: Job, frames: list[Any], client: Any, check: list[bool], scoring: Any
            ) -> RunResult:
    """Run a checked job on the cluster of ``client`` (the full result: pairs, report and
    model; what the command line uses)."""
    model = as_scoring(scoring, job.comparisons, job.keys)
    if model is not None and model.decision == "score":
        # a rule on the mean score: its threshold is the run's, applied in the kernels
        if job.threshold is None:
            job = dataclasses.replace(job, threshold=model.default_threshold)
        model = None
    elif model is not None and job.cardinality is not None and job.threshold is None:
        job = dataclasses.replace(job, threshold=DECISION)  # links are decided pairs
    if job.cardinality is not None and job.threshold is None:
        raise ValueError(
            f"cardinality={job.cardinality!r} chooses the links among the decided pairs, but "
            "the mean score has no decision without a threshold: pass threshold= (e.g. "
            "0.8), a ScoreThreshold, or scoring='em'")
    with contextlib.ExitStack() as stack:  # a lost scheduler: one clear error, no output
        connect = connector(client, job.output, stack)
        if starts_local(job, frames):  # a small pandas job (erblock.engine.local)
            return run(job, frames, LocalClient(), check_ids=check, scoring=model,
                       cluster=connect)
        return run(job, frames, connect(), check_ids=check, scoring=model)


def _result(result: RunResult) -> Any:
    return result.pairs if result.pairs is not None else result.written()


def read_report(source: Any) -> RunReport:
    """The report of a run: from its pairs, its output directory or a JSON file."""
    return RunReport.of(source)


def plan(
    df_r: Any,
    df_s: Any = None,
    key: Any = None,
    strategy: str = AUTO,
    n_tasks: int | None = None,
    client: Any = None,
    id: Any = None,
    npartitions: int | None = None,
    compare: Any = None,
    cost_model: Any = None,
    sample: Any = None,
    threshold: float | None = None,
    sketch: Any = None,
    progress: bool = False,
    executor: str = "auto",
) -> Plan:
    """Profile the input (the BDM) and return the plan a run would execute, without comparing.

    With ``df_s`` the plan is for linking ``df_r`` × ``df_s``, otherwise for deduplicating
    ``df_r``. ``plan.describe()`` explains it (comparisons, the largest blocks and their
    key values, predicted makespan and imbalance of every candidate strategy, replication)
    and ``plan.plot(path)`` draws its reduce-task loads next to Basic's. ``executor`` as
    for :func:`link`: the plan is made for the threads of wherever the run would execute.

    The predicted makespan uses ``cost_model`` (see :func:`link`); with ``compare`` (and
    ``strategy="auto"``) an uncalibrated session first calibrates on a sample of the input
    with those comparisons, as a run would. ``sample={"delta": 0.1, "alpha": 0.95}`` plans
    from a progressive sample of input partitions (paper 001) instead of a full profile.
    """
    frames = [("df_r", df_r)] + ([("df_s", df_s)] if df_s is not None else [])
    for name, df in frames:
        check_frame(df, name)
    n_tasks, threshold = _check_common(strategy, n_tasks, threshold)
    keys = _as_keys(key)
    check_keys(keys, frames)
    comparisons: tuple[Comparison, ...] = ()
    if compare is not None:
        comparisons = as_comparisons(compare)
        check_comparisons(comparisons, frames)
    elif cost_model == "calibrate":
        raise ValueError("cost_model='calibrate' measures the job's comparisons; pass "
                         "compare= too (erblock.plan), or cost_model='default'")
    options = run_options(strategy, {"cost_model": cost_model, "sample": sample,
                                     "sketch": sketch, "npartitions": npartitions,
                                     "progress": progress, "executor": executor})
    ids = named_index_ids(id_columns(id, df_s is not None), frames)
    check = [check_ids(df, name, ids[src]) for src, (name, df) in enumerate(frames)]
    job = Job(mode="link" if df_s is not None else "dedupe", keys=keys, comparisons=comparisons,
              strategy=strategy, n_tasks=n_tasks, id_columns=(ids[0], ids[1]),
              threshold=None if threshold is None else float(threshold), options=options)
    persist, inputs = job.options.sample is None, [df for _, df in frames]
    with contextlib.ExitStack() as stack:  # the cluster a run of the job would use
        connect = connector(client, None, stack)
        c = LocalClient() if starts_local(job, inputs) else connect()
        threads = total_threads(c)
        sources, _ = prune_sources(c, job, prepare_sources(c, inputs, job, threads, persist),
                                   persist)
        profile = profile_for(c, job, sources, check, first_task_count(job, threads))
        c, sources, profile, _ = settle(c, job, sources, profile, check, connect)
        return with_block_labels(c, job, sources, inputs, plan_job(
            c, job, sources, profile, total_threads(c), explain=True)[0])
