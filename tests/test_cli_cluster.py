"""The ``erblock`` command against real ``dask scheduler`` / ``dask worker`` processes.

``--scheduler`` gives the same pairs as erblock's local cluster (and as the brute force),
the progress bars (profile, compare, write; each with an ETA) are drawn for a remote
cluster too, ``--quiet``/``--json`` keep stderr/stdout clean for scripts, TLS flags reach a
TLS-only scheduler, workers with another erblock fail up front with exit code 1, and every
command's ``--help`` ends with examples.
"""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, pair_list
from procs import ProcCluster

import erblock
from erblock.cli import build_parser, main

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def people_csv(tmp_path_factory):
    g = np.random.default_rng(11)
    n = 900
    w = np.exp(-0.4 * np.arange(12))
    df = pd.DataFrame({
        "city": g.choice([f"c{i}" for i in range(12)], n, p=w / w.sum()),
        "name": g.choice(["smith", "smyth", "jones", "jonas", "li", "lee", "müller"], n),
        "age": g.integers(20, 70, n).astype(str),
    })
    df.loc[g.random(n) < 0.03, "city"] = None
    path = tmp_path_factory.mktemp("cli") / "people.csv"
    df.to_csv(path, index=False)
    return pd.read_csv(path, dtype=str), path


ARGS = ["--key", "city", "--compare", "name:jaro_winkler", "--compare", "age:numeric:scale=10",
        "--n-tasks", "6"]


def _pairs(out) -> pd.DataFrame:
    return pd.read_parquet(out).sort_values(["left_id", "right_id"]).reset_index(drop=True)


def test_dedupe_with_scheduler_equals_local_and_brute_force(people_csv, real_cluster,
                                                            tmp_path, capsys):
    df, path = people_csv
    remote, local = tmp_path / "remote", tmp_path / "local"
    rep = tmp_path / "run.json"
    assert main(["dedupe", str(path), *ARGS, "--strategy", "blocksplit", "--scheduler",
                 real_cluster, "-o", str(remote), "--report", str(rep), "--quiet"]) == 0
    assert main(["dedupe", str(path), *ARGS, "--strategy", "blocksplit", "-o", str(local),
                 "--quiet"]) == 0
    a, b = _pairs(remote), _pairs(local)
    pd.testing.assert_frame_equal(a, b)
    assert set(pair_list(a)) == brute_dedupe(df, ["city"])
    report = json.loads(rep.read_text())
    workers = {t["worker"] for t in report["tasks"]}
    assert all(w.startswith("tcp://127.0.0.1:") for w in workers) and len(workers) == 2
    assert capsys.readouterr().err == ""  # --quiet: nothing on stderr


def test_link_json_with_scheduler(people_csv, real_cluster, tmp_path, capsys):
    df, path = people_csv
    half = tmp_path / "half.parquet"
    df.iloc[::2].reset_index(drop=True).to_parquet(half, index=False)
    assert main(["link", str(path), str(half), *ARGS, "--scheduler", real_cluster,
                 "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # stdout is exactly one JSON document
    expected = brute_link(df, df.iloc[::2].reset_index(drop=True), ["city"])
    assert out["comparisons"] == len(expected) and out["mode"] == "link"
    assert "tasks" not in out
    assert "[" not in captured.err  # --json: no progress bars


_BAR = re.compile(r"(\w+)\s+\[[#.]+\] (\d+)/(\d+)\s+[\d.]+s (ETA\s+(?:[\d.]+s|\?)|done)")


def _bars(err: str) -> dict[str, list[tuple[int, int, str]]]:
    bars: dict[str, list[tuple[int, int, str]]] = {}
    for frame in err.replace("\n", "\r").split("\r"):
        m = _BAR.search(frame)
        if m:
            bars.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3)),
                                                    m.group(4)))
    return bars


@pytest.fixture
def terminal(capsys, monkeypatch):
    """stderr as a terminal: the bars are drawn only there."""
    monkeypatch.setattr("erblock.cli.common._terminal", lambda: True)
    return capsys


@pytest.mark.parametrize("where", ["remote", "local"])
def test_progress_bars_for_each_phase_with_eta(people_csv, real_cluster, tmp_path, terminal,
                                               where):
    capsys = terminal
    _, path = people_csv
    extra = ["--scheduler", real_cluster] if where == "remote" else []
    assert main(["dedupe", str(path), *ARGS, *extra, "-o", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    bars = _bars(err)
    assert list(bars) == ["profile", "compare", "write"], err[-2000:]
    for phase, frames in bars.items():
        done, total, last = frames[-1]
        assert done == total and last == "done", phase
        assert any(f[2].startswith("ETA") for f in frames), phase
        # advanced monotonically from 0
        assert frames[0][0] == 0 and [f[0] for f in frames] == sorted(f[0] for f in frames)
    assert bars["compare"][-1][1] == bars["write"][-1][1] == 6  # one per reduce task
    assert "pairs written to" in err


def test_plan_command_shows_the_profile_bar_on_a_remote_cluster(people_csv, real_cluster,
                                                               terminal):
    capsys = terminal
    _, path = people_csv
    assert main(["plan", str(path), "--key", "city", "--n-tasks", "6", "--scheduler",
                 real_cluster]) == 0
    captured = capsys.readouterr()
    bars = _bars(captured.err)
    assert list(bars) == ["profile"] and bars["profile"][-1][2] == "done"
    assert "total comparisons" in captured.out


def test_plan_plot_draws_basic_next_to_the_chosen_strategy(people_csv, tmp_path, capsys):
    from matplotlib.image import imread

    _, path = people_csv
    png = tmp_path / "plots" / "plan.png"
    png.parent.mkdir()
    assert main(["plan", str(path), "--key", "city", "--n-tasks", "6", "--strategy",
                 "blocksplit", "--plot", str(png), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["strategy"] == "blocksplit"
    img = imread(png)
    assert img.shape[0] > 200 and img.shape[1] > 2 * img.shape[0]  # two panels side by side
    # both panels have bars: the left (basic) and the right (blocksplit) half are not blank
    for half in (img[:, : img.shape[1] // 2, :3], img[:, img.shape[1] // 2:, :3]):
        saturated = half.max(axis=-1) - half.min(axis=-1) > 0.25  # coloured bar pixels
        assert saturated.mean() > 0.02


def test_dashboard_link_is_printed_when_there_is_one(people_csv, monkeypatch, capsys, tmp_path):
    import erblock.engine.cluster as cluster

    _, path = people_csv
    monkeypatch.setattr(cluster, "dashboard_link", lambda client: "http://127.0.0.1:8787/status")
    assert main(["plan", str(path), "--key", "city", "--n-tasks", "4"]) == 0
    assert "dashboard: http://127.0.0.1:8787/status" in capsys.readouterr().err
    assert main(["plan", str(path), "--key", "city", "--quiet"]) == 0
    assert "dashboard" not in capsys.readouterr().err


def test_workers_with_another_erblock_exit_1_naming_them(people_csv, tmp_path, capsys):
    _, path = people_csv
    pkg = tmp_path / "shadow" / "erblock"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent('__version__ = "0.0.9"\n'))
    with ProcCluster(n_workers=1, worker_env={"PYTHONPATH": str(tmp_path / "shadow")}) as pc:
        code = main(["dedupe", str(path), *ARGS, "--scheduler", pc.address, "--quiet"])
        err = capsys.readouterr().err
        from erblock.engine.cluster import close_remote

        close_remote(pc.address)
    assert code == 1
    assert "erblock 0.0.9" in err and f"must run erblock {erblock.__version__}" in err
    assert "Traceback" not in err


def test_help_has_examples_for_every_command(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) >= {"link", "dedupe", "plan", "demo", "report", "kube-spec"}
    for name in commands:
        with pytest.raises(SystemExit) as info:
            main([name, "--help"])
        assert info.value.code == 0
        text = capsys.readouterr().out
        assert "examples:" in text and f"erblock {name}" in text, name
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0 and "exit codes" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["dedupe"],                                   # missing input and --key
    ["link", "a.csv", "--key", "k", "--compare", "x:jaro"],  # missing S
    ["dedupe", "a.csv", "--key", "k", "--compare", "x:jaro", "--n-tasks", "many"],
    ["frobnicate"],
])
def test_argparse_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage: erblock" in capsys.readouterr().err


def test_failed_run_leaves_nothing_under_the_output_name(people_csv, tmp_path, capsys):
    """A reduce task that fails on a worker while others have written their parts (values
    a comparison cannot hash): the error comes out, nothing is left under the final name
    and no temporary directory either; then the command line keeps existing results."""
    import dask
    import dask.dataframe as dd

    import erblock

    df = pd.DataFrame({"k": ["a"] * 20 + ["b"] * 20 + ["c"] * 20,
                       "v": ["x"] * 40 + [["not", "hashable"]] * 20})
    out = tmp_path / "out" / "pairs"
    out.parent.mkdir()
    # a Dask frame: its object column's values are only met in the workers (pandas
    # input with lists is refused before any work)
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(df, npartitions=3, sort=False)
    with pytest.raises(TypeError, match="unhashable"):
        erblock.dedupe(ddf, key="k", compare={"v": "exact"}, strategy="basic", n_tasks=3,
                       output=str(out))
    assert list(out.parent.iterdir()) == []  # neither pairs/ nor pairs.erblock-tmp-*
    _, path = people_csv
    # an existing result is never replaced without --overwrite (exit 2), and kept intact
    assert main(["dedupe", str(path), *ARGS, "-o", str(out), "--quiet"]) == 0
    before = sorted(p.name for p in out.iterdir())
    assert main(["dedupe", str(path), *ARGS, "-o", str(out), "--quiet"]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == before
    assert main(["dedupe", str(path), *ARGS, "-o", str(out), "--overwrite", "--quiet"]) == 0
