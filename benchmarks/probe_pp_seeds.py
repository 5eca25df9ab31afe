"""Development probe: the pseudopeople held-out links drawn again at other seeds.

The quality benchmark scores the pseudopeople sets at seed 1 (``heldout_pseudopeople``).
A model change motivated by a failure seen on one of them is not judged by that set's new
score: this probe draws the same tables at seeds no benchmark uses (2 to 5 by default) and
runs erblock with exactly the quality recipe (``bench_quality.run_erblock``: the set's
kinds and blocking, ``FellegiSunter()`` defaults, decision ``match_probability >= 0.5``).
Run it before and after a change and read both; the draws are scored for no other purpose.

    python benchmarks/probe_pp_seeds.py                        # every set, seeds 2 to 5
    python benchmarks/probe_pp_seeds.py pp_tax_1040_w2 3 4     # one set, some seeds
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_quality as bq  # noqa: E402
import heldout_pseudopeople as hp  # noqa: E402
import quality_cases as qc  # noqa: E402

LOADERS = {"pp_census_ssa": hp.load_pp_census_ssa, "pp_census_decade": hp.load_pp_census_decade,
           "pp_census_w2": hp.load_pp_census_w2, "pp_tax_1040_w2": hp.load_pp_tax_1040_w2,
           "pp_census_wic": hp.load_pp_census_wic}


def score(name: str, seed: int) -> dict[str, float]:
    """Default-decision and best-threshold F1 of the quality recipe on ``name`` at ``seed``."""
    ds = LOADERS[name](seed)
    case = qc.Case(ds.name, ds.mode, list(ds.frames), ds.truth, dict(ds.kinds),
                   list(ds.blocking), ds.source, "probe")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = bq.run_erblock(case, None, None)
    return {"f1": got["default"]["f1"], "precision": got["default"]["precision"],
            "recall": got["default"]["recall"],
            "best": got.get("best", {}).get("f1", float("nan")), "seconds": got["seconds"]}


if __name__ == "__main__":
    args = sys.argv[1:]
    names = [a for a in args if a in LOADERS] or list(LOADERS)
    seeds = [int(a) for a in args if a not in LOADERS] or [2, 3, 4, 5]
    for n in names:
        for s in seeds:
            r = score(n, s)
            print(f"{n} seed {s}: F1 {r['f1']:.4f} (precision {r['precision']:.4f}, recall "
                  f"{r['recall']:.4f}), best {r['best']:.4f}, {r['seconds']:.1f} s", flush=True)
