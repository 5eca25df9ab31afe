"""Nightly fuzzing: the end-to-end fuzz tests (tests/test_fuzz.py) with many more examples.

The CI suite runs ``tests/test_fuzz.py`` with a bounded number of hypothesis examples per
test (``ERBLOCK_FUZZ_EXAMPLES``, default 3), and the other property tests that run
erblock on a cluster a few examples each (``tests/strategies.py``, ``cluster_settings``).
This script runs the fuzz tests with ``--examples`` per test (default 200; every
strategy, link and dedupe) and those property tests with ``--examples / 20`` times their
suite's examples (``ERBLOCK_EXAMPLES_SCALE``; 10 at the default), bounded by
``--timeout`` seconds, and records what ran and what failed::

    python benchmarks/fuzz_nightly.py                 # ~10-20 minutes on 2 cores
    python benchmarks/fuzz_nightly.py --quick         # a few examples (smoke)

Writes ``benchmarks/results/fuzz_nightly.json`` and ``.md``; the exit code is pytest's (0
when every example held the brute-force invariant). A failing example is printed by
hypothesis with the smallest frame that breaks the invariant: add it to the regression
tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "benchmarks") not in sys.path:  # runinfo.py sits beside this script
    sys.path.insert(0, str(ROOT / "benchmarks"))

import runinfo  # noqa: E402


def run(examples: int, timeout: float, extra: list[str]) -> dict:
    """Run the fuzz tests with ``examples`` per test; return counts, seconds and failures."""
    # ERBLOCK_NIGHTLY: the long variants (e.g. the 50,000-record giant block of test_memory)
    scale = max(1.0, examples / 20)
    env = {**os.environ, "ERBLOCK_FUZZ_EXAMPLES": str(examples), "ERBLOCK_NIGHTLY": "1",
           "ERBLOCK_EXAMPLES_SCALE": str(scale)}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf",
           str(ROOT / "tests" / "test_fuzz.py"),
           str(ROOT / "tests" / "test_memory.py") + "::test_giant_block_stays_within_the_worker_budget",
           str(ROOT / "tests" / "test_memory.py")
           + "::test_high_keep_rate_giant_block_written_by_workers_stays_within_budget",
           # the benchmark smoke tests with their peers (pyJedAI, Splink), the multi-valued
           # and sorted-neighbourhood keys with many examples
           str(ROOT / "tests" / "test_benchmarks_smoke.py"),
           str(ROOT / "tests" / "test_multi_keys.py"),
           # the cluster property tests (cluster_settings) with ERBLOCK_EXAMPLES_SCALE
           *(str(ROOT / "tests" / f) for f in (
               "test_conformance.py", "test_multipass.py", "test_sampling.py",
               "test_candidates.py")),
           *extra]
    start = time.perf_counter()
    load_before = os.getloadavg()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
        out, code, timed_out = proc.stdout + proc.stderr, proc.returncode, False
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        code, timed_out = 124, True
    seconds = time.perf_counter() - start
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|error|skipped)", out)}
    failures = re.findall(r"^FAILED (\S+)", out, flags=re.M)
    return {
        "examples_per_test": examples,
        "examples_scale": scale,
        "exit_code": code,
        "timed_out": timed_out,
        "seconds": round(seconds, 1),
        "tests": counts,
        "failures": failures,
        "output_tail": out[-6000:] if code else out[-600:],
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "machine": runinfo.machine_info(),
    }


def markdown(res: dict) -> str:
    status = "all held" if res["exit_code"] == 0 else (
        "timed out" if res["timed_out"] else f"{len(res['failures'])} failing")
    tests = ", ".join(f"{v} {k}" for k, v in res["tests"].items()) or "none"
    lines = [
        "## Fuzzing (nightly profile)",
        "",
        "`tests/test_fuzz.py` (random frames with unicode, nulls, empty strings and several "
        "index kinds; column, prefix, soundex, composite, callable and multi-pass keys; every "
        "strategy; pandas and Dask input; link and dedupe) checked against the brute force; "
        "`tests/test_multi_keys.py` (tokens, q-grams, MinHash, sorted neighbourhood, pruning, "
        "mixed with single-valued passes) against the oracle; the conformance, multi-pass, "
        f"sampling and candidates property tests with {res.get('examples_scale', 1):g} "
        "times their suite's examples; the two giant-block memory tests at their nightly "
        "sizes; the benchmark smoke tests with their peers "
        "(pyJedAI, Splink).",
        "",
        "| examples per test | tests | seconds | result |",
        "|---:|---|---:|---|",
        f"| {res['examples_per_test']} | {tests} | {res['seconds']} | {status} |",
    ]
    if res["failures"]:
        lines += ["", "Failing tests:", ""] + [f"- `{f}`" for f in res["failures"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200, help="hypothesis examples per test")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before giving up")
    ap.add_argument("--quick", action="store_true", help="3 examples per test (smoke)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--name", default="fuzz_nightly")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. -k link)")
    args = ap.parse_args(argv)
    examples = 3 if args.quick else args.examples
    res = run(examples, args.timeout, args.pytest_args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(res, indent=2))
    (out / f"{args.name}.md").write_text(markdown(res))
    print(markdown(res))
    return int(res["exit_code"])


if __name__ == "__main__":
    raise SystemExit(main())
