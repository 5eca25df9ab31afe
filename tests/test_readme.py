"""The README's Python example runs as written (a docs review found its last line raising
AttributeError: nothing ran it). Its undefined inputs are given: ``people`` (generated
persons with a ``name`` column) and ``abt``/``buy`` (the shared Abt-Buy data, skipped
without it); files it writes go to a temporary directory; it runs on the test cluster."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## In Python"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README: no python block under '## In Python'"
    return match.group(1)


def test_readme_python_example_runs(client, tmp_path, monkeypatch):
    from erblock.datasets import generate, load_abt_buy

    try:
        abt, buy, _ = load_abt_buy()
    except (FileNotFoundError, OSError) as exc:  # the shared data sets are not beside us
        pytest.skip(f"Abt-Buy not available: {exc}")
    people, _ = generate(2000, kind="person", seed=4)
    people = people.assign(name=people["first_name"] + " " + people["surname"])
    monkeypatch.chdir(tmp_path)
    namespace = {"people": people, "abt": abt, "buy": buy}
    with client.as_current():
        exec(compile(_python_example(), "README.md", "exec"), namespace)  # noqa: S102
    assert namespace["pairs"].attrs and os.path.isdir(tmp_path / "dupes")
    assert (tmp_path / "plan.png").exists()
    assert len(namespace["entity"]) > 0 and len(namespace["products"]) > 0
    assert len(namespace["candidates"]) >= len(namespace["products"])
