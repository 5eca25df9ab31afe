"""The output directory of a run: created beside its final name, moved there only when
the run succeeds, removed whole when it fails (driver side)."""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the files an erblock output is marked by: a run's report, or ``erblock cluster``'s
MARKERS = ("_erblock_report.json", "_erblock_entities.json")
#: what erblock writes into an output directory (parts beside a marker); ``overwrite``
#: replaces a directory holding nothing else, never one with a file of the user's
PARTS = "part-[0-9]*.parquet"  #: a part a reduce task (or an entity writer) wrote
OWN_FILES = (PARTS, "_erblock_model.json", *MARKERS, ".DS_Store")
OWN_DIRS = ("pairs", "entities")  #: a run with ``--cluster``: one output in each


def foreign_entry(directory: str) -> str | None:
    """The first file or directory under ``directory`` that erblock did not write (see
    :data:`OWN_FILES`, :data:`OWN_DIRS`; parquet parts count only beside a marker, so
    another tool's dataset is never taken for erblock's), or None when it holds only an
    earlier output. Symbolic links are never followed: a link is foreign."""
    entries = sorted(os.scandir(directory), key=lambda e: e.name)
    marked = any(e.name in MARKERS for e in entries)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and entry.name in OWN_DIRS:
            inner = foreign_entry(entry.path)
            if inner is not None:
                return inner
        else:
            own = (entry.is_file(follow_symlinks=False)
                   and any(fnmatch.fnmatchcase(entry.name, p) for p in OWN_FILES))
            if not own or (not marked and fnmatch.fnmatchcase(entry.name, PARTS)):
                return entry.path
    return None


def check_output(output: str, overwrite: bool) -> str:
    """The absolute path of ``output``; raises when it is a file, or a non-empty directory
    and not ``overwrite``, or (even with ``overwrite``) a directory holding anything an
    earlier erblock output does not (an input, a script): replacing it would delete that.
    Checked before a run starts, so nothing is computed in vain."""
    final = os.path.abspath(os.path.expanduser(output))
    if os.path.islink(final):
        raise FileExistsError(f"output: {final!r} is a symbolic link; give the directory "
                              f"it points to ({os.path.realpath(final)!r}) or a new name")
    if os.path.exists(final) and not os.path.isdir(final):
        raise FileExistsError(f"output: {final!r} is a file, not a directory; choose a "
                              "directory name")
    parent = os.path.dirname(final)
    while parent and not os.path.exists(parent):  # the nearest existing ancestor
        parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    if parent and not os.path.isdir(parent):
        raise FileExistsError(f"output: {final!r} lies under {parent!r}, which is a "
                              "file, not a directory; choose a directory name")
    if os.path.exists(final) and os.listdir(final):
        if not overwrite:
            raise FileExistsError(
                f"output: {final!r} exists and is not empty; choose a new directory or "
                "pass overwrite=True (--overwrite on the command line)"
            )
        foreign = foreign_entry(final)
        if foreign is not None:
            raise FileExistsError(
                f"output: {final!r} holds {os.path.relpath(foreign, final)!r}, which is "
                "not part of an erblock output; overwrite replaces only such a directory "
                f"(parquet parts beside erblock's {' or '.join(MARKERS)}, as this version "
                "writes them): choose a new or empty directory, or remove it yourself"
            )
    return final


class OutputNotWritable(OSError):
    """The output directory cannot be created (no permission, a read-only or full file
    system, a name too long): said before the run computes anything."""


class OutputConflict(FileExistsError):
    """The final directory changed during the run so that it may not be replaced; the
    finished result is kept in ``kept``."""

    def __init__(self, message: str, kept: str) -> None:
        super().__init__(message)
        self.kept = kept


def start_output(output: str | None, overwrite: bool) -> tuple[str | None, str | None]:
    """(directory the workers write into, final directory) for ``output``."""
    if output is None:
        return None, None
    final = check_output(output, overwrite)
    work = f"{final}.erblock-tmp-{uuid.uuid4().hex[:12]}"
    try:
        Path(work).mkdir(parents=True)
    except OSError as exc:  # a read-only or full file system, no permission, a long name
        long = (" (its name and the run's staging suffix, 25 characters more, must fit)"
                if exc.errno == errno.ENAMETOOLONG else "")
        raise OutputNotWritable(f"output: {final!r} cannot be written "
                                f"({exc.strerror or exc}){long}; choose a directory "
                                "you may create") from None
    return work, final


def finish_output(work: str, final: str, overwrite: bool) -> None:
    """Move the finished parts under the final name (a failed run leaves nothing there)."""
    # A worker killed while writing leaves its half-written ``*.tmp``; the recomputed task
    # wrote the whole part under its final name, so the leftover is dropped here.
    for leftover in Path(work).glob("*.tmp"):
        leftover.unlink(missing_ok=True)
    if os.path.exists(final):
        try:  # nothing of the user's may have been put there meanwhile
            if not overwrite and os.listdir(final):
                raise FileExistsError(f"output: {final!r} appeared during the run")
            check_output(final, overwrite)
        except FileExistsError as exc:
            raise OutputConflict(f"{exc}; the finished result is kept in {work!r}",
                                 work) from None
        shutil.rmtree(final)
    os.replace(work, final)


@contextmanager
def staged_output(output: str | None, overwrite: bool) -> Iterator[str | None]:
    """The directory to write ``output`` into (None without one): moved under its final
    name when the block succeeds, removed whole when it raises."""
    work, final = start_output(output, overwrite)
    if work is None or final is None:
        yield None
        return
    try:
        yield work
        finish_output(work, final, overwrite)
    except OutputConflict:
        raise  # the finished result stays where the message says
    except BaseException:
        remove_tree(work)
        raise


def remove_tree(path: str, timeout: float = 15.0) -> None:
    """Remove ``path`` even while cancelled write tasks may still add a part to it.

    A write that was already running when the run failed cannot be interrupted; it may
    create a file after ``rmtree`` listed the directory, so removal is retried until the
    directory is gone (or ``timeout`` seconds pass). Writes never create the directory
    again: they fail once it is gone.
    """
    deadline = time.monotonic() + timeout
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path) or time.monotonic() > deadline:
            return
        time.sleep(0.05)
