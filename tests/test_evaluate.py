"""evaluate / pr_curve / plot_pr_curve / cluster_metrics on hand-made frames and brute force."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from erblock.matchers.evaluate import (
    cluster_metrics,
    evaluate,
    ids_in_common,
    plot_pr_curve,
    pr_curve,
)


def frame(rows, score=None):
    df = pd.DataFrame(rows, columns=["left_id", "right_id"])
    if score is not None:
        df["score"] = score
    return df


# --------------------------------------------------------------------------- evaluate


def test_evaluate_dedupe_hand_counts():
    # candidates: {1,2} (listed twice, reversed), {4,5}, {3,4}, {6,7}
    pairs = frame([(1, 2), (2, 1), (4, 5), (3, 4), (6, 7)], [0.9, 0.8, 0.7, 0.6, 0.2])
    truth = frame([(2, 1), (3, 4), (8, 9), (5, 5)])  # (5, 5) is no pair and is ignored
    m = evaluate(pairs, truth, threshold=0.5, n_left=10)
    # predicted {1,2} {4,5} {3,4}: tp {1,2} {3,4}; fp {4,5}; fn {8,9}
    assert (m["tp"], m["fp"], m["fn"]) == (2, 1, 1)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["pair_completeness"] == pytest.approx(2 / 3)  # {8,9} was never a candidate
    assert m["reduction_ratio"] == pytest.approx(1 - 4 / 45)
    assert (m["n_predicted"], m["n_candidates"], m["n_true"]) == (3, 4, 3)
    assert m["threshold"] == 0.5


def test_evaluate_link_is_ordered_and_allows_mixed_id_types():
    truth = frame([("conf/a", 10), ("conf/b", 11), ("conf/c", 12)])
    pairs = frame([("conf/a", 10), ("conf/b", 12), ("conf/c", 12), ("conf/d", 13)])
    m = evaluate(pairs, truth, n_left=4, n_right=5)
    assert (m["tp"], m["fp"], m["fn"]) == (2, 2, 1)
    assert m["precision"] == 0.5
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["reduction_ratio"] == pytest.approx(1 - 4 / 20)
    assert m["pair_completeness"] == pytest.approx(2 / 3)
    # link: reversed pairs are different pairs
    m = evaluate(frame([(1, 2)]), frame([(2, 1)]), n_left=3, n_right=3)
    assert m["tp"] == 0
    m = evaluate(frame([(1, 2)]), frame([(2, 1)]), dedupe=False)
    assert m["tp"] == 0
    # dedupe (inferred when n_right is absent): the same pair
    assert evaluate(frame([(1, 2)]), frame([(2, 1)]))["tp"] == 1


def test_evaluate_candidates_and_threshold():
    pairs = frame([(1, 2), (3, 4)], [0.9, 0.4])
    cands = frame([(1, 2), (3, 4), (5, 6), (7, 8)])
    truth = frame([(1, 2), (5, 6), (9, 10)])
    m = evaluate(pairs, truth, threshold=0.5, candidates=cands, n_left=10)
    assert (m["tp"], m["fp"], m["fn"]) == (1, 0, 2)
    assert m["pair_completeness"] == pytest.approx(2 / 3)
    assert m["reduction_ratio"] == pytest.approx(1 - 4 / 45)
    assert m["n_candidates"] == 4
    # no n_left: no reduction ratio
    assert evaluate(pairs, truth)["reduction_ratio"] is None


def test_a_model_s_pairs_are_judged_on_match_probability():
    """Pairs a model scored carry both columns: the threshold applies to its decision
    column, match_probability (it applied to score, which a model does not decide on);
    the report command's quality uses the model's default decision, p >= 0.5."""
    from erblock.report_html import quality_from_truth

    pairs = pd.DataFrame({"left_id": [1, 1, 2, 3], "right_id": [2, 3, 3, 4],
                          "score": [0.9, 0.9, 0.2, 0.2],
                          "match_probability": [0.95, 0.1, 0.7, 0.01]})
    truth = pd.DataFrame({"left_id": [1, 2], "right_id": [2, 3]})
    m = evaluate(pairs, truth, threshold=0.5)
    assert (m["tp"], m["fp"], m["n_predicted"]) == (2, 0, 2)
    assert evaluate(pairs, truth, threshold=0.5, score_column="score")["fp"] == 1
    report = {"mode": "dedupe", "records": {"records_r": 5}, "settings": {}}
    q = quality_from_truth(report, truth, pairs=pairs)
    assert (q["precision"], q["recall"], q["threshold"]) == (1.0, 1.0, 0.5)


def test_evaluate_empty_predictions_give_nan_precision():
    m = evaluate(frame([(1, 2)], [0.1]), frame([(1, 2)]), threshold=0.5)
    assert (m["tp"], m["fp"], m["fn"]) == (0, 0, 1)
    assert math.isnan(m["precision"])
    assert m["recall"] == 0.0
    assert m["f1"] == 0.0  # 2 tp / (predicted + true), as sklearn's f1_score gives it
    assert m["pair_completeness"] == 1.0
    with warnings.catch_warnings():  # an empty truth's object ids are no mismatch
        warnings.simplefilter("error")
        none = evaluate(frame([(1, 2)], [0.1]), frame([]), threshold=0.5)
    assert math.isnan(none["f1"]) and math.isnan(none["recall"])  # nothing either side
    assert evaluate(frame([(1, 2)], [0.9]), frame([]), threshold=0.5)["f1"] == 0.0


def test_evaluate_errors_and_warnings():
    with pytest.raises(ValueError, match=r"truth: missing column\(s\) \['right_id'\]"):
        evaluate(frame([(1, 2)]), pd.DataFrame({"left_id": [1]}))
    with pytest.raises(ValueError, match="no score column 'p'"):
        evaluate(frame([(1, 2)], [0.5]), frame([(1, 2)]), threshold=0.5, score_column="p")
    with pytest.raises(ValueError, match="n_right given without n_left"):
        evaluate(frame([(1, 2)]), frame([(1, 2)]), n_right=3)
    with pytest.raises(ValueError, match=r"dedupe=True\), which has a single input: drop n_right"):
        evaluate(frame([(1, 2)]), frame([(1, 2)]), n_left=3, n_right=3, dedupe=True)
    truth = frame([(1, 2)]).astype("str")
    with pytest.warns(UserWarning, match=r"1 \(or 1.0\) never equals '1'"):
        assert evaluate(frame([(1, 2)]), truth)["tp"] == 0
    # float ids (a truth CSV with a blank cell) against text ids warn too (they did not)
    with pytest.warns(UserWarning, match=r"(left|right)_id: pairs has \w+ ids and truth has "
                                         r"float64 ids"):
        assert evaluate(frame([(1, 2)]).astype(str), frame([(1, 2)]).astype(float))["tp"] == 0


def test_evaluate_bundled_truth_against_itself():
    from erblock.datasets import load_dblp_acm

    dblp, acm, truth = load_dblp_acm()
    m = evaluate(truth, truth, n_left=len(dblp), n_right=len(acm))
    assert (m["precision"], m["recall"], m["pair_completeness"]) == (1.0, 1.0, 1.0)
    assert m["tp"] == 2224
    assert m["reduction_ratio"] == pytest.approx(1 - 2224 / (2616 * 2294))


# --------------------------------------------------------------------------- pr_curve


def test_pr_curve_literal():
    pairs = frame([(1, 2), (4, 5), (3, 4), (6, 7), (7, 6)], [0.9, 0.7, 0.7, 0.2, 0.6])
    truth = frame([(2, 1), (3, 4), (8, 9)])
    curve = pr_curve(pairs, truth)
    # {6,7} appears twice: counts once, with its best score 0.6; 0.7 is a tie of two pairs
    assert curve["threshold"].tolist() == [0.9, 0.7, 0.6]
    assert curve["precision"].tolist() == pytest.approx([1.0, 2 / 3, 0.5])
    assert curve["recall"].tolist() == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert curve["f1"].tolist() == pytest.approx([0.5, 2 / 3, 4 / 7])


def test_pr_curve_reads_a_models_scores_without_being_told():
    # a model's pairs: match_weight ranks where the probabilities all round to 1.0
    pairs = frame([(1, 2), (3, 4), (5, 6)], [0.0, 0.0, 0.0]).drop(columns="score")
    pairs["match_weight"] = [60.0, 55.0, -3.0]
    pairs["match_probability"] = [1.0, 1.0, 0.11]
    truth = frame([(1, 2)])
    curve = pr_curve(pairs, truth)
    assert curve["threshold"].tolist() == [60.0, 55.0, -3.0]
    assert curve["precision"].tolist() == pytest.approx([1.0, 0.5, 1 / 3])
    by_p = pr_curve(pairs.drop(columns="match_weight"), truth)
    assert by_p["threshold"].tolist() == [1.0, 0.11]  # the tie at 1.0 is one row
    with pytest.raises(ValueError, match="no score column 'score'"):
        pr_curve(pairs[["left_id", "right_id"]], truth)


def test_pr_curve_of_no_scored_pair_is_empty():
    """A blocking that found nothing (or pairs without a score) gives an empty curve, not
    an IndexError (found with a key column whose values differ between the sources)."""
    truth = frame([(2, 1), (3, 4)])
    for pairs in (frame(np.zeros((0, 2), dtype=np.int64), []),
                  frame([(1, 2), (3, 4)], [np.nan, np.nan])):
        curve = pr_curve(pairs, truth)
        assert curve.empty and list(curve.columns) == ["threshold", "precision", "recall",
                                                        "f1"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6), st.sampled_from([0.1, 0.3, 0.5, 0.8])),
        min_size=1,
        max_size=25,
    ),
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=10),
    st.booleans(),
)
def test_pr_curve_agrees_with_evaluate(rows, true_rows, dedupe):
    pairs = pd.DataFrame(rows, columns=["left_id", "right_id", "score"])
    truth = frame(true_rows)
    if dedupe:  # no self pairs in dedupe
        pairs = pairs[pairs["left_id"] != pairs["right_id"]]
        truth = truth[truth["left_id"] != truth["right_id"]]
        if pairs.empty or truth.empty:
            return
    curve = pr_curve(pairs, truth, dedupe=dedupe)
    for t, p, r, f in curve.itertuples(index=False):
        with warnings.catch_warnings():  # random ids may look like a swapped truth
            warnings.simplefilter("ignore", UserWarning)
            m = evaluate(pairs, truth, threshold=t, dedupe=dedupe)
        assert p == pytest.approx(m["precision"])
        assert r == pytest.approx(m["recall"])
        assert f == pytest.approx(m["f1"], nan_ok=True)


def test_plot_pr_curve_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    pairs = frame([(1, 2), (3, 4), (5, 6)], [0.9, 0.5, 0.2])
    curve = pr_curve(pairs, frame([(1, 2), (5, 6)]))
    out = plot_pr_curve(curve, tmp_path / "pr.png", title="test")
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- cluster_metrics


def s(labels):
    return pd.Series(labels, index=[f"r{i}" for i in range(len(labels))])


@pytest.mark.parametrize(
    ("pred", "true", "ari"),
    [
        # values from scikit-learn's adjusted_rand_score documentation
        ([0, 0, 1, 1], [0, 0, 1, 1], 1.0),
        ([0, 0, 1, 1], [1, 1, 0, 0], 1.0),
        ([0, 0, 1, 2], [0, 0, 1, 1], 4 / 7),
        ([0, 0, 1, 1], [0, 0, 1, 2], 4 / 7),
        ([0, 0, 0, 0], [0, 1, 2, 3], 0.0),
        ([0, 0, 1, 1], [0, 1, 0, 1], -0.5),
        ([0, 1, 2, 3], [0, 1, 2, 3], 1.0),  # all singletons on both sides
    ],
)
def test_adjusted_rand_index_literal(pred, true, ari):
    assert cluster_metrics(s(pred), s(true))["adjusted_rand_index"] == pytest.approx(ari)


def test_cluster_metrics_pairwise_literal_and_alignment():
    pred = s(["a", "a", "a", "b", "c"])  # pairs: 01 02 12
    true = s([7, 7, 8, 8, 9])  # pairs: 01 23
    m = cluster_metrics(pred, true.iloc[::-1])  # aligned by index, not position
    assert (m["tp"], m["pred_pairs"], m["true_pairs"]) == (1, 3, 2)
    assert m["precision"] == pytest.approx(1 / 3)
    assert m["recall"] == pytest.approx(1 / 2)
    assert m["f1"] == pytest.approx(0.4)
    assert (m["n_records"], m["n_pred_clusters"], m["n_true_clusters"]) == (5, 3, 3)
    with pytest.raises(ValueError, match="must label the same records"):
        cluster_metrics(pred, true.iloc[:4])


def brute_force(pred, true):
    """Pair-counting definitions, straight from the pairs."""
    tp = fp = fn = tn = 0
    for i, j in itertools.combinations(range(len(pred)), 2):
        same_p, same_t = pred[i] == pred[j], true[i] == true[j]
        tp += same_p and same_t
        fp += same_p and not same_t
        fn += same_t and not same_p
        tn += not same_p and not same_t
    # ARI from the 2x2 pair confusion matrix (the form scikit-learn uses)
    den = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)
    ari = 1.0 if den == 0 else 2.0 * (tp * tn - fn * fp) / den
    return tp, tp + fp, tp + fn, ari


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=30),
)
def test_cluster_metrics_equal_brute_force(labels):
    pred, true = [a for a, _ in labels], [b for _, b in labels]
    m = cluster_metrics(s(pred), s(true))
    tp, pred_pairs, true_pairs, ari = brute_force(pred, true)
    assert (m["tp"], m["pred_pairs"], m["true_pairs"]) == (tp, pred_pairs, true_pairs)
    assert m["adjusted_rand_index"] == pytest.approx(ari)
    if pred_pairs:
        assert m["precision"] == pytest.approx(tp / pred_pairs)
    else:
        assert math.isnan(m["precision"])


def test_a_link_s_pairs_keep_true_pairs_of_equal_ids():
    """Ids of the two inputs of a link may coincide: (1, 1) is a true link, not a
    self-pair; the pairs' own report says they are a link's."""
    truth = pd.DataFrame({"left_id": [1, 2, 5], "right_id": [1, 2, 5]})
    pairs = pd.DataFrame({"left_id": [1, 2, 3], "right_id": [1, 2, 9]})
    pairs.attrs["erblock_report"] = {"mode": "link"}
    m = evaluate(pairs, truth)
    assert (m["tp"], m["n_true"]) == (2, 3)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    pairs.attrs["erblock_report"] = {"mode": "dedupe"}
    assert evaluate(pairs, truth)["n_true"] == 0  # a dedupe's self-pairs are not duplicates


def test_a_link_s_pairs_without_their_report_still_keep_true_pairs_of_equal_ids(client):
    """Pairs written with output= (a Dask frame) or read back from parquet carry no
    report: a pair of equal ids says they are a link's (a dedupe never pairs a record
    with itself); pr_curve decides alike; Dask frames are taken as they are."""
    import erblock

    r = pd.DataFrame({"name": ["anna", "bert", "carl", "dora"], "city": ["x", "y", "z", "w"]})
    truth = frame([(0, 0), (1, 1), (2, 2), (3, 3)])
    mem = erblock.link(r, r.copy(), key="city", compare={"name": "jaro_winkler"}, client=client)
    bare = mem.copy()
    bare.attrs = {}
    m = evaluate(mem, truth)
    assert (m["precision"], m["recall"], m["n_true"]) == (1.0, 1.0, 4)
    for pairs in (bare, dd_of(bare)):  # it says how it decided, and the way out
        with pytest.warns(UserWarning, match=r"taken as a link's \(pass n_right=, or "):
            m = evaluate(pairs, truth)
        assert (m["precision"], m["recall"], m["n_true"]) == (1.0, 1.0, 4)
    # the candidates tell as well when no kept pair has equal ids
    cand = frame([(1, 1), (1, 2), (2, 2)], [0.4, 0.9, 0.3])
    with pytest.warns(UserWarning, match="taken as a link's"):
        m = evaluate(cand[cand["score"] >= 0.5], truth, candidates=cand)
    assert (m["n_true"], m["pair_completeness"]) == (4, 0.5)
    # a missing id (pd.NA) is refused (it was coded as another pair); a missing id column
    # is named
    na = pd.DataFrame({"left_id": pd.array(["a", None], dtype="string"),
                       "right_id": pd.array(["b", "c"], dtype="string")})
    with pytest.raises(ValueError, match="pairs hold missing record ids: 1 row has a "
                                         "missing left_id"):
        evaluate(na, na.iloc[:1])
    with pytest.raises(ValueError, match=r"pairs: missing column\(s\) \['left_id'\]"):
        evaluate(pd.DataFrame({"right_id": [1]}), truth)
    assert pr_curve(mem, truth)["recall"].iloc[-1] == 1.0
    with pytest.raises(ValueError, match="link's .*pass both"):
        evaluate(mem, truth, n_left=4)
    with pytest.warns(UserWarning, match="swapped"):
        evaluate(frame([(f"a{i}", f"b{i}") for i in range(5)]),
                 frame([(f"b{i}", f"a{i}") for i in range(5)]), n_left=5, n_right=5)


def dd_of(df: pd.DataFrame):
    import dask.dataframe as dd

    return dd.from_pandas(df, npartitions=2)


def test_ids_of_different_dtypes_are_matched_exactly():
    """uint64 pairs against int64 truth (as read_csv gives): a plain concat makes both
    float64, where 19-digit neighbours are one id (precision 1.0 for a pair that is
    not true)."""
    b = 1_500_000_000_000_000_000
    pairs = pd.DataFrame({"left_id": np.array([b, b + 2], dtype="uint64"),
                          "right_id": np.array([b + 1, b + 3], dtype="uint64")})
    truth = pd.DataFrame({"left_id": [b], "right_id": [b + 1]})
    for dedupe in (True, False):
        m = evaluate(pairs, truth, dedupe=dedupe)
        assert (m["n_predicted"], m["tp"], m["precision"]) == (2, 1, 0.5), (dedupe, m)
    assert ids_in_common(pairs, truth) == 2
    assert ids_in_common(pairs, truth.assign(right_id=b + 5)) == 1
    # ints and floats of one value are still one id
    small = pd.DataFrame({"left_id": [1], "right_id": [2]})
    assert evaluate(small, small.astype("float64"), dedupe=True)["tp"] == 1
    # a dedupe's self-pairs are found exactly: 2**62 + 1 against the float 2**62 is no
    # self-pair (numpy's promotion made them equal)
    big = pd.DataFrame({"left_id": np.array([2**62 + 1], dtype="int64"),
                        "right_id": np.array([2.0**62])})
    assert evaluate(small, big, dedupe=True)["n_true"] == 1
    assert pr_curve(small.assign(score=[0.5]), big, dedupe=True)["recall"].tolist() == [0.0]


def test_truth_that_is_no_frame_is_refused_naming_what_to_pass():
    pairs = pd.DataFrame({"left_id": [1], "right_id": [2]})
    with pytest.raises(TypeError, match=r"truth must be a pandas or Dask DataFrame.*list"):
        evaluate(pairs, [(1, 2)])


# --------------------------------------------------------------------------- refused input


def test_a_row_without_one_of_its_ids_is_refused_naming_frame_and_column():
    """pd.factorize codes a missing id -1, whose key is another pair's: (1, 3) was
    counted as the true (2, NaN); a dedupe's row without a partner counted as a pair."""
    pairs = frame([(1, 3), (2, 5)], [0.9, 0.9])
    for dedupe in (False, True):
        with pytest.raises(ValueError, match=r"^evaluate: truth holds missing record ids: "
                                             r"1 row has a missing right_id; a true pair "
                                             r"needs both ids: drop the rows without a "
                                             r"partner$"):
            evaluate(pairs, frame([(2, np.nan)]), dedupe=dedupe)
    with pytest.raises(ValueError, match=r"pairs hold missing record ids: 2 rows have a "
                                         r"missing left_id and 1 row has a missing right_id"):
        evaluate(frame([(None, "a"), (None, "b"), ("c", None)]), frame([("a", "b")]))
    with pytest.raises(ValueError, match="candidates hold missing record ids"):
        evaluate(pairs, frame([(1, 3)]), candidates=frame([(1.0, np.nan)]))
    with pytest.raises(ValueError, match=r"^pr_curve: truth holds missing record ids"):
        pr_curve(pairs, frame([(2, np.nan), (1, 5)]), dedupe=False)
    with pytest.raises(ValueError, match="pairs hold missing record ids"):
        pr_curve(frame([(1, pd.NA)], [0.9]).astype({"right_id": "Int64"}), frame([(1, 3)]))


def test_a_float32_score_at_the_threshold_is_predicted_as_the_run_kept_it():
    """A run writes float32 scores and keeps score >= float32(threshold): evaluate at
    that threshold predicts the pair (float32 0.7 is below the float64 0.7), and agrees
    with pr_curve's row for that score."""
    pairs = frame([(0, 1), (1, 2), (2, 3)],
                  np.array([0.7, 0.9, 0.3], dtype=np.float32))
    truth = frame([(0, 1), (1, 2)])
    for t in (0.7, np.float64(0.7), np.float32(0.7)):
        m = evaluate(pairs, truth, threshold=t)
        assert (m["tp"], m["n_predicted"]) == (2, 2), t
    curve = pr_curve(pairs, truth)
    row = curve[curve["threshold"] == np.float32(0.7)].iloc[0]
    m = evaluate(pairs, truth, threshold=0.7)
    assert (row["precision"], row["recall"]) == (m["precision"], m["recall"]) == (1.0, 1.0)
    # a float64 column compares in float64
    assert evaluate(pairs.astype({"score": "float64"}), truth, threshold=0.7)["tp"] == 1


def test_thresholds_and_input_sizes_that_cannot_be_are_refused():
    pairs = frame([(1, 2), (3, 4)], [0.9, 0.4])
    truth = frame([(1, 2)])
    with pytest.raises(ValueError, match=r"threshold: score lies in \[0, 1\], so 50"):
        evaluate(pairs, truth, threshold=50)
    with pytest.raises(TypeError, match=r"threshold must be a number or None, got '0.5' "
                                        r"\(str\)"):
        evaluate(pairs, truth, threshold="0.5")
    with pytest.raises(ValueError, match="threshold: NaN keeps no pair"):
        evaluate(pairs, truth, threshold=float("nan"))
    weighted = pairs.assign(match_weight=[12.0, -3.0])  # bits: any real number
    assert evaluate(weighted, truth, threshold=5, score_column="match_weight")["tp"] == 1
    with pytest.raises(ValueError, match=r"n_left must be the number of input records "
                                         r"\(>= 0\), got -5"):
        evaluate(pairs, truth, n_left=-5)
    with pytest.raises(TypeError, match=r"n_left must be the number of input records "
                                        r"\(an int\), got 4.5 \(float\)"):
        evaluate(pairs, truth, n_left=4.5)
    with pytest.raises(ValueError, match=r"n_left=2 is fewer records than the 4 distinct "
                                         r"ids the candidate pairs hold"):
        evaluate(pairs, truth, n_left=2)  # its reduction ratio was -2.0
    with pytest.raises(ValueError, match=r"n_right=1 is fewer records than the 2 distinct "
                                         r"ids right_id of the candidate pairs holds.*df_s"):
        evaluate(pairs, truth, n_left=2, n_right=1)
    assert evaluate(pairs, truth, n_left=4)["reduction_ratio"] == pytest.approx(1 - 2 / 6)
    assert evaluate(pairs, truth, n_left=np.int64(2), n_right=2)["reduction_ratio"] == 0.5
    assert evaluate(pairs, truth, n_left=4.0)["reduction_ratio"] == pytest.approx(1 - 2 / 6)
    with pytest.raises(ValueError, match=r"threshold: an integer of 401 digits is beyond"):
        evaluate(weighted, truth, threshold=10 ** 400, score_column="match_weight")


def test_cluster_metrics_of_no_record_and_of_plain_lists():
    m = cluster_metrics(pd.Series([], dtype=int), pd.Series([], dtype=int))
    assert (m["tp"], m["pred_pairs"], m["n_records"], m["adjusted_rand_index"]) == (0, 0, 0,
                                                                                     1.0)
    assert math.isnan(m["precision"]) and math.isnan(m["f1"])
    for bad in ([1, 1], np.array([1, 1]), pd.DataFrame({"a": [1, 1]})):
        with pytest.raises(TypeError, match=r"pred_labels must be a pandas Series of cluster "
                                            r"labels indexed by record id.*pd.Series\(labels, "
                                            r"index=record_ids\)"):
            cluster_metrics(bad, s([1, 1]))
    with pytest.raises(TypeError, match="true_labels must be a pandas Series"):
        cluster_metrics(s([1, 1]), [1, 1])


def test_report_truth_refuses_a_blank_id_and_reads_integral_floats_as_integers(tmp_path):
    """A truth CSV with a blank cell: its column is float (47 reads 47.0) and the blank
    NaN; against a run's text ids both became text, "47.0" and "nan", and nothing
    matched."""
    from erblock.report_html import quality_from_truth

    report = {"mode": "dedupe", "records": {"records_r": 60}, "settings": {}}
    pairs = frame([("47", "48"), ("3", "9")], [0.9, 0.8])  # a CSV run's ids are text
    (tmp_path / "t.csv").write_text("left_id,right_id\n47,48\n5,\n")
    with pytest.raises(ValueError, match=r"^truth holds missing record ids: 1 row has a "
                                         r"missing right_id; a true pair needs both ids"):
        quality_from_truth(report, tmp_path / "t.csv", pairs=pairs)
    (tmp_path / "t.csv").write_text("left_id,right_id\n47,48\n5,6.0\n")
    q = quality_from_truth(report, tmp_path / "t.csv", pairs=pairs)
    assert (q["tp"], q["n_true"], q["recall"]) == (1, 2, 0.5)
    q = quality_from_truth(report, frame([(47.0, 48.0), (5.0, 6.0)]), pairs=pairs)
    assert (q["tp"], q["n_true"]) == (1, 2)


def test_pairs_a_run_cut_are_judged_against_what_the_run_compared(client, tmp_path):
    """A run's whole output kept at its threshold is not its candidates: the reduction
    ratio uses the run's count of compared pairs (and its input sizes) and pair
    completeness is unknown (it was the recall). A threshold below the run's own is
    refused (it counted the run's pairs as the lower threshold's prediction). A
    selection the user makes of a run's pairs is taken as it is (per pass, a labelled
    subset), with its own n_left."""
    import dask.dataframe as dd

    import erblock
    from erblock.datasets import generate

    df, truth = generate(800, seed=3)
    comp = {"first_name": "jaro_winkler", "surname": "jaro_winkler", "city": "jaro"}
    full = erblock.dedupe(df, key="block_key", compare=comp, client=client)
    kept = erblock.dedupe(df, key="block_key", compare=comp, threshold=0.9, client=client)
    every = evaluate(full, truth, threshold=0.9, n_left=len(df))
    total = len(df) * (len(df) - 1) // 2
    m = evaluate(kept, truth)  # the sizes come from the run's report
    assert m["pair_completeness"] is None
    assert m["n_candidates"] == len(full)
    assert m["reduction_ratio"] == pytest.approx(every["reduction_ratio"])
    assert m["reduction_ratio"] == pytest.approx(1 - len(full) / total)
    for k in ("precision", "recall", "f1", "tp", "n_predicted"):
        assert m[k] == every[k], k
    with pytest.raises(ValueError, match=r"threshold=0.5: these pairs are those the run kept "
                                         r"at score >= 0.9; a lower threshold"):
        evaluate(kept, truth, threshold=0.5)
    links = erblock.link(df.iloc[:400], df.iloc[400:], key="block_key", compare=comp,
                         scoring="em", cardinality="1:1", client=client)
    with pytest.raises(ValueError, match=r"kept at match_probability >= 0.5"):
        evaluate(links, truth, threshold=-5, score_column="match_weight")  # in bits too
    assert evaluate(links, truth, threshold=1, score_column="match_weight")["n_candidates"] \
        > len(links)
    assert evaluate(kept, truth, threshold=0.95)["n_predicted"] == evaluate(
        full, truth, threshold=0.95)["n_predicted"]
    assert evaluate(kept, truth, candidates=full)["pair_completeness"] == \
        every["pair_completeness"]
    # a selection of the full output: its own candidates, with the n_left given
    chosen = full[full["score"] >= np.float32(0.9)]
    mine = evaluate(chosen, truth, n_left=len(df))
    assert mine["n_candidates"] == len(chosen) and mine["pair_completeness"] == mine["recall"]
    labelled = df.index[:300]
    sub = full[full["left_id"].isin(labelled) & full["right_id"].isin(labelled)]
    part = truth[truth["left_id"].isin(labelled) & truth["right_id"].isin(labelled)]
    got = evaluate(sub, part, n_left=300)
    assert got["reduction_ratio"] == pytest.approx(1 - len(sub) / (300 * 299 // 2))
    assert got["pair_completeness"] is not None
    # a model's run written with output=: its decision column is match_probability,
    # whatever columns are read back (the Dask frame gives only those asked for)
    out = str(tmp_path / "o")
    erblock.dedupe(df, key="block_key", compare=comp, scoring="em", threshold=0.9,
                   client=client, output=out)
    lazy = dd.read_parquet(out)
    on_score = evaluate(lazy, truth, threshold=0.5, score_column="score")
    assert on_score["pair_completeness"] is None  # still the run's cut output
    with pytest.raises(ValueError, match=r"kept at match_probability >= 0.9"):
        evaluate(lazy, truth, threshold=0.5)
