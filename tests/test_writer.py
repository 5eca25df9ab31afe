"""The streaming parquet writer (erblock/engine/tasks/write.py, sides.pair_table): arrow
tables built without pandas come back as the in-memory result (ids of every dtype the
frame path kept, float32 similarities); a row group's text-id dictionary holds only the
ids it uses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import erblock


def _people(n: int, ids: str) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    names = np.array(["anna", "anne", "bob", "rob", "zoë", "li", ""], dtype=object)
    df = pd.DataFrame({"k": rng.integers(0, 4, n),
                       "name": names[rng.integers(0, len(names), n)],
                       "city": np.array(["york", "hull"], dtype=object)[rng.integers(0, 2, n)]})
    if ids == "text":
        df.index = pd.Index([f"person-{i:06d}" for i in range(n)], dtype=object)
    elif ids == "string":
        df.index = pd.Index([f"p{i}" for i in range(n)], dtype="string")
    elif ids == "bytes":
        df.index = pd.Index([f"b{i}".encode() for i in range(n)], dtype=object)
    elif ids == "nullable":
        df.index = pd.Index(np.arange(n) * 7, dtype="Int64")
    return df


@pytest.mark.parametrize("ids", ["int", "text", "string", "bytes", "nullable"])
def test_streamed_parts_read_back_as_the_in_memory_result(client, tmp_path, ids: str) -> None:
    df = _people(600, ids)
    compare = {"name": "jaro_winkler", "city": "exact"}
    mem = erblock.dedupe(df, key="k", compare=compare, client=client, sort=True)
    out = tmp_path / "o"
    ret = erblock.dedupe(df, key="k", compare=compare, client=client, output=str(out))
    # the returned frame's ids have the dtype they came in with (object text was string)
    assert ret.dtypes["left_id"] == mem.dtypes["left_id"] == df.index.dtype
    assert ret.dtypes["right_id"] == mem.dtypes["right_id"]
    back = pd.read_parquet(out)
    assert back["name_jaro_winkler"].dtype == np.float32 == mem["score"].dtype
    key = ["left_id", "right_id"]
    a = mem.sort_values(key).reset_index(drop=True)
    b = back.sort_values(key).reset_index(drop=True)
    assert [type(x) for x in b["left_id"][:3]] == [type(x) for x in a["left_id"][:3]]
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_a_row_groups_text_dictionary_holds_only_its_ids(client, tmp_path) -> None:
    df = _people(4000, "text")
    out = tmp_path / "o"
    res = erblock.dedupe(df, key="k", compare={"name": "jaro_winkler", "city": "exact"},
                         client=client, output=str(out), threshold=0.99, n_tasks=2)
    kept = len(res.compute()) if hasattr(res, "compute") else len(res)
    assert kept > 0
    for part in sorted(out.glob("part-*.parquet")):
        table = pq.read_table(part, read_dictionary=["left_id", "right_id"])
        for col in ("left_id", "right_id"):
            for chunk in table[col].chunks:
                # only ids this row group holds, not the task's 2,000 records
                assert len(chunk.dictionary) <= len(chunk)
