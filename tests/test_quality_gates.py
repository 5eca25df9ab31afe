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
    # /dev/null: no cache written (a cold run checks everything anyway; writing the cache
    # was a quarter of its time)
    res = _run(["mypy", "erblock", "--cache-dir", os.devnull])
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


def test_import_layers_hold():
    """The import-linter contracts of pyproject.toml: the pipeline's layers, Dask only in
    the engine, worker tasks apart from the driver."""
    res = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]


def test_no_import_cycles_in_the_package():
    import grimp

    graph = grimp.build_graph("erblock", exclude_type_checking_imports=True)
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith("erblock") and imported != module and \
                    graph.find_shortest_chain(imported, module) is not None:
                cycles.append((module, imported))
    assert not cycles, f"import cycles: {cycles[:10]}"


def test_modules_stay_small():
    """No module over ~400 lines (a module that grows past it is split by role)."""
    big = {str(p.relative_to(ROOT)): n for p in (ROOT / "erblock").rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 420}
    assert not big, big
