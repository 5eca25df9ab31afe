"""The output directory of a run: created beside its final name, moved there only when
the run succeeds, removed whole when it fails (driver side)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def check_output(output: str, overwrite: bool) -> str:
    """The absolute path of ``output``; raises when it is a file, or a non-empty directory
    and not ``overwrite`` (checked before a run starts, so nothing is computed in vain)."""
    final = os.path.abspath(output)
    if os.path.exists(final) and not os.path.isdir(final):
        raise FileExistsError(f"output: {final!r} is a file, not a directory; choose a "
                              "directory name")
    if os.path.exists(final) and os.listdir(final) and not overwrite:
        raise FileExistsError(
            f"output: {final!r} exists and is not empty; choose a new directory or pass "
            "overwrite=True (--overwrite on the command line)"
        )
    return final


def start_output(output: str | None, overwrite: bool) -> tuple[str | None, str | None]:
    """(directory the workers write into, final directory) for ``output``."""
    if output is None:
        return None, None
    final = check_output(output, overwrite)
    work = f"{final}.erblock-tmp-{uuid.uuid4().hex[:12]}"
    Path(work).mkdir(parents=True)
    return work, final


def finish_output(work: str, final: str, overwrite: bool) -> None:
    """Move the finished parts under the final name (a failed run leaves nothing there)."""
    # A worker killed while writing leaves its half-written ``*.tmp``; the recomputed task
    # wrote the whole part under its final name, so the leftover is dropped here.
    for leftover in Path(work).glob("*.tmp"):
        leftover.unlink(missing_ok=True)
    if os.path.exists(final):
        if not overwrite and os.listdir(final):
            raise FileExistsError(f"output: {final!r} appeared during the run")
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
