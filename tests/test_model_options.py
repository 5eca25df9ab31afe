"""The Fellegi-Sunter model's options at their edges: levels normalised to plain data,
term frequencies only on an exact level, the seed's and u_pairs' ranges, unknown level
keys. Each test fails on the code before its fix (probe of the options)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from erblock.matchers.scoring import FellegiSunter, load_model

NAMES = {"surname": "name", "dob": "date"}


def test_levels_are_tuples_of_python_floats_so_the_model_saves():
    one = FellegiSunter(levels={"surname_name": 0.9})  # one number, not a sequence
    assert one.levels == {"surname_name": (0.9,)}
    assert one.to_dict()["settings"]["levels"] == {"surname_name": [0.9]}
    numpy = FellegiSunter(levels={"surname_name": (1.0, np.float32(0.5))})
    assert numpy.levels == {"surname_name": (0.5, 1.0)}  # sorted, as check_thresholds
    assert all(type(t) is float for t in numpy.levels["surname_name"])
    saved = json.loads(numpy.to_json())["settings"]["levels"]
    assert saved == {"surname_name": [0.5, 1.0]}
    assert load_model(numpy.to_json()).levels == numpy.levels


@pytest.mark.parametrize("bad", [True, "1", "0.9", [True, 0.5], (np.bool_(True),)])
def test_booleans_and_strings_are_no_thresholds(bad):
    with pytest.raises(TypeError, match=r"levels\['s'\] must be a number or a sequence of "
                                         r"numbers.*not booleans or strings"):
        FellegiSunter(levels={"s": bad})


def test_term_frequencies_adjust_only_an_exact_top_level():
    fuzzy = {"surname_name": (0.8, 0.9)}  # no 1.0: the top level is no exact agreement
    spec = FellegiSunter(levels=fuzzy).bind(NAMES).specs_[0]
    assert spec.name == "surname_name" and not spec.tf  # the method's default: dropped
    assert FellegiSunter(levels={"surname": (0.9, 1.0)}).bind(NAMES).specs_[0].tf
    with pytest.raises(ValueError, match=r"tf_adjust: 'surname_name' has no exact level "
                                         r"\(its top threshold is 0.9\)"):
        FellegiSunter(levels=fuzzy, tf_adjust="surname").bind(NAMES)


def test_the_seed_must_fit_an_int64():
    for bad in (2**63, -2**63 - 1):
        with pytest.raises(ValueError, match=r"seed must be an integer in the int64 range"):
            FellegiSunter(seed=bad)
    assert FellegiSunter(seed=2**63 - 1).seed == 2**63 - 1
    assert FellegiSunter(seed=np.int64(-2**63)).seed == -2**63


@pytest.mark.parametrize("bad", [0, 1, 999])
def test_too_few_u_pairs_are_refused(bad):
    with pytest.raises(ValueError, match=r"u_pairs must be an integer >= 1,000"):
        FellegiSunter(u_pairs=bad)
    assert FellegiSunter(u_pairs=1000).u_pairs == 1000


def test_level_keys_of_mixed_types_are_named_not_compared():
    with pytest.raises(ValueError, match=r"levels: \[1, 'x'\] name no comparison"):
        FellegiSunter(levels={1: (0.9,), "x": (0.9,)}).bind(NAMES)


def test_models_saved_before_the_checks_still_load():
    """A model saved with u_pairs below today's minimum (only a refit reads it) and a
    numeric comparison saved with mode='rel' and a scale (ignored there) still load."""
    model = FellegiSunter().bind({"x": {"method": "numeric", "mode": "rel"}})
    d = json.loads(json.dumps(model.to_dict()))
    d["settings"]["u_pairs"] = 500
    d["comparisons"][0]["scale"] = 5.0
    again = load_model(d)
    assert again.u_pairs == 1000 and again.comparisons_[0].kernel.mode == "rel"
