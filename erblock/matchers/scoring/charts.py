"""Charts of a Fellegi-Sunter model (PNG, with matplotlib, an optional extra): the match
weight of every level of every comparison, and one pair's waterfall."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd

POSITIVE, NEGATIVE, TOTAL = "#4c72b0", "#c44e52", "#55a868"


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is an optional extra
        raise ImportError("charts need matplotlib: pip install 'erblock[plot]'") from exc
    return plt


def plot_weights(levels: pd.DataFrame | Sequence[Mapping[str, Any]], path: str | Path | IO[bytes],
                 title: str = "match weight of each level") -> Path | IO[bytes]:
    """Horizontal bars: ``log2(m/u)`` of every level (a model's :meth:`summary`, or the
    ``levels`` of its report), grouped by comparison, positive blue, negative red."""
    plt = _pyplot()
    table = pd.DataFrame(levels)
    path = Path(path) if isinstance(path, (str, os.PathLike)) else path
    labels = [f"{r.comparison}: {r.label}" for r in table.itertuples()]
    weights = table["match_weight"].to_numpy(float)
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(table) + 1.2))
    y = range(len(table))[::-1]
    ax.barh(list(y), weights, color=[POSITIVE if w >= 0 else NEGATIVE for w in weights])
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("match weight (log2 m/u)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return path


def plot_waterfall(steps: pd.DataFrame | Sequence[Mapping[str, Any]],
                   path: str | Path | IO[bytes],
                   title: str = "") -> Path | IO[bytes]:
    """One pair's waterfall (:func:`~.explain.waterfall`): each step's weight as a bar
    from the running total, then the final match weight."""
    plt = _pyplot()
    table = pd.DataFrame(steps)
    path = Path(path) if isinstance(path, (str, os.PathLike)) else path
    weights = table["weight"].to_numpy(float)
    ends = weights.cumsum()
    starts = ends - weights
    # a level can be long (a group's step names its comparisons): at most 3 short lines,
    # so the rotated labels fit the figure (tight_layout failed and cut them off)
    names = [f"{s}\n" + textwrap.fill(textwrap.shorten(str(lv), 78, placeholder=" …"), 26)
             for s, lv in zip(table["step"], table["level"])] + ["total"]
    lines = max(n.count("\n") + 1 for n in names)
    fig, ax = plt.subplots(figsize=(1.1 * len(table) + 2.5, 3.2 + 0.35 * lines))
    x = list(range(len(table)))
    ax.bar(x, weights, bottom=starts,
           color=[POSITIVE if w >= 0 else NEGATIVE for w in weights])
    ax.bar([len(table)], [ends[-1]], color=TOTAL)
    ax.set_xticks(x + [len(table)], names, fontsize=7, rotation=30, ha="right")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("match weight")
    ax.set_title(title or f"match weight {ends[-1]:.2f}")
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return path
