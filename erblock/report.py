"""What a run measured: per reduce task and per phase, next to what the plan predicted.

A run attaches its report to the pairs as ``pairs.attrs["erblock_report"]`` in its dict
form (pandas keeps ``attrs`` JSON-safe: ``to_parquet`` writes them), and writes it as
``_erblock_report.json`` next to parquet parts; :meth:`RunReport.of` reads either back.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPORT_FILE = "_erblock_report.json"  #: a leading "_" keeps parquet readers off the file
ATTRS_KEY = "erblock_report"


def max_over_mean(values: np.ndarray) -> float:
    """Imbalance of a load vector: max / mean (1.0 for all-zero or empty)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0 or values.mean() <= 0:
        return 1.0
    return float(values.max() / values.mean())


@dataclass(frozen=True)
class TaskStats:
    """What one reduce task did: comparisons performed (and of those, the ones in small
    match tasks), pairs kept, records received, match tasks, seconds computing (and
    writing), the worker it ran on, and the similarity cells it computed to get its
    comparisons."""

    task: int
    comparisons: int = 0
    pairs: int = 0
    records: int = 0
    match_tasks: int = 0
    seconds: float = 0.0
    write_seconds: float = 0.0
    worker: str = ""
    #: similarity cells computed per comparison (mean over them): pair cells, including
    #: those masks discard, or distinct-value cells where values were encoded
    cells: int = 0
    #: comparisons in small match tasks (compared as aligned pairs; the cost model's
    #: :attr:`~erblock.balancing.cost.CostModel.per_small_comparison`)
    small_comparisons: int = 0
    examples: tuple[dict[str, Any], ...] = ()  #: pairs a scoring model explains

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TaskStats:
        names = {f.name for f in dataclasses.fields(cls)}
        out = {k: v for k, v in d.items() if k in names}
        out["examples"] = tuple(out.get("examples", ()))
        return cls(**out)


def report_path(path: Any) -> Any:
    """The report file of ``path``: itself, an output directory's ``_erblock_report.json``,
    or for a clustered run's directory (``pairs/`` and ``entities/`` inside) its pairs'."""
    if not os.path.isdir(path):
        return path
    mine = os.path.join(path, REPORT_FILE)
    pairs = os.path.join(path, "pairs", REPORT_FILE)
    return pairs if not os.path.exists(mine) and os.path.exists(pairs) else mine


def written_report(frame: Any) -> dict[str, Any] | None:
    """The report of the run that wrote a Dask frame's parquet (``output=``'s result, or
    the directory read back), as a dict, or None when it has none (another frame).

    A Dask frame carries no ``attrs``: the directories its parquet is read from are found
    in its expression (any selection of it keeps the read), each looked up for the
    report file beside the pairs. Duck-typed, so this module needs no Dask."""
    walk = getattr(getattr(frame, "expr", None), "walk", None)
    if walk is None:
        return None
    for node in walk():
        if not type(node).__name__.startswith("ReadParquet"):
            continue
        try:
            paths = node.operand("path")
        except (AttributeError, KeyError, ValueError):
            continue
        for path in [paths] if isinstance(paths, (str, os.PathLike)) else list(paths):
            path = os.fspath(path).removeprefix("file://")
            # the directory itself, or the one holding a part file or a glob of parts
            folder = path if os.path.isdir(path) else os.path.dirname(path)
            file = os.path.join(folder, REPORT_FILE)
            if os.path.isfile(file):
                try:
                    with open(file, encoding="utf-8") as fh:
                        out = json.load(fh)
                except (OSError, ValueError):  # unreadable: as if there were none
                    continue
                return out if isinstance(out, dict) else None
    return None


@dataclass(frozen=True)
class RunReport:
    """Everything one ``link``/``dedupe`` run did.

    ``tasks`` has one :class:`TaskStats` per reduce task; ``phases`` the wall-clock
    seconds of profile, plan, route+compare and write; ``plan`` the plan summary
    (predicted loads); ``records`` the input counts including records not blocked
    (missing or empty key); ``settings`` how it ran; ``prediction`` what the plan
    predicted next to what was measured (:func:`erblock.engine.planning.prediction`);
    ``model`` the scoring model's report when a model scored the pairs.
    """

    mode: str
    strategy: str
    n_tasks: int
    phases: dict[str, float] = field(default_factory=dict)
    tasks: tuple[TaskStats, ...] = ()
    plan: dict[str, Any] = field(default_factory=dict)
    records: dict[str, int] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    pairs: int = 0
    prediction: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] | None = None

    @property
    def comparisons(self) -> int:
        return int(sum(t.comparisons for t in self.tasks))

    @property
    def task_comparisons(self) -> np.ndarray:
        out = np.zeros(self.n_tasks, dtype=np.int64)
        for t in self.tasks:
            out[t.task] = t.comparisons
        return out

    @property
    def task_seconds(self) -> np.ndarray:
        out = np.zeros(self.n_tasks, dtype=np.float64)
        for t in self.tasks:
            out[t.task] = t.seconds
        return out

    @property
    def imbalance_comparisons(self) -> float:
        return max_over_mean(self.task_comparisons)

    @property
    def imbalance_seconds(self) -> float:
        return max_over_mean(self.task_seconds)

    @property
    def seconds(self) -> float:
        return float(sum(self.phases.values()))

    # -- dict and JSON forms --------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (with the derived figures too; :meth:`from_dict` ignores them)."""
        d: dict[str, Any] = {
            "mode": self.mode,
            "strategy": self.strategy,
            "n_tasks": self.n_tasks,
            "pairs": self.pairs,
            "comparisons": self.comparisons,
            "imbalance_comparisons": self.imbalance_comparisons,
            "imbalance_seconds": self.imbalance_seconds,
            "seconds": self.seconds,
            "pairs_per_second": self.comparisons / self.phases["route_compare"]
            if self.phases.get("route_compare") else None,
            "phases": self.phases,
            "records": self.records,
            "plan": self.plan,
            "settings": self.settings,
            "output": self.output,
            "prediction": self.prediction,
            "model": self.model,
            "tasks": [t.to_dict() for t in self.tasks],
        }
        return json.loads(json.dumps(d, default=jsonable))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunReport:
        """Rebuild a report from :meth:`to_dict` output (e.g. read back from JSON)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"tasks"}
        kwargs = {k: d[k] for k in names if k in d}
        return cls(tasks=tuple(TaskStats.from_dict(t) for t in d.get("tasks", ())), **kwargs)

    def to_json(self, path: str | Path | None = None, indent: int = 2) -> str:
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def of(cls, source: Any) -> RunReport:
        """The report of a run: from a pairs frame (its ``attrs``), an output directory
        (its ``_erblock_report.json``), a JSON file path, or a report dict."""
        if isinstance(source, RunReport):
            return source
        attrs = getattr(source, "attrs", None)
        if isinstance(attrs, Mapping):
            if ATTRS_KEY not in attrs:
                raise ValueError("these pairs carry no erblock report (attrs['erblock_report'])")
            return cls.from_dict(attrs[ATTRS_KEY])
        if isinstance(source, Mapping):
            return cls.from_dict(source)
        if hasattr(source, "npartitions"):  # what output= returns
            raise TypeError("a Dask frame of pairs carries no report: read it from the "
                            "output directory, erblock.read_report('<output>')")
        if not isinstance(source, (str, bytes, os.PathLike)):
            raise TypeError("the report of a run is read from its pairs (a pandas frame), "
                            "its output directory, a JSON file or a dict; got "
                            f"{type(source).__name__}")
        path = report_path(os.fspath(source))
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    # -- reading it -----------------------------------------------------------------------

    def summary(self) -> str:
        d = self.to_dict()
        ph = ", ".join(f"{k} {v:.2f}s" for k, v in self.phases.items())
        rate = d["pairs_per_second"]
        pred = self.prediction
        predicted = (
            f"; predicted makespan {pred['predicted_makespan']:.2f}s "
            f"(measured {pred['measured_makespan']:.2f}s)"
            if pred.get("predicted_makespan") is not None and "measured_makespan" in pred
            else ""
        )
        return (
            f"{self.mode} with {self.strategy} on {self.n_tasks} reduce tasks: "
            f"{self.comparisons:,} comparisons, {self.pairs:,} pairs kept; "
            f"imbalance {self.imbalance_comparisons:.3f} (comparisons), "
            f"{self.imbalance_seconds:.3f} (seconds); "
            f"{'' if rate is None else f'{rate:,.0f} comparisons/s; '}"
            f"records not blocked {self.records.get('not_blocked', 0):,}; {ph}{predicted}"
            + "".join(f"; {n:,} {k[len('invalid_'):]} values could not be compared "
                      "(treated as missing)"
                      for k, n in self.records.items() if k.startswith("invalid_") and n)
            + _assignment_text(self.settings.get("assignment"))
        )

    def __repr__(self) -> str:
        return f"RunReport({self.summary()})"


def _assignment_text(a: Any) -> str:
    """The summary's account of a link's cardinality (empty without one)."""
    if not a:
        return ""
    at = "" if a.get("threshold") is None else f" >= {a['threshold']:g}"
    return (f"; cardinality {a['cardinality']}: {a['links']:,} links kept of "
            f"{a['decided_pairs']:,} pairs with {a['decision']}{at}")


def jsonable(obj: Any) -> Any:
    """``json.dumps`` default for numpy scalars and arrays (anything else as text)."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.bool_):
        return bool(obj)
    return str(obj)
