"""Households: what helps where the unsupervised model strains.

The held-out sweep's household register (``bench_sweep.py``'s ``household_link``,
``gen_households.generate_household_link(seed=7011)``) strains every unsupervised
Fellegi-Sunter model: partners, children and twins agree on surname, address and phone
(erblock learns them as a third class, related records, on the key pass that finds them
by the thousand, and scores every pass's pairs with it), and
people who moved disagree on the whole address at once (since session 27 erblock
scores the address parts and the landline as one group: a match keeps its address or
has moved, :mod:`erblock.matchers.scoring.groups`).
``docs/guide/scoring.md`` tells users what to do there; this script measures it, on the
same case, blocking and recipe as the sweep:

* ``recipe``: the quality benchmark's recipe (one comparison per column, its kind);
* ``joined address``: house number, street, suburb and postcode joined into one ``text``
  column compared once, the household's phone left out, the rest as the recipe;
* ``… + cardinality 1:1``: the same run with ``cardinality="1:1"`` (both registers hold
  each person once, which their user knows): the links, greedy best-first among the
  decided pairs;
* ``labelled N``: ``SupervisedModel("logistic")`` fitted on N candidate pairs of the
  recipe's run, drawn with probability proportional to the mean score to the fourth
  power (a user labels pairs that look alike, not random ones), labelled from the
  truth, then applied to every candidate; decision at its probability 0.5. Five draws
  (seeds 0 to 4, from the pairs sorted by id so that a draw does not depend on the
  order the engine returns them in); the row is the median draw, the range of all in
  brackets.
* ``labelled N + match weight``: the same, on the pairs of the recipe's run (scored by
  its ``FellegiSunter`` model), with the pair's ``match_weight`` as one more feature:
  the labels correct the unsupervised model rather than replace it. Fixed after trying
  three feature sets (similarities, weight, both) on this case and on dblp_acm, abt_buy
  and fodors_zagat: both was the only one never far below the others.

Run (about a minute on 2 cores)::

    python benchmarks/bench_households.py      # writes results/households.{json,md}
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the other benchmark modules sit beside this one
    sys.path.insert(0, str(HERE))

import bench_quality as bq  # noqa: E402
import bench_sweep as bsw  # noqa: E402
import quality_cases as qc  # noqa: E402
import runinfo  # noqa: E402

import erblock  # noqa: E402

RESULTS = HERE / "results"
CASE = "household_link"
LABELLED = (200, 400)
DRAWS = 5  #: labelled samples per size (seeds 0 … 4); the row is the median draw
ADDRESS = ["house_number", "street", "suburb", "postcode"]


def joined(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the address parts joined into one ``address`` column."""
    parts = [df[c].fillna("") for c in ADDRESS]
    addr = parts[0].str.cat(parts[1:], sep=" ").str.strip().str.replace(r"\s+", " ",
                                                                        regex=True)
    return df.assign(address=addr.mask(addr == ""))


def labelled(case: qc.Case, pairs: pd.DataFrame, n: int, seed: int = 0,
             extra: Sequence[str] = ()) -> dict[str, Any]:
    """A logistic model fitted on ``n`` labelled candidates (module doc), evaluated.

    ``extra``: more feature columns of ``pairs`` (``match_weight`` of a scored run)."""
    rng = np.random.default_rng(seed)
    # the sample must not depend on the order the engine returns its pairs in
    pairs = pairs.sort_values(["left_id", "right_id"], ignore_index=True)
    w = pairs["score"].to_numpy(np.float64) ** 4
    pick = rng.choice(len(pairs), size=n, replace=False, p=w / w.sum())
    sims = [c for c in case.kinds if f"{c}_{case.kinds[c]}" in pairs.columns]
    feats = [f"{c}_{case.kinds[c]}" for c in sims] + list(extra)
    sample = pairs.iloc[pick][["left_id", "right_id", *feats]]
    model = erblock.SupervisedModel("logistic").fit(sample, case.truth, features=feats)
    scored = model.apply(pairs[["left_id", "right_id", *feats]])
    out = qc.metrics(case, scored, scored["match_probability"].to_numpy() >= 0.5,
                     "match_weight", qc.prob_from_weight)
    truth = set(map(tuple, case.truth[["left_id", "right_id"]].to_numpy().tolist()))
    out["labelled"] = n
    out["labelled_true"] = int(sum((a, b) in truth for a, b in sample[
        ["left_id", "right_id"]].itertuples(index=False)))
    return out


def declared(case: qc.Case, client: Any) -> dict[str, Any]:
    """The recipe's run with ``cardinality="1:1"``: its links, evaluated."""
    links = erblock.link(case.frames[0], case.frames[1], key=list(case.blocking),
                         compare=dict(case.kinds), scoring=bq.erblock_model(None),
                         client=client, cardinality="1:1")
    got = erblock.evaluate(links, case.truth, n_left=len(case.frames[0]),
                           n_right=len(case.frames[1]))
    return {"default": {k: got[k] for k in ("precision", "recall", "f1", "tp", "fp", "fn")},
            "links": len(links)}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the set-ups, write ``<name>.json`` and ``<name>.md``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="households")
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    case = dict(bsw.CASES)[CASE]()
    rows: dict[str, Any] = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as lc, \
            Client(lc) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recipe = bq.run_erblock(case, client, None)
        rows["recipe"] = recipe
        kinds = {k: v for k, v in case.kinds.items() if k not in ADDRESS and k != "phone"}
        kinds["address"] = "text"
        alt = qc.Case(f"{CASE}_joined_address", case.mode, [joined(f) for f in case.frames],
                      case.truth, kinds, case.blocking, case.source, "households")
        rows["joined address"] = bq.run_erblock(alt, client, None)
        rows["recipe + cardinality 1:1"] = declared(case, client)
        rows["joined address + cardinality 1:1"] = declared(alt, client)
        pairs = erblock.link(case.frames[0], case.frames[1], key=list(case.blocking),
                             compare=dict(case.kinds), client=client)  # scoring="mean"
        scored = erblock.link(case.frames[0], case.frames[1], key=list(case.blocking),
                              compare=dict(case.kinds), scoring=bq.erblock_model(None),
                              client=client)
    for name, frame, extra in (("labelled {}", pairs, ()),
                               ("labelled {} + match weight", scored, ("match_weight",))):
        for n in LABELLED:  # one draw is luck: the median of DRAWS draws, every F1 kept
            draws = sorted(({**labelled(case, frame, n, seed, extra), "seed": seed}
                            for seed in range(DRAWS)), key=lambda d: d["default"]["f1"])
            rows[name.format(n)] = {**draws[len(draws) // 2], "draws": [
                {"seed": d["seed"], "f1": d["default"]["f1"]} for d in draws]}
    res = {"name": args.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "machine": runinfo.machine_info(), "case": CASE,
        "source": case.source,
        "rows": {k: {x: v[x] for x in ("default", "best", "labelled", "labelled_true",
                                       "seed", "draws")
                     if x in v} for k, v in rows.items()}}
    runinfo.write_results(args.out, args.name, res, render(res))
    for k, v in res["rows"].items():
        best = v.get("best", {}).get("f1")
        print(f"{k:34s} F1 {v['default']['f1']:.3f}  best "
              + ("—" if best is None else f"{best:.3f}"))
    return res


def render(res: dict[str, Any]) -> str:
    """The markdown fragment."""
    lines = ["## Households: what helps where the unsupervised model strains", "",
             f"The sweep's `{res['case']}` ({res['source']}): partners, children and twins "
             "share surname, address and phone (Splink and recordlinkage take them for "
             "matches in the sweep; erblock learns them as a third class on the pass that "
             "finds them and scores every pass's pairs with it), and people who moved "
             "disagree on the whole address at once (erblock scores the address parts and "
             "the landline as one group, a mixture of kept and moved addresses). Set-ups "
             "as in `benchmarks/bench_households.py`; F1 at each one's default decision, "
             "and at erblock's best threshold (picked with the truth, an upper bound). "
             f"Measured {res['date']}.", "",
             "| set-up | precision | recall | F1 | best F1 |", "|---|---:|---:|---:|---:|"]
    for k, v in res["rows"].items():
        d = v["default"]
        f1s = [d["f1"] for d in v.get("draws", [])]
        extra = (f" ({v['labelled_true']} true; median of {len(f1s)} draws, seed "
                 f"{v['seed']}; F1 {min(f1s):.3f}–{max(f1s):.3f})" if f1s else "")
        best = v.get("best", {}).get("f1")
        lines.append(f"| {k}{extra} | {d['precision']:.3f} | {d['recall']:.3f} | "
                     f"{d['f1']:.3f} | {'—' if best is None else f'{best:.3f}'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
