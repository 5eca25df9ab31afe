"""A batch job stopped by Ctrl-C or SIGTERM (a scheduler, Kubernetes) unwinds: exit 1
with one line, no asyncio tracebacks, and no staged ``*.erblock-tmp-*`` directory left
beside the output (SIGTERM's default action left it; Ctrl-C printed a "Task exception
was never retrieved" traceback per cancelled gather). Real ``erblock`` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

#: long enough that the run is still comparing when the signal comes (about 5e9 pairs)
N = 100_000


@pytest.fixture(scope="module")
def one_block(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sig") / "one_block.csv"
    rng = np.random.default_rng(7)
    pd.DataFrame({"id": np.arange(N), "k": "x",
                  "name": rng.choice(["anna", "bert", "carl"], N)}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("sig, said", [(signal.SIGINT, "erblock: interrupted"),
                                       (signal.SIGTERM, "erblock: terminated (SIGTERM)")])
def test_a_stopped_run_says_so_and_leaves_nothing(one_block, tmp_path, sig, said):
    out = tmp_path / "pairs"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from erblock.cli import main; sys.exit(main())",
         "dedupe", str(one_block), "--id", "id", "--key", "k", "--compare", "name:jaro",
         "--threshold", "0.99", "-o", str(out)],
        stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        staged = f"{out.name}.erblock-tmp-"
        deadline = time.monotonic() + 120
        while not any(p.name.startswith(staged) for p in tmp_path.iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        time.sleep(0.5)  # inside the run's tasks
        assert proc.poll() is None, "the run ended before the signal; make N larger"
        proc.send_signal(sig)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, err
    assert said in err and "Traceback" not in err and "never retrieved" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "staged output left behind"
