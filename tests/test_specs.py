"""Run options and jobs are frozen specs whose dict form rebuilds them exactly (also
through JSON), and bad options are refused with a message naming them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from erblock.balancing.cost import CostModel
from erblock.balancing.progressive import SampleGoal
from erblock.balancing.strategies import CellOptions
from erblock.blocking import composite, prefix, soundex
from erblock.engine.job import ENCODE_CHOICES, SHUFFLE_METHODS, Job, RunOptions
from erblock.matchers.comparisons import as_comparisons

options = st.builds(
    RunOptions,
    npartitions=st.none() | st.integers(1, 64),
    shuffle_method=st.sampled_from(SHUFFLE_METHODS),
    persist=st.booleans(), progress=st.booleans(), sort=st.booleans(),
    overwrite=st.booleans(), cell_budget=st.integers(1, 10**8),
    memory_budget=st.none() | st.just("auto") | st.integers(1, 2**40),
    cost_model=st.none() | st.sampled_from(["calibrate", "default"])
    | st.just(CostModel()),
    sample=st.none() | st.just(SampleGoal()),
    encode=st.sampled_from(ENCODE_CHOICES),
)


@given(options)
def test_run_options_round_trip_through_json(opts):
    back = RunOptions.from_dict(json.loads(json.dumps(opts.to_dict())))
    assert back == opts


def test_strategy_options_round_trip():
    opts = RunOptions(strategy_options=CellOptions())
    assert RunOptions.from_dict(opts.to_dict(), strategy="cellblock") == opts


@pytest.mark.parametrize("bad, match", [
    ({"shuffle_method": "fast"}, "shuffle_method must be one of"),
    ({"encode": "sometimes"}, "encode must be one of"),
    ({"npartitions": 0}, "npartitions must be an integer >= 1"),
    ({"cost_model": "guess"}, "cost_model must be None"),
])
def test_bad_run_options_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        RunOptions(**bad)


def test_job_round_trips():
    job = Job(mode="link", keys=(soundex("surname"), composite("year", prefix("title", 3))),
              comparisons=as_comparisons({"surname": "name", "dob": "date",
                                          "title": "text"}),
              strategy="pairrange", n_tasks=7, threshold=0.8, id_columns=("rid", None),
              output=None, options=RunOptions(npartitions=3, sort=True), cardinality="1:n")
    d = json.loads(json.dumps(job.to_dict()))
    assert Job.from_dict(d) == job


def test_every_registered_key_kind_round_trips_through_json_and_its_cli_form():
    """One example per kind of the registry (a new kind without one fails here): its
    dict form, through JSON, rebuilds it; its command-line form, when it has one, too."""
    from erblock.blocking import (
        KEY_KINDS,
        DateKey,
        DigitsKey,
        Lower,
        Phonetic,
        items,
        key_from_dict,
        minhash,
        parse_key,
        prune,
        qgrams,
        sorted_neighbourhood,
        token,
        tokens,
    )
    from erblock.blocking.keys import Column
    examples = {
        "column": (Column("year"), "year"), "lower": (Lower("city"), "lower:city"),
        "prefix": (prefix("title", 3), "prefix:title:3"),
        "token": (token("title", 1), "token:title:1"),
        "phonetic": (Phonetic("surname", "nysiis"), "nysiis:surname"),
        "composite": (composite("year", prefix("title", 2)), "year+prefix:title:2"),
        "date": (DateKey("dob", "year", "%d/%m/%Y"), "date:dob:year:%d/%m/%Y"),
        "digits": (DigitsKey("phone", 7), "digits:phone:7"),
        "tokens": (tokens("title", 2), "tokens:title:2"),
        "qgrams": (qgrams("title", 4), "qgrams:title:4"),
        "items": (items("tags"), "items:tags"),
        "minhash": (minhash("title", 0.6), "minhash:title:0.6"),
        "sorted_neighbourhood": (sorted_neighbourhood("surname", 4), "sn:surname:4"),
        "pruned": (prune(tokens("title"), 500, 0.5), "purge:500:filter:0.5:tokens:title"),
    }
    assert set(examples) == set(KEY_KINDS)
    for kind, (spec, cli) in examples.items():
        assert spec.kind == kind
        assert key_from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
        assert parse_key(cli) == spec


def test_numpy_numbers_in_key_options_give_the_python_key():
    """A key built with numpy integers or floats (e.g. from a config array) is the same
    key as with Python numbers: equal, with the same repr (a saved model matches its keys
    by repr) and dict form."""
    import numpy as np

    from erblock.blocking import minhash, prune, qgrams, sorted_neighbourhood, token, tokens

    i = np.int64
    pairs = [
        (prefix("t", i(3)), prefix("t", 3)),
        (token("t", np.int32(-1)), token("t", -1)),
        (tokens("t", i(2)), tokens("t", 2)),
        (qgrams("t", np.int8(4)), qgrams("t", 4)),
        (sorted_neighbourhood("t", i(5)), sorted_neighbourhood("t", 5)),
        (minhash("t", bands=i(8), rows=i(2), seed=i(3)), minhash("t", bands=8, rows=2, seed=3)),
        (minhash("t", np.float64(0.6)), minhash("t", 0.6)),
        (prune(tokens("t"), i(500), i(3), smoothing=i(2)), prune(tokens("t"), 500, 3, smoothing=2)),
    ]
    for got, want in pairs:
        assert got == want and repr(got) == repr(want)
        assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())
    for bad in (lambda: prefix("t", True), lambda: prefix("t", 2.0),
                lambda: sorted_neighbourhood("t", i(1))):
        with pytest.raises(ValueError, match="must be an integer"):
            bad()
