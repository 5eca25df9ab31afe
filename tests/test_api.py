"""Bad input to the public API: clear errors naming the argument or column."""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest

import erblock

DF = pd.DataFrame({"k": ["a", "a", "b"], "name": ["x", "y", "z"], "age": [1, 2, 3]})


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(key="kk", compare={"name": "jaro"}), KeyError, "key column 'kk' is not in df.*did you mean 'k'"),
    (dict(key="k", compare={"nme": "jaro"}), KeyError, "compare column 'nme'.*did you mean 'name'"),
    (dict(key="k", compare={"name": "jaro"}, strategy="blocksplt"), ValueError, "did you mean 'blocksplit'"),
    (dict(key="k", compare={"name": "jaro"}, n_tasks=0), ValueError, "n_tasks must be an integer >= 1"),
    (dict(key="k", compare={"name": "jaro"}, n_tasks=2.5), ValueError, "n_tasks"),
    (dict(key="k", compare={"name": "jaro"}, threshold=1.5), ValueError, r"threshold must be a number in \[0, 1\]"),
    (dict(key="k", compare={"age": "jaro_winkler"}), TypeError, "holds numbers"),
    (dict(key=None, compare={"name": "jaro"}), ValueError, "key is required"),
    (dict(key="k"), ValueError, "compare is required"),
    (dict(key="k", compare={"name": "jaro"}, bogus=1), TypeError, "bogus"),
    (dict(key="k", compare=[erblock.comparison("age", "numeric", name="left_id")]),
     ValueError, "compare: 'left_id' names a column of the pairs frame.*another name="),
    (dict(key="k", compare=[erblock.comparison("age", "numeric", name="score"),
                            erblock.comparison("name", "exact")], scoring="em"),
     ValueError, "compare: 'score' names a column of the pairs frame"),
    (dict(key="k", compare=[erblock.comparison("name", "exact", name="match_key")]),
     ValueError, "'match_key' names a column"),
])
def test_errors(kwargs, exc, match, client):
    with pytest.raises(exc, match=match):
        erblock.dedupe(DF, client=client, **kwargs)


def test_non_dataframe_input(client):
    with pytest.raises(TypeError, match="df_r must be a pandas or Dask DataFrame, got list"):
        erblock.link([1, 2], DF, key="k", compare={"name": "jaro"}, client=client)


def test_duplicate_index_labels(client):
    bad = DF.set_axis([0, 0, 1])
    with pytest.raises(ValueError, match="repeated labels"):
        erblock.dedupe(bad, key="k", compare={"name": "jaro"}, client=client)


def test_dask_frame_with_restarting_index_is_caught(client):
    ddf = dd.from_pandas(DF, npartitions=1)
    both = dd.concat([ddf, ddf])  # index 0..2 twice
    with pytest.raises(ValueError, match="record ids are not unique"):
        erblock.dedupe(both, key="k", compare={"name": "jaro"}, client=client)


def test_id_column_is_used(client):
    df = DF.assign(rid=["r1", "r2", "r3"])
    pairs = erblock.dedupe(df, key="k", compare={"name": "jaro"}, id="rid", client=client)
    assert pairs[["left_id", "right_id"]].values.tolist() == [["r1", "r2"]]


def test_scheduler_address_that_does_not_answer():
    import dask

    # the connect timeout follows Dask's setting; keep the test short
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), pytest.raises(
        ConnectionError, match="could not connect"
    ):
        erblock.dedupe(DF, key="k", compare={"name": "jaro"}, client="tcp://127.0.0.1:1")


def test_reserved_column_names(client):
    with pytest.raises(ValueError, match="reserved"):
        erblock.dedupe(DF.assign(_erb_x=1), key="k", compare={"name": "jaro"}, client=client)


def test_public_namespace_lists_the_api_only():
    """``dir(erblock)`` (tab completion) shows the API and its subpackages, each of which
    resolves, and none of ``__init__``'s own imports."""
    import erblock as eb

    listed = set(dir(eb))
    assert set(eb.__all__) <= listed
    assert not {"Any", "TYPE_CHECKING", "annotations", "importlib"} & listed
    for name in sorted(listed - {"__version__"}):
        assert getattr(eb, name) is not None, name
