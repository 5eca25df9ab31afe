"""What a batch job writes never replaces, changes or joins what it reads.

A run replaces its output directory whole, so an output above an input would delete
it; a file written where an input is read from becomes part of the next run's input
(a parquet directory reads every part below it, a CSV directory its top-level ``*.csv``
files and ``key=value`` folders, a glob whatever matches it). URLs of other file
systems are not checked.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.io import CSV_PARTS, directory_format
from .parser import UsageError

__all__ = ["check_apart", "local_paths"]


def local_paths(given: str) -> list[str]:
    """The local paths an input names (a glob's fixed part, then its matches); none for
    a URL of another file system."""
    path = _local(given)
    if path is None:
        return []
    fixed = _fixed_part(path)
    return [path] if fixed is None else [fixed, *glob.glob(path, recursive=True)]


def _local(given: str) -> str | None:
    path = given.rsplit("::", 1)[-1]  # a chained URL (simplecache::file://…) reads its last
    for scheme in ("file://", "local://"):
        if path.startswith(scheme):
            path = path[len(scheme):]
    return None if "://" in path else os.path.expanduser(path)


def _fixed_part(path: str) -> str | None:
    """A glob's directory part up to its first wildcard ('.' for 'a*.csv'); None for a
    plain path. Either separator splits (a Windows user may write 'data/*.csv')."""
    parts = path.replace("\\", "/").split("/") if os.sep == "\\" else path.split("/")
    fixed = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), None)
    return None if fixed is None else os.sep.join(parts[:fixed]) or "."


@dataclass(frozen=True)
class _Input:
    given: str  # as the user wrote it
    real: str  # the resolved path: a file, a directory, or a glob's fixed part
    pattern: str | None = None  # a glob's resolved pattern
    csv_dir: bool = False  # a directory read as its top-level CSV parts

    def joins(self, path: str, is_dir: bool) -> bool:
        """Would ``path`` (to be written) be read as part of this input next time?"""
        if self.pattern is not None:
            return _matches(path, self.pattern)
        if path == self.real or not os.path.isdir(self.real) or not _under(path, self.real):
            return path == self.real
        if not self.csv_dir:
            return True  # a parquet dataset reads every part below it
        top = os.path.relpath(path, self.real).split(os.sep)
        if top[0].startswith(("_", ".")):  # the reader skips such names
            return False
        return "=" in top[0] and (is_dir or len(top) > 1) or (
            len(top) == 1 and not is_dir and top[0].lower().endswith(CSV_PARTS))


def _matches(path: str, pattern: str) -> bool:
    """``path`` matches the glob ``pattern`` as glob would (a wildcard stays within one
    path component, except ``**``)."""
    if "**" in pattern:  # any depth, none too (as fsspec reads 'dir/**/*.csv')
        return fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(
            path, pattern.replace("**" + os.sep, ""))
    got, want = path.split(os.sep), pattern.split(os.sep)
    return len(got) == len(want) and all(map(fnmatch.fnmatch, got, want))


def _inputs(inputs: Sequence[str | None], fmt: str | None) -> list[_Input]:
    out = []
    for given in inputs:
        path = None if given is None else _local(given)
        if given is None or path is None:
            continue
        fixed = _fixed_part(path)
        if fixed is not None:
            pattern = os.path.join(os.path.realpath(fixed),
                                   os.path.relpath(path, fixed))
            out.append(_Input(given, os.path.realpath(fixed), pattern))
            out += [_Input(given, os.path.realpath(m)) for m in glob.glob(path, recursive=True)]
            continue
        real = os.path.realpath(path)
        out.append(_Input(given, real, csv_dir=os.path.isdir(real)
                          and directory_format(real, fmt) == "csv"))
    return out


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def check_apart(output: str | None, inputs: Sequence[str | None],
                written: Sequence[tuple[str, str | None]] = (),
                fmt: str | None = None) -> None:
    """Refuse an ``--output`` that is or lies above a local input, or that the input
    would read; and files the run writes itself (``written``: (flag, path)) that would
    replace or join an input, or go inside the output (the next ``--overwrite`` would
    refuse them). ``fmt`` is the inputs' ``--format``."""
    local = _inputs(inputs, fmt)
    for flag, path in written:
        if path is None:
            continue
        real = os.path.realpath(os.path.expanduser(path))
        for i in local:
            if real == i.real and i.pattern is None:
                raise UsageError(f"{flag} {path!r} is the input {i.given!r}; writing there "
                                 "would replace it: write it elsewhere")
        for i in local:
            if i.joins(real, is_dir=False):
                raise UsageError(f"{flag} {path!r} would be read as part of the input "
                                 f"{i.given!r}; write it elsewhere")
    if output is None:
        return
    out = os.path.realpath(os.path.expanduser(output))
    for i in local:
        if _under(i.real, out):
            raise UsageError(f"--output {output!r} holds the input {i.given!r}; writing "
                             "there would replace it: choose another directory")
        if i.pattern is None and i.joins(out, is_dir=True):
            raise UsageError(f"--output {output!r} lies inside the input directory "
                             f"{i.given!r}; its parts would become part of that input: "
                             "choose another directory")
        if i.pattern is not None and (i.joins(out, is_dir=True) or any(
                i.joins(os.path.join(out, *sub, "part-00000.parquet"), is_dir=False)
                for sub in ((), ("pairs",), ("entities",)))):  # --cluster writes both
            raise UsageError(f"--output {output!r} or its parts match the input "
                             f"{i.given!r}; the next run would read them: choose another "
                             "directory")
    for flag, path in written:
        if path is not None and _under(os.path.realpath(path), out):
            raise UsageError(f"{flag} {path!r} lies inside --output {output!r}, which "
                             "holds only what erblock writes there (its own report is "
                             "kept in it); write it elsewhere")
