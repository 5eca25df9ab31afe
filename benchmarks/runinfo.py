"""What every benchmark result records about its run: machine, versions, commit, load.

Every script stores ``machine_info()`` under ``"machine"`` in its JSON, so a reader (and
``summarize.py``) can tell which code a number describes and how busy the machine was:

- ``git_commit``: the commit measured (``ERBLOCK_BENCH_COMMIT`` when a snapshot made with
  ``git archive`` is measured, otherwise ``git rev-parse HEAD`` of this repository);
- ``erblock_dirty`` / ``erblock_dirty_files``: uncommitted changes under ``erblock/`` at run
  time (a result measured on a dirty tree describes no commit);
- ``load``: ``os.getloadavg()`` when the info was taken (scripts add the load next to
  every timed run as well).

``stale_reason(machine)`` is the rule ``summarize.py`` applies: a result is stale when it
records no commit, was measured on a dirty tree, or ``erblock/`` changed since its commit.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_PACKAGES = ("erblock", "dask", "distributed", "rapidfuzz", "numpy", "pandas")


def git(*args: str) -> str | None:
    """Output of ``git <args>`` in this repository, or None when git cannot answer."""
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError, UnicodeDecodeError):
        return None


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages, rounded (2.0 = both cores of this box busy)."""
    return [round(x, 2) for x in os.getloadavg()]


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def machine_info(packages: Sequence[str] = DEFAULT_PACKAGES) -> dict[str, Any]:
    """Cores, memory, CPU model, package versions, the commit measured and the load."""
    info: dict[str, Any] = {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}
    try:
        import psutil

        info["physical_cores"] = psutil.cpu_count(logical=False)
        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["versions"] = {p: _version(p) for p in packages}
    info["load"] = load()
    snapshot = os.environ.get("ERBLOCK_BENCH_COMMIT")
    if snapshot:
        info.update(git_commit=snapshot, erblock_dirty=False, erblock_dirty_files=[],
                    erblock_source="snapshot of the commit")
        return info
    head = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "erblock")
    dirty = [ln for ln in (status or "").splitlines() if ln.strip()]
    info.update(git_commit=head.strip() if head else None,
                erblock_dirty=bool(dirty) if status is not None else None,
                erblock_dirty_files=dirty[:20],
                erblock_source="work tree" + (" with uncommitted changes" if dirty else ""))
    return info


def stale_reason(machine: dict[str, Any] | None) -> str | None:
    """Why a result no longer describes the code in ``erblock/`` at HEAD, or None if it does."""
    commit = (machine or {}).get("git_commit")
    if not commit:
        return "the result records no commit"
    if (machine or {}).get("erblock_dirty"):
        return f"measured with uncommitted changes in erblock/ on top of {commit[:10]}"
    if git("cat-file", "-e", f"{commit}^{{commit}}") is None:
        return f"its commit {commit[:10]} is not in this repository"
    changed = git("diff", "--name-only", commit, "HEAD", "--", "erblock")
    if changed is None:
        return None  # no git here (e.g. an unpacked release): nothing to compare against
    files = [f for f in changed.splitlines() if f.strip()
             if not (f.endswith(".py") and _same_code(git("show", f"{commit}:{f}"),
                                                      git("show", f"HEAD:{f}"), f))]
    if files:
        return (f"erblock/ changed since its commit {commit[:10]} "
                f"({len(files)} file{'s' if len(files) != 1 else ''})")
    return None


def _code(text: str) -> str:
    """A Python module's syntax tree without docstrings (comments are not in it)."""
    import ast

    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _same_code(old: str | None, new: str | None, path: str) -> bool:
    """Whether a file differs between two commits only in docstrings and comments (then
    what it runs, and so what was measured, is the same). Other files: never."""
    if old is None or new is None or not path.endswith(".py"):
        return False
    try:
        return _code(old) == _code(new)
    except SyntaxError:
        return False


def write_results(out: Path | str, name: str, res: Any, markdown: str) -> Path:
    """Write ``<out>/<name>.json`` (numpy scalars as numbers, anything else as text) and
    the markdown fragment ``<out>/<name>.md``; return the JSON path."""
    import json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(res, indent=2, default=lambda o: o.item() if hasattr(o, "item")
                               else str(o)) + "\n")
    (out / f"{name}.md").write_text(markdown)
    return path


def job_parser(doc: str, name: str, out: Path, quick_help: str | None = None
               ) -> argparse.ArgumentParser:
    """The options of a timed job against Splink (``bench_encoded``, ``bench_scale_real``):
    ``--quick``, ``--no-splink``, ``--data``, ``--out`` (default ``out``), ``--name``."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--no-splink", action="store_true")
    ap.add_argument("--data", default=None, help="folder of the shared data sets")
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--name", default=name)
    return ap
