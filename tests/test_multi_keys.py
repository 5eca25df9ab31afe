"""Multi-valued keys (tokens, q-grams, lists, MinHash) end to end against the brute force.

A record sits in one block per key; a pair sharing several blocks, or several passes, is
compared exactly once. For every registered strategy and ``auto``, link and dedupe,
skewed token frequencies (one word in most records), missing and empty texts, and a
single-valued pass before or after the multi-valued one: the pairs equal the oracle's
(tests/oracle.py, which computes keys without erblock's key code), none twice; the plan
counts every block's pairs, so for exact plans the planned comparisons exceed the
performed ones by exactly the redundant pairs (``repeat_pairs_skipped``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import brute_dedupe, brute_link, key_rows, key_values, pair_list
from strategies import cluster_settings

import erblock
from erblock.balancing import STRATEGIES
from erblock.blocking import (
    block_id_items,
    items,
    lower,
    minhash,
    prune,
    qgrams,
    sorted_neighbourhood,
    tokens,
)
from erblock.blocking.multi import text_tokens, tokens_of_texts
from erblock.blocking.text import fold_text, fold_texts
from erblock.report import RunReport

STRATEGY_LIST = sorted(STRATEGIES) + ["auto"]
WORDS = ["the", "the", "the", "canon", "eos", "Camera", "digital", "a-b", "zoom", "ñu"]
CITY = ["x", "x", "y", None, "", " ", " x"]
COMPARE = {"t": "jaro_winkler"}
KEYS = {
    "tokens": [tokens("t")],
    "single then tokens": ["city", tokens("t")],
    "tokens then single": [tokens("t"), "city"],
    "tokens and q-grams": [tokens("t"), qgrams("t", 4)],
    "minhash": [minhash("t", bands=4, rows=2)],
    "sorted neighbourhood": [sorted_neighbourhood("city", 3)],
    "single, tokens, sorted neighbourhood": ["city", tokens("t"),
                                             sorted_neighbourhood(lower("t"), 4)],
    "sorted neighbourhood then tokens": [sorted_neighbourhood("t", 2), tokens("t")],
    "numeric sorted neighbourhood": [sorted_neighbourhood("num", 3)],
}
NUMBERS = [-10, -1.5, -0.0, 0, 2, 9, 10, 100, 1e18, 1e18 + 1]


@st.composite
def frames(draw, max_size=30):
    n = draw(st.integers(0, max_size))
    start = draw(st.integers(0, 1000))
    text = st.one_of(st.none(), st.just(""),
                     st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join))
    return pd.DataFrame(
        {"t": pd.Series(draw(st.lists(text, min_size=n, max_size=n)), dtype=object),
         "city": pd.Series(draw(st.lists(st.sampled_from(CITY), min_size=n, max_size=n)),
                           dtype=object),
         "num": pd.Series(draw(st.lists(st.one_of(st.none(), st.sampled_from(NUMBERS)),
                                        min_size=n, max_size=n)), dtype=np.float64)},
        index=pd.RangeIndex(start, start + n))


def _block_pairs(rows: list[pd.DataFrame]) -> int:
    """Pairs counted block by block (what the plan counts): per pass, per key, n(n−1)/2
    for dedupe or n_R·n_S for link."""
    total = 0
    for r in rows:
        if len(r):
            total += int(r.groupby("k").size().map(lambda n: n * (n - 1) // 2).sum())
    return total


def _check(pairs: pd.DataFrame, expected: set, planned_raw: int | None, plan) -> None:
    report = RunReport.of(pairs)
    got = pair_list(pairs)
    assert len(got) == len(set(got)), "a pair was compared twice"
    assert set(got) == expected
    assert report.comparisons == len(expected)
    if not plan.estimated:
        assert (report.task_comparisons <= plan.loads).all(), "a task did more than planned"
        not_compared = report.prediction["planned_pairs_not_compared"]
        assert not_compared == plan.total_comparisons - len(expected)
        skipped = report.prediction["repeat_pairs_skipped"]
        if planned_raw is not None:  # no sorted neighbourhood: the rest are repeats
            assert plan.total_comparisons == planned_raw
            assert skipped == not_compared
        else:  # its blocks hold pairs beyond the window, which are no repeats
            assert skipped is None


# every strategy on the richest mix; the other key sets on a split and a cell strategy
CASES = ([(s, "single, tokens, sorted neighbourhood") for s in STRATEGY_LIST]
         + [(s, k) for k in KEYS if k != "single, tokens, sorted neighbourhood"
            for s in ("pairrange", "cellrange")])


@pytest.mark.parametrize(("strategy", "label"), CASES)
@cluster_settings(2)
@given(df=frames(), m=st.integers(1, 4), r=st.integers(1, 9))
def test_dedupe_multi_valued_matches_brute_force(client, strategy, label, df, m, r):
    keys = KEYS[label]
    pairs = erblock.dedupe(df, key=keys, compare=COMPARE, strategy=strategy, n_tasks=r,
                           client=client, npartitions=m, cost_model="default")
    plan = erblock.plan(df, key=keys, strategy=strategy, n_tasks=r, client=client,
                        npartitions=m, cost_model="default")
    raw = None if any(getattr(k, "ordered", False) for k in keys) else _block_pairs(
        [key_rows(df, k) for k in keys])
    _check(pairs, brute_dedupe(df, keys), raw, plan)
    pos = {label: i for i, label in enumerate(df.index)}
    assert all(pos[a] < pos[b] for a, b in pair_list(pairs)), "left must precede right"


@pytest.mark.parametrize("strategy", ["blocksplit", "cellrange"])
@pytest.mark.parametrize("label", ["tokens", "single, tokens, sorted neighbourhood",
                                   "numeric sorted neighbourhood"])
@cluster_settings(3)
@given(df_r=frames(), df_s=frames(), m=st.integers(1, 4), r=st.integers(1, 9))
def test_link_multi_valued_matches_brute_force(client, strategy, label, df_r, df_s, m, r):
    keys = KEYS[label]
    pairs = erblock.link(df_r, df_s, key=keys, compare=COMPARE, strategy=strategy,
                         n_tasks=r, client=client, npartitions=m, cost_model="default")
    got = pair_list(pairs)
    assert len(got) == len(set(got)) and set(got) == brute_link(df_r, df_s, keys)


def test_sorted_neighbourhood_orders_a_numeric_column_by_number(client):
    """9 < 10 < 100 as numbers (as text "10" < "100" < "9"); NaN takes no part; a column
    numeric in one source and text in the other is refused, naming it."""
    df = pd.DataFrame({"num": [100, 9, np.nan, -3.5, 10]})
    pairs = erblock.dedupe(df, key=sorted_neighbourhood("num", 2), compare={"num": "numeric"},
                           client=client)
    assert set(pair_list(pairs)) == {(1, 3), (1, 4), (0, 4)} == brute_dedupe(
        df, [sorted_neighbourhood("num", 2)])
    as_text = df.assign(num=df["num"].astype(str))
    with pytest.raises(ValueError, match="'num' is numeric in .*df_r.* not in .*df_s"):
        erblock.link(df, as_text, key=sorted_neighbourhood("num", 2), compare={"num": "exact"},
                     client=client)


def test_sorted_neighbourhood_decides_number_or_text_once_from_the_meta(client):
    """A Dask partition whose dtype strays from the meta (text meta, one partition of
    ints) is ordered as text like the others, not by number: one order for the pass."""
    import dask
    import dask.dataframe as dd

    text = pd.DataFrame({"num": ["10", "9", "30"]}, index=[0, 1, 2])
    ints = pd.DataFrame({"num": [100, 20, 4]}, index=[3, 4, 5])
    ddf = dd.from_delayed([dask.delayed(text.copy)(), dask.delayed(ints.copy)()],
                          meta=text.iloc[:0], verify_meta=False)
    pairs = erblock.dedupe(ddf, key=sorted_neighbourhood("num", 2), compare={"num": "exact"},
                           client=client)
    whole = pd.DataFrame({"num": ["10", "9", "30", "100", "20", "4"]})
    # as text: 10 < 100 < 20 < 30 < 4 < 9 (by number it would be 4 < 9 < 10 < 20 ...)
    assert set(pair_list(pairs)) == {(0, 3), (3, 4), (2, 4), (2, 5), (1, 5)} == brute_dedupe(
        whole, [sorted_neighbourhood("num", 2)])
    # numbers in the meta, words in a partition: refused, naming the column
    words = pd.DataFrame({"num": ["x", "y"]}, index=[6, 7])
    bad = dd.from_delayed([dask.delayed(ints.copy)(), dask.delayed(words.copy)()],
                          meta=ints.iloc[:0], verify_meta=False)
    with pytest.raises(ValueError, match="'num' is numeric in the input's meta"):
        erblock.dedupe(bad, key=sorted_neighbourhood("num", 2), compare={"num": "exact"},
                       client=client)


def test_one_giant_token_block_is_split_and_each_pair_compared_once(client):
    """"the" in every record: pairrange splits its block over tasks; pairs that also share
    another word are compared in that word's block or this one, never both."""
    rng = np.random.default_rng(3)
    words = np.array(["canon", "eos", "zoom", "lens", "sony", "nikon"])
    df = pd.DataFrame({"t": ["the " + " ".join(rng.choice(words, 2)) for _ in range(400)]})
    pairs = erblock.dedupe(df, key=tokens("t"), compare=COMPARE, strategy="pairrange",
                           n_tasks=8, client=client)
    expected = brute_dedupe(df, [tokens("t")])
    assert len(expected) == 400 * 399 // 2
    got = pair_list(pairs)
    assert len(got) == len(set(got)) and set(got) == expected
    report = RunReport.of(pairs)
    plan = erblock.plan(df, key=tokens("t"), strategy="pairrange", n_tasks=8, client=client)
    assert plan.imbalance <= 1.05
    # the redundant pairs are the ones sharing more than "the"
    assert report.prediction["repeat_pairs_skipped"] == plan.total_comparisons - len(expected)
    assert report.prediction["repeat_pairs_skipped"] > 0


def test_list_columns_and_functions(client):
    df = pd.DataFrame({"tags": [["a", "b"], ["b"], None, [], ("a", 1), 1.0],
                       "t": ["x", "y", "z", "w", "v", "u"]})
    pairs = erblock.dedupe(df, key=items("tags"), compare=COMPARE, client=client)
    assert set(pair_list(pairs)) == {(0, 1), (0, 4), (4, 5)}
    split = erblock.dedupe(df.assign(s=["a b", "b", None, "", "a 1", "1"]),
                           key=items(lambda d: d["s"].str.split(), needs="s"),
                           compare=COMPARE, client=client)
    assert set(pair_list(split)) == {(0, 1), (0, 4), (4, 5)}


def test_minhash_finds_similar_sets_and_is_reproducible():
    """Recall of pairs with Jaccard >= the threshold on generated sets (documented, not
    tuned: bands and rows come from the threshold) and identical keys for one seed."""
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(400)])
    base = [set(rng.choice(vocab, 10, replace=False)) for _ in range(300)]
    texts = [" ".join(sorted(s)) for s in base]
    # a near copy of every set: one word of ten replaced (Jaccard 9/11 = 0.82)
    near = [" ".join(sorted(sorted(s)[1:] + [f"x{i}"])) for i, s in enumerate(base)]
    df = pd.DataFrame({"t": texts + near})
    key = minhash("t", 0.7)
    pos, ids = block_id_items(df, key)
    again = block_id_items(df, minhash("t", 0.7))
    assert np.array_equal(ids, again[1]) and np.array_equal(pos, again[0])
    shared = pd.DataFrame({"pos": pos, "id": ids})
    m = shared.merge(shared, on="id")
    found = set(zip(m["pos_x"], m["pos_y"]))
    recall = np.mean([(i, i + 300) in found for i in range(300)])
    b, r = key.shape
    expected = 1 - (1 - (9 / 11) ** r) ** b  # the LSH curve at this Jaccard: 0.92
    assert abs(recall - expected) < 4 * np.sqrt(expected * (1 - expected) / 300)
    other = minhash("t", 0.7, seed=2)
    assert not np.array_equal(block_id_items(df, other)[1], ids)


def test_multi_valued_keys_read_and_write_their_dicts():
    from erblock.blocking import key_from_dict, parse_key
    for k in [tokens("t", 2), qgrams("t", 2), items("tags"), minhash("t", 0.6, q=3),
              minhash("t", bands=5, rows=3, seed=9)]:
        assert key_from_dict(k.to_dict()) == k
    assert parse_key("tokens:title") == tokens("title")
    assert parse_key("qgrams:title:2") == qgrams("title", 2)
    assert parse_key("minhash:title:0.7") == minhash("title", 0.7)
    assert parse_key("items:tags") == items("tags")
    with pytest.raises(ValueError, match="threshold"):
        parse_key("minhash:title:seven")
    with pytest.raises(ValueError, match="q must be"):
        qgrams("t", 0)


def _pruned_pairs(texts: list, max_c: int | None, keep: float | None,
                  others: list | None = None) -> set[tuple]:
    """The oracle of pruning: words per record (tests/oracle.py's meaning), blocks above
    ``max_c`` comparisons dropped, each record kept in its ``keep`` smallest blocks (ties
    by block id: erblock's documented 64-bit hash of the word), plus an unpruned pass."""
    from collections import Counter

    from erblock.blocking.ids import hash_keys

    words = [set(v) for v in key_rows_sets(texts)]
    size = Counter(w for ws in words for w in ws)
    comps = {w: c * (c - 1) // 2 for w, c in size.items()}
    if max_c == "auto":
        max_c = jedai_purge_limit([comps[w] for w in size], [size[w] for w in size])
    ids = {w: int(hash_keys(pd.Series([w]))[0]) for w in size}
    kept = []
    for ws in words:
        left = sorted((w for w in ws if comps[w] > 0 and (max_c is None or comps[w] <= max_c)),
                      key=lambda w: (comps[w], ids[w]))
        if keep is not None:
            k = keep if isinstance(keep, int) else max(1, int(np.ceil(len(left) * keep - 1e-9)))
            left = left[:k]
        kept.append(set(left))
    n = len(texts)
    out = {(i, j) for i in range(n) for j in range(i + 1, n) if kept[i] & kept[j]}
    if others is not None:
        out |= {(i, j) for i in range(n) for j in range(i + 1, n)
                if others[i] is not None and others[i] != "" and others[i] == others[j]}
    return out


def jedai_purge_limit(comps: list, sizes: list, smoothing: float = 1.025) -> float:
    """The oracle of ``max_comparisons="auto"``: JedAI's comparison-based block purging,
    its loop as written in JedAI (one level only: nothing purged, where JedAI's loop
    would return 0)."""
    levels: list = []
    bc: list = []
    cc: list = []
    for c, s in sorted((c, s) for c, s in zip(comps, sizes) if c > 0):
        if not levels or c != levels[-1]:
            levels.append(c)
            bc.append(bc[-1] if bc else 0)
            cc.append(cc[-1] if cc else 0)
        bc[-1] += s
        cc[-1] += c
    if len(levels) <= 1:
        return levels[0] if levels else 0
    cur_size = cur_bc = cur_cc = 0
    for i in range(len(levels) - 1, -1, -1):
        prev_size, prev_bc, prev_cc = cur_size, cur_bc, cur_cc
        cur_size, cur_bc, cur_cc = levels[i], bc[i], cc[i]
        if cur_bc * prev_cc < smoothing * cur_cc * prev_bc:
            break
    return prev_size


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), max_size=40),
       st.sampled_from([1.0, 1.025, 1.5]))
def test_auto_purge_limit_is_jedais(blocks, smoothing):
    """purge_threshold (vectorised) equals JedAI's loop, dedupe sizes and link sizes."""
    from erblock.blocking.pruning import purge_threshold
    for link in (False, True):
        comps = [a * b if link else a * (a - 1) // 2 for a, b in blocks]
        sizes = [a + b if link else a for a, b in blocks]
        got = purge_threshold(np.array(comps, dtype=float), np.array(sizes, dtype=float),
                              smoothing)
        assert got == jedai_purge_limit(comps, sizes, smoothing)


def key_rows_sets(texts: list) -> list[set]:
    """The oracle's words of every text."""
    df = pd.DataFrame({"t": pd.Series(texts, dtype=object)})
    return [set(v) for v in key_values(df, tokens("t"))]


@pytest.mark.parametrize(("strategy", "max_c", "keep"), [
    ("pairrange", 40, None), ("pairrange", None, 2), ("pairrange", 60, 0.5),
    ("cellrange", 40, None), ("cellrange", None, 2), ("cellrange", "auto", 0.5),
    ("blocksplit", "auto", None)])
def test_purging_and_filtering_drop_what_they_say(client, strategy, max_c, keep):
    rng = np.random.default_rng(5)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(0, 5))) for _ in range(120)]
    city = list(rng.choice(["x", "y", None, ""], size=120))
    df = pd.DataFrame({"t": texts, "city": pd.Series(city, dtype=object)})
    key = prune(tokens("t"), max_c, keep)
    pairs = erblock.dedupe(df, key=[key, "city"], compare=COMPARE, strategy=strategy,
                           n_tasks=5, client=client, npartitions=3)
    got = pair_list(pairs)
    assert len(got) == len(set(got))
    assert set(got) == _pruned_pairs(texts, max_c, keep, city)
    (info,) = RunReport.of(pairs).settings["pruning"]
    assert info["comparisons_after"] < info["comparisons_before"]
    if max_c is not None:
        limit = info["purge_limit"]
        assert info["max_comparisons"] == max_c and (max_c == "auto" or limit == max_c)
        assert info["purged_blocks"] >= 1 and info["purged_comparisons"] > limit


@pytest.mark.parametrize(("max_c", "keep"), [("auto", 0.8), (None, 1)])
def test_link_filtering_ranks_only_blocks_with_pairs(client, max_c, keep):
    """In a link, a word of one source only is no block: filtering ranks a record's
    blocks shared with the other source (oracle: words per record, JedAI's rule)."""
    from collections import Counter

    from erblock.blocking.ids import hash_keys

    rng = np.random.default_rng(11)
    only_r = ["qq", "zz", "yy"]  # words of R only: the smallest "blocks" if counted
    tr = [" ".join(rng.choice(WORDS + only_r, size=rng.integers(1, 5))) for _ in range(60)]
    ts = [" ".join(rng.choice(WORDS, size=rng.integers(0, 4))) for _ in range(50)]
    wr, ws = key_rows_sets(tr), key_rows_sets(ts)
    nr, ns = Counter(w for x in wr for w in x), Counter(w for x in ws for w in x)
    comps = {w: nr[w] * ns[w] for w in set(nr) | set(ns)}
    limit = (jedai_purge_limit([comps[w] for w in comps], [nr[w] + ns[w] for w in comps])
             if max_c == "auto" else None)
    ids = {w: int(hash_keys(pd.Series([w]))[0]) for w in comps}

    def kept(words: set) -> set:
        left = sorted((w for w in words if comps[w] > 0 and (limit is None or comps[w] <= limit)),
                      key=lambda w: (comps[w], ids[w]))
        k = keep if isinstance(keep, int) else max(1, int(np.ceil(len(left) * keep - 1e-9)))
        return set(left[:k])

    kr, ks = [kept(x) for x in wr], [kept(x) for x in ws]
    want = {(i, j) for i in range(len(tr)) for j in range(len(ts)) if kr[i] & ks[j]}
    pairs = erblock.link(pd.DataFrame({"t": tr}), pd.DataFrame({"t": ts}),
                         key=prune(tokens("t"), max_c, keep), compare=COMPARE,
                         n_tasks=4, client=client, npartitions=2)
    got = pair_list(pairs)
    assert len(got) == len(set(got)) and set(got) == want and want


def test_pruning_specs_and_refusals():
    from erblock.blocking import key_from_dict, parse_key
    k = prune(tokens("t"), 1000, 0.8)
    assert key_from_dict(k.to_dict()) == k
    assert parse_key("purge:1000:tokens:t") == prune(tokens("t"), 1000)
    assert parse_key("filter:2:tokens:t") == prune(tokens("t"), keep=2)
    assert parse_key("purge:1000:filter:0.8:tokens:t") == k
    a = prune(tokens("t"), "auto", 0.8, smoothing=1.1)
    assert key_from_dict(a.to_dict()) == a
    assert parse_key("purge:auto:filter:0.8:tokens:t") == prune(tokens("t"), "auto", 0.8)
    assert a.resolved(17).max_comparisons == 17 and k.resolved(17) == k
    for twice in ("purge:10:purge:20:tokens:t", "filter:2:filter:3:tokens:t",
                  "purge:10:filter:2:purge:5:tokens:t"):  # the last one silently won
        with pytest.raises(ValueError, match="given twice"):
            parse_key(twice)
    with pytest.raises(ValueError, match="max_comparisons must be"):
        prune(tokens("t"), "most")
    with pytest.raises(ValueError, match="smoothing must be"):
        prune(tokens("t"), "auto", smoothing=0.9)
    with pytest.raises(ValueError, match="multi-valued"):
        prune(lower("t"), 10)
    with pytest.raises(ValueError, match="keep must be"):
        prune(tokens("t"), keep=1.5)
    with pytest.raises(ValueError, match="give max_comparisons"):
        prune(tokens("t"))


def test_key_spec_edge_cases_from_review():
    """keep=1.0 keeps every block; pruned keys and sorted neighbourhood are passes of
    their own; numpy integers still give JSON dicts; order tables keep NUL characters."""
    import json

    from erblock.blocking import composite, key_from_dict
    from erblock.blocking.neighbourhood import order_starts
    assert prune(tokens("t"), keep=1.0).kept(np.array([5, 1])).tolist() == [5, 1]
    assert prune(tokens("t"), keep=1).kept(np.array([5, 1])).tolist() == [1, 1]
    with pytest.raises(ValueError, match="one prune"):
        prune(prune(tokens("t"), 10), keep=2)
    with pytest.raises(ValueError, match="composite key cannot hold"):
        composite(prune(tokens("t"), 10), "city")
    with pytest.raises(ValueError, match="composite key cannot hold"):
        composite(sorted_neighbourhood("t", 3), "city")
    for k in (tokens("t", np.int64(2)), qgrams("t", np.int64(2)),
              prune(tokens("t"), np.int64(9), np.int64(2))):
        assert key_from_dict(json.loads(json.dumps(k.to_dict()))).to_dict() == k.to_dict()
    counts = {(0, 0): pd.Series([2, 1], index=["a\x00", "a"]), (0, 1): pd.Series([1], ["b"])}
    starts = order_starts(counts)
    assert starts[(0, 0)].to_dict() == {"a\x00": 1, "a": 0} and starts[(0, 1)]["b"] == 3


# text as a pandas string column can hold it (no lone surrogates: UTF-8 refuses them)
@given(st.lists(st.text(alphabet=st.sampled_from(list("aZ9 _-.,'\t\n\x00é Ñß𝔘Ⅻ²"))
                        | st.characters(blacklist_categories=("Cs",)), max_size=20),
                max_size=40),
       st.integers(1, 3), st.integers(0, 3))
def test_token_splitting_without_a_loop_equals_the_one_text_rule(texts, min_length, cut):
    """The arrow path (ASCII texts) and the per-text path split alike, slices too."""
    arr = pa.array(texts, type=pa.string())[min(cut, len(texts)):]
    want = [text_tokens(fold_text(t), min_length) for t in texts[min(cut, len(texts)):]]
    lens, flat = tokens_of_texts(arr, min_length)
    assert lens.tolist() == [len(w) for w in want]
    assert flat.tolist() == [k for w in want for k in w]


@given(st.lists(st.text(alphabet=st.sampled_from([chr(i) for i in range(128)]
                                                 + list("ÁéßİΣ\u00a0\u2003\u0085ｓ"))
                        | st.characters(blacklist_categories=("Cs",)), max_size=20),
                max_size=40))
def test_folding_many_texts_equals_the_one_text_rule(texts):
    """Arrow's ASCII kernels (every ASCII character, the separators \\x1c-\\x1f that
    Python counts as space) and the per-text path fold alike."""
    assert fold_texts(texts).tolist() == [fold_text(t) for t in texts]


def test_white_space_is_what_python_calls_space():
    """blank() trims these characters with Arrow: the list is every character that
    str.isspace accepts, no more and no fewer."""
    import sys

    from erblock.blocking.text import PY_WHITESPACE

    every = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert every == PY_WHITESPACE


@given(st.lists(st.none() | st.text(alphabet=st.sampled_from(
    [chr(i) for i in range(128)] + list("Á\u00a0\u2003\u0085\u3000\u200bｓ")), max_size=6),
    max_size=30))
def test_blank_empty_and_separable_keep_the_python_rules(values):
    """Arrow's trim, length and byte test give what the per-value Python rules give."""
    from erblock.blocking.text import SEPARATOR, blank, empty, separable

    s = pd.Series(values, dtype=object)
    assert blank(s).tolist() == [v is None or v == "" or v.isspace() for v in values]
    assert empty(s).tolist() == [not v for v in values]
    want = [None if v is None else v.replace("\x1e", "\x1e\x1e").replace(
        SEPARATOR, "\x1e" + SEPARATOR) for v in values]
    assert [None if x is pd.NA else x for x in separable(s).tolist()] == want


def test_texts_written_like_lists_are_refused_with_the_way_out(client):
    """Dask turns a list column into its texts ("['a', 'b']"): every record would block
    on its whole text, finding nothing. Refused, naming the key and what to do."""
    import dask
    import dask.dataframe as dd

    df = pd.DataFrame({"tags": [["a", "b"], ["b"], ["c"]], "t": ["x", "y", "z"]})
    with pytest.raises(TypeError, match=r"items\('tags'\).*written like lists.*convert-string"):
        erblock.dedupe(dd.from_pandas(df, npartitions=2), key=items("tags"), compare=COMPARE,
                       client=client)
    with dask.config.set({"dataframe.convert-string": False}):
        kept = dd.from_pandas(df, npartitions=2)
    pairs = erblock.dedupe(kept, key=items("tags"), compare=COMPARE, client=client)
    assert set(pair_list(pairs)) == {(0, 1)}
    # one list among scalars is enough (Dask wrote it as text: the record meets nothing)
    with pytest.raises(TypeError, match="written like lists"):
        erblock.dedupe(dd.from_pandas(df.assign(tags=[["a", "b"], "a", None]), npartitions=1),
                       key=items("tags"), compare=COMPARE, client=client)
    # bracketed words are keys like any other, however the partitions fall
    words = pd.DataFrame({"tags": ["[draft]", "[draft]", "(none)", "(none)", "[2019]"],
                          "t": list("xyzwv")})
    for frame in (words, dd.from_pandas(words, npartitions=3)):
        plain = erblock.dedupe(frame, key=items("tags"), compare=COMPARE, client=client)
        assert set(pair_list(plain)) == {(0, 1), (2, 3)}
