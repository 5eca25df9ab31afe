"""Part (d) of ``bench_tokens.py``: token blocking's time as the input grows, erblock's
lossless blocking next to pyJedAI's lossy pipeline.

On the generated titles of part (a) (``titles(n)``, dedupe, the same seed) at several
sizes, interleaved rounds (one untimed warm-up round, then ``repeats`` timed ones) of:

- pyJedAI's ``Data`` (dirty ER, the ``title`` attribute) → ``StandardBlocking`` →
  ``BlockPurging`` → ``BlockFiltering``, default parameters (its ``Data`` is built once,
  outside the timing, as in part (c));
- ``erblock.plan(df, key=tokens("title"))``: the lossless token blocks, profiled and
  planned (what a run executes; no pairs);
- ``erblock.candidates(df, key=tokens("title"))``: every candidate pair out, each once
  (only where the blocks hold at most :data:`CANDIDATES_MAX` pairs: beyond that the
  lossless pair set is tens of millions of pairs, which a run writes with ``output=``).

The sizes were fixed before any run. Medians and their ratios, measured in the same run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

import erblock
from erblock.blocking import tokens

#: the lossless pair set is built in memory only up to this many block pairs
CANDIDATES_MAX = 10_000_000


def _pyjedai(df: pd.DataFrame) -> Callable[[], dict[str, Any]]:
    """pyJedAI's dirty-ER pipeline on ``title``, its ``Data`` built once."""
    from pyjedai.block_building import StandardBlocking
    from pyjedai.block_cleaning import BlockFiltering, BlockPurging
    from pyjedai.datamodel import Data

    d = pd.DataFrame({"id": [str(i) for i in df.index],
                      "title": df["title"].fillna("").astype(str).to_numpy()})
    data = Data(dataset_1=d, id_column_name_1="id")

    def run() -> dict[str, Any]:
        t0 = time.perf_counter()
        blocks = StandardBlocking().build_blocks(data, attributes_1=["title"],
                                                 tqdm_disable=True)
        purged = BlockPurging().process(blocks, data, tqdm_disable=True)
        filtered = BlockFiltering().process(purged, data, tqdm_disable=True)
        return {"seconds": time.perf_counter() - t0, "blocks": len(filtered)}

    return run


def _timed(fn: Callable[[], Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    out = fn()
    return {"seconds": time.perf_counter() - t0, "_result": out}


def scaling(sizes: Sequence[int], repeats: int, titles: Callable[[int], Any], client: Any,
            load: Callable[[], Any], log: Callable[[str], None]) -> dict[str, Any]:
    """Medians per size and system (see the module docstring)."""
    out: dict[str, Any] = {"sizes": list(sizes), "repeats": repeats,
                           "candidates_max": CANDIDATES_MAX, "by_size": {}}
    key = tokens("title")
    kw = {"key": key, "client": client, "cost_model": "default"}
    for n in sizes:
        df, _ = titles(n)
        planned = erblock.plan(df, **kw)
        systems: dict[str, Callable[[], dict[str, Any]]] = {
            "pyjedai": _pyjedai(df),
            "erblock_plan": lambda df=df: _timed(lambda: erblock.plan(df, **kw)),
        }
        if planned.total_comparisons <= CANDIDATES_MAX:
            systems["erblock_candidates"] = lambda df=df: _timed(
                lambda: erblock.candidates(df, **kw))
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
        pairs = None
        for i in range(1 + repeats):
            for name, fn in systems.items():
                before = load()
                r = fn()
                result = r.pop("_result", None)
                if name == "erblock_candidates":
                    pairs = len(result)
                if i:  # round 0 warms up
                    runs[name].append({**r, "load_before": before})
                    log(f"  (d) {n:,} {name:<18} {r['seconds']:.3f} s")
        med = {s: float(statistics.median(r["seconds"] for r in v)) for s, v in runs.items()}
        out["by_size"][str(n)] = {
            "records": len(df), "block_pairs": int(planned.total_comparisons),
            "candidates": pairs, "runs": runs, "median_seconds": med,
            "ratios": {f"{s}_over_pyjedai": med[s] / med["pyjedai"]
                       for s in med if s != "pyjedai"}}
    return out


def render(res: dict[str, Any] | None) -> list[str]:
    """Markdown of part (d)."""
    lines = ["### (d) As the input grows: generated titles, pyJedAI's pipeline and "
             "erblock's lossless token blocking", ""]
    if not res or "by_size" not in res:
        why = (res or {}).get("skipped") or (res or {}).get("error") or "not run"
        return lines + [f"Not measured: {why}", ""]
    lines += [f"Median of {res['repeats']} interleaved rounds after a warm-up round, per "
              "size; pyJedAI's `Data` built once outside the timing. `plan`: erblock's "
              "lossless token blocks profiled and planned (no pairs); `candidates`: every "
              "candidate pair out, each once (in memory up to "
              f"{res['candidates_max']:,} block pairs).", "",
              "| records | block pairs | erblock candidates | pyJedAI s | erblock plan s | "
              "plan / pyJedAI | erblock candidates s | candidates / pyJedAI |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in res["by_size"].values():
        med, rat = v["median_seconds"], v["ratios"]
        cand = v.get("candidates")
        c_s = med.get("erblock_candidates")
        lines.append(
            f"| {v['records']:,} | {v['block_pairs']:,} | "
            f"{'–' if cand is None else f'{cand:,}'} | {med['pyjedai']:.3f} | "
            f"{med['erblock_plan']:.3f} | **{rat['erblock_plan_over_pyjedai']:.2f}** | "
            + ("– | – |" if c_s is None else
               f"{c_s:.3f} | {rat['erblock_candidates_over_pyjedai']:.2f} |"))
    return lines + [""]
