"""Explaining a plan: what it will compute, where the work is, what the alternatives were.

:func:`describe` (``Plan.describe()``, ``erblock plan``) prints the total comparisons, the
largest blocks (records and comparisons, and their share of all comparisons: the skew a
strategy has to handle), the loads and imbalance, replication, the predicted makespan
under the cost model, and, when the planner compared strategies (``auto``,
``erblock.plan``), the predicted makespan, imbalance and replication of each candidate.
:func:`plot` (``Plan.plot(path)``) draws the comparisons per reduce task of the plan next
to those of Basic, with the mean, as a PNG.

Pure: numpy and the standard library; matplotlib is imported only when drawing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .bdm import BDM, SRC_R, SRC_S, block_comparisons
from .lookup import lookup
from .packing import hashed
from .units import RANGE, RECTANGLE, TRIANGLE

if TYPE_CHECKING:  # pragma: no cover - Plan uses this module to explain itself
    from .plan import Plan


def largest_blocks(plan: Plan, top: int = 5) -> list[dict[str, Any]]:
    """The ``top`` blocks (or sketch cells) by comparisons: id, records R (and S), share.

    From the plan's BDM when it has one (``erblock.plan`` keeps it), else from its units
    and match tasks (sampled plans: estimates; blocks hashed into buckets are not listed).
    """
    bdm = plan.profile
    if isinstance(bdm, BDM):
        blocks, n_r, n_s = bdm.block_sizes()
        comps = bdm.comparisons()[1].astype(np.float64)
    else:
        u, m = plan.units, plan.match
        listed = (plan.details.listed(u) if plan.details is not None
                  else np.ones(len(u), dtype=bool))
        blocks = np.unique(u.block[listed])
        idx = np.searchsorted(blocks, u.block)
        n_r = np.zeros(len(blocks))
        n_s = np.zeros(len(blocks))
        for src, out in ((SRC_R, n_r), (SRC_S, n_s)):
            sel = listed & (u.src == src)
            np.add.at(out, idx[sel], u.size[sel])
        comps = np.zeros(len(blocks))
        mt = listed[m.left] if len(m) else np.zeros(0, dtype=bool)
        np.add.at(comps, idx[m.left[mt]], m.comparisons[mt].astype(np.float64))
    total = float(plan.total_comparisons) or float(comps.sum()) or 1.0
    order = np.argsort(-comps, kind="stable")[:top]
    labels = plan.block_labels
    return [{"block": int(blocks[i]), "key": labels.get(int(blocks[i])),
             "records_r": int(n_r[i]), "records_s": int(n_s[i]),
             "comparisons": int(comps[i]), "share": float(comps[i] / total)}
            for i in order if comps[i] > 0]


def describe(plan: Plan, top: int = 5) -> str:
    """A readable, multi-line explanation of ``plan`` (see module doc)."""
    s = plan.summary()
    pred = plan.prediction
    unit_name = plan.details.unit_name if plan.details is not None else "block"
    chosen = ""
    if pred is not None and pred.auto_choice is not None:
        first = pred.candidates[0].label if pred.candidates else pred.auto_choice
        chosen = (f" (auto: lowest predicted makespan, as {pred.auto_choice})"
                  if first == pred.auto_choice else
                  f" (auto: the best balanced plan, as {pred.auto_choice}; {first} was "
                  "predicted faster, by less than the margin an unbalanced plan needs)")
    lines = [
        f"strategy           {s['strategy']}{chosen}",
        f"reduce tasks       {s['n_tasks']}"
        + (f" on {pred.threads} worker threads" if pred is not None else ""),
        f"match tasks        {s['match_tasks']:,}",
        f"total comparisons  {s['total_comparisons']:,}"
        + (" (estimated)" if plan.estimated else ""),
        f"max / mean load    {s['max_load']:,} / {s['mean_load']:,.1f}",
        f"imbalance          {s['imbalance']:.3f} (max / mean comparisons per reduce task)",
        f"replication        {s['replication']:.3f} "
        f"({s['records_routed']:,} routed / {s['records_in']:,} records with a key)",
    ]
    if pred is not None:
        lines.append(
            f"predicted makespan {pred.makespan:.3f} s "
            f"(ideal {pred.ideal:.3f} s, imbalance in seconds "
            f"{pred.imbalance_seconds:.3f}; cost model: "
            f"{pred.cost_model.get('source', '?')})")
    if plan.key_rows_in is not None:
        lines.append(f"key passes         {plan.key_rows_in:,} (record, pass) rows; pairs "
                     "found by several passes are planned per pass and compared once")
    blocks = largest_blocks(plan, top)
    if blocks:
        lines.append(f"largest {unit_name}s:")
        for b in blocks:
            recs = (f"{b['records_r']:,} x {b['records_s']:,} records" if plan.link
                    else f"{b['records_r']:,} records")
            key = "" if b["key"] is None else f"  key {_shown(b['key'])}"
            lines.append(f"  {unit_name} {b['block']:>20}  {recs:<24} "
                         f"{b['comparisons']:>14,} comparisons ({100 * b['share']:.1f} %)"
                         f"{key}")
    cands = [c.to_dict() for c in pred.candidates] if pred is not None else []
    if cands:
        lines.append("strategies compared (predicted on this cluster):")
        lines.append(f"  {'':2}{'strategy':<18}{'makespan s':>11}{'imbalance':>11}"
                     f"{'replication':>13}{'match tasks':>13}")
        for c in cands:
            mark = "* " if c.get("chosen") else "  "
            lines.append(f"  {mark}{c['label']:<18}{c['predicted_makespan']:>11.3f}"
                         f"{c['imbalance']:>11.3f}{c['replication']:>13.3f}"
                         f"{c['match_tasks']:>13,}")
    if plan.details is not None:
        lines += plan.details.describe()
    if len(plan.match):
        t = plan.tasks.nlargest(top, "comparisons")
        lines.append("largest match tasks:")
        for row in t.itertuples(index=False):
            lines.append(
                f"  {row.kind:<9} {unit_name} {row.block:>20} parts "
                f"{row.left_part}/{row.right_part} pieces {row.left_piece}/{row.right_piece}:"
                f" {row.comparisons:,} -> task {row.reduce_task}")
    return "\n".join(lines)


def _shown(text: str, width: int = 40) -> str:
    """A key's text as ``describe`` prints it: quoted, cut to ``width`` characters."""
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def basic_loads(plan: Plan) -> np.ndarray | None:
    """Comparisons per reduce task Basic would give on the same input (None if unknown)."""
    if plan.prediction is not None and plan.prediction.basic_loads is not None:
        return np.asarray(plan.prediction.basic_loads)
    if plan.strategy == "basic":
        return plan.loads
    if isinstance(plan.profile, BDM):  # Basic hashes whole blocks to reduce tasks
        blocks, n_r, n_s = plan.profile.block_sizes()
        comps = block_comparisons(n_r, n_s, plan.link)
        return np.bincount(hashed(blocks, plan.n_tasks), weights=comps,
                           minlength=plan.n_tasks).astype(np.int64)
    return None


def plot(plan: Plan, path: str | Path, title: str | None = None, top: int = 10) -> Path:
    """Draw a PNG at ``path``: comparisons per reduce task of ``plan`` next to Basic's, and
    the ``top`` largest blocks (comparisons, share of all) — the skew the plan balances."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is an optional extra
        raise ImportError("Plan.plot needs matplotlib: pip install 'erblock[plot]'") from exc
    path = Path(path)
    base = basic_loads(plan)
    series = [(plan.strategy, plan.loads)]
    if base is not None and plan.strategy != "basic":
        series.insert(0, ("basic", base))
    blocks = largest_blocks(plan, top)
    panels = len(series) + (1 if blocks else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 3.6), squeeze=False)
    for ax, (name, loads) in zip(axes[0], series):
        loads = np.asarray(loads, dtype=np.float64)
        x = np.arange(len(loads))
        color = "#c44e52" if name == "basic" else "#4c72b0"
        if len(loads) > 500:  # one polygon: a bar per task took minutes at 100,000 tasks
            ax.fill_between(x, loads, step="mid", color=color, linewidth=0)
        else:
            ax.bar(x, loads, width=0.85, color=color)
        mean = loads.mean() if len(loads) else 0.0
        ax.axhline(mean, color="black", linewidth=1, linestyle="--", label="mean")
        imb = loads.max() / mean if mean > 0 else 1.0
        ax.set_title(f"{name}: imbalance {imb:.2f}")
        ax.set_xlabel("reduce task")
        ax.legend(loc="upper right", fontsize=8)
    axes[0][0].set_ylabel("comparisons")
    if len(series) > 1:  # the same scale for basic and the plan, so the skew shows
        top_y = max(float(np.max(loads)) if len(loads) else 0.0 for _, loads in series)
        for ax in axes[0][: len(series)]:
            ax.set_ylim(0, top_y * 1.05 or 1.0)
    if blocks:
        ax = axes[0][len(series)]
        y = np.arange(len(blocks))[::-1]
        ax.barh(y, [b["comparisons"] for b in blocks], color="#55a868")
        ax.set_yticks(y, [f"{b['block'] & 0xFFFFFF:06x}" if b["key"] is None
                         else _shown(b["key"], 20) for b in blocks], fontsize=7)
        for yi, b in zip(y, blocks):
            ax.text(b["comparisons"], yi, f" {b['share']:.0%}", va="center", fontsize=7)
        ax.set_title(f"largest {len(blocks)} blocks")
        ax.set_xlabel("comparisons (label: share of all)")
        ax.set_ylabel("key (or block id, low 24 bits)")
    fig.suptitle(title or f"comparisons per reduce task ({plan.total_comparisons:,} in all)")
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return path


# -- what a plan really costs -----------------------------------------------------------


def exact_task_comparisons(plan: Plan, unit: np.ndarray, block: np.ndarray) -> np.ndarray:
    """Comparisons every match task of ``plan`` really performs, given the unit and the
    block id of every routed record (``unit`` −1: not routed).

    For cell plans this is the truth behind the estimated ``plan.match.comparisons``
    (records of different blocks in one unit are not compared); for exact plans it equals
    them. ``RANGE`` tasks perform ``hi − lo``.
    """
    m = plan.match
    out = np.zeros(len(m), dtype=np.int64)
    unit, block = np.asarray(unit), np.asarray(block)
    sel = unit >= 0
    pairs = np.stack([unit[sel], block[sel]])
    (cu, cb), cnt = (np.unique(pairs, axis=1, return_counts=True) if pairs.shape[1]
                     else (np.zeros((2, 0), np.int64), np.zeros(0, np.int64)))
    # (unit, block) counts, grouped by unit
    n_units = len(plan.units)
    indptr = np.zeros(n_units + 1, dtype=np.int64)
    np.cumsum(np.bincount(cu, minlength=n_units), out=indptr[1:])
    tri_per_unit = np.bincount(cu, weights=cnt * (cnt - 1) // 2, minlength=n_units)
    tri = np.flatnonzero(m.kind == TRIANGLE)
    out[tri] = tri_per_unit[m.left[tri]].astype(np.int64)
    rect = np.flatnonzero(m.kind == RECTANGLE)
    if len(rect):
        lo, hi = indptr[m.left[rect]], indptr[m.left[rect] + 1]
        reps = hi - lo
        task = np.repeat(rect, reps)
        entry = np.repeat(lo, reps) + np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps,
                                                                        reps)
        right = lookup((cu, cb), (m.right[task], cb[entry]))
        hit = right >= 0
        per = cnt[entry[hit]] * cnt[right[hit]]
        out += np.bincount(task[hit], weights=per, minlength=len(m)).astype(np.int64)
    rng = np.flatnonzero(m.kind == RANGE)
    if len(rng):
        assert m.hi is not None and m.lo is not None  # RANGE tasks carry their pair range
        out[rng] = m.hi[rng] - m.lo[rng]
    return out


def exact_loads(plan: Plan, unit: np.ndarray, block: np.ndarray) -> np.ndarray:
    """Comparisons every reduce task really performs (see :func:`exact_task_comparisons`)."""
    per_task = exact_task_comparisons(plan, unit, block)
    return np.bincount(plan.match.reduce_task, weights=per_task, minlength=plan.n_tasks
                       ).astype(np.int64)


__all__ = ["basic_loads", "describe", "exact_loads", "exact_task_comparisons",
           "largest_blocks", "plot"]
