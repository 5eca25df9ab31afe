"""Robustness to the blocking: the quality recipe under other blockings a user might pick.

The quality benchmark runs each data set with one blocking. A user blocks as their data
allows: on a ready-made key column (a first-word column, the city, the postcode), on the
phone's area code, on every title word. The model must stay right whatever the blocking
(issue 10): this script runs erblock's fixed recipe (``bench_quality.py``: column type ->
comparison kind, default ``FellegiSunter()``, decision ``match_probability >= 0.5``) under
a fixed list of such blockings and reports the default decision next to the best
threshold (picked with the truth: an upper bound). A default far under the best (less
than half of it) is a *collapse*: the model, not the blocking, lost the matches.

The list was written down as a stress test, not chosen to look good: it holds the
blockings on which the model once collapsed (Fodors-Zagat on the area code: F1 0.007; on
the city column: 0.186) next to ordinary ones.

Run (erblock only, a few minutes on 2 cores)::

    python benchmarks/bench_blockings.py            # writes results/blockings.{json,md}
    python benchmarks/bench_blockings.py --quick    # generated restaurants only (smoke)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # heldout.py, quality_cases.py and runinfo.py sit here
    sys.path.insert(0, str(HERE))

import bench_quality as bq  # noqa: E402
import heldout  # noqa: E402
import quality_cases as qc  # noqa: E402
import runinfo  # noqa: E402

from erblock.blocking import prefix, soundex, tokens  # noqa: E402
from erblock.matchers.scoring.base import ModelWarning  # noqa: E402

RESULTS = HERE / "results"
COLLAPSE = 0.5  #: a default F1 under this share of the best F1 is a collapse


def _first_word(column: str, name: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A ready-made key column: the first word of ``column``."""
    return lambda df: df.assign(**{name: df[column].fillna("").str.split().str[0]})


#: (data set, label, key, frame transform adding a ready-made key column or None)
BLOCKINGS: tuple[tuple[str, str, Any, Any], ...] = (
    ("fodors_zagat", "first name word (column)", "name1", _first_word("name", "name1")),
    ("fodors_zagat", "phone area code", prefix("phone", 3), None),
    ("fodors_zagat", "city (column)", "city", None),
    ("fodors_zagat", "every name word", tokens("name"), None),
    ("dblp_acm", "year (column)", "year", None),
    ("dblp_acm", "first title word (column)", "title1", _first_word("title", "title1")),
    ("dblp_acm", "every title word", tokens("title"), None),
    ("abt_buy", "every name word", tokens("name"), None),
    ("febrl4", "postcode (column)", "postcode", None),
    ("febrl4", "date of birth OR surname (columns)", ["date_of_birth", "surname"], None),
    ("febrl3", "soundex(surname)", soundex("surname"), None),
    ("febrl3", "suburb (column)", "suburb", None),
    ("rldata10000", "birth year (column)", "by", None),
    ("rldata10000", "last name OR first name (columns)", ["lname_c1", "fname_c1"], None),
    ("historical_50k", "surname (column)", "surname", None),
    ("historical_50k", "dob OR surname (columns)", ["dob", "surname"], None),
)


def _restaurants(seed: int) -> qc.Case:
    r, s, truth = heldout.generate_restaurants(seed=seed)
    return qc.Case(f"restaurants_seed{seed}", "link", [heldout._clean(r), heldout._clean(s)],
                   truth, dict(heldout._RESTAURANT_KINDS), [], "generator", "generated")


QUICK_SEED = 5_101  #: generated restaurants for --quick (a seed no other script uses)
QUICK_BLOCKINGS: tuple[tuple[str, str, Any, Any], ...] = (
    ("generated", "first name word (column)", "name1", _first_word("name", "name1")),
    ("generated", "phone area code", prefix("phone", 3), None),
    ("generated", "city (column)", "city", None),
)


def run_one(case: qc.Case, label: str, key: Any, transform: Any, client: Any,
            u_pairs: int | None) -> dict[str, Any]:
    """The recipe on ``case`` blocked on ``key`` (frames passed through ``transform``)."""
    frames = [transform(f) for f in case.frames] if transform else list(case.frames)
    run_case = qc.Case(case.name, case.mode, frames, case.truth, case.kinds,
                       key if isinstance(key, list) else [key], case.source, case.group)
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # the model's warnings are kept in the row instead
        warnings.simplefilter("ignore", ModelWarning)
        out = bq.run_erblock(run_case, client, u_pairs)
    d, best = out["default"], (out.get("best") or {}).get("f1")
    f1 = d["f1"] if d["f1"] == d["f1"] else 0.0  # NaN: nothing called a match
    row = {"data": case.name, "blocking": label, "key": qc.describe_key(key)
           if not isinstance(key, list) else " OR ".join(map(qc.describe_key, key)),
           "candidates": out["candidates"], "pair_completeness": out["pair_completeness"],
           "default": d, "best_f1": best, "seconds": time.perf_counter() - t0,
           "collapse": bool(best and f1 < COLLAPSE * best),
           "warnings": (out.get("model") or {}).get("warnings")}
    print(f"{case.name:<16} {label:<36} F1 {f1:.3f}  best {best or float('nan'):.3f}  "
          f"{'COLLAPSE' if row['collapse'] else ''}", flush=True)
    return row


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run every blocking of the list, write ``<name>.json`` and ``.md``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="generated restaurants only, small u sample (smoke test)")
    ap.add_argument("--data", default=None, help="folder of the shared data sets")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="blockings")
    args = ap.parse_args(argv)
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    rows: list[dict[str, Any]] = []
    cases: dict[str, qc.Case] = {}
    with ExitStack() as stack:
        if client is None:
            cluster = stack.enter_context(LocalCluster(
                n_workers=2, threads_per_worker=1, dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        for data, label, key, transform in (QUICK_BLOCKINGS if args.quick else BLOCKINGS):
            if data not in cases:
                cases[data] = (_restaurants(QUICK_SEED) if data == "generated"
                               else qc.load_case(data, args.data))
            rows.append(run_one(cases[data], label, key, transform, client,
                                200_000 if args.quick else None))
    res = {"name": args.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "machine": runinfo.machine_info(), "quick": args.quick,
        "collapse_share": COLLAPSE, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    (args.out / f"{args.name}.md").write_text(render(res))
    return res


def render(res: dict[str, Any]) -> str:
    """The markdown fragment: one row per blocking, collapses named below."""
    lines = ["## Robustness to the blocking: the quality recipe under other blockings", "",
             "erblock's fixed recipe (as in the quality benchmark: comparison kinds by column "
             "type, default `FellegiSunter()`, decision `match_probability >= 0.5`) on the "
             "same data sets blocked as a user might block them; see "
             "`benchmarks/bench_blockings.py`. Best F1 = over any match-weight threshold, "
             "picked with the truth (an upper bound); PC = pair completeness (the recall "
             f"ceiling). A default F1 under {res['collapse_share']:.0%} of the best is a "
             "collapse. Measured " + res["date"] + ".", "",
             "| data | blocking | candidates | PC | P | R | **F1** | best F1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        d = r["default"]

        def f(x: Any) -> str:
            return "—" if x is None or x != x else f"{x:.3f}"
        lines.append(f"| {r['data']} | {r['blocking']} (`{r['key']}`) | {r['candidates']:,} | "
                     f"{f(r['pair_completeness'])} | {f(d['precision'])} | {f(d['recall'])} | "
                     f"**{f(d['f1'])}** | {f(r['best_f1'])} |")
    bad = [r for r in res["rows"] if r["collapse"]]
    lines += ["", "Collapses: " + ("none." if not bad else "; ".join(
        f"{r['data']} blocked on {r['blocking']}" for r in bad) + ".")]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
