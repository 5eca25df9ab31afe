"""What a run measured: per reduce task and per phase, next to what the plan predicted."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


def max_over_mean(values: np.ndarray) -> float:
    """Imbalance of a load vector: max / mean (1.0 for all-zero or empty)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0 or values.mean() <= 0:
        return 1.0
    return float(values.max() / values.mean())


@dataclass(eq=False)
class RunReport(dict):  # type: ignore[type-arg]
    """Everything one ``link``/``dedupe`` run did.

    A run attaches its report to the pairs as ``pairs.attrs["erblock_report"]``. pandas
    writes ``attrs`` as JSON (``to_parquet``), so the report is also a ``dict`` holding
    its own ``to_dict()`` (filled by :meth:`attach`); after a parquet round trip the
    attribute comes back as that plain dict, and :meth:`from_dict` rebuilds the report.

    ``tasks`` has one dict per reduce task (comparisons performed, seconds, pairs kept,
    records received, worker); ``phases`` the wall-clock seconds of profile, plan,
    route+compare and write; ``plan`` the plan summary (predicted loads); ``records``
    the input counts including records not blocked (missing or empty key).
    """

    mode: str
    strategy: str
    n_tasks: int
    phases: dict[str, float] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    plan: dict[str, Any] = field(default_factory=dict)
    records: dict[str, int] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    pairs: int = 0
    #: what the plan predicted (makespan, imbalance, comparisons, cost model, candidates)
    #: next to what was measured; see :func:`erblock.engine.planning.prediction`
    prediction: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return True

    def attach(self) -> RunReport:
        """Fill the dict view with ``to_dict()`` (JSON-safe) and return self."""
        dict.clear(self)
        dict.update(self, json.loads(self.to_json()))
        return self

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunReport:
        """Rebuild a report from ``to_dict()`` output (e.g. attrs read back from parquet)."""
        names = ("mode", "strategy", "n_tasks", "phases", "tasks", "plan", "records",
                 "settings", "output", "pairs", "prediction")
        return cls(**{k: d[k] for k in names if k in d}).attach()

    @property
    def comparisons(self) -> int:
        return int(sum(t["comparisons"] for t in self.tasks))

    @property
    def task_comparisons(self) -> np.ndarray:
        out = np.zeros(self.n_tasks, dtype=np.int64)
        for t in self.tasks:
            out[t["task"]] = t["comparisons"]
        return out

    @property
    def task_seconds(self) -> np.ndarray:
        out = np.zeros(self.n_tasks, dtype=np.float64)
        for t in self.tasks:
            out[t["task"]] = t["seconds"]
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

    def to_dict(self) -> dict[str, Any]:
        return {
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
            "tasks": self.tasks,
        }

    def to_json(self, path: str | Path | None = None, indent: int = 2) -> str:
        text = json.dumps(self.to_dict(), indent=indent, default=jsonable)
        if path is not None:
            Path(path).write_text(text)
        return text

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
        )

    def __repr__(self) -> str:
        return f"RunReport({self.summary()})"


def jsonable(obj: Any) -> Any:
    """``json.dumps`` default for numpy scalars and arrays (anything else as text)."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
