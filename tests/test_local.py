"""Small jobs in this process (erblock.engine.local): ``executor="auto"`` starts a job on
pandas frames here, moves it to the cluster when its profile counts too many comparisons,
and the pairs, scores, models and written output are those of the cluster path.

The conformance suite (test_conformance.py) checks ``executor="local"`` against the brute
force for every strategy; here: the choice itself, the move, and every way a run ends.
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe, brute_link, pair_list

import erblock
from erblock.datasets import generate
from erblock.engine import local
from erblock.report import RunReport

COMPARE = {"name": "jaro_winkler", "age": {"method": "numeric", "scale": 10}}


def _people(n: int, seed: int, blocks: str = "aaabbcdefg") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = np.array(["anna", "anne", "bob", "rob", "carla", "karla", "dirk", "derk"])
    return pd.DataFrame({"k": rng.choice(list(blocks), n), "name": rng.choice(names, n),
                         "age": rng.integers(20, 60, n).astype(float)},
                        index=pd.Index([f"p{seed}-{i}" for i in range(n)], name="pid"))


def _executor(pairs: pd.DataFrame) -> str:
    return str(RunReport.of(pairs).settings["executor"])


@pytest.mark.auto_executor
def test_auto_runs_a_small_pandas_job_here_with_the_clusters_result(client):
    df = _people(300, 1)
    here = erblock.dedupe(df, key="k", compare=COMPARE, client=client, sort=True)
    there = erblock.dedupe(df, key="k", compare=COMPARE, client=client, sort=True,
                           executor="cluster")
    assert _executor(here) == "local" and _executor(there) == "cluster"
    pd.testing.assert_frame_equal(here, there)
    assert set(pair_list(here)) == brute_dedupe(df, ["k"])


@pytest.mark.auto_executor
@pytest.mark.parametrize("strategy", ["auto", "cellblock"])
def test_auto_moves_a_job_with_many_comparisons_to_the_cluster(client, monkeypatch, strategy):
    """A skewed block makes a small input a big job: it moves after the profile (the
    sketch profile of a cell strategy is taken again for the cluster's threads)."""
    monkeypatch.setattr(local, "LOCAL_MAX_COMPARISONS", 100)
    df_r, df_s = _people(120, 2, "aaaaab"), _people(90, 3, "aaaaab")
    pairs = erblock.link(df_r, df_s, key="k", compare=COMPARE, client=client,
                         strategy=strategy, n_tasks=5)
    assert _executor(pairs) == "local, then cluster"
    got = pair_list(pairs)
    assert len(got) == len(set(got)) and set(got) == brute_link(df_r, df_s, ["k"])
    workers = {t.worker for t in RunReport.of(pairs).tasks}
    assert "local" not in workers  # the reduce tasks ran on the cluster's workers


@pytest.mark.auto_executor
def test_dask_frames_samples_and_big_inputs_start_on_the_cluster(client, monkeypatch):
    df = _people(200, 4)
    ddf = dd.from_pandas(df, npartitions=2)
    assert _executor(erblock.dedupe(ddf, key="k", compare=COMPARE, client=client)) == "cluster"
    sampled = erblock.dedupe(df, key="k", compare=COMPARE, client=client,
                             sample={"delta": 0.5, "alpha": 0.9})
    assert _executor(sampled) == "cluster"
    monkeypatch.setattr(local, "LOCAL_MAX_RECORDS", 199)
    assert _executor(erblock.dedupe(df, key="k", compare=COMPARE, client=client)) == "cluster"


@pytest.mark.auto_executor
def test_a_p2p_shuffle_starts_on_the_cluster(client):
    """Dask's p2p shuffle needs distributed's workers: a small pandas job asking for it
    runs on the cluster (it failed in this process's threaded scheduler), and
    ``executor="local"`` with it is refused before anything runs."""
    df = _people(300, 14)
    pairs = erblock.dedupe(df, key="k", compare=COMPARE, client=client, n_tasks=3,
                           shuffle_method="p2p")
    assert _executor(pairs) == "cluster"
    got = pair_list(pairs)
    assert len(got) == len(set(got)) and set(got) == brute_dedupe(df, ["k"])
    with pytest.raises(ValueError, match="shuffle_method='p2p' runs on a distributed "
                                         "cluster only, but executor='local'"):
        erblock.dedupe(df, key="k", compare=COMPARE, executor="local",
                       shuffle_method="p2p")


def test_local_never_moves_and_needs_no_cluster(monkeypatch):
    """``executor="local"`` stays whatever the comparisons, and never connects: an
    address nobody listens on is not even tried (``"cluster"`` does try it)."""
    monkeypatch.setattr(local, "LOCAL_MAX_COMPARISONS", 1)
    df = _people(150, 5)
    nobody = "tcp://127.0.0.1:9"
    pairs = erblock.dedupe(df, key="k", compare=COMPARE, client=nobody, executor="local")
    assert _executor(pairs) == "local"
    assert {t.worker for t in RunReport.of(pairs).tasks} == {"local"}
    assert set(pair_list(pairs)) == brute_dedupe(df, ["k"])
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}), \
            pytest.raises(ConnectionError, match="could not connect"):
        erblock.dedupe(df, key="k", compare=COMPARE, client=nobody, executor="cluster")


def test_em_scoring_here_equals_the_cluster(client):
    df_r, df_s, _ = generate(400, task="link", n_blocks=20, seed=6)
    kw = dict(key="block_key", compare={"first_name": "name", "surname": "name",
                                        "dob": "date", "city": "exact"},
              scoring="em", client=client, sort=True, n_tasks=3, npartitions=2)
    here = erblock.link(df_r, df_s, executor="local", **kw)
    there = erblock.link(df_r, df_s, executor="cluster", **kw)
    pd.testing.assert_frame_equal(here, there)
    assert erblock.load_model(here).to_dict() == erblock.load_model(there).to_dict()


def test_written_output_with_cardinality_here_equals_the_cluster(client, tmp_path):
    df_r, df_s = _people(300, 8), _people(250, 9)
    kw = dict(key="k", compare=COMPARE, client=client, threshold=0.5, cardinality="1:1",
              sort=True, n_tasks=3)
    outs = {}
    for ex in ("local", "cluster"):
        written = erblock.link(df_r, df_s, output=str(tmp_path / ex), executor=ex, **kw)
        outs[ex] = (written.compute().sort_values(["left_id", "right_id"])
                    .reset_index(drop=True))
        assert erblock.read_report(str(tmp_path / ex)).settings["executor"] == ex
    pd.testing.assert_frame_equal(outs["local"], outs["cluster"])
    assert len(outs["local"])


def test_candidates_and_plan_here(client):
    df_r, df_s = _people(200, 10), _people(180, 11)
    kw = dict(key="k", client=client, n_tasks=4)
    here = erblock.candidates(df_r, df_s, executor="local", **kw)
    there = erblock.candidates(df_r, df_s, executor="cluster", **kw)
    assert set(pair_list(here)) == set(pair_list(there)) == brute_link(df_r, df_s, ["k"])
    p_here = erblock.plan(df_r, df_s, executor="local", **kw)
    p_there = erblock.plan(df_r, df_s, executor="cluster", **kw)
    assert p_here.total_comparisons == p_there.total_comparisons
    assert np.array_equal(p_here.loads, p_there.loads)


def test_progress_and_errors_here(capsys):
    df = _people(100, 12)
    erblock.dedupe(df, key="k", compare=COMPARE, executor="local", progress=True)
    assert "compare" not in capsys.readouterr().err  # nothing to watch: already done

    def bad_key(frame: pd.DataFrame) -> pd.Series:  # fails in the task, not on a sample
        if "p12-99" in frame.index:
            raise RuntimeError("this key cannot be computed")
        return frame["k"]

    with pytest.raises(ValueError, match="'bad_key' raised RuntimeError: this key cannot"):
        erblock.dedupe(df, key=bad_key, compare=COMPARE, executor="local")


def test_bad_executor_and_client_are_refused():
    df = _people(20, 13)
    with pytest.raises(ValueError, match="executor must be one of auto, cluster, local"):
        erblock.dedupe(df, key="k", compare=COMPARE, executor="threads")
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        erblock.dedupe(df, key="k", compare=COMPARE, client=5, executor="local")
