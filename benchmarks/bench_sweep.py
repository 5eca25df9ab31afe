"""Held-out sweep: the quality recipe against the peers on generated data of many shapes.

The quality benchmark holds 14 data sets; hidden data differs from all of them in noise,
match rate, size, task and blocking. This script generates fifteen more cases whose
every parameter was written down here before any of them was scored (ten in session 14,
three bibliographic ones in session 15, two household registers in session 16), and never
changed after: person links and
dedupes from :func:`erblock.datasets.generate` (noisy, clean with rare matches, dense,
tiny), restaurant links from :func:`heldout.generate_restaurants` (new seeds, one with
few matches), three of the person cases re-blocked as a user might (a ready-made
surname-prefix column the key does not declare, a zip code alone, date of birth OR city),
and three bibliographic cases from :mod:`gen_biblio` (a clean source linked to a scraped
one, the same with twice the noise, a dedupe of scraped citations; blocked on the first
OR last word of the title), and two person registers with households from
:mod:`gen_households` (a clean register linked to a later, noisy snapshot; a register
with people entered twice), where partners, children, twins and sons named after their
fathers share an address. Two more cases (session 18) are *not* held out: the household
registers' person columns alone, where erblock's EM collapsed until the fix for
comparisons that another's agreement implies, made on them (see the note at
``_person_only``). Seven more (session 21, the ``x_`` cases) were fixed and scored once
with the peers before erblock changed that session: heavy missing values, very rare
matches, very heavy typos, a heavy dedupe, a noisy bibliographic dedupe and the household
registers with new seeds (held out for that session's change, which was developed on the
household cases above). Every system gets identical candidate pairs; erblock runs the
quality benchmark's recipe (``bench_quality.run_erblock``), Splink and recordlinkage as in
``peers.py``. A case is *flagged* when erblock's default F1 is more than 0.005 under the
better peer's.

Run (erblock and both peers, about 15 minutes on 2 cores)::

    python benchmarks/bench_sweep.py            # writes results/sweep.{json,md}
    python benchmarks/bench_sweep.py --quick    # the two smallest cases, erblock only
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
import gen_biblio  # noqa: E402
import gen_households  # noqa: E402
import heldout  # noqa: E402
import quality_cases as qc  # noqa: E402
import runinfo  # noqa: E402

from erblock import composite, prefix, soundex, token  # noqa: E402
from erblock.blocking.make import as_key_spec  # noqa: E402
from erblock.datasets import generate  # noqa: E402
from erblock.matchers.scoring.base import ModelWarning  # noqa: E402

RESULTS = HERE / "results"
FLAG = 0.005  #: erblock's default F1 this far under the better peer's is flagged


def _person(name: str, n: int, task: str, seed: int, **kw: float) -> qc.Case:
    out = generate(n, kind="person", task=task, seed=seed, **kw)  # type: ignore[arg-type]
    cols = list(heldout._GEN_PERSON_KINDS)
    frames = ([heldout._clean(out[0][cols]), heldout._clean(out[1][cols])] if task == "link"
              else [heldout._clean(out[0][cols])])
    source = (f"erblock.datasets.generate({n}, kind='person', task={task!r}, seed={seed}, "
              + ", ".join(f"{k}={v}" for k, v in kw.items()) + ")")
    return qc.Case(name, task, frames, out[-1], dict(heldout._GEN_PERSON_KINDS),
                   heldout._gen_person_blocking(), source, "sweep")


def _restaurants(name: str, seed: int, **kw: int) -> qc.Case:
    r, s, truth = heldout.generate_restaurants(seed=seed, **kw)
    source = f"heldout.generate_restaurants(seed={seed}" + "".join(
        f", {k}={v}" for k, v in kw.items()) + ")"
    return qc.Case(name, "link", [heldout._clean(r), heldout._clean(s)], truth,
                   dict(heldout._RESTAURANT_KINDS), heldout._restaurant_blocking(), source,
                   "sweep")


def _reblock(case: qc.Case, name: str, key: list[Any],
             transform: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
             note: str = "") -> qc.Case:
    frames = [transform(f) for f in case.frames] if transform else list(case.frames)
    return qc.Case(name, case.mode, frames, case.truth, case.kinds, key,
                   f"{case.source}; {note or 'blocked on ' + ' OR '.join(map(str, key))}",
                   "sweep")


def _surname3(df: pd.DataFrame) -> pd.DataFrame:
    """A ready-made key column the key does not say it derives from."""
    return df.assign(sn3=df["surname"].fillna("").str[:3])


# Fixed before any score was seen; never tuned (see the module doc).
def _noisy() -> qc.Case:
    return _person("noisy_link", 5000, "link", 7001, dup_rate=0.5, typo_rate=0.5,
                   missing_rate=0.10)


def _clean_rare() -> qc.Case:
    return _person("clean_rare_link", 10000, "link", 7002, dup_rate=0.1, typo_rate=0.1,
                   missing_rate=0.0)


def _dedupe() -> qc.Case:
    return _person("dedupe", 10000, "dedupe", 7004, dup_rate=0.3, typo_rate=0.3,
                   missing_rate=0.05)


CASES: tuple[tuple[str, Callable[[], qc.Case]], ...] = (
    ("noisy_link", _noisy),
    ("clean_rare_link", _clean_rare),
    ("dense_link", lambda: _person("dense_link", 1000, "link", 7003, dup_rate=0.95,
                                   typo_rate=0.25, missing_rate=0.03)),
    ("dedupe", _dedupe),
    ("dedupe_tiny", lambda: _person("dedupe_tiny", 500, "dedupe", 7005, dup_rate=0.5,
                                    typo_rate=0.25, missing_rate=0.03)),
    ("restaurants", lambda: _restaurants("restaurants", 7006)),
    ("restaurants_rare", lambda: _restaurants("restaurants_rare", 7007, n_match=60)),
    ("noisy_link_sn3_column", lambda: _reblock(
        _noisy(), "noisy_link_sn3_column", ["sn3"], _surname3,
        "blocked on a ready-made column sn3 = surname[:3], not declared")),
    ("dedupe_zip", lambda: _reblock(_dedupe(), "dedupe_zip", ["zip"])),
    ("clean_rare_dob_or_city", lambda: _reblock(_clean_rare(), "clean_rare_dob_or_city",
                                                ["dob", "city"])),
)
# Session 15 (2026-11-26): three bibliographic cases (gen_biblio.py), fixed before any was
# scored: a clean x scraped link, the same twice as noisy, a dedupe of scraped citations.
# Blocking as a user with missing years would: first OR last word of the title.
_BIBLIO_KINDS = {"title": "text", "authors": "text", "venue": "text", "year": "exact"}


def _biblio(name: str, seed: int, dedupe: bool = False, **kw: float) -> qc.Case:
    key = [token("title", 0), token("title", -1)]
    args = "".join(f", {k}={v}" for k, v in kw.items())
    if dedupe:
        df, truth = gen_biblio.generate_biblio_dedupe(seed=seed, **kw)  # type: ignore[arg-type]
        return qc.Case(name, "dedupe", [heldout._clean(df)], truth, dict(_BIBLIO_KINDS), key,
                       f"gen_biblio.generate_biblio_dedupe(seed={seed}{args})", "sweep")
    a, b, truth = gen_biblio.generate_biblio_link(seed=seed, **kw)
    return qc.Case(name, "link", [heldout._clean(a), heldout._clean(b)], truth,
                   dict(_BIBLIO_KINDS), key,
                   f"gen_biblio.generate_biblio_link(seed={seed}{args})", "sweep")


CASES += (
    ("biblio_link", lambda: _biblio("biblio_link", 7008)),
    ("biblio_link_noisy", lambda: _biblio("biblio_link_noisy", 7009, noise=2.0)),
    ("biblio_dedupe", lambda: _biblio("biblio_dedupe", 7010, dedupe=True)),
)
# Session 16 (2026-11-27): two person registers with households (gen_households.py),
# fixed before either was scored: partners, children, twins and juniors at one address
# are the hard non-matches. Kinds by the quality benchmark's rule (heldout.py), blocking
# rule P (surname soundex + initial, date of birth, postcode).
_HOUSEHOLD_KINDS = {"given_name": "name", "surname": "name", "dob": "date", "sex": "exact",
                    "house_number": "exact", "street": "text", "suburb": "name",
                    "postcode": "postcode", "phone": "phone"}


def _household(name: str, seed: int, dedupe: bool = False) -> qc.Case:
    key = [composite(soundex("surname"), prefix("given_name", 1)), "dob", "postcode"]
    if dedupe:
        df, truth = gen_households.generate_household_dedupe(seed=seed)
        return qc.Case(name, "dedupe", [heldout._clean(df)], truth, dict(_HOUSEHOLD_KINDS),
                       key, f"gen_households.generate_household_dedupe(seed={seed})",
                       "sweep")
    a, b, truth = gen_households.generate_household_link(seed=seed)
    return qc.Case(name, "link", [heldout._clean(a), heldout._clean(b)], truth,
                   dict(_HOUSEHOLD_KINDS), key,
                   f"gen_households.generate_household_link(seed={seed})", "sweep")


CASES += (
    ("household_link", lambda: _household("household_link", 7011)),
    ("household_dedupe", lambda: _household("household_dedupe", 7012, dedupe=True)),
)
# Session 18 (2026-11-27): the same two registers with the person columns only (given
# name, surname, date of birth, sex; no address), blocked on surname sound + initial and
# on the date. NOT held out for what they showed: they were built to try a person register
# without addresses, where erblock's EM then collapsed (F1 0.32 and 0.15, Splink 0.90 and
# 0.82: the first name decides the sex, and EM took "the same first name" for the match
# class); the fix (comparisons another's agreement implies, erblock/matchers/scoring/
# implied.py) was made on them. tests/test_implied.py checks the fix on its own generator.
_PERSON_KINDS = {k: _HOUSEHOLD_KINDS[k] for k in ("given_name", "surname", "dob", "sex")}


def _person_only(name: str, seed: int, dedupe: bool = False) -> qc.Case:
    base = _household(name, seed, dedupe)
    key = [composite(soundex("surname"), prefix("given_name", 1)), "dob"]
    return qc.Case(name, base.mode, [f[list(_PERSON_KINDS)] for f in base.frames],
                   base.truth, dict(_PERSON_KINDS), key,
                   base.source + ", person columns only", "sweep")


CASES += (
    ("household_link_person", lambda: _person_only("household_link_person", 7011)),
    ("household_dedupe_person", lambda: _person_only("household_dedupe_person", 7012,
                                                     dedupe=True)),
)
# Session 21 (2026-11-27): new shapes, fixed (seeds 71xx) and scored once with the peers
# before erblock changed: heavy missing values, very rare matches, very heavy typos, a heavy
# dedupe, a noisy bibliographic dedupe, and the household registers with new seeds. The
# change made after (related records scored in every pass) was developed on the two
# household cases above; these two were scored once before it and once after.
CASES += (
    ("x_missing_link", lambda: _person("x_missing_link", 5000, "link", 7101, dup_rate=0.5,
                                       typo_rate=0.3, missing_rate=0.4)),
    ("x_rare_link", lambda: _person("x_rare_link", 20000, "link", 7102, dup_rate=0.02,
                                    typo_rate=0.3, missing_rate=0.05)),
    ("x_typo_link", lambda: _person("x_typo_link", 5000, "link", 7103, dup_rate=0.5,
                                    typo_rate=0.9, missing_rate=0.05)),
    ("x_dedupe_heavy", lambda: _person("x_dedupe_heavy", 10000, "dedupe", 7104, dup_rate=0.7,
                                       typo_rate=0.5, missing_rate=0.1)),
    ("x_biblio_dedupe_noisy", lambda: _biblio("x_biblio_dedupe_noisy", 7105, dedupe=True,
                                              noise=2.0)),
    ("x_household_link", lambda: _household("x_household_link", 7106)),
    ("x_household_dedupe", lambda: _household("x_household_dedupe", 7107, dedupe=True)),
)


def _person_columns(name: str, n: int, task: str, seed: int, columns: Sequence[str],
                    key: list[Any], full_name: bool = False, **kw: float) -> qc.Case:
    """A person register with only some of the generator's columns (``full_name``: first
    name and surname as one column), compared by their kinds, blocked on ``key``."""
    base = _person(name, n, task, seed, **kw)
    kinds = dict(heldout._GEN_PERSON_KINDS)
    frames = []
    for f in base.frames:
        if full_name:
            f = f.assign(full_name=(f["first_name"].fillna("") + " " + f["surname"].fillna(""))
                         .str.strip().replace("", None))
        frames.append(f[list(columns)])
    kinds["full_name"] = "name"
    return qc.Case(name, task, frames, base.truth, {c: kinds[c] for c in columns}, key,
                   f"{base.source}; columns {', '.join(columns)}"
                   + ("; full_name = first_name + ' ' + surname" if full_name else ""),
                   "sweep")


_SX = composite(soundex("surname"), prefix("first_name", 1))
# Session 22 (2026-11-27): person registers with fewer columns and a coarse blocking (the
# shapes a user's own register often has), fixed (seeds 72xx) and scored once with the
# peers before any erblock change of the session that could touch them.
CASES += (
    ("y_few_columns_link", lambda: _person_columns(
        "y_few_columns_link", 5000, "link", 7201, ("first_name", "surname", "dob"),
        [_SX, as_key_spec("dob")], dup_rate=0.5, typo_rate=0.3, missing_rate=0.05)),
    ("y_no_dob_link", lambda: _person_columns(
        "y_no_dob_link", 5000, "link", 7202, ("first_name", "surname", "city", "zip"),
        [_SX, as_key_spec("zip")], dup_rate=0.5, typo_rate=0.3, missing_rate=0.05)),
    ("y_full_name_dedupe", lambda: _person_columns(
        "y_full_name_dedupe", 5000, "dedupe", 7203, ("full_name", "dob", "zip"),
        [token("full_name", 0), as_key_spec("dob")], full_name=True, dup_rate=0.4,
        typo_rate=0.3, missing_rate=0.05)),
    ("y_coarse_block_link", lambda: _person_columns(
        "y_coarse_block_link", 3000, "link", 7204,
        ("first_name", "surname", "dob", "city", "zip"),
        [composite(prefix("surname", 1), prefix("dob", 4))], dup_rate=0.5, typo_rate=0.3,
        missing_rate=0.05)),
    ("y_names_city_dedupe", lambda: _person_columns(
        "y_names_city_dedupe", 3000, "dedupe", 7205, ("first_name", "surname", "city"),
        [soundex("surname")], dup_rate=0.4, typo_rate=0.3, missing_rate=0.05)),
)
QUICK = ("dedupe_tiny", "restaurants_rare")


def _f1(system: dict[str, Any], which: str = "default") -> float | None:
    d = system.get(which) or {}
    f = d.get("f1")
    return None if f is None else (0.0 if f != f else float(f))


def run(cases: Sequence[str], client: Any, with_peers: bool,
        log: Callable[[str], None]) -> dict[str, Any]:
    """Every named case through ``bench_quality.run_case``; one row per case."""
    rows: dict[str, Any] = {}
    makers = dict(CASES)
    for name in cases:
        case = makers[name]()
        t0 = time.perf_counter()
        with warnings.catch_warnings():  # the model's warnings are in its report instead
            warnings.simplefilter("ignore", ModelWarning)
            res = bq.run_case(case, client, with_peers, 2, None, log)
        systems = res["systems"]
        row = {"mode": case.mode, "records": [len(f) for f in case.frames],
               "true_pairs": len(case.truth), "source": case.source,
               "blocking": case.blocking_text,
               "candidates": res.get("candidates"),
               "same_candidate_pairs": res.get("same_candidate_pairs"),
               "seconds": time.perf_counter() - t0,
               "f1": {k: _f1(v) for k, v in systems.items()},
               "best_f1": {k: _f1(v, "best") for k, v in systems.items()},
               "pair_completeness": systems.get("erblock", {}).get("pair_completeness"),
               "errors": {k: v["error"][:300] for k, v in systems.items() if "error" in v}}
        row["cardinality"] = res.get("cardinality")
        row["links_f1"] = {k: v["links"]["f1"] for k, v in systems.items() if "links" in v}
        if "links_minus_best_peer" in res:
            row["links_minus_best_peer"] = res["links_minus_best_peer"]
        peers = [v for k, v in row["f1"].items() if k != "erblock" and v is not None]
        e = row["f1"].get("erblock")
        row["best_peer_f1"] = max(peers) if peers else None
        row["flag"] = bool(peers and e is not None and e < max(peers) - FLAG)
        rows[name] = row
        log(f"{name:<24} " + "  ".join(f"{k} {v:.4f}" if v is not None else f"{k} —"
                                       for k, v in row["f1"].items())
            + ("  FLAG" if row["flag"] else ""))
    return rows


def main(argv: Sequence[str] | None = None, client: Any = None) -> dict[str, Any]:
    """Run the cases, write ``<name>.json`` and ``.md`` (``client``: reuse a cluster)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="two small cases, erblock only")
    ap.add_argument("--no-peers", action="store_true", help="erblock only")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--name", default="sweep")
    ap.add_argument("--cases", help="comma-separated case names (default: all); a partial "
                    "run belongs in another --out or --name")
    args = ap.parse_args(argv)
    from contextlib import ExitStack

    from distributed import Client, LocalCluster

    machine = runinfo.machine_info()
    names = QUICK if args.quick else tuple(n for n, _ in CASES)
    if args.cases:
        if args.quick:
            ap.error("--cases and --quick: give one of them")
        if args.out == RESULTS and args.name == "sweep":
            ap.error("--cases: a partial run would replace the full results; give --name "
                     "or --out")
        names = tuple(dict.fromkeys(args.cases.split(",")))
        unknown = sorted(set(names) - {n for n, _ in CASES})
        if unknown:
            ap.error(f"--cases: unknown case(s) {', '.join(unknown)}")
    with ExitStack() as stack:
        if client is None:
            cluster = stack.enter_context(LocalCluster(
                n_workers=2, threads_per_worker=1, dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        rows = run(names, client, not (args.quick or args.no_peers),
                   lambda m: print(m, flush=True))
    res = {"name": args.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "machine": machine, "quick": args.quick, "flag_margin": FLAG,
        "cases": list(names), "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    (args.out / f"{args.name}.md").write_text(render(res))
    return res


def render(res: dict[str, Any]) -> str:
    """The markdown fragment: one row per case, F1 of every system, flags named below."""
    rows = res["rows"]
    systems = list(dict.fromkeys(k for r in rows.values() for k in r["f1"]))

    def f(x: Any) -> str:
        return "—" if x is None or x != x else f"{x:.3f}"
    lines = ["## Held-out sweep: the recipe against the peers on generated data of many "
             "shapes", "",
             f"{len(rows)} generated cases; the parameters of all but two were "
             "fixed in `benchmarks/bench_sweep.py` before any was scored (noise, match rate, size, "
             "link/dedupe, three user blockings: a ready-made surname-prefix column, a zip "
             "code alone, date of birth OR city; three bibliographic cases in the "
             "DBLP-Scholar style from `benchmarks/gen_biblio.py`; two person registers "
             "with households from `benchmarks/gen_households.py`, where partners, children "
             "and twins share an address). Two, the same registers' person columns "
             "alone (`*_person`), were added in session 18 after erblock collapsed there: "
             "they are not held out for the fix made on them. The `x_` cases (session 21: "
             "heavy missing values, rare matches, heavy typos, a heavy dedupe, a noisy "
             "bibliographic dedupe, households with new seeds) were scored once with the "
             "peers before that session's change. The `y_` cases (session 22: person "
             "registers with three or four columns, one full-name column, one coarse pass, "
             "names and city only) were scored once with the peers when they were added "
             "(erblock above both on all five, 0.80 to 0.92). "
             "erblock runs the quality benchmark's recipe; "
             "identical candidate pairs "
             "for every system. F1 at each system's default decision; best = erblock's F1 at "
             "its best threshold (picked with the truth, an upper bound). Flagged: erblock's "
             f"default F1 more than {res['flag_margin']} under the better peer's. Measured "
             + res["date"] + ".", "",
             "| case | task | records | true pairs | candidates | PC | "
             + " | ".join(f"**{s}**" if s == "erblock" else s for s in systems)
             + " | erblock best |",
             "|---|---|---:|---:|---:|---:|" + "---:|" * (len(systems) + 1)]
    for name, r in rows.items():
        cands = r["candidates"] or {}
        n_cand = next(iter(cands.values()), None)
        lines.append(
            f"| {name} | {r['mode']} | {' × '.join(f'{n:,}' for n in r['records'])} | "
            f"{r['true_pairs']:,} | {n_cand or 0:,} | {f(r['pair_completeness'])} | "
            + " | ".join((f"**{f(r['f1'].get(s))}**" if s == "erblock" else f(r['f1'].get(s)))
                         if s not in r["errors"] else "error" for s in systems)
            + f" | {f(r['best_f1'].get('erblock'))} |")
    flagged = [n for n, r in rows.items() if r["flag"]]
    errors = [f"{n}: {s} failed ({e[:120]})" for n, r in rows.items()
              for s, e in r["errors"].items()]
    lines += ["", "Flagged: " + (", ".join(flagged) if flagged else "none") + "."]
    if errors:
        lines += ["", "Errors: " + "; ".join(errors) + "."]
    declared = {n: {"cardinality": r.get("cardinality"),
                    "systems": {k: {"default": {"f1": r["f1"].get(k)}, "links": {"f1": v}}
                                for k, v in r.get("links_f1", {}).items()},
                    **({"links_minus_best_peer": r["links_minus_best_peer"]}
                       if "links_minus_best_peer" in r else {})}
                for n, r in rows.items() if r.get("cardinality")}
    section = bq.cardinality_section(declared)  # ends with a blank line, as do we
    lines += [""] + [x.replace("### ", "#### ", 1) for x in section[:-1]] if section else []
    lines += ["", "Cases: " + "; ".join(f"`{n}` = {r['source']}" for n, r in rows.items())
              + ".", ""]
    m = res["machine"]
    lines += [f"Commit `{(m.get('git_commit') or '?')[:10]}`; versions "
              + ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v) + ".", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
