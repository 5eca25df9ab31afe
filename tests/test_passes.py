"""A blocking pass that finds nothing although both inputs have keys in it (a link whose
inputs write the key column differently; a dedupe keyed on an identifier) is warned
about before the run, and what every pass finds is in the run report."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import erblock
from erblock.balancing.bdm import SRC_R, SRC_S
from erblock.balancing.passes import PassOverlap, pass_overlaps, unmet_passes
from erblock.blocking import NULL_BLOCK, column, date, lower, tokens


def test_overlaps_by_hand():
    """Blocks 1, 2 (pass 0) and 7, 8 (pass 1), rows split over partitions, a null row."""
    block = np.array([1, 1, 2, 2, 7, 8, NULL_BLOCK])
    src = np.array([SRC_R, SRC_S, SRC_R, SRC_R, SRC_R, SRC_S, SRC_S])
    count = np.array([3, 2, 1, 4, 5, 6, 9])
    passes = np.array([0, 0, 0, 0, 1, 1, -1])
    link = pass_overlaps(block, src, count, passes, 2, link=True)
    assert link == (PassOverlap(0, (8, 2), (3, 2), 6), PassOverlap(1, (5, 6), (0, 0), 0))
    one = pass_overlaps(block, np.zeros(7, int), count, passes, 2, link=False)
    # dedupe: block 1 has 5 records (10 pairs), 2 has 5 (10), 7 has 5, 8 has 6 (15)
    assert one == (PassOverlap(0, (10, 0), (10, 0), 20), PassOverlap(1, (11, 0), (11, 0), 25))
    assert PassOverlap.from_dict(link[1].to_dict()) == link[1]
    # a row of no pass (a record without a key is NULL_BLOCK; pass -1 elsewhere too)
    odd = pass_overlaps(np.array([5, 5]), np.array([SRC_R, SRC_S]), np.array([2, 3]),
                        np.array([-1, -1]), 1, link=True)
    assert odd == (PassOverlap(0, (0, 0), (0, 0), 0),)
    assert pass_overlaps(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0), 2,
                         link=False) == (PassOverlap(0, (0, 0), (0, 0), 0),
                                         PassOverlap(1, (0, 0), (0, 0), 0))


def test_which_passes_are_unmet():
    unmet = PassOverlap(0, (500, 200), (2, 1), 2)  # 1 of 200 met: under 1 %
    met = PassOverlap(1, (500, 200), (10, 2), 40)  # 2 of 200: 1 %, met
    few = PassOverlap(2, (500, 40), (0, 0), 0)  # 40 keyed: too few to judge
    keys = [column("dob"), lower("name"), column("zip")]
    got = unmet_passes([unmet, met, few], keys, link=True)
    assert len(got) == 1 and got[0].startswith("blocking pass 0 (Column(column='dob'")
    assert "200 of df_s have a key, but only 2 and 1" in got[0] and "date(column)" in got[0]
    # multi-valued passes are not judged (similar texts may share no MinHash band)
    assert unmet_passes([unmet], [tokens("title")], link=True) == []
    alone = PassOverlap(0, (60, 0), (0, 0), 0)
    assert "has a key no other record has" in unmet_passes([alone], [column("id")],
                                                           link=False)[0]
    assert unmet_passes([PassOverlap(0, (60, 0), (2, 0), 1)], [column("id")], False) == []


def _dates(n: int) -> pd.DataFrame:
    i = np.arange(n)
    return pd.DataFrame({"dob": [f"{1 + k % 12:02d}/{1 + k % 28:02d}/19{50 + k % 40}"
                                 for k in i], "name": [f"n{k % 7}" for k in i]})


def _quietly(run, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(*args, **kwargs)


def test_a_link_pass_on_dates_written_differently_is_warned_about(client):
    """The census writes MM/DD/YYYY, the register YYYYMMDD: a pass on the raw column
    shares no block (it found nothing, silently); date() meets them."""
    census = _dates(120)
    register = census.assign(dob=pd.to_datetime(census["dob"], format="%m/%d/%Y")
                             .dt.strftime("%Y%m%d"))
    pairs = _quietly(erblock.link, census, register, key=["dob", date("dob")],
                     compare={"name": "exact"}, client=client)
    settings = erblock.RunReport.of(pairs).settings
    assert settings["passes"] == [
        {"pass": 0, "keyed": [120, 120], "shared": [0, 0], "comparisons": 0},
        {"pass": 1, "keyed": [120, 120], "shared": [120, 120], "comparisons": 120}]
    (line,) = settings["unmet_passes"]
    assert "blocking pass 0" in line and "'dob'" in line and "finds 0 pairs" in line
    assert len(pairs) == 120
    # the warning itself, on the client's thread (the run is on this process's cluster)
    with pytest.warns(UserWarning, match="share almost no key value"):
        erblock.link(census, register, key="dob", compare={"name": "exact"}, client=client)
    # inputs that write it alike: nothing said
    same = erblock.link(census, census, key="dob", compare={"name": "exact"}, client=client)
    assert "unmet_passes" not in erblock.RunReport.of(same).settings


def test_a_dedupe_pass_on_an_identifier_is_warned_about(client):
    df = _dates(80).assign(row=np.arange(80))
    pairs = _quietly(erblock.dedupe, df, key=["row", "name"], compare={"dob": "exact"},
                     client=client)
    (line,) = erblock.RunReport.of(pairs).settings["unmet_passes"]
    assert "blocking pass 0" in line and "'row'" in line and "no pair" in line


def test_sorted_neighbourhood_passes_are_not_counted(client):
    """A sorted-neighbourhood pass's blocks repeat records at their edges: its block
    counts (records keyed twice, pairs beyond the window) are not reported as the pass's."""
    from erblock.blocking import sorted_neighbourhood

    df = _dates(300).assign(year=lambda d: d["dob"].str[-4:])
    pairs = erblock.dedupe(df, key=[sorted_neighbourhood("name", 5), "year"],
                           compare={"name": "exact"}, client=client)
    (only,) = erblock.RunReport.of(pairs).settings["passes"]
    assert only["pass"] == 1 and only["keyed"][0] == len(df)
