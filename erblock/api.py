"""Public functions: check inputs, build specs, hand over to the engine.

Everything a user can get wrong is checked here, before any Dask work starts, and the
error names the argument or column, shows the value and says what was expected.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .balancing.bdm import SRC_R, SRC_S
from .balancing.plan import Plan
from .balancing.sketch import sketch_option
from .blocking.keys import KeySpec, as_key_spec
from .engine.run import Job, prepare, run, to_dask
from .matchers.comparisons import Comparison, as_comparisons
from .report import RunReport

STRATEGY_NAMES = ("auto", "basic", "blocksplit", "pairrange", "cellblock", "cellrange")
SHUFFLE_METHODS = ("tasks", "p2p", "disk")


def _is_dask(df: Any) -> bool:
    try:
        import dask.dataframe as dd
    except ImportError:  # pragma: no cover
        return False
    return isinstance(df, dd.DataFrame)


def _check_frame(df: Any, name: str) -> None:
    if not isinstance(df, pd.DataFrame) and not _is_dask(df):
        raise TypeError(f"{name} must be a pandas or Dask DataFrame, got {type(df).__name__}")
    dup = pd.Index(df.columns)[pd.Index(df.columns).duplicated()].unique().tolist()
    if dup:
        raise ValueError(
            f"{name}: column names must be unique, repeated: {dup[:10]}; rename them "
            "(e.g. df.columns = [...]) so each column can be named in key= and compare="
        )


def _columns(df: Any) -> list[str]:
    return [str(c) for c in df.columns]


def _require_column(df: Any, name: str, column: str, role: str) -> None:
    cols = _columns(df)
    if column in cols:
        return
    close = difflib.get_close_matches(column, cols, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise KeyError(
        f"{role} column {column!r} is not in {name} (columns: {cols[:20]}{'…' if len(cols) > 20 else ''}){hint}"
    )


def _as_keys(key: Any) -> tuple[KeySpec, ...]:
    if key is None:
        raise ValueError("key is required: a column name, a tuple of columns, a callable, "
                         "a spec such as erblock.blocking.prefix('title', 3), or a list of these")
    if isinstance(key, list):
        if not key:
            raise ValueError("key: an empty list gives no blocking pass; give at least one key")
        return tuple(as_key_spec(k) for k in key)
    return (as_key_spec(key),)


def _check_keys(keys: Sequence[KeySpec], frames: Sequence[tuple[str, Any]]) -> None:
    from .blocking.keys import FunctionKey, block_ids

    for k in keys:
        for name, df in frames:
            for col in k.columns:
                _require_column(df, name, col, "key")
            if isinstance(k, FunctionKey) and isinstance(df, pd.DataFrame) and len(df):
                # A key function that raises or returns the wrong shape fails here, on the
                # first records, with the same message it would give inside a worker.
                block_ids(df.head(20), k)


def _check_comparisons(comparisons: Sequence[Comparison], frames: Sequence[tuple[str, Any]]) -> None:
    for c in comparisons:
        for src, (name, df) in enumerate(frames):
            col = c.right_column if src == SRC_S else c.column
            _require_column(df, name, col, "compare")
            dtype = df[col].dtype if not _is_dask(df) else df._meta[col].dtype
            if c.method not in ("exact", "numeric") and (
                pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            ):
                raise TypeError(
                    f"compare: column {col!r} of {name} holds numbers ({dtype}) but method "
                    f"{c.method!r} compares text; use 'numeric' or 'exact', or convert the "
                    "column with .astype(str)"
                )
            # text is parsed as numbers (CSV input); values that are not numbers are missing
            if c.method == "numeric" and not (
                pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_object_dtype(dtype)
                or pd.api.types.is_string_dtype(dtype)
            ):
                raise TypeError(
                    f"compare: column {col!r} of {name} is {dtype}, but method 'numeric' needs "
                    "numbers"
                )


def _check_common(strategy: str, n_tasks: Any, threshold: Any, shuffle_method: str) -> None:
    if strategy not in STRATEGY_NAMES:
        close = difflib.get_close_matches(str(strategy), STRATEGY_NAMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"strategy must be one of {', '.join(STRATEGY_NAMES)}, got {strategy!r}{hint}"
        )
    if n_tasks is not None and (
        not isinstance(n_tasks, int) or isinstance(n_tasks, bool) or n_tasks < 1
    ):
        raise ValueError(f"n_tasks must be an integer >= 1 (or None for automatic), got {n_tasks!r}")
    if threshold is not None and (
        not isinstance(threshold, (int, float)) or isinstance(threshold, bool)
        or not 0.0 <= float(threshold) <= 1.0
    ):
        raise ValueError(
            f"threshold must be a number in [0, 1] (scores are in [0, 1]), got {threshold!r}"
        )
    if shuffle_method not in SHUFFLE_METHODS:
        raise ValueError(
            f"shuffle_method must be one of {', '.join(SHUFFLE_METHODS)}, got {shuffle_method!r}"
        )


def _check_ids(df: Any, name: str, id_column: str | None) -> bool:
    """Check id uniqueness now for pandas; return True when the profile must check (Dask)."""
    if id_column is not None:
        _require_column(df, name, id_column, "id")
    if _is_dask(df):
        return True
    ids = df[id_column] if id_column else df.index
    if not ids.is_unique:
        dup = pd.Index(ids)[pd.Index(ids).duplicated()][:3].tolist()
        what = f"column {id_column!r}" if id_column else "index"
        raise ValueError(
            f"{name}: the {what} has repeated labels (e.g. {dup}); erblock reports pairs by "
            "record id, so each record needs its own. Use df.reset_index(drop=True) or pass "
            "id='<a unique column>'"
        )
    if ids.hasnans:
        raise ValueError(f"{name}: record ids must not be missing")
    return False


def _reserved(df: Any, name: str) -> None:
    bad = [c for c in _columns(df) if c.startswith("_erb_")]
    if bad:
        raise ValueError(f"{name}: column names starting with '_erb_' are reserved, got {bad}")


def _build_job(mode: str, frames: list[tuple[str, Any]], key: Any, compare: Any, strategy: str,
               n_tasks: int | None, threshold: float | None, output: str | None,
               id: Any, options: dict[str, Any]) -> tuple[Job, list[bool]]:
    for name, df in frames:
        _check_frame(df, name)
        _reserved(df, name)
    shuffle_method = options.pop("shuffle_method", "tasks")
    _check_common(strategy, n_tasks, threshold, shuffle_method)
    keys = _as_keys(key)
    _check_keys(keys, frames)
    comparisons = as_comparisons(compare)
    _check_comparisons(comparisons, frames)
    ids = id if isinstance(id, tuple) else (id, id)
    check = [_check_ids(df, name, ids[src]) for src, (name, df) in enumerate(frames)]
    allowed = {"npartitions", "persist", "progress", "sort", "cell_budget", "overwrite",
               "memory_budget",
               "cost_model", "sample", "sketch"}
    unknown = set(options) - allowed
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {sorted(unknown)}")
    if options.get("memory_budget") is not None:
        from .engine.memory import parse_budget

        options["memory_budget"] = parse_budget(options["memory_budget"])
    options["sketch"] = sketch_option(options.get("sketch"), strategy)
    _check_planning(options, strategy)
    job = Job(mode=mode, keys=keys, comparisons=comparisons, strategy=strategy, n_tasks=n_tasks,
              threshold=None if threshold is None else float(threshold), output=output,
              id_columns=(ids[0], ids[1]), shuffle_method=shuffle_method, **options)
    return job, check


def link(
    df_r: Any,
    df_s: Any,
    key: Any = None,
    compare: Any = None,
    scoring: Any = "mean",
    strategy: str = "auto",
    n_tasks: int | None = None,
    threshold: float | None = None,
    client: Any = None,
    output: str | None = None,
    id: str | tuple[str | None, str | None] | None = None,
    **options: Any,
) -> pd.DataFrame | RunReport:
    """Link two sources: every pair (r, s) of records that share a block, compared.

    Returns a pandas DataFrame ``left_id`` (index label of ``df_r``), ``right_id``
    (of ``df_s``), one similarity column per comparison and ``score``; the run report is
    in ``pairs.attrs["erblock_report"]``. With ``output="dir"``, workers write parquet
    parts into that directory and the :class:`~erblock.report.RunReport` is returned.

    ``scoring="em"`` fits an unsupervised Fellegi-Sunter model during the run (see
    :mod:`erblock.matchers.scoring`) and adds ``match_weight`` and ``match_probability``;
    the default decision is ``match_probability >= 0.5`` and ``threshold`` then applies to
    ``match_probability``. The fitted model is in ``pairs.attrs["erblock_model"]`` as a dict
    for ``erblock.load_model`` (or
    ``_erblock_model.json`` in the output directory); pass it, or any model from
    :func:`erblock.load_model`, as ``scoring=`` to score without refitting.

    Options: ``npartitions`` (input partitions for pandas input), ``persist`` (keep the
    prepared records in cluster memory between profile and route; default True),
    ``progress`` (progress bar), ``sort`` (canonical order), ``shuffle_method``
    (``"tasks"`` or ``"p2p"``), ``overwrite`` (replace an existing output directory),
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
    mean load with 95 % confidence; see :mod:`erblock.balancing.sampling`).
    """
    if compare is None:
        raise ValueError("compare is required, e.g. compare={'title': 'jaro_winkler'}")
    job, check = _build_job("link", [("df_r", df_r), ("df_s", df_s)], key, compare, strategy,
                            n_tasks, threshold, output, id, options)
    return _finish(job, [df_r, df_s], client, check, scoring)


def dedupe(
    df: Any,
    key: Any = None,
    compare: Any = None,
    scoring: Any = "mean",
    strategy: str = "auto",
    n_tasks: int | None = None,
    threshold: float | None = None,
    client: Any = None,
    output: str | None = None,
    id: str | None = None,
    **options: Any,
) -> pd.DataFrame | RunReport:
    """Find duplicates in one source: each unordered pair of records in a block, once.

    ``left_id`` always comes before ``right_id`` in the input order and no record is
    paired with itself. Otherwise as :func:`link`.
    """
    if compare is None:
        raise ValueError("compare is required, e.g. compare={'name': 'jaro_winkler'}")
    job, check = _build_job("dedupe", [("df", df)], key, compare, strategy, n_tasks,
                            threshold, output, id, options)
    return _finish(job, [df], client, check, scoring)


def _as_scoring(scoring: Any, job: Job) -> tuple[Any, Job]:
    """The model a run scores with (None = mean score) and the job it runs.

    ``"mean"``: the weighted mean in ``score``; ``"em"``: a new
    :class:`~erblock.matchers.scoring.FellegiSunter` fitted during the run; a
    ``FellegiSunter`` (fitted: used as is; unfitted: fitted during the run, in place) or a
    fitted ``SupervisedModel``: adds ``match_weight`` and ``match_probability``, and
    ``threshold`` applies to ``match_probability``. A ``ScoreThreshold`` is the mean score
    with its threshold (unless ``threshold`` is given).
    """
    import dataclasses

    from .matchers.scoring import FellegiSunter
    from .matchers.supervised import ScoreThreshold, SupervisedModel

    if isinstance(scoring, str):
        if scoring == "mean":
            return None, job
        if scoring == "em":
            return FellegiSunter().bind(job.comparisons), job
        close = difflib.get_close_matches(scoring, ("mean", "em"), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"scoring must be 'mean', 'em' or a model, got {scoring!r}{hint}")
    if isinstance(scoring, ScoreThreshold):
        if job.threshold is None:
            job = dataclasses.replace(job, threshold=scoring.threshold)
        return None, job
    if isinstance(scoring, (FellegiSunter, SupervisedModel)):
        return scoring.bind(job.comparisons), job
    raise TypeError(
        "scoring must be 'mean', 'em', a FellegiSunter, a fitted SupervisedModel or a "
        f"ScoreThreshold (e.g. erblock.load_model('model.json')), got {type(scoring).__name__}"
    )


def _finish(job: Job, frames: list[Any], client: Any, check: list[bool], scoring: Any
            ) -> pd.DataFrame | RunReport:
    model, job = _as_scoring(scoring, job)
    from .engine.cluster import check_workers, get_client, scheduler_guard

    c = get_client(client, check=False)
    with scheduler_guard(c, job.output):  # a lost scheduler: one clear error, no output
        check_workers(c)
        pairs, report = run(job, frames, c, check_ids=check, scoring=model)
    if pairs is None:
        return report
    return pairs


def _check_planning(options: dict[str, Any], strategy: str) -> None:
    """Validate and normalise the ``cost_model`` and ``sample`` options (in place)."""
    from .balancing.sampling import SampleGoal
    from .engine.calibrate import check_cost_model

    check_cost_model(options.get("cost_model"))
    if options.get("sample") is not None:
        options["sample"] = SampleGoal.from_option(options["sample"])
        if strategy != "auto":
            raise ValueError(
                f"sample= builds its own plan from the sample (large blocks chopped, medium "
                f"packed, small hashed), so strategy must be 'auto', got {strategy!r}; "
                "drop sample= to use that strategy on a full profile"
            )


def plan(
    df_r: Any,
    df_s: Any = None,
    key: Any = None,
    strategy: str = "auto",
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
) -> Plan:
    """Profile the input (the BDM) and return the plan a run would execute, without comparing.

    With ``df_s`` the plan is for linking ``df_r`` × ``df_s``, otherwise for deduplicating
    ``df_r``. ``plan.describe()`` explains it (comparisons, largest blocks, predicted
    makespan and imbalance of every candidate strategy, replication) and
    ``plan.plot(path)`` draws its reduce-task loads next to Basic's.

    The predicted makespan uses ``cost_model`` (see :func:`link`); with ``compare`` (and
    ``strategy="auto"``) an uncalibrated session first calibrates on a sample of the input
    with those comparisons, as a run would. ``sample={"delta": 0.1, "alpha": 0.95}`` plans
    from a progressive sample of input partitions (paper 001) instead of a full profile.
    """
    frames = [("df_r", df_r)] + ([("df_s", df_s)] if df_s is not None else [])
    for name, df in frames:
        _check_frame(df, name)
    _check_common(strategy, n_tasks, threshold, "tasks")
    keys = _as_keys(key)
    _check_keys(keys, frames)
    comparisons: tuple[Comparison, ...] = ()
    if compare is not None:
        comparisons = as_comparisons(compare)
        _check_comparisons(comparisons, frames)
    options: dict[str, Any] = {"cost_model": cost_model, "sample": sample,
                               "sketch": sketch_option(sketch, strategy)}
    _check_planning(options, strategy)
    ids = id if isinstance(id, tuple) else (id, id)
    check = [_check_ids(df, name, ids[src]) for src, (name, df) in enumerate(frames)]
    from .engine.cluster import get_client, total_threads
    from .engine.planning import plan_job

    c = get_client(client)
    threads = total_threads(c)
    job = Job(mode="link" if df_s is not None else "dedupe", keys=keys, comparisons=comparisons,
              strategy=strategy, n_tasks=n_tasks, id_columns=(ids[0], ids[1]),
              threshold=None if threshold is None else float(threshold),
              npartitions=npartitions, progress=progress, **options)
    t0 = time.perf_counter()
    ddfs = [to_dask(df, npartitions, threads, sample=job.sample is not None)
            for _, df in frames]
    prepared = [prepare(d, job, src) for src, d in zip((SRC_R, SRC_S), ddfs)]
    r = n_tasks or max(1, 4 * threads)
    p, rec, timing = plan_job(c, job, prepared, check, threads, r, t0, explain=True)
    p.info.update({f"records_{k}": v for k, v in rec.items() if isinstance(v, int)})
    p.info.update({f"{k}_seconds": v for k, v in timing.items()})
    return p
