"""Quality benchmark: erblock's unsupervised Fellegi-Sunter model against Splink 5 and recordlinkage, on data with ground truth, with the same blocking.

One fixed erblock recipe runs on every data set; nothing is tuned per data set:

* ``compare = {column: kind}`` for every evidence column, the column's semantic type
  (``name``, ``date``, ``postcode``, ``email``, ``phone``, ``text``, ``exact``,
  ``numeric``) mapped 1:1 to erblock's comparison of the same name (the kinds normalise
  their values, so there is no text cleaning);
* ``scoring="em"`` with a default ``erblock.FellegiSunter()`` (``--quick``: 200,000
  random pairs for u instead of 3 million);
* ``key`` = the data set's blocking passes;
* decision ``match_probability >= 0.5``; the best F1 over any ``match_weight`` threshold
  is reported next to it.

The data sets, their kinds and blocking are in ``quality_cases.py`` (the three shared
sets DBLP-ACM, Abt-Buy and historical_50k, and every held-out set of ``heldout.py``);
the peers, configured by column kind as their tutorials do, with the same candidate pairs,
in ``peers.py``. Every number comes from ``erblock.evaluate`` /
``erblock.matchers.evaluate.pr_curve`` on each system's pairs. Per data set and system:
candidates, pair completeness, precision / recall / F1 at the default decision,
best-threshold F1, wall seconds; the candidate pairs are checked to be the same in all
systems.

Run (one benchmark process at a time; the machine has 2 cores)::

    python benchmarks/bench_quality.py                        # every data set
    python benchmarks/bench_quality.py --datasets febrl1,rldata500
    python benchmarks/bench_quality.py --quick --no-peers     # DBLP-ACM only, code paths

Writes ``quality.json`` and ``quality.md`` into ``--out`` (default
``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # quality_cases.py, peers.py and heldout.py sit here
    sys.path.insert(0, str(HERE))

import peers  # noqa: E402
import quality_cases as qc  # noqa: E402
import runinfo  # noqa: E402

import erblock  # noqa: E402

ROOT = HERE.parent
RESULTS = ROOT / "benchmarks" / "results"
QUICK_U_PAIRS = 200_000
SYSTEMS = ("erblock", "splink", "recordlinkage")
ERBLOCK_NOTE = ("compare={column: kind} (kind = the column's type, erblock's comparison of "
                "the same name), scoring='em' with FellegiSunter() defaults, no cleaning; "
                "decision p >= 0.5")


# -------------------------------------------------------------------------- erblock


def erblock_model(u_pairs: int | None) -> erblock.FellegiSunter:
    """The recipe's model: ``FellegiSunter()`` with no options (``--quick``: fewer u pairs)."""
    return erblock.FellegiSunter() if u_pairs is None else erblock.FellegiSunter(u_pairs=u_pairs)


def run_erblock(case: qc.Case, client: Any, u_pairs: int | None) -> dict[str, Any]:
    """The fixed recipe (module docstring) on one case."""
    compare = dict(case.kinds)
    model = erblock_model(u_pairs)
    key = list(case.blocking)
    t0 = time.perf_counter()
    if case.mode == "link":
        pairs = erblock.link(case.frames[0], case.frames[1], key=key, compare=compare,
                             scoring=model, client=client)
    else:
        pairs = erblock.dedupe(case.frames[0], key=key, compare=compare, scoring=model,
                               client=client)
    seconds = time.perf_counter() - t0
    out = qc.metrics(case, pairs, pairs["match_probability"].to_numpy() >= 0.5,
                     "match_weight", qc.prob_from_weight)
    out.update(seconds=seconds, config=ERBLOCK_NOTE, compare=compare,
               u_pairs=model.u_pairs,
               _pairs=pairs[["left_id", "right_id", "match_probability"]])
    try:  # details only: never fail the benchmark on them
        rep = model.report()
        out["model"] = {k: rep.get(k) for k in ("lambda", "prior_weight", "n_u_pairs",
                                                "n_candidates", "warnings")}
        out["model"]["em_sessions"] = len(rep.get("sessions") or ())
        out["model"]["levels"] = rep.get("levels")
    except Exception as e:  # noqa: BLE001
        out["model"] = {"error": f"{type(e).__name__}: {e}"}
    try:
        report = erblock.RunReport.of(pairs)
        out["phases"] = dict(report.phases)
    except Exception:  # noqa: BLE001
        pass
    return out


# ---------------------------------------------------------------------- orchestration


def _error(e: BaseException) -> dict[str, Any]:
    root = e.__cause__ or e  # peers wrap the tool's own error to name the failing step
    tb = traceback.format_exception(type(root), root, root.__traceback__)
    return {"error": f"{type(e).__name__}: {e}".strip()[:500],
            "traceback": "".join(tb)[-3000:]}


def run_case(case: qc.Case, client: Any, with_peers: bool, threads: int,
             u_pairs: int | None, log: Callable[[str], None]) -> dict[str, Any]:
    res: dict[str, Any] = {
        "group": case.group, "mode": case.mode, "source": case.source,
        "records": [len(f) for f in case.frames], "true_pairs": len(case.truth),
        "possible_pairs": qc.n_possible(case), "kinds": dict(case.kinds),
        "blocking": case.blocking_text, "passes": len(case.blocking),
        "load_before": [round(x, 2) for x in os.getloadavg()], "systems": {},
    }
    runs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("erblock", lambda: run_erblock(case, client, u_pairs))]
    if with_peers:
        u_peer = float(QUICK_U_PAIRS if u_pairs is not None else 1e6)
        runs += [("splink", lambda: peers.run_splink(case, threads, u_peer)),
                 ("recordlinkage", lambda: peers.run_recordlinkage(case))]
    pair_sets: dict[str, set] = {}
    cardinality = qc.declared_cardinality(case)
    res["cardinality"] = cardinality
    for name, fn in runs:
        log(f"[{case.name}] {name} …")
        try:
            r = fn()
        except ImportError as e:
            r = {"error": f"not installed: {e}"}
        except Exception as e:  # noqa: BLE001  (recorded, never hidden)
            r = _error(e)
        pairs = r.pop("_pairs", None)
        if pairs is not None:
            pair_sets[name] = peers.pair_set(pairs, case.dedupe)
            if cardinality is not None:  # the same assignment for every system
                col = "match_probability" if "match_probability" in pairs else "probability"
                r["links"] = qc.link_metrics(case, pairs, col, cardinality)
        res["systems"][name] = r
        _log_system(log, case.name, name, r)
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    cands = {k: v["candidates"] for k, v in res["systems"].items() if "candidates" in v}
    res["candidates"] = cands
    res["same_candidate_count"] = len(set(cands.values())) <= 1
    ref = next(iter(pair_sets.values()), None)
    res["same_candidate_pairs"] = all(s == ref for s in pair_sets.values())
    if not (res["same_candidate_count"] and res["same_candidate_pairs"]):
        log(f"[{case.name}] WARNING: candidate pairs differ across systems: {cands}")
    e = res["systems"].get("erblock", {})
    peer_f1 = {k: v["default"]["f1"] for k, v in res["systems"].items()
               if k != "erblock" and "default" in v}
    if peer_f1 and "default" in e:
        best = max(peer_f1, key=lambda k: peer_f1[k])
        res["best_peer"] = best
        res["best_peer_f1"] = peer_f1[best]
        res["erblock_minus_best_peer"] = e["default"]["f1"] - peer_f1[best]
        peer_best = {k: v.get("best", {}).get("f1") for k, v in res["systems"].items()
                     if k != "erblock" and "default" in v}
        peer_best = {k: v for k, v in peer_best.items() if v is not None}
        if peer_best and "best" in e:
            res["best_threshold_minus_best_peer"] = e["best"]["f1"] - max(peer_best.values())
    peer_links = [v["links"]["f1"] for k, v in res["systems"].items()
                  if k != "erblock" and "links" in v]
    if peer_links and "links" in e:
        res["links_minus_best_peer"] = e["links"]["f1"] - max(peer_links)
    return res


def _log_system(log: Callable[[str], None], case: str, name: str, r: dict[str, Any]) -> None:
    if "error" in r:
        log(f"[{case}] {name}: ERROR {r['error']}")
        return
    d, b = r["default"], r.get("best", {})
    log(f"[{case}] {name}: candidates {r['candidates']:,}, PC {r['pair_completeness']:.4f}, "
        f"F1 default {d['f1']:.4f} (P {d['precision']:.4f} R {d['recall']:.4f}), "
        f"best {b.get('f1', float('nan')):.4f}, {r['seconds']:.1f} s")


def machine() -> dict[str, Any]:
    """Machine, versions, commit and load of this run (``runinfo.py``)."""
    return runinfo.machine_info((*runinfo.DEFAULT_PACKAGES, "splink", "duckdb",
                                 "recordlinkage"))


# ----------------------------------------------------------------------- markdown


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def render_markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    quick = " (quick run: DBLP-ACM, 200,000 random pairs for u)" if res.get("quick") else ""
    lines = ["## Quality: one fixed erblock recipe against Splink 5 and recordlinkage", ""]
    lines += [
        "**erblock's recipe, the same on every data set** (fixed before any score was "
        "seen, never tuned): `compare={column: kind}` with each evidence column's type "
        "(name, date, postcode, email, phone, text, exact, numeric) as erblock's comparison "
        "of the same name, `scoring=\"em\"` with a default `FellegiSunter()`, no text "
        "cleaning, `key` = the data set's blocking passes, decision "
        "`match_probability >= 0.5`. **Splink 5** (DuckDB) and **recordlinkage** are "
        "configured from the same kinds as their tutorials do (Splink: NameComparison, "
        "DateOfBirthComparison, PostcodeComparison, Jaro-Winkler for text, Levenshtein for "
        "phones, exact matches; λ from deterministic rules at recall 0.7, u from 1e6 random "
        "pairs, EM on one or two blocking passes, decision p ≥ 0.5. recordlinkage: "
        "Jaro-Winkler ≥ 0.85 or exact features, ECM's `fit_predict`); see "
        "`benchmarks/peers.py`. All three get the *same candidate pairs*: every pass's key "
        "is computed with erblock's key specs and the peers block on it. The input is the "
        "same for all three: the held-out loaders' own light cleaning (strip, lower-case, "
        "white space), the shared sets exactly as loaded. "
        f"Data sets: `benchmarks/quality_cases.py`{quick}.", "",
        "F1 = at the default decision; best = the best F1 over any threshold of the "
        "system's own score (match weight; recordlinkage: ECM posterior), which needs the "
        "truth to pick and so is an upper bound. PC = pair completeness of the blocking "
        "(the recall ceiling). Seconds: wall time on the machine below (erblock on a local "
        "Dask cluster of 2 workers; Splink's DuckDB with 2 threads; recordlinkage in "
        "process).", ""]
    lines += ["| data set | system | candidates | PC | P | R | **F1** | best F1 | seconds |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in res["datasets"].items():
        recs = " × ".join(f"{n:,}" for n in r["records"])
        label = f"{name} ({r['mode']}, {recs})"
        for i, (sys_name, s) in enumerate(r["systems"].items()):
            ds_cell = label if i == 0 else ""
            if "error" in s:
                lines.append(f"| {ds_cell} | {sys_name} | error: {s['error'][:120]} "
                             "| | | | | | |")
                continue
            d, b = s["default"], s.get("best", {})
            best_mark = "**" if r.get("best_peer") is not None and (
                d["f1"] >= max(x["default"]["f1"] for x in r["systems"].values()
                               if "default" in x)) else ""
            lines.append(
                f"| {ds_cell} | {sys_name} | {s['candidates']:,} | "
                f"{_f(s['pair_completeness'])} | {_f(d['precision'])} | {_f(d['recall'])} | "
                f"{best_mark}{_f(d['f1'])}{best_mark} | {_f(b.get('f1'))} | "
                f"{s['seconds']:.1f} |")
    lines.append("")
    lines += _verdict(res)
    lines += cardinality_section(res["datasets"])
    lines += ["### Per data set", ""]
    for name, r in res["datasets"].items():
        same = "yes" if r["same_candidate_count"] and r["same_candidate_pairs"] else "**NO**"
        lines.append(f"- **{name}** ({r['group']}; {r['true_pairs']:,} true pairs): "
                     f"blocking {r['passes']} pass(es): `{r['blocking']}`; kinds "
                     + ", ".join(f"{c} {k}" for c, k in r["kinds"].items())
                     + f". Same candidate pairs in all systems: {same}.")
        for sys_name, s in r["systems"].items():
            if "error" in s:
                lines.append(f"  - {sys_name} failed: `{s['error'][:300]}`")
        sp = r["systems"].get("splink", {})
        if "deterministic_rules" in sp:
            lines.append(f"  - Splink: λ = {sp['parameters']['lambda']:.3g} from "
                         + ", ".join(f"`{x}`" for x in sp["deterministic_rules"])
                         + "; EM " + ", ".join(sp["em_sessions"]) + ".")
    lines.append("")
    lines.append(f"Configurations: **erblock**: {ERBLOCK_NOTE}; **Splink**: "
                 f"{peers.SPLINK_NOTE.format(u=('2e+05' if res.get('quick') else '1e+06'))}; "
                 f"**recordlinkage**: {peers.RL_NOTE}.")
    lines.append("")
    dirty = " (erblock/ had uncommitted changes)" if m.get("erblock_dirty") else ""
    lines.append(f"Machine: {m['cpu_count']} cores, {m.get('memory_gib')} GiB, load "
                 f"{res['load_before']} before, {res['load_after']} after; commit "
                 f"`{(m.get('git_commit') or '?')[:10]}`{dirty}; versions "
                 + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v) + ".")
    lines.append("")
    return "\n".join(lines)


def cardinality_section(datasets: dict[str, Any]) -> list[str]:
    """The links of every system when the user declares which sources hold no duplicates
    (``erblock.link(..., cardinality=...)``; the same greedy applied to every system's
    decided pairs)."""
    rows = {n: r for n, r in datasets.items() if r.get("cardinality")}
    if not rows:
        return []
    names = sorted({k for r in rows.values() for k in r["systems"]},
                   key=lambda k: (k != "erblock", k))
    lines = ["### Declaring which sources hold no duplicates", "",
             "A user who knows that a source holds each entity at most once declares it: "
             "`erblock.link(..., cardinality=\"1:1\")` (neither source has duplicates) or "
             "`\"1:n\"` (only the left one), and gets the links: the decided pairs the "
             "constraint keeps, best first (`erblock/matchers/assignment.py`). Our data sets "
             "have no documentation of their own, so the truth's structure stands in for "
             "that knowledge (a source is free of duplicates when no record of the other "
             "source is in two true pairs; `quality_cases.declared_cardinality`). The same assignment is "
             "applied to every system's decided pairs (p ≥ 0.5), so the peers gain from it "
             "too. F1 of the decided pairs → F1 of the links:", "",
             "| data set | cardinality | " + " | ".join(names) + " |",
             "|---|---|" + "---:|" * len(names)]
    for n, r in rows.items():
        cells = []
        for k in names:
            s = r["systems"].get(k, {})
            if "links" not in s:
                cells.append("–")
                continue
            best = max(x["links"]["f1"] for x in r["systems"].values() if "links" in x)
            mark = "**" if s["links"]["f1"] >= best else ""
            cells.append(f"{_f(s['default']['f1'])} → {mark}{_f(s['links']['f1'])}{mark}")
        lines.append(f"| {n} | {r['cardinality']} | " + " | ".join(cells) + " |")
    ok = [n for n, r in rows.items() if r.get("links_minus_best_peer", -1) >= 0]
    scored = [n for n, r in rows.items() if "links_minus_best_peer" in r]
    if scored:
        below = [f"{n} ({rows[n]['links_minus_best_peer']:+.4f})" for n in scored
                 if n not in ok]
        lines += ["", f"With the cardinality declared, erblock's links are at or above the "
                      f"best peer's on {len(ok)} of {len(scored)} links"
                  + (f"; below on {', '.join(below)}." if below else ".")]
    lines.append("")
    return lines


def _time_verdict(res: dict[str, Any]) -> str:
    """How erblock's wall time compares with Splink's where both ran (same run)."""
    ratios = {n: r["systems"]["erblock"]["seconds"] / r["systems"]["splink"]["seconds"]
              for n, r in res["datasets"].items()
              if "seconds" in r["systems"].get("erblock", {})
              and "seconds" in r["systems"].get("splink", {})}
    if not ratios:
        return ""
    faster = sum(v < 1 for v in ratios.values())
    lo, hi = min(ratios, key=ratios.__getitem__), max(ratios, key=ratios.__getitem__)
    return (f" Wall time, whole job (training included): erblock is faster than Splink on "
            f"{faster} of the {len(ratios)} sets both ran; erblock / Splink median "
            f"{float(np.median(list(ratios.values()))):.2f}, from {ratios[lo]:.2f} ({lo}) "
            f"to {ratios[hi]:.2f} ({hi}).")


def _verdict(res: dict[str, Any]) -> list[str]:
    rows = [(n, r) for n, r in res["datasets"].items() if "erblock_minus_best_peer" in r]
    if not rows:
        return []
    below = [(n, r) for n, r in rows if r["erblock_minus_best_peer"] < 0]
    lines = []
    n_ok = len(rows) - len(below)
    lines.append(f"erblock's F1 at its default decision is at or above the best peer's on "
                 f"{n_ok} of {len(rows)} data sets.")
    if below:
        parts = []
        for n, r in sorted(below, key=lambda x: x[1]["erblock_minus_best_peer"]):
            e = r["systems"]["erblock"]["default"]["f1"]
            parts.append(f"{n} ({_f(e)} vs {r['best_peer']} {_f(r['best_peer_f1'])}, "
                         f"{r['erblock_minus_best_peer']:+.4f})")
        lines[-1] += " It is below the best peer on " + "; ".join(parts) + "."
    with_best = [(n, r) for n, r in rows if "best_threshold_minus_best_peer" in r]
    if with_best:
        ok = sum(r["best_threshold_minus_best_peer"] >= 0 for _, r in with_best)
        lines[-1] += (f" At the best threshold of each system (picked with the truth, an "
                      f"upper bound) erblock is at or above the best peer on {ok} of "
                      f"{len(with_best)}.")
    gaps = []
    for n, r in res["datasets"].items():
        e = r["systems"].get("erblock", {})
        if "default" in e and "best" in e and e["best"]["f1"] - e["default"]["f1"] >= 0.05:
            gaps.append(f"{n} ({_f(e['default']['f1'])} at p ≥ 0.5, {_f(e['best']['f1'])} "
                        f"at its best threshold p ≥ "
                        f"{e['best'].get('threshold_probability', float('nan')):.2g})")
    if gaps:
        lines[-1] += (" erblock's default decision is well off its best threshold on "
                      + "; ".join(gaps) + ".")
    lines[-1] += _time_verdict(res)
    failed = [f"{k} on {n}" for n, r in res["datasets"].items()
              for k, v in r["systems"].items() if "error" in v]
    if failed:
        lines[-1] += (" Failed runs (recorded, not retried with other settings): "
                      + ", ".join(failed) + ".")
    lines.append("")
    return lines


# --------------------------------------------------------------------------- main


def _parse_datasets(values: Sequence[str] | None) -> list[str]:
    names = [n.strip() for v in (values or []) for n in v.split(",") if n.strip()]
    unknown = [n for n in names if n not in qc.NAMES]
    if unknown:
        raise SystemExit(f"unknown data set(s) {unknown}; known: {', '.join(qc.NAMES)}")
    return names or list(qc.NAMES)


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="*", default=None,
                    help=f"comma-separated names (default: all of {', '.join(qc.NAMES)})")
    ap.add_argument("--data", default=None, help="folder with the shared data sets")
    ap.add_argument("--no-peers", action="store_true", help="erblock only")
    ap.add_argument("--quick", action="store_true",
                    help="DBLP-ACM only, 200,000 random pairs for u (checks code paths)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--name", default="quality")
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads for Splink")
    args = ap.parse_args(argv)
    datasets = ["dblp_acm"] if args.quick else _parse_datasets(args.datasets)
    u_pairs = QUICK_U_PAIRS if args.quick else None
    logging.getLogger("splink").setLevel(logging.ERROR)
    own = None
    if client is None:
        from distributed import Client, LocalCluster

        own = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                           silence_logs=logging.ERROR)
        client = Client(own)
    t0 = time.perf_counter()
    res: dict[str, Any] = {"machine": machine(), "quick": args.quick,
                           "peers": not args.no_peers, "recipe": ERBLOCK_NOTE,
                           "load_before": [round(x, 2) for x in os.getloadavg()],
                           "datasets": {}}
    try:
        for name in datasets:
            try:
                case = qc.load_case(name, args.data)
            except Exception as e:  # noqa: BLE001
                print(f"[{name}] could not load: {e}")
                res.setdefault("load_errors", {})[name] = _error(e)
                continue
            res["datasets"][name] = run_case(case, client, not args.no_peers, args.threads,
                                             u_pairs, lambda s: print(s, flush=True))
    finally:
        if own is not None:
            client.close()
            own.close()
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    res["seconds"] = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(_jsonable(res), indent=2) + "\n")
    (out / f"{args.name}.md").write_text(render_markdown(res))
    print(f"wrote {out / (args.name + '.json')} and .md")
    return res


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=lambda o: o.item() if hasattr(o, "item")
                                 else str(o)))


if __name__ == "__main__":
    main()
