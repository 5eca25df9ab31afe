"""Model check on fresh draws: the quality recipe on generated sets with seeds no other benchmark uses.

The quality benchmark's sets are fixed, and a model change judged on them alone risks
being fitted to them. This script draws *new* data sets from the two generators
(restaurant-like links of ``heldout.generate_restaurants`` and person links of
``erblock.datasets.generate``) at several sizes and match rates, with seeds derived from
``--seed`` (default: a fixed base no other script uses), and runs erblock with exactly the
recipe of ``bench_quality.py`` (column type -> comparison kind, default
``FellegiSunter()``, decision 0.5, the blocking rules of ``heldout.py``). Decide a model
change first, then run this script with a new ``--seed`` and read the numbers: it answers
"does the change hold on data nobody looked at?".

Run (erblock only, a couple of minutes on 2 cores)::

    python benchmarks/bench_fresh.py                 # writes results/fresh.{json,md}
    python benchmarks/bench_fresh.py --seed 7 --out /tmp/fresh
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # heldout.py, quality_cases.py and runinfo.py sit here
    sys.path.insert(0, str(HERE))

import bench_quality as bq  # noqa: E402
import heldout  # noqa: E402
import quality_cases as qc  # noqa: E402
import runinfo  # noqa: E402

from erblock.matchers.scoring.base import ModelWarning  # noqa: E402

RESULTS = HERE / "results"
BASE_SEED = 91_0000  #: no other script draws from seeds near this one

#: (generator, records left, records right, true pairs); each drawn ``--draws`` times
DESIGNS: tuple[tuple[str, int, int, int], ...] = (
    ("restaurants", 300, 240, 180),  # a quarter or more of the candidates true
    ("restaurants", 900, 700, 250),  # bigger, a lower match rate
    ("person", 400, 400, 320),  # many matches, few candidates
    ("person", 5_000, 5_000, 2_500),
)
QUICK_DESIGNS = (("restaurants", 120, 100, 60), ("person", 200, 200, 150))


def fresh_case(design: tuple[str, int, int, int], seed: int) -> qc.Case:
    """One generated link as a quality case, drawn with ``seed``."""
    kind, n_r, n_s, n_match = design
    name = f"{kind}_{n_r}x{n_s}_seed{seed}"
    if kind == "restaurants":
        r, s, truth = heldout.generate_restaurants(n_r, n_s, n_match, seed=seed)
        frames = [heldout._clean(r), heldout._clean(s)]
        kinds, blocking = dict(heldout._RESTAURANT_KINDS), heldout._restaurant_blocking()
    else:
        if n_r != n_s:
            raise ValueError("the person generator draws links of equal sides")
        ds = heldout._gen_person(name, n_r, n_match / n_r, seed, "fresh draw")
        frames, truth = list(ds.frames), ds.truth
        kinds, blocking = dict(ds.kinds), list(ds.blocking)
    return qc.Case(name, "link", frames, truth.copy(), kinds, blocking,
                   f"{kind} generator, seed {seed}", "fresh")


def _run(case: qc.Case, design: Sequence[Any], client: Any, quick: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # the model's warnings are kept in the row instead
        warnings.simplefilter("ignore", ModelWarning)
        out = bq.run_erblock(case, client, 200_000 if quick else None)
    row = {"case": case.name, "design": list(design), "candidates": out["candidates"],
           "pair_completeness": out["pair_completeness"], "default": out["default"],
           "best": out.get("best"), "warnings": (out.get("model") or {}).get("warnings"),
           "seconds": time.perf_counter() - t0}
    d = out["default"]
    print(f"{case.name:<34} F1 {d['f1']:.4f}  precision {d['precision']:.4f}  recall "
          f"{d['recall']:.4f}  best {(out.get('best') or {}).get('f1', float('nan')):.4f}",
          flush=True)
    return row


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Draw the sets, run the recipe on each, write ``<name>.json`` and ``.md``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=BASE_SEED, help="base seed of the draws")
    ap.add_argument("--draws", type=int, default=2, help="draws per design")
    ap.add_argument("--quick", action="store_true", help="tiny sets (smoke test)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="fresh")
    args = ap.parse_args(argv)
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    designs = QUICK_DESIGNS if args.quick else DESIGNS
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        if client is None:
            cluster = stack.enter_context(LocalCluster(
                n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        for i, design in enumerate(designs):
            for d in range(args.draws):
                rows.append(_run(fresh_case(design, args.seed + 100 * i + d), design,
                                 client, args.quick))
    res = {"name": args.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "machine": runinfo.machine_info(), "seed": args.seed,
        "draws": args.draws, "quick": args.quick, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    (args.out / f"{args.name}.md").write_text(render(res))
    return res


def render(res: dict[str, Any]) -> str:
    """The markdown fragment: one row per draw, and the mean default-decision F1."""
    lines = ["## Fresh draws: the quality recipe on newly generated links", "",
             f"Base seed {res['seed']}, {res['draws']} draws per design; erblock with the "
             "recipe of the quality benchmark (no options). Generated by "
             "`benchmarks/bench_fresh.py` on " + res["date"] + ".", "",
             "| draw | candidates | pair completeness | precision | recall | F1 (0.5) "
             "| best F1 |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        d, b = r["default"], r.get("best") or {}
        lines.append(f"| {r['case']} | {r['candidates']:,} | {r['pair_completeness']:.4f} | "
                     f"{d['precision']:.4f} | {d['recall']:.4f} | {d['f1']:.4f} | "
                     f"{b.get('f1', float('nan')):.4f} |")
    f1 = [r["default"]["f1"] for r in res["rows"]]
    lines += ["", f"Mean F1 at the default decision: {float(np.mean(f1)):.4f}; lowest "
              f"{float(np.min(f1)):.4f}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
