"""The request the engine runs: a frozen, typed :class:`Job` with its :class:`RunOptions`.

:mod:`erblock.api` checks what a user passes and builds a job; everything below works
from the job alone. Both round-trip through ``to_dict``/``from_dict`` (except key
functions, which are code).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..balancing.cost import CostModel
from ..balancing.progressive import SampleGoal
from ..balancing.strategies import AUTO, STRATEGIES, get_strategy
from ..blocking.keys import KeySpec
from ..blocking.registry import key_from_dict
from ..matchers.assignment import check_cardinality
from ..matchers.comparisons import Comparison
from ..scalars import is_int
from .schema import value_column

MODES = ("link", "dedupe")
#: how records move to their reduce tasks: "direct" (one small task per input partition
#: and reduce task, exact), "tasks"/"p2p" (Dask's shuffle of ``set_index`` on explicit
#: divisions, exact too), "auto" (direct while partitions × reduce tasks stay small)
SHUFFLE_METHODS = ("auto", "direct", "tasks", "p2p", "disk")
DIRECT_ROUTE_LIMIT = 8192  #: "auto" routes directly up to this many partitions × tasks
DEFAULT_CELL_BUDGET = 1 << 21  #: cells per chunk matrix: 8 MiB of float32 per comparison
COST_MODEL_CHOICES = ("calibrate", "default")
#: ``encode=``: compare distinct values once per block when it pays ("auto"), whenever the
#: values can be encoded ("always"), or pair by pair ("never"); the pairs are the same
ENCODE_CHOICES = ("auto", "always", "never")
#: where a run executes: ``"auto"`` (small pandas jobs in this process, the rest on the
#: cluster), ``"cluster"``, ``"local"`` (:mod:`erblock.engine.local`)
EXECUTORS = ("auto", "cluster", "local")


@dataclass(frozen=True)
class RunOptions:
    """How a job runs (none of these change which pairs come out).

    ``npartitions``: input partitions for pandas input; ``shuffle_method``: see
    :data:`SHUFFLE_METHODS`; ``persist``: keep prepared records in cluster memory between
    profile and route; ``progress``: progress bars; ``sort``: canonical pair order;
    ``overwrite``: replace an existing output directory; ``cell_budget``: cells of one
    compare chunk; ``memory_budget``: bytes per reduce task, ``"auto"`` or None;
    ``cost_model``: None, ``"calibrate"``, ``"default"`` or a :class:`CostModel`;
    ``sample``: plan from a progressive sample; ``strategy_options``: the options spec of
    the strategy (e.g. :class:`~erblock.balancing.strategies.CellOptions`); ``encode``:
    see :data:`ENCODE_CHOICES` (similarities are bit-identical either way); ``executor``:
    see :data:`EXECUTORS` (:mod:`erblock.engine.local`).
    """

    npartitions: int | None = None
    shuffle_method: str = "auto"
    persist: bool = True
    progress: bool = False
    sort: bool = False
    overwrite: bool = False
    cell_budget: int = DEFAULT_CELL_BUDGET
    memory_budget: int | str | None = None
    cost_model: str | CostModel | None = None
    sample: SampleGoal | None = None
    strategy_options: Any = None
    encode: str = "auto"
    executor: str = "auto"

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, "
                             f"got {self.executor!r}")
        if self.encode not in ENCODE_CHOICES:
            raise ValueError(f"encode must be one of {', '.join(ENCODE_CHOICES)}, "
                             f"got {self.encode!r}")
        if self.shuffle_method not in SHUFFLE_METHODS:
            raise ValueError(f"shuffle_method must be one of {', '.join(SHUFFLE_METHODS)}, "
                             f"got {self.shuffle_method!r}")
        if self.shuffle_method == "p2p" and self.executor == "local":
            raise ValueError("shuffle_method='p2p' runs on a distributed cluster only, but "
                             "executor='local' runs in this process: use shuffle_method "
                             "'tasks' or 'disk', or executor 'auto' or 'cluster'")
        n = self.npartitions
        if n is not None and (not is_int(n) or n < 1):
            raise ValueError(f"npartitions must be an integer >= 1 or None, got {n!r}")
        if n is not None:
            object.__setattr__(self, "npartitions", int(n))
        c = self.cost_model
        if not (c is None or isinstance(c, CostModel) or c in COST_MODEL_CHOICES):
            raise ValueError(f"cost_model must be None, 'calibrate', 'default' or a CostModel, "
                             f"got {c!r}")

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if isinstance(self.cost_model, CostModel):
            out["cost_model"] = {"cost_model": self.cost_model.to_dict()}
        if self.sample is not None:
            out["sample"] = self.sample.to_dict()
        if self.strategy_options is not None:
            out["strategy_options"] = self.strategy_options.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], strategy: str = AUTO) -> RunOptions:
        d = dict(d)
        cm = d.get("cost_model")
        if isinstance(cm, Mapping):
            d["cost_model"] = CostModel.from_dict(cm["cost_model"])
        if d.get("sample") is not None:
            d["sample"] = SampleGoal.from_option(d["sample"])
        if d.get("strategy_options") is not None:
            d["strategy_options"] = get_strategy(strategy).parse_options(d["strategy_options"])
        return cls(**d)


@dataclass(frozen=True)
class Job:
    """A checked, normalised request (built by :mod:`erblock.api`)."""

    mode: str
    keys: tuple[KeySpec, ...]
    comparisons: tuple[Comparison, ...]
    strategy: str = AUTO
    n_tasks: int | None = None
    threshold: float | None = None
    output: str | None = None
    id_columns: tuple[str | None, str | None] = (None, None)
    options: RunOptions = field(default_factory=RunOptions)
    cardinality: str | None = None  #: "1:1", "1:n", "n:1" or None (see matchers.assignment)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.strategy != AUTO and self.strategy not in STRATEGIES:
            get_strategy(self.strategy)  # raises, naming the choices
        if check_cardinality(self.cardinality, self.mode) != self.cardinality:
            raise ValueError(f"cardinality must be normalised ('1:1', '1:n', 'n:1' or None), "
                             f"got {self.cardinality!r}")
        if self.candidates and (self.threshold is not None or self.cardinality is not None):
            raise ValueError("a job without comparisons returns candidate pairs: it has no "
                             "threshold and no cardinality")

    @property
    def candidates(self) -> bool:
        """No comparison: the run returns the candidate pairs (ids and key pass) only."""
        return not self.comparisons

    @property
    def link(self) -> bool:
        return self.mode == "link"

    def replace(self, **changes: Any) -> Job:
        """A copy with fields changed (options by name too: ``cell_budget=...``)."""
        opts = {k: changes.pop(k) for k in list(changes) if k in _OPTION_NAMES}
        if opts:
            changes["options"] = dataclasses.replace(self.options, **opts)
        return dataclasses.replace(self, **changes)

    def col_index(self) -> dict[str, int]:
        """Compared column (left name) -> index of its prepared value column."""
        cols: list[str] = []
        for c in self.comparisons:
            if c.column not in cols:
                cols.append(c.column)
        return {c: i for i, c in enumerate(cols)}

    def value_columns_for(self, src: int) -> list[str]:
        """Columns of source ``src`` feeding ``value_column(i)``, in the order of
        :meth:`col_index`."""
        index = self.col_index()
        out = [""] * len(index)
        for c in self.comparisons:
            out[index[c.column]] = c.right_column if src == 1 else c.column
        return out

    def value_column_of(self, comparison: Comparison) -> str:
        """Prepared column holding ``comparison``'s values."""
        return value_column(self.col_index()[comparison.column])

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "keys": [k.to_dict() for k in self.keys],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "strategy": self.strategy,
            "n_tasks": self.n_tasks,
            "threshold": self.threshold,
            "output": self.output,
            "id_columns": list(self.id_columns),
            "options": self.options.to_dict(),
            "cardinality": self.cardinality,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Job:
        strategy = d.get("strategy", AUTO)
        return cls(
            mode=d["mode"],
            keys=tuple(key_from_dict(k) for k in d["keys"]),
            comparisons=tuple(Comparison.from_dict(c) for c in d["comparisons"]),
            strategy=strategy,
            n_tasks=d.get("n_tasks"),
            threshold=d.get("threshold"),
            output=d.get("output"),
            id_columns=tuple(d.get("id_columns", (None, None))),  # type: ignore[arg-type]
            options=RunOptions.from_dict(d.get("options", {}), strategy),
            cardinality=d.get("cardinality"),
        )


_OPTION_NAMES = {f.name for f in dataclasses.fields(RunOptions)}
