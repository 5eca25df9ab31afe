"""A one-line progress bar with ETA, advanced as Dask futures finish."""

from __future__ import annotations

import sys
import time
from typing import Any

from distributed import Future, as_completed


def show_progress(futures: list[Any], label: str, stream: Any = None,
                  release: bool = False) -> None:
    """Draw a progress bar for ``futures`` on stderr until all are finished.

    Uses ``distributed.as_completed``, so it works with any client (local or remote)
    without a scheduler-side feed; errors surface later, in ``gather``. With ``release``
    each future is released once finished (its result is then kept only as long as a
    dependent task needs it).
    """
    if not futures or not isinstance(futures[0], Future):
        return  # run in this process (erblock.engine.local): already done, nothing to watch
    stream = stream or sys.stderr
    total, start = len(futures), time.perf_counter()
    width = 30

    def draw(done: int) -> None:
        elapsed = time.perf_counter() - start
        eta = elapsed / done * (total - done) if done else 0.0
        filled = int(width * done / total) if total else width
        eta_text = ("done    " if done >= total else
                    f"ETA {eta:5.1f}s" if done else "ETA     ?")
        stream.write(f"\r{label:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                     f"{elapsed:6.1f}s {eta_text}")
        stream.flush()

    draw(0)
    loop = futures[0].client.loop  # erblock's client need not be default
    for done, future in enumerate(as_completed(futures, loop=loop), 1):
        draw(done)
        if release:
            future.release()
    stream.write("\n")
    stream.flush()
