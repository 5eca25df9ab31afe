"""Smoke test of the benchmark scripts at tiny sizes, so they cannot rot.

Checks code paths and exactness (every method keeps the same pairs, the planner's counts
match the run), never speed: speed is measured by running the scripts themselves.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


#: the heaviest smoke runs (their scripts' code paths; the exactness they check is also
#: tested in tests/test_multi_keys.py) run in the nightly script, not in the suite
NIGHTLY = pytest.mark.skipif(not os.environ.get("ERBLOCK_NIGHTLY"),
                             reason="nightly only (benchmarks/fuzz_nightly.py runs it)")


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load("bench_core")


@pytest.mark.parametrize("s", [0.0, 0.5, 1.0])
def test_exponential_sizes_follow_the_law(bench: ModuleType, s: float) -> None:
    sizes = bench.exponential_sizes(100_003, 100, s)
    assert sizes.sum() == 100_003
    expected = 100_003 * np.exp(-s * np.arange(100)) / np.exp(-s * np.arange(100)).sum()
    assert np.abs(sizes - expected).max() < 1.0  # largest-remainder rounding


def test_skewed_job_has_the_stated_blocks(bench: ModuleType) -> None:
    df = bench.skewed_job(3_000, 20, 0.5, 0.05, seed=3)
    counts = np.bincount(df["block"].to_numpy(), minlength=20)
    np.testing.assert_array_equal(counts, bench.exponential_sizes(3_000, 20, 0.5))
    lengths = df["name"].str.len()
    assert lengths.min() >= 5 and lengths.max() <= 26
    assert bench.job_pairs(df) == int((counts * (counts - 1) // 2).sum())


def test_kernels_agree_on_kept_pairs(bench: ModuleType) -> None:
    df = bench.skewed_job(800, 8, 0.5, 0.1, seed=5)
    full = bench.run_kernel(df, 0.85, 1, 4096)
    tri = bench.run_kernel(df, 0.85, 1, 4096, triangle=True)
    assert full["useful_pairs"] == tri["useful_pairs"] == bench.job_pairs(df)
    assert full["kept_pairs"] == tri["kept_pairs"] > 0
    assert tri["cells"] < full["cells"]


@pytest.mark.parametrize("no_splink", [False, True], ids=["splink-if-installed", "no-splink"])
def test_bench_core_quick_writes_results(bench: ModuleType, tmp_path: Path, client,
                                         no_splink: bool) -> None:
    argv = ["--quick", "--out", str(tmp_path)] + (["--no-splink"] if no_splink else [])
    res = bench.main(argv, client=client)
    data = json.loads((tmp_path / "core.json").read_text())
    md = (tmp_path / "core.md").read_text()
    assert data["quick"] is True and md.startswith("## ")
    # (a) the planner targets hold even at tiny size
    assert data["verdict"]["blocksplit_imbalance_max"] <= bench.TARGETS["blocksplit_imbalance_max"]
    # (b) erblock did every candidate pair and kept what the kernels kept
    t = res["throughput"]
    run = t["runs"]["erblock"][0]
    assert run["comparisons"] == t["job"]["candidate_pairs"]
    assert t["kept_pairs"]["erblock"] == t["kept_pairs"]["kernel"] == t["kept_pairs"]["kernel_triangle"]
    if bench.splink_available() and not no_splink:  # (c) only where Splink 5 is installed
        (kept,) = t["kept_pairs"]["splink"]
        assert abs(kept - t["kept_pairs"]["erblock"][0]) <= 1  # DuckDB's JW rounding
        assert "erblock_over_splink_predict" in t["median"]
    else:
        assert not t["runs"]["splink"] and "Splink 5 is not installed" in md


def test_summarize_orders_and_normalises_fragments(tmp_path: Path) -> None:
    summarize = _load("summarize")
    results = tmp_path / "results"
    results.mkdir()
    (results / "core.md").write_text("## Core\n\nbody\n")
    (results / "core.json").write_text("{}")
    (results / "aaa.md").write_text("# Top\n\n## Sub\n\ntext\n")
    (results / "zzz.md").write_text("no heading here\n")
    out = tmp_path / "page.md"
    assert summarize.main(["--results", str(results), "--output", str(out)]) == 0
    page = out.read_text()
    assert page.index("## Core") < page.index("## Top") < page.index("### Sub") < page.index("## zzz")
    assert "benchmarks/results/core.json" in page and "python benchmarks/summarize.py" in page
    assert summarize.main(["--results", str(results), "--output", str(out), "--check"]) == 0
    (results / "zzz.md").write_text("changed\n")
    assert summarize.main(["--results", str(results), "--output", str(out), "--check"]) == 1


def test_docstring_and_comment_changes_leave_results_fresh() -> None:
    """What a result measured depends on the code, not on its docstrings or comments."""
    runinfo = _load("runinfo")
    old = 'def f(x):\n    """Old words."""\n    return x + 1  # one\n'
    assert runinfo._same_code(old, 'def f(x):\n    """New."""\n    return x + 1\n', "a.py")
    assert runinfo._same_code(old, "def f(x):\n    return x + 1\n", "a.py")
    assert not runinfo._same_code(old, 'def f(x):\n    """Old words."""\n    return x + 2\n',
                                  "a.py")
    assert not runinfo._same_code(old, "def f(x:\n", "a.py")  # unparsable: changed
    assert not runinfo._same_code("a", "a", "data.csv")  # not Python: changed
    assert not runinfo._same_code(None, old, "a.py")  # added or removed: changed


def test_summarize_marks_results_of_older_code_stale(tmp_path: Path) -> None:
    runinfo = _load("runinfo")
    head = runinfo.git("rev-parse", "HEAD")
    if head is None:
        pytest.skip("not a git checkout: staleness is measured against git history")
    head = head.strip()
    first = runinfo.git("rev-list", "--max-parents=0", "HEAD").split()[0]
    changed = runinfo.git("diff", "--name-only", first, "HEAD", "--", "erblock")
    assert runinfo.stale_reason({"git_commit": head, "erblock_dirty": False}) is None
    assert "no commit" in runinfo.stale_reason({})
    assert "uncommitted" in runinfo.stale_reason({"git_commit": head, "erblock_dirty": True})
    assert "not in this repository" in runinfo.stale_reason({"git_commit": "0" * 40})
    if changed.strip():  # the first commit predates most of erblock/
        assert "erblock/ changed" in runinfo.stale_reason({"git_commit": first})

    summarize = _load("summarize")
    results = tmp_path / "results"
    results.mkdir()
    for name, machine in (("fresh", {"git_commit": head, "load": [0.5, 0.4, 0.3]}),
                          ("old", {})):
        (results / f"{name}.md").write_text(f"## {name}\n\nbody\n")
        (results / f"{name}.json").write_text(json.dumps({"machine": machine}))
    out = tmp_path / "page.md"
    assert summarize.main(["--results", str(results), "--output", str(out)]) == 0
    page = out.read_text()
    fresh, old = page.split("## fresh")[1].split("## old")
    assert "Stale" not in fresh and f"commit `{head[:10]}`" in fresh and "0.50" in fresh
    assert "**Stale:** the result records no commit" in old


def test_bench_fresh_quick_draws_and_scores(tmp_path: Path, client) -> None:
    fresh = _load("bench_fresh")
    res = fresh.main(["--quick", "--draws", "1", "--out", str(tmp_path)], client=client)
    assert [r["design"][0] for r in res["rows"]] == ["restaurants", "person"]
    for r in res["rows"]:
        assert r["candidates"] > 0 and 0 <= r["default"]["f1"] <= 1
    data = json.loads((tmp_path / "fresh.json").read_text())
    assert "git_commit" in data["machine"] and len(data["rows"]) == 2
    assert "Mean F1 at the default decision" in (tmp_path / "fresh.md").read_text()


def test_bench_blockings_quick(tmp_path: Path, client) -> None:
    blk = _load("bench_blockings")
    res = blk.main(["--quick", "--out", str(tmp_path)], client=client)
    assert [r["blocking"] for r in res["rows"]] == [b[1] for b in blk.QUICK_BLOCKINGS]
    for r in res["rows"]:
        assert r["candidates"] > 0 and 0 <= r["default"]["f1"] <= 1
        assert not r["collapse"], r
    md = (tmp_path / "blockings.md").read_text()
    assert "Collapses: none." in md and "phone[:3]" in md


def test_bench_encoded_quick(tmp_path: Path, client) -> None:
    enc = _load("bench_encoded")
    res = enc.main(["--quick", "--no-splink", "--out", str(tmp_path)], client=client)
    job = res["jobs"]["generated persons"]
    kept = {n: {r["kept_pairs"] for r in v} for n, v in job["runs"].items()}
    assert kept["auto"] == kept["never"]  # the same pairs, encoded or not
    assert job["runs"]["auto"][0]["cells"] < job["runs"]["never"][0]["cells"]
    assert "encode='auto'" in (tmp_path / "encoded.md").read_text()


@NIGHTLY
def test_bench_scale_real_quick(tmp_path: Path, client) -> None:
    """Every pair of a historical_50k slice, one block: erblock compares them all and
    keeps what the threshold keeps (a superset of the kernel's: it averages over the
    present values where the kernel scores a missing one 0)."""
    real = _load("bench_scale_real")
    peers = [] if os.environ.get("ERBLOCK_NIGHTLY") else ["--no-splink"]
    res = real.main(["--quick", "--out", str(tmp_path), *peers], client=client)
    job = res["result"]["job"]
    n = real.QUICK["records"]
    assert job["records"] == n and job["candidate_pairs"] == n * (n - 1) // 2
    (run,) = res["result"]["runs"]["erblock"]
    (kernel,) = res["result"]["runs"]["kernel"]
    assert run["comparisons"] == job["candidate_pairs"]
    assert run["kept_pairs"] >= kernel["kept_pairs"] > 0
    assert (tmp_path / "scale_real.md").read_text().startswith("## Scale on real data")


@NIGHTLY
def test_bench_tokens_quick(tmp_path: Path, client) -> None:
    tok = _load("bench_tokens")
    # pyJedAI (and the Ray it starts) only in the nightly run: ~15 s of the suite's budget
    peers = [] if os.environ.get("ERBLOCK_NIGHTLY") else ["--no-peers"]
    res = tok.main(["--quick", "--out", str(tmp_path), *peers], client=client)
    data = json.loads((tmp_path / "tokens.json").read_text())
    md = (tmp_path / "tokens.md").read_text()
    assert data["quick"] is True and md.startswith("## ") and "git_commit" in data["machine"]
    assert "generated titles" in res["balance"]
    for rows in res["balance"].values():  # lossless: every strategy performs the same pairs
        assert set(rows) == set(tok.STRATEGIES)
        performed = {r["performed_comparisons"] for r in rows.values()}
        assert len(performed) == 1 and performed.pop() > 0
        for r in rows.values():  # the planner's counts match the run: performed + skipped
            assert r["counts_match_plan"], r
            assert r["repeat_pairs_skipped"] > 0 and r["planned_imbalance"] >= 1.0
    if "error" in res["abt_buy"]:  # the shared data sets are not beside this checkout
        assert "pyJedAI not measured" in md
        return
    q = res["quality"]
    assert set(q) == set(tok.QUALITY_KEYS)
    for name in ("minhash 0.5", "minhash 0.3"):  # MinHash candidates share a token
        assert q[name]["candidates"] <= q["tokens"]["candidates"]
        assert q[name]["pair_completeness"] <= q["tokens"]["pair_completeness"]
    peer = res["peer"]
    if "skipped" in peer:
        assert "pyJedAI not measured" in md
    else:  # pyJedAI's standard blocks are token blocks: the same pairs as erblock's tokens
        assert "error" not in peer, peer.get("error")
        lossless = peer["pyjedai_standard"]
        assert lossless["candidates"] == peer["erblock_tokens"]["candidates"]
        assert peer["pyjedai_filtered"]["candidates"] <= lossless["candidates"]
        assert "erblock lossless `link` / pyJedAI" in md


@NIGHTLY
def test_bench_scale_quick(tmp_path: Path, client) -> None:
    scale = _load("bench_scale")
    peers = [] if os.environ.get("ERBLOCK_NIGHTLY") else ["--no-splink"]  # Splink: nightly
    res = scale.main(["--quick", "--out", str(tmp_path), "--tmp", str(tmp_path), *peers],
                     client=client)
    a, b, d = res["a"], res["b"], res["d"]
    q = scale.QUICK
    # (a) at least the target pairs, counted from the blocks; erblock compared every one
    assert a["job"]["candidate_pairs"] >= q["a_min_pairs"]
    for run in a["runs"]["erblock"]:
        assert run["comparisons"] == a["job"]["candidate_pairs"] and run["peak_mib"] > 0
    # (b) no threshold: every candidate pair written, by erblock and by Splink if installed
    assert b["job"]["candidate_pairs"] >= q["b_min_pairs"]
    for name, runs in b["runs"].items():
        for run in runs:
            assert run["kept_pairs"] == b["job"]["candidate_pairs"], name
            assert run["bytes_written"] > 0 and run["peak_mib"] > 0
    assert not list(tmp_path.glob("erblock-bench-scale-*"))  # written pairs removed
    # (d) pairs grow linearly with the records, erblock compares them all
    rows = d["rows"]
    assert [r["records"] for r in rows] == q["d_sizes"]
    per_record = [r["candidate_pairs"] / r["records"] for r in rows]
    assert max(per_record) < 1.5 * min(per_record)
    for r in rows:
        assert r["runs"]["erblock"][0]["comparisons"] == r["candidate_pairs"]
        assert r["runs"]["kernel"]  # quick sizes: the kernel always runs
    data = json.loads((tmp_path / "scale.json").read_text())
    md = (tmp_path / "scale.md").read_text()
    assert data["quick"] is True and "git_commit" in data["machine"] and md.startswith("## ")
    assert (tmp_path / "scale.png").stat().st_size > 0 and "scale.png)" in md


@NIGHTLY
def test_bench_sn_quick(tmp_path: Path) -> None:
    """The sorted-neighbourhood benchmark runs, and erblock's pairs equal the sequential
    method's (its own brute force)."""
    sn = _load("bench_sn")
    assert sn.main(["--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "sn.json").read_text())
    (row,) = data["rows"]
    assert row["erblock"]["exact"] is True
    assert row["erblock"]["pairs"] == row["erblock"]["expected_pairs"]
    assert (tmp_path / "sn.md").read_text().startswith("## ")


def test_bench_sweep_quick(tmp_path: Path, client) -> None:
    sweep = _load("bench_sweep")
    res = sweep.main(["--quick", "--out", str(tmp_path)], client=client)
    assert set(res["rows"]) == set(sweep.QUICK)
    for row in res["rows"].values():
        assert row["f1"]["erblock"] is not None and 0 < row["f1"]["erblock"] <= 1
        assert not row["errors"]
    assert "| dedupe_tiny | dedupe |" in (tmp_path / "sweep.md").read_text()
    rare = res["rows"]["restaurants_rare"]  # a link of two sources without duplicates
    assert rare["cardinality"] == "1:1" and 0 < rare["links_f1"]["erblock"] <= 1
    assert "| restaurants_rare | 1:1 |" in (tmp_path / "sweep.md").read_text()


def test_declared_cardinality_reads_which_side_repeats() -> None:
    """A source free of duplicates lets each record of the *other* source link once."""
    sys.path.insert(0, str(BENCH))
    qc = _load("quality_cases")

    def case(left: list[int], right: list[int], mode: str = "link") -> object:
        truth = pd.DataFrame({"left_id": left, "right_id": right})
        return qc.Case("c", mode, [pd.DataFrame()] * 2, truth, {}, [], "", "")

    assert qc.declared_cardinality(case([1, 2], [5, 6])) == "1:1"
    assert qc.declared_cardinality(case([1, 1], [5, 6])) == "1:n"  # right repeats left 1
    assert qc.declared_cardinality(case([1, 2], [5, 5])) == "n:1"
    assert qc.declared_cardinality(case([1, 1, 2], [5, 6, 6])) is None
    assert qc.declared_cardinality(case([1, 2], [5, 6], "dedupe")) is None


def test_gen_biblio_is_reproducible_and_its_truth_consistent() -> None:
    """Same seed, same data; every truth id exists; a link's B record belongs to at most
    one A paper; a dedupe's truth is every pair inside its papers' citation groups."""
    sys.path.insert(0, str(BENCH))
    gen = _load("gen_biblio")
    a, b, truth = gen.generate_biblio_link(200, 150, 100, seed=5)
    a2, b2, truth2 = gen.generate_biblio_link(200, 150, 100, seed=5)
    assert a.equals(a2) and b.equals(b2) and truth.equals(truth2)
    assert set(truth["left_id"]) <= set(a.index) and set(truth["right_id"]) <= set(b.index)
    assert not set(a.index) & set(b.index) and truth["right_id"].is_unique
    assert 150 <= len(truth) <= 450 and len(b) == len(truth) + 100
    df, pairs = gen.generate_biblio_dedupe(100, seed=5)
    assert (pairs["left_id"] < pairs["right_id"]).all() and not pairs.duplicated().any()
    # groups from the truth (union of pairs) give back exactly the truth's pair count
    parent = {i: i for i in df.index}

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i
    for x, y in pairs.itertuples(index=False):
        parent[root(x)] = root(y)
    sizes = pd.Series([root(i) for i in df.index]).value_counts()
    assert int((sizes * (sizes - 1) // 2).sum()) == len(pairs)
    assert len(sizes) == 100 and sizes.sum() == len(df) and sizes.max() <= 12


def test_gen_households_is_reproducible_with_housemates_as_hard_non_matches() -> None:
    """Same seed, same data; a one-to-one truth between existing ids; people who share an
    address but are not one person exist (the point of the generator), juniors among
    them; in the dedupe each person is entered at most twice."""
    sys.path.insert(0, str(BENCH))
    gen = _load("gen_households")
    a, b, truth = gen.generate_household_link(300, seed=3)
    a2, b2, truth2 = gen.generate_household_link(300, seed=3)
    assert a.equals(a2) and b.equals(b2) and truth.equals(truth2)
    assert set(truth["left_id"]) <= set(a.index) and set(truth["right_id"]) <= set(b.index)
    assert truth["left_id"].is_unique and truth["right_id"].is_unique
    assert not set(a.index) & set(b.index)
    assert 0.6 * len(a) <= len(truth) <= 0.8 * len(a)  # each person kept with 0.7
    # housemates in A: same address, another record (each person is in A once)
    rows = a.reset_index()
    same = rows.merge(rows, on=["house_number", "street", "postcode"], suffixes=("_l", "_r"))
    same = same[same["id_l"] != same["id_r"]]
    assert len(same) > len(a) // 2
    assert (a.duplicated(["given_name", "surname", "street"], keep=False)).any()  # juniors
    df, pairs = gen.generate_household_dedupe(300, seed=3, dup_rate=0.2)
    assert (pairs["left_id"] < pairs["right_id"]).all() and not pairs.duplicated().any()
    both = pd.concat([pairs["left_id"], pairs["right_id"]])
    assert both.is_unique  # at most two records of a person: one pair each
    assert 0.1 * len(df) <= len(pairs) <= 0.25 * len(df)


def test_bench_households_joins_the_address_parts() -> None:
    """The joined address keeps the parts in order, skips missing ones, and is missing
    only when every part is."""
    sys.path.insert(0, str(BENCH))
    bh = _load("bench_households")
    df = pd.DataFrame({"house_number": ["24", None, None], "street": ["king st", "x rd", None],
                       "suburb": ["bern", None, None], "postcode": ["2020", "2031", None]})
    out = bh.joined(df)["address"]
    assert out.iloc[0] == "24 king st bern 2020" and out.iloc[1] == "x rd 2031"
    assert pd.isna(out.iloc[2])


def test_bench_household_keys_counts_wins_only_where_splink_ran() -> None:
    """The table counts erblock at or above Splink only where Splink gave a result, and
    shows the recipes in the order they were fixed."""
    sys.path.insert(0, str(BENCH))
    hk = _load("bench_household_keys")
    assert list(hk.RECIPES)[:2] == ["surname", "postcode"]
    e = {"pair_completeness": 0.9, "default": {"precision": 0.5, "recall": 0.9, "f1": 0.6},
         "best_f1": 0.7}
    res = {"seeds": hk.SEEDS, "date": "today", "rows": {
        "link: a": {"erblock": e, "splink": {"default": {"f1": 0.5}}},
        "link: b": {"erblock": e, "splink": {"default": {"f1": 0.61}}},
        "link: c": {"erblock": e, "splink": {"error": "SplinkStepError"}}}}
    text = hk.render(res)
    assert "on 1 of the 2 set-ups Splink ran" in text
    assert text.index("link: a") < text.index("link: b") < text.index("link: c")
    assert "| error |" in text
