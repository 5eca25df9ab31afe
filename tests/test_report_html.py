"""The HTML run report: self-contained, correct numbers, and it renders in a real browser.

The screenshot test opens the page in headless Chromium (Debian packages ``chromium`` and
``chromium-driver``, installed by ``.ci/run``; without them those tests skip and say why)
and checks the picture: the header band and the charts' bars must be
drawn, which fails for a page whose embedded images do not decode.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
from typing import Any

import numpy as np
import pandas as pd
import pytest
from oracle import brute_dedupe

import erblock
from erblock.cli import main
from erblock.report_html import BAR_COLOR, quality_from_truth, render_html, write_html
from erblock.report_model import model_section

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a headless-capable Chromium (``.ci/run`` installs the Debian packages)."""
    found = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if found is None:
        pytest.skip("the real-browser check needs Chromium (Debian packages chromium and "
                    "chromium-driver; .ci/run installs them when it runs as root with apt-get)")
    return found


def screenshot(chromium: str, page: str, png: str, tmp_path, size: str = "1200,2600") -> np.ndarray:
    """Render ``page`` in headless Chromium; the screenshot as an RGB uint8 array."""
    from matplotlib.image import imread

    profile = tmp_path / "chromium-profile"
    res = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
         f"--screenshot={png}", f"file://{page}"],
        capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and os.path.exists(png), res.stderr[-2000:]
    img = imread(png)
    return (img[..., :3] * 255).round().astype(np.uint8)


def _color_pixels(img: np.ndarray, hex_color: str, tol: int = 6) -> int:
    rgb = np.array([int(hex_color[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(img.astype(int) - rgb).max(axis=-1) <= tol).sum())


def _fake_report(n_tasks: int = 12) -> dict:
    g = np.random.default_rng(3)
    comps = g.integers(1000, 5000, n_tasks)
    tasks = [{"task": t, "comparisons": int(c), "pairs": int(c // 10), "records": int(c // 20),
              "match_tasks": 3, "seconds": float(c) * 2e-5 + 0.01, "write_seconds": 0.001,
              "worker": f"tcp://127.0.0.1:{4000 + t % 2}"} for t, c in enumerate(comps)]
    return {
        "mode": "dedupe", "strategy": "blocksplit", "n_tasks": n_tasks,
        "pairs": int(sum(t["pairs"] for t in tasks)),
        "phases": {"profile": 0.5, "plan": 0.01, "route_compare": 1.5, "write": 0.2},
        "records": {"records_r": 5000, "records_s": 0, "not_blocked": 12},
        "plan": {"strategy": "blocksplit", "total_comparisons": int(comps.sum()),
                 "match_tasks": 40, "imbalance": 1.02, "replication": 1.1,
                 "loads": [int(c) for c in comps]},
        "settings": {"keys": ["Column(column='k')"], "comparisons": [
            {"name": "name_jaro_winkler", "weight": 1.0}], "threshold": 0.8,
            "strategy": "auto", "input_partitions": 4},
        "output": None, "tasks": tasks,
    }


def _images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in
            re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)]


def test_page_is_self_contained_and_shows_the_numbers():
    d = _fake_report()
    page = render_html(d, quality={"precision": 0.9, "recall": 0.8})
    # nothing to fetch: no external scripts, styles, images or fonts
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:)?//""", page)
    images = _images(page)
    assert len(images) == 4 and all(i.startswith(b"\x89PNG\r\n\x1a\n") for i in images)
    comps = sum(t["comparisons"] for t in d["tasks"])
    assert f"{comps:,}" in page and f"{d['pairs']:,}" in page
    for phase in d["phases"]:
        assert phase in page
    assert "precision" in page and "0.9000" in page
    slowest = max(d["tasks"], key=lambda t: t["seconds"])
    assert f"{slowest['seconds']:.3f}" in page
    assert "No ground truth" in render_html(d)
    d["prediction"] = {"predicted_makespan": 1.25, "measured_makespan": 1.5, "model": "fit"}
    page = render_html(d)
    assert "predicted makespan" in page and "1.2500" in page and "1.5000" in page
    assert "links (" not in page  # no cardinality declared
    d["settings"]["assignment"] = {"cardinality": "1:1", "decision": "score",
                                   "threshold": 0.8, "decided_pairs": 9_876, "links": 4_321}
    assert "<b>4,321</b><span>links (1:1)</span>" in render_html(d)
    assert "id='unreadable'" not in page
    d["settings"]["unreadable"] = {"dob_date": "compare 'dob_date': 40 of the 40 present "
                                               "values of 'dob' (100%) cannot be read <x>"}
    assert ("<ul class='warnings'><li>compare &#x27;dob_date&#x27;: 40 of the 40 present "
            "values of &#x27;dob&#x27; (100%) cannot be read &lt;x&gt;</li></ul>"
            in render_html(d))
    assert "id='unmet'" not in page
    d["settings"]["unmet_passes"] = ["blocking pass 0 (Column(column='dob')): <none>"]
    assert ("<div id='unmet'><b>blocking passes that find almost nothing</b><ul "
            "class='warnings'><li>blocking pass 0 (Column(column=&#x27;dob&#x27;)): "
            "&lt;none&gt;</li></ul></div>" in render_html(d))


def test_screenshot_in_headless_chromium(chromium, tmp_path):
    page = write_html(_fake_report(), tmp_path / "report.html",
                      quality={"precision": 0.95, "recall": 0.9, "f1": 0.92})
    img = screenshot(chromium, str(page), str(tmp_path / "shot.png"), tmp_path)
    assert img.shape[1] == 1200
    # the header band is drawn across the top
    assert _color_pixels(img[:40], "#1f3b5a") > 0.5 * 40 * 1200
    # the charts' bars are drawn: many pixels of the bar colour (a page whose images do
    # not decode shows none)
    assert _color_pixels(img, BAR_COLOR) > 20_000
    # and the same page without its images has none of them
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,AAAA", page.read_text()))
    img2 = screenshot(chromium, str(broken), str(tmp_path / "broken.png"), tmp_path)
    assert _color_pixels(img2, BAR_COLOR) < 500


@pytest.fixture
def run_dir(tmp_path, client):
    """A real dedupe run written to a directory, its report, and a ground truth."""
    g = np.random.default_rng(5)
    n = 300
    df = pd.DataFrame({"k": g.choice(list("abcdefgh"), n),
                       "name": g.choice(["smith", "smyth", "jones", "jonas", "li"], n)})
    out = tmp_path / "pairs"
    erblock.dedupe(df, key="k", compare={"name": "jaro_winkler"}, n_tasks=5,
                   output=str(out), client=client, threshold=0.8)
    report = erblock.read_report(out)
    rep = tmp_path / "run.json"
    report.to_json(rep)
    cand = brute_dedupe(df, ["k"])
    same = [(a, b) for a, b in cand if df.loc[a, "name"] == df.loc[b, "name"]]
    truth = pd.DataFrame(same[: len(same) // 2] + [(0, 1), (2, 3)],
                         columns=["left_id", "right_id"])
    truth.to_csv(tmp_path / "truth.csv", index=False)
    return df, out, rep, truth


def test_quality_from_truth_counts_against_sets(run_dir):
    df, out, rep, truth = run_dir
    pairs = pd.read_parquet(out)
    got = {tuple(sorted(p)) for p in zip(pairs["left_id"], pairs["right_id"])}
    true = {tuple(sorted(p)) for p in zip(truth["left_id"], truth["right_id"])}
    q = quality_from_truth(json.loads(rep.read_text()), truth)
    assert q["tp"] == len(got & true)
    assert q["precision"] == pytest.approx(len(got & true) / len(got))
    assert q["recall"] == pytest.approx(len(got & true) / len(true))
    n = len(df)
    compared = len(brute_dedupe(df, ["k"]))  # the run kept only pairs above 0.8
    assert compared > len(got)
    assert q["reduction_ratio"] == pytest.approx(1 - compared / (n * (n - 1) / 2))
    assert q["pair_completeness"] is None
    # the run's own pairs given explicitly (erblock report --pairs) are still cut pairs
    q1 = quality_from_truth(json.loads(rep.read_text()), truth, pairs=pairs)
    assert q1 == q
    # as many pairs, but some below the run's threshold: not its pairs, the candidates
    low = pairs.assign(score=pairs["score"].to_numpy() * 0 + 0.1)
    q3 = quality_from_truth(json.loads(rep.read_text()), truth, pairs=low, threshold=0.0)
    assert q3["n_candidates"] == len(got) and q3["pair_completeness"] is not None
    # other pairs given explicitly (here: all but one of them) are the candidates
    fewer = pairs.iloc[1:]
    q2 = quality_from_truth(json.loads(rep.read_text()), truth, pairs=fewer)
    kept = {tuple(sorted(p)) for p in zip(fewer["left_id"], fewer["right_id"])}
    found = len({tuple(sorted(p)) for p in brute_dedupe(df, ["k"])} & true)
    assert q2["reduction_ratio"] == pytest.approx(1 - len(kept) / (n * (n - 1) / 2))
    assert q2["pair_completeness"] == pytest.approx(len(kept & true) / len(true))
    assert found >= len(got & true)
    # pairs of another run, naming more records than this run read: counted, with no
    # reduction ratio (it would be below 0), not refused for an n_left the user never set
    other = pd.DataFrame({"left_id": np.arange(n + 5), "right_id": np.arange(n + 5) + 1000,
                          "score": 0.9})
    q4 = quality_from_truth(json.loads(rep.read_text()), truth, pairs=other)
    assert q4["reduction_ratio"] is None and q4["tp"] == 0


def test_report_command_html_and_json(run_dir, tmp_path, capsys, chromium):
    _, out, rep, truth = run_dir
    html = tmp_path / "r" / "report.html"
    assert main(["report", str(rep), "--html", str(html), "--truth",
                 str(tmp_path / "truth.csv"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["quality"]["tp"] > 0 and printed["html"] == str(html)
    page = html.read_text()
    assert "Quality against the ground truth" in page and len(_images(page)) == 4
    img = screenshot(chromium, str(html), str(tmp_path / "r.png"), tmp_path)
    assert _color_pixels(img, BAR_COLOR) > 5_000
    assert main(["report", str(rep)]) == 0
    text = capsys.readouterr().out
    assert "dedupe with" in text and "reduce tasks" in text


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: None, "no such file"),
    (lambda p: p.write_text("{not json"), "is not JSON"),
    (lambda p: p.write_text('{"a": 1}'), "not an erblock run report"),
])
def test_report_command_bad_input_exits_2(tmp_path, capsys, make, message):
    path = tmp_path / "run.json"
    make(path)
    assert main(["report", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_report_without_output_needs_pairs(tmp_path, capsys):
    rep = tmp_path / "run.json"
    rep.write_text(json.dumps(_fake_report()))
    pd.DataFrame({"left_id": [1], "right_id": [2]}).to_csv(tmp_path / "t.csv", index=False)
    assert main(["report", str(rep), "--truth", str(tmp_path / "t.csv")]) == 2
    assert "--pairs" in capsys.readouterr().err


@pytest.fixture(scope="module")
def em_report(cluster):
    from distributed import Client

    from erblock.datasets import generate

    df, *_ = generate(800, kind="person", seed=11)
    with Client(cluster, set_as_default=False) as client:
        pairs = erblock.dedupe(df.drop(columns=["block_key", "entity_id"]), key="zip",
                               compare={"first_name": "name", "surname": "name",
                                        "dob": "date"}, scoring="em", client=client)
    return erblock.RunReport.of(pairs)


def test_model_section_shows_levels_sessions_and_boundary_waterfalls(em_report):
    d = em_report.to_dict()
    model = d["model"]
    page = render_html(d)
    assert "id='model'" in page and "Training sessions" in page
    for row in model["levels"]:  # every level of every comparison, with its weight
        assert html.escape(str(row["label"])) in page
        assert f"{row['match_weight']:.3g}" in page
    examples = model["examples"]
    assert examples, "a run with pairs explains some pairs near the decision boundary"
    images = _images(page)
    assert len(images) == 4 + 1 + min(len(examples), 4)
    assert all(i.startswith(b"\x89PNG\r\n\x1a\n") for i in images)
    # without a model the section is absent
    d2 = dict(d, model=None)
    assert "id='model'" not in render_html(d2)
    # the variants below change the model section only: rendered alone, without the
    # boundary waterfalls (each chart is a matplotlib figure: the suite's time)
    plain = dict(model, examples=[])

    def section(**change: Any) -> str:
        return model_section(dict(plain, **change))

    # a session set aside for an inverted fit says on what (tests/test_related.py)
    inverted = dict(model["sessions"][0], trusted=False, inverted=["sex_exact"],
                    set_aside="inverted")
    page3 = section(sessions=[inverted])
    assert "<b>no</b> (its matches agreed less often than random pairs on sex_exact)" in page3
    inverted["related"] = {"pi": [0.1, 0.3, 0.6]}
    page4 = section(sessions=[inverted])
    assert ("its pairs scored with three classes (its matches agreed less often than "
            "random pairs on sex_exact)") in page4
    # a trusted session scored with the related records another pass found
    trusted = dict(model["sessions"][0], trusted=True, related={"pi": [0.3, 0.01, 0.69]})
    page5 = section(sessions=[trusted])
    assert "yes, its pairs scored with three classes" in page5
    assert "three classes" not in page  # a model without related records
    # a model with a group of comparisons scored together says which and its μ
    assert "Scored as one group" not in page
    grouped = [{"comparisons": ["street_text", "postcode_postcode"], "mu": 0.15, "n_iter": 7,
                "converged": True, "declared": False}]
    assert ("Scored as one group: street_text, postcode_postcode; μ = 0.15 of the matches"
            in section(groups=grouped))


def test_model_charts_render_in_headless_chromium(em_report, chromium, tmp_path):
    from erblock.matchers.scoring.charts import NEGATIVE, POSITIVE

    page = write_html(em_report, tmp_path / "em.html")
    img = screenshot(chromium, str(page), str(tmp_path / "em.png"), tmp_path, size="1200,5200")
    # the weights chart and the waterfalls draw positive (blue) and negative (red) bars
    assert _color_pixels(img, POSITIVE) > 5_000
    assert _color_pixels(img, NEGATIVE) > 1_000
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,AAAA", page.read_text()))
    img2 = screenshot(chromium, str(broken), str(tmp_path / "b.png"), tmp_path,
                      size="1200,5200")
    assert _color_pixels(img2, POSITIVE) < 500
