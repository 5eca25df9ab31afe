"""The walk-throughs of docs/architecture.md, for real: a toy strategy, comparison kind,
key kind and scoring model, each registered with one line and run end to end.

Each toy is added to its registry for the test only (``monkeypatch.setitem``) and must
then work through the public API and the command line without touching anything else.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe, pair_list

import erblock
from erblock.balancing import strategies as strategies_registry
from erblock.balancing.bdm import BDM, block_comparisons
from erblock.balancing.packing import hashed
from erblock.balancing.plan import Plan, UnitBuilder, assemble, check_n_tasks
from erblock.balancing.strategies.base import Strategy
from erblock.balancing.strategies.basic import whole_blocks
from erblock.blocking import Column
from erblock.blocking import registry as key_registry
from erblock.blocking.keys import KeySpec
from erblock.cli import main
from erblock.matchers import methods as methods_registry
from erblock.matchers import scoring as scoring_registry
from erblock.matchers.methods.base import Method
from erblock.matchers.scoring.base import ModelWarning, ScoringModel, probability


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    names = np.array(["ann", "anne", "bob", "bobby", "carl", "karl", "dan", "dana"])
    return pd.DataFrame({"k": rng.integers(0, 4, 60).astype(str),
                         "name": rng.choice(names, 60)})


# ------------------------------------------------------------------------------ strategy


def plan_reversed(bdm: BDM, r: int, options: Any = None) -> Plan:
    """Whole blocks, hashed onto the reduce tasks in reverse order."""
    check_n_tasks(r)
    blocks, n_r, n_s = bdm.block_sizes()
    keep = block_comparisons(n_r, n_s, bdm.link) > 0
    builder = UnitBuilder()
    whole_blocks(builder, bdm, blocks[keep], n_r[keep], n_s[keep])
    return assemble("reversed", r, bdm.link, builder,
                    lambda units, t: r - 1 - hashed(units.block[t[1]], r), bdm.n_records)


def test_a_registered_strategy_runs_end_to_end(frame, client, monkeypatch, tmp_path, capsys):
    toy = Strategy(name="reversed", summary="toy", profile="bdm", plan=plan_reversed)
    monkeypatch.setitem(strategies_registry.STRATEGIES, "reversed", toy)
    assert "reversed" in strategies_registry.strategy_names()
    pairs = erblock.dedupe(frame, key="k", compare={"name": "jaro_winkler"},
                           strategy="reversed", n_tasks=3, client=client)
    assert set(pair_list(pairs)) == brute_dedupe(frame, [Column("k")])
    assert erblock.RunReport.of(pairs).strategy == "reversed"
    path = tmp_path / "f.csv"
    frame.to_csv(path, index=False)
    assert main(["plan", str(path), "--key", "k", "--strategy", "reversed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["strategy"] == "reversed"


# ----------------------------------------------------------------------- comparison kind


@dataclass(frozen=True)
class SameLength(Method):
    name: ClassVar[str] = "same_length"
    summary: ClassVar[str] = "1 if the texts have the same length"
    LEVELS: ClassVar[tuple[float, ...]] = (1.0,)

    def _matrix(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        a = np.fromiter(map(len, lv), np.int64, len(lv))
        b = np.fromiter(map(len, rv), np.int64, len(rv))
        return (a[:, None] == b[None, :]).astype(np.float32)

    def _aligned(self, lv: np.ndarray, rv: np.ndarray, cutoff: float | None) -> np.ndarray:
        return np.array([len(x) == len(y) for x, y in zip(lv, rv)], np.float32)


def test_a_registered_comparison_kind_runs_end_to_end(frame, client, monkeypatch):
    monkeypatch.setitem(methods_registry.METHODS, "same_length", SameLength)
    pairs = erblock.dedupe(frame, key="k", compare={"name": "same_length"}, client=client)
    names = frame["name"]
    expected = (names.loc[pairs["left_id"]].str.len().to_numpy()
                == names.loc[pairs["right_id"]].str.len().to_numpy())
    assert (pairs["name_same_length"].to_numpy() == expected).all()
    # and with the Fellegi-Sunter model, through its default levels (60 toy records:
    # whether EM converges on them is not the point here)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        fs = erblock.dedupe(frame, key="k", scoring="em", client=client,
                            compare={"name": "same_length", "k": "exact"})
    assert len(fs) == len(pairs) and fs["match_probability"].between(0, 1).all()


# ----------------------------------------------------------------------------- key kind


@dataclass(frozen=True)
class LastLetter(KeySpec):
    column: str
    kind: ClassVar[str] = "last_letter"
    cli_names: ClassVar[tuple[str, ...]] = ("last",)
    cli_usage: ClassVar[str] = "last:COLUMN"

    @classmethod
    def from_cli(cls, name: str, args: Sequence[str]) -> KeySpec:
        return cls(args[0])

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], parse: Any = None) -> KeySpec:
        return cls(d["column"])

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    def values(self, df: pd.DataFrame) -> pd.Series:
        return df[self.column].astype("string").str[-1]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column}


def test_a_registered_key_kind_runs_end_to_end(frame, client, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(key_registry.KEY_KINDS, "last_letter", LastLetter)
    key = key_registry.parse_key("last:name")
    assert key == LastLetter("name")
    assert key_registry.key_from_dict(key.to_dict()) == key
    pairs = erblock.dedupe(frame, key=key, compare={"name": "jaro"}, client=client)
    last = frame["name"].str[-1]
    expected = {(a, b) for a in frame.index for b in frame.index
                if a < b and last[a] == last[b]}
    assert set(pair_list(pairs)) == expected


# --------------------------------------------------------------------------- scoring model


class LengthModel(ScoringModel):
    """A toy fitted model: the match weight is 4 × (mean similarity − 0.5)."""

    kind = "length_toy"
    kinds: ClassVar[tuple[str, ...]] = ("length_toy",)

    def __init__(self, scale: float = 4.0) -> None:
        self.scale = scale

    @property
    def fitted(self) -> bool:
        return True

    def apply(self, pairs: pd.DataFrame) -> pd.DataFrame:
        out = pairs.copy()
        out["match_weight"] = self.scale * (pairs["score"].to_numpy() - 0.5)
        out["match_probability"] = probability(out["match_weight"].to_numpy())
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "scale": self.scale}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LengthModel:
        return cls(float(d["scale"]))


def test_a_registered_scoring_model_runs_end_to_end(frame, client, monkeypatch):
    monkeypatch.setitem(scoring_registry.MODELS, "length_toy", LengthModel)
    saved = LengthModel(8.0).to_json()
    model = erblock.load_model(saved)
    assert isinstance(model, LengthModel) and model.scale == 8.0
    pairs = erblock.dedupe(frame, key="k", compare={"name": "jaro_winkler"}, scoring=model,
                           client=client)
    expected = probability(8.0 * (pairs["score"].to_numpy() - 0.5))
    np.testing.assert_allclose(pairs["match_probability"].to_numpy(), expected)
