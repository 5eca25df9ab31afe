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
the city column: 0.186; the pseudopeople census x register on last name OR first name:
0.144) next to ordinary ones.

Splink and recordlinkage run on the same candidate pairs, configured as in the quality
benchmark (``peers.py``), wherever every pass's key is single-valued (the harness gives
them one key column per pass; a multi-valued key, every word of a column, is erblock's
only): where a peer's default F1 is above erblock's, the row says so.

Run (a few minutes on 2 cores; ``--no-peers``: erblock only)::

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

from erblock.blocking import date, prefix, soundex, tokens  # noqa: E402
from erblock.blocking.make import as_key_spec  # noqa: E402
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
    # added in session 46, where the first one collapsed (F1 0.144, best 0.967): a
    # first-name pass gathers people born in the same years
    ("pp_census_ssa", "last name OR first name (columns)", ["last_name", "first_name"], None),
    ("pp_census_ssa", "soundex(last name)", soundex("last_name"), None),
    ("pp_census_ssa", "date of birth (as a date) OR last name",
     [date("date_of_birth"), "last_name"], None),
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


def _single_valued(keys: Sequence[Any]) -> bool:
    """Whether every pass's key gives a record one block (what the peers' harness takes)."""
    return not any(as_key_spec(k).multi for k in keys)


def run_one(case: qc.Case, label: str, key: Any, transform: Any, client: Any,
            u_pairs: int | None, with_peers: bool = False) -> dict[str, Any]:
    """The recipe on ``case`` blocked on ``key`` (frames passed through ``transform``);
    with ``with_peers`` Splink and recordlinkage too, where the key is single-valued."""
    frames = [transform(f) for f in case.frames] if transform else list(case.frames)
    keys = key if isinstance(key, list) else [key]
    run_case = qc.Case(case.name, case.mode, frames, case.truth, case.kinds, keys,
                       case.source, case.group)
    peers_here = with_peers and _single_valued(keys)
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # the model's warnings are kept in the row instead
        warnings.simplefilter("ignore", ModelWarning)
        res = bq.run_case(run_case, client, peers_here, 2, u_pairs, lambda m: None)
    out = res["systems"]["erblock"]
    if "error" in out:
        raise RuntimeError(f"erblock failed on {case.name} blocked on {label}: {out['error']}")
    # a peer that called nothing a match has no precision, and F1 0 (as the sweep counts it)
    peers = {k: (float(v["default"]["f1"]) if v["default"]["f1"] == v["default"]["f1"]
                 else 0.0) if "default" in v else None
             for k, v in res["systems"].items() if k != "erblock"}
    d, best = out["default"], (out.get("best") or {}).get("f1")
    f1 = d["f1"] if d["f1"] == d["f1"] else 0.0  # NaN: nothing called a match
    row = {"data": case.name, "blocking": label, "key": qc.describe_key(key)
           if not isinstance(key, list) else " OR ".join(map(qc.describe_key, key)),
           "candidates": out["candidates"], "pair_completeness": out["pair_completeness"],
           "default": d, "best_f1": best, "seconds": time.perf_counter() - t0,
           "collapse": bool(best and f1 < COLLAPSE * best),
           "warnings": (out.get("model") or {}).get("warnings"),
           "peers": peers if peers_here else None,
           "peer_errors": {k: v["error"][:300] for k, v in res["systems"].items()
                           if "error" in v} or None}
    known = [v for v in peers.values() if v is not None and v == v]
    row["below_peer"] = bool(known and f1 < max(known))
    print(f"{case.name:<16} {label:<36} F1 {f1:.3f}  best {best or float('nan'):.3f}  "
          + "  ".join(f"{k} {v:.3f}" if v is not None else f"{k} —"
                      for k, v in peers.items())
          + f"  {'COLLAPSE' if row['collapse'] else ''}", flush=True)
    return row


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run every blocking of the list, write ``<name>.json`` and ``.md``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="generated restaurants only, small u sample (smoke test)")
    ap.add_argument("--data", default=None, help="folder of the shared data sets")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="blockings")
    ap.add_argument("--no-peers", action="store_true", help="erblock only")
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
                                200_000 if args.quick else None,
                                not (args.quick or args.no_peers)))
    res = {"name": args.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "machine": runinfo.machine_info(), "quick": args.quick,
        "collapse_share": COLLAPSE, "peers": not (args.quick or args.no_peers),
        "rows": rows}
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
             "collapse. Splink and recordlinkage (default decision, configured as in the "
             "quality benchmark, the same candidate pairs) where every key is single-valued; "
             "— where the harness cannot give them the key (every word of a column) or they "
             "failed (named below). Measured " + res["date"] + ".", "",
             "| data | blocking | candidates | PC | P | R | **F1** | best F1 | splink | "
             "recordlinkage |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def f(x: Any) -> str:
        return "—" if x is None or x != x else f"{x:.3f}"
    for r in res["rows"]:
        d = r["default"]
        peers = r.get("peers") or {}
        lines.append(f"| {r['data']} | {r['blocking']} (`{r['key']}`) | {r['candidates']:,} | "
                     f"{f(r['pair_completeness'])} | {f(d['precision'])} | {f(d['recall'])} | "
                     f"**{f(d['f1'])}** | {f(r['best_f1'])} | {f(peers.get('splink'))} | "
                     f"{f(peers.get('recordlinkage'))} |")
    bad = [r for r in res["rows"] if r["collapse"]]
    lines += ["", "Collapses: " + ("none." if not bad else "; ".join(
        f"{r['data']} blocked on {r['blocking']}" for r in bad) + ".")]
    if res.get("peers"):
        below = [r for r in res["rows"] if r.get("below_peer")]
        compared = [r for r in res["rows"] if r.get("peers")]
        lines += ["", f"erblock's default F1 is at or above both peers' on "
                  f"{len(compared) - len(below)} of the {len(compared)} blockings they ran on"
                  + ("." if not below else "; below on " + "; ".join(
                      f"{r['data']} blocked on {r['blocking']} ({r['default']['f1']:.4f} vs "
                      f"{max(v for v in r['peers'].values() if v is not None):.4f})"
                      for r in below) + ".")]
        errors = [f"{r['data']} / {r['blocking']}: {k}: {v}" for r in res["rows"]
                  for k, v in (r.get("peer_errors") or {}).items()]
        if errors:
            lines += ["", "Peer failures (recorded, not retried): " + "; ".join(errors) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
