"""Quality gates that CI runs as tests: ruff, mypy on the package, and the docs build.

``.ci/run`` runs exactly the README's test command, so these gates live here. Each runs
the tool in a subprocess with this interpreter and fails with the tool's own output.
The tools come with the ``test`` extra; a missing tool is a failure, not a skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path = ROOT, timeout: float = 300, **env: str
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **env})


def test_ruff_is_clean():
    res = _run(["ruff", "check", "--no-cache", "erblock", "tests", "benchmarks"])
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]


def test_mypy_is_clean_on_the_package(tmp_path):
    assert (ROOT / "erblock" / "py.typed").is_file(), "erblock must ship py.typed"
    res = _run(["mypy", "erblock", "--cache-dir", str(tmp_path / "mypy-cache")])
    assert res.returncode == 0, res.stdout[-8000:] + res.stderr[-2000:]


def test_docs_build_strict(tmp_path):
    """``mkdocs build --strict``: every page in the nav exists, links resolve, the API
    reference (mkdocstrings) renders the docstrings without warnings."""
    site = tmp_path / "site"
    res = _run(["mkdocs", "build", "--strict", "--site-dir", str(site)],
               NO_MKDOCS_2_WARNING="1")
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-6000:]
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in ("api.link", "api.dedupe", "api.plan", "matchers.clustering.cluster",
                 "matchers.evaluate.evaluate", "report.RunReport"):
        assert f'id="erblock.{name}"' in api, name
    assert (site / "clusters" / "index.html").is_file()
