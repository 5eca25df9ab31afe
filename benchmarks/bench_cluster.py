"""Cluster benchmarks of issue 3: measured balance, planning overhead, and ``auto``'s
prediction against what the cluster did.

Run from the repository root (about 3 minutes on 2 quiet cores)::

    python benchmarks/bench_cluster.py          # writes benchmarks/results/cluster.{json,md}

All runs use one real local Dask cluster (2 worker processes × 1 thread, so tasks, data
and results cross process boundaries as on a real cluster) and the skewed dedupe job of
``bench_core.py`` (person-like names, b = 100 blocks with n_k ∝ e^(−s·k), Jaro-Winkler on
the name, threshold 0.9, r = 4 × worker threads reduce tasks).

(c) **Measured balance**: for every strategy, the per-reduce-task seconds imbalance
    (max / mean of the seconds each reduce task spent comparing, as measured inside the
    tasks), next to the imbalance by comparisons, and the makespan (route + compare wall
    time) against the ideal (sum of task seconds / threads). Target: ≤ 1.2 for the
    balanced strategies. With few threads the makespan also depends on how r tasks pack
    onto T threads, which is why both are reported.
(d) **Planning overhead**: (profile + plan) / whole job on the ≥ 50 M pair job, per
    strategy. ``profile`` is everything before the plan (the blocking keys of every record
    are computed there, work the route phase reuses), ``plan`` includes the cost-model
    calibration when a session calibrates (``auto``'s first run). Target: ≤ 3 %.
(e) **Predicted vs measured makespan of ``auto``** on jobs of different skew, dedupe and
    link: the cost model's prediction of route + compare (calibrated on this cluster) next
    to the measured wall time, and the strategy auto chose with its alternatives.

Every run records ``os.getloadavg()``, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT / "benchmarks") not in sys.path:  # runinfo.py sits beside this script
    sys.path.insert(0, str(ROOT / "benchmarks"))

import runinfo  # noqa: E402

FULL: dict[str, Any] = {
    "main": {"n": 80_000, "b": 100, "s": 0.5, "dup_rate": 0.05, "threshold": 0.9, "seed": 7},
    "auto_jobs": [
        {"name": "dedupe s=1.0", "task": "dedupe", "n": 30_000, "b": 100, "s": 1.0},
        {"name": "dedupe s=0.1", "task": "dedupe", "n": 60_000, "b": 100, "s": 0.1},
        {"name": "link s=0.5", "task": "link", "n": 40_000, "b": 100, "s": 0.5},
    ],
    "workers": 2, "threads_per_worker": 1, "processes": True,
    "sample": {"delta": 0.1, "alpha": 0.95},
}
QUICK: dict[str, Any] = {
    "main": {"n": 2_000, "b": 20, "s": 0.5, "dup_rate": 0.05, "threshold": 0.9, "seed": 7},
    "auto_jobs": [{"name": "link s=0.5", "task": "link", "n": 1_500, "b": 20, "s": 0.5}],
    "workers": 2, "threads_per_worker": 1, "processes": False,
    "sample": {"delta": 0.5, "alpha": 0.9},
}
TARGETS = {"seconds_imbalance_max": 1.2, "planning_share_max": 0.03}
BALANCED = ("blocksplit", "pairrange", "cellblock", "cellrange", "sampling", "auto")


def _bench_core() -> Any:
    """``bench_core.py`` as a module (its skewed job generator)."""
    spec = importlib.util.spec_from_file_location("_bench_core", ROOT / "benchmarks" /
                                                  "bench_core.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _strategies() -> list[str]:
    """Strategies this erblock accepts (the registry grows over issues)."""
    from erblock.api import STRATEGY_NAMES

    return [s for s in ("basic", "blocksplit", "pairrange", "cellblock", "cellrange")
            if s in STRATEGY_NAMES]


def run_one(frames: list[Any], label: str, client: Any, threshold: float,
            **kwargs: Any) -> dict[str, Any]:
    """One erblock run; what the report measured and what the plan predicted."""
    import erblock

    load = os.getloadavg()[0]
    # on the cluster whatever the size: this benchmark measures the cluster's balance
    kwargs = {"executor": "cluster", **kwargs}
    t0 = time.perf_counter()
    if len(frames) == 1:
        pairs = erblock.dedupe(frames[0], key="block", compare={"name": "jaro_winkler"},
                               threshold=threshold, client=client, **kwargs)
    else:
        pairs = erblock.link(frames[0], frames[1], key="block",
                             compare={"name": "jaro_winkler"}, threshold=threshold,
                             client=client, **kwargs)
    seconds = time.perf_counter() - t0
    rep = erblock.RunReport.of(pairs)
    pred = rep.prediction
    secs = rep.task_seconds
    threads = int(rep.settings.get("threads", 1))
    ideal = float(secs.sum() / threads)
    makespan = rep.phases.get("route_compare", 0.0)
    planning = rep.phases.get("profile", 0.0) + rep.phases.get("plan", 0.0)
    return {
        "label": label,
        "strategy": rep.strategy,
        "auto_choice": pred.get("auto_choice"),
        "seconds": seconds,
        "load_avg": load,
        "comparisons": rep.comparisons,
        "kept_pairs": len(pairs),
        "n_tasks": rep.n_tasks,
        "threads": threads,
        "input_partitions": rep.settings.get("input_partitions"),
        "imbalance_comparisons": rep.imbalance_comparisons,
        "imbalance_seconds": rep.imbalance_seconds,
        "task_seconds": secs.tolist(),
        "makespan": makespan,
        "ideal": ideal,
        "makespan_over_ideal": makespan / ideal if ideal > 0 else None,
        "phases": dict(rep.phases),
        "planning_seconds": planning,
        "planning_share": planning / rep.seconds if rep.seconds else None,
        "calibration_seconds": pred.get("calibration_seconds", 0.0),
        "predicted_makespan": pred.get("predicted_makespan"),
        "measured_over_predicted": pred.get("measured_over_predicted"),
        "predicted_imbalance_seconds": pred.get("predicted_imbalance_seconds"),
        "replication": rep.plan.get("replication"),
        "match_tasks": rep.plan.get("match_tasks"),
        "cost_model": pred.get("cost_model"),
        "candidates": pred.get("candidates"),
        "sample": pred.get("sample"),
    }


def _summary_row(r: dict[str, Any]) -> str:
    return (f"{r['label']:<22} {r['strategy']:<11} imb(cmp) {r['imbalance_comparisons']:.3f} "
            f"imb(s) {r['imbalance_seconds']:.3f} makespan {r['makespan']:.2f}s "
            f"(ideal {r['ideal']:.2f}s, predicted {r['predicted_makespan'] or 0:.2f}s) "
            f"planning {100 * (r['planning_share'] or 0):.1f} % load {r['load_avg']:.1f}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--out", default=str(RESULTS), help="results directory")
    ap.add_argument("--name", default="cluster", help="file stem of the results")
    ap.add_argument("--wait-load", type=float, default=None, metavar="LOAD",
                    help="first wait until the 1-minute load average is below LOAD (the "
                         "machine may be shared)")
    ap.add_argument("--max-wait", type=float, default=900.0,
                    help="seconds to wait at most for --wait-load (then run anyway)")
    args = ap.parse_args(argv)
    waited = 0.0
    if args.wait_load is not None:
        t_wait = time.perf_counter()
        while os.getloadavg()[0] >= args.wait_load and time.perf_counter() - t_wait < \
                args.max_wait:
            time.sleep(5.0)
        waited = time.perf_counter() - t_wait
    cfg = QUICK if args.quick else FULL
    core = _bench_core()

    from distributed import Client, LocalCluster

    import erblock
    from erblock.engine.calibrate import clear_cache

    started = time.perf_counter()
    m = cfg["main"]
    df = core.skewed_job(m["n"], m["b"], m["s"], m["dup_rate"], m["seed"])
    pairs_total = core.job_pairs(df)
    runs: list[dict[str, Any]] = []
    auto_runs: list[dict[str, Any]] = []
    with LocalCluster(n_workers=cfg["workers"], threads_per_worker=cfg["threads_per_worker"],
                      processes=cfg["processes"], dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        threshold = m["threshold"]
        # warm up the workers (imports, first task) on a small job, not measured
        run_one([df.head(500)], "warm-up", client, threshold, strategy="basic",
                cost_model="default")
        # (c)/(d): every strategy on the main job; auto first with an empty cache, so its
        # run includes calibration, then again with the calibrated model cached
        clear_cache()
        runs.append(run_one([df], "auto (calibrating)", client, threshold, strategy="auto",
                            cost_model="calibrate"))
        print(_summary_row(runs[-1]), flush=True)
        for s in _strategies():
            runs.append(run_one([df], s, client, threshold, strategy=s))
            print(_summary_row(runs[-1]), flush=True)
        runs.append(run_one([df], "sampling", client, threshold, sample=cfg["sample"]))
        print(_summary_row(runs[-1]), flush=True)
        runs.append(run_one([df], "auto", client, threshold, strategy="auto"))
        print(_summary_row(runs[-1]), flush=True)
        auto_runs.append({**runs[-1], "job": f"dedupe s={m['s']} (main job)"})
        # (e): auto on other jobs (calibrated model cached from above)
        for job in cfg["auto_jobs"]:
            if job["task"] == "link":
                both = core.skewed_job(2 * job["n"], job["b"], job["s"], m["dup_rate"],
                                       m["seed"] + 1)
                frames = [both.iloc[: job["n"]].reset_index(drop=True),
                          both.iloc[job["n"]:].reset_index(drop=True)]
            else:
                frames = [core.skewed_job(job["n"], job["b"], job["s"], m["dup_rate"],
                                          m["seed"] + 2)]
            r = run_one(frames, job["name"], client, threshold, strategy="auto")
            auto_runs.append({**r, "job": job["name"]})
            print(_summary_row(r), flush=True)

    balanced = [r for r in runs if r["label"].split(" ")[0] in BALANCED
                and r["label"] != "auto (calibrating)"]
    ratios = [r["measured_over_predicted"] for r in auto_runs if r["measured_over_predicted"]]
    result = {
        "benchmark": "cluster",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": bool(args.quick),
        "erblock": {"version": erblock.__version__, "path": str(Path(erblock.__file__).parent)},
        "machine": runinfo.machine_info(),
        "config": cfg,
        "job": {"records": len(df), "candidate_pairs": pairs_total},
        "targets": TARGETS,
        "waited_seconds": waited,
        "load_start": runs[0]["load_avg"] if runs else None,
        "runs": runs,
        "auto": auto_runs,
        "summary": {
            "worst_balanced_seconds_imbalance": max(r["imbalance_seconds"] for r in balanced),
            "balanced_within_target": [r["label"] for r in balanced
                                       if r["imbalance_seconds"] <= TARGETS[
                                           "seconds_imbalance_max"]],
            "planning_share_auto_cached": runs[-1]["planning_share"],
            "planning_share_auto_calibrating": runs[0]["planning_share"],
            "planning_share_max_non_calibrating": max(
                r["planning_share"] for r in runs if r["label"] != "auto (calibrating)"),
            "auto_measured_over_predicted_median": statistics.median(ratios) if ratios else None,
        },
        "total_seconds": time.perf_counter() - started,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from erblock.report import jsonable

    (out / f"{args.name}.json").write_text(json.dumps(result, indent=2, default=jsonable))
    (out / f"{args.name}.md").write_text(markdown(result))
    print(f"wrote {out / args.name}.json and .md in {result['total_seconds']:.0f} s")
    return result


def _f(x: Any, spec: str = ".3f") -> str:
    return "–" if x is None else format(x, spec)


def markdown(res: dict[str, Any]) -> str:
    """The results fragment for docs/benchmarks.md."""
    job = res["job"]
    cfg = res["config"]
    m = cfg["main"]
    t = res["targets"]
    lines = [
        "## Cluster: measured balance, planning overhead, auto's prediction",
        "",
        f"One local Dask cluster ({cfg['workers']} worker processes × "
        f"{cfg['threads_per_worker']} thread), the skewed dedupe job of `bench_core.py`: "
        f"{job['records']:,} names in b = {m['b']} blocks (n_k ∝ e^(−{m['s']}·k)), "
        f"{job['candidate_pairs']:,} candidate pairs, Jaro-Winkler ≥ {m['threshold']}. "
        f"Produced by `benchmarks/bench_cluster.py`{' (--quick)' if res['quick'] else ''} "
        f"on {res['date']}.",
        "",
        f"### (c) Measured balance and (d) planning overhead (targets: seconds imbalance ≤ "
        f"{t['seconds_imbalance_max']} for balanced strategies; planning ≤ "
        f"{100 * t['planning_share_max']:.0f} % of the job)",
        "",
        "| run | plan | imbalance (comparisons) | imbalance (task seconds) | makespan s | ideal s "
        "| makespan / ideal | predicted s | profile + plan | share of job | replication "
        "| load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["runs"]:
        lines.append(
            f"| {r['label']} | {r.get('auto_choice') or r['strategy']} | "
            f"{r['imbalance_comparisons']:.3f} | {r['imbalance_seconds']:.3f} | "
            f"{r['makespan']:.2f} | {r['ideal']:.2f} | {_f(r['makespan_over_ideal'], '.2f')} | "
            f"{_f(r['predicted_makespan'], '.2f')} | {r['planning_seconds']:.2f} s | "
            f"{100 * (r['planning_share'] or 0):.1f} % | {_f(r['replication'], '.2f')} | "
            f"{r['load_avg']:.1f} |")
    s = res["summary"]
    lines += [
        "",
        f"Worst task-seconds imbalance of a balanced strategy: "
        f"{s['worst_balanced_seconds_imbalance']:.3f}; within the target: "
        f"{', '.join(s['balanced_within_target']) or 'none'}. Planning share: "
        f"{100 * (s['planning_share_auto_cached'] or 0):.1f} % for `auto` with the cost model "
        f"cached, {100 * (s['planning_share_auto_calibrating'] or 0):.1f} % for the run that "
        f"calibrated it (once per session and cluster), at most "
        f"{100 * s['planning_share_max_non_calibrating']:.1f} % otherwise.",
        "",
        "### (e) `auto`: predicted vs measured makespan (route + compare)",
        "",
        "| job | comparisons | auto chose | predicted s | measured s | measured / predicted "
        "| seconds imbalance predicted | measured |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["auto"]:
        lines.append(
            f"| {r['job']} | {r['comparisons']:,} | {r.get('auto_choice') or r['strategy']} | "
            f"{_f(r['predicted_makespan'], '.2f')} | {r['makespan']:.2f} | "
            f"{_f(r['measured_over_predicted'], '.2f')} | "
            f"{_f(r['predicted_imbalance_seconds'])} | {r['imbalance_seconds']:.3f} |")
    lines += ["", f"Median measured / predicted: "
                  f"{_f(s['auto_measured_over_predicted_median'], '.2f')}. The model is a "
                  "list schedule of the reduce tasks (largest first, each to the first free "
                  "thread). Dask places a reduce task where its shuffled input is, so two "
                  "large tasks can queue on one worker while another idles: for `basic` "
                  "above, the two largest tasks ran one after the other on the same worker "
                  "(makespan / ideal far above the prediction). Balanced plans have no "
                  "such tasks."]
    last = res["auto"][0] if res["auto"] else None
    if last and last.get("candidates"):
        lines += ["", f"Candidates `auto` compared on the main job (predicted makespan, "
                      f"cost model {last['cost_model'].get('source', '?')}):", "",
                  "| candidate | predicted s | imbalance | replication | match tasks |",
                  "|---|---|---|---|---|"]
        for c in last["candidates"]:
            lines.append(f"| {'**' + c['label'] + '**' if c.get('chosen') else c['label']} | "
                         f"{c['predicted_makespan']:.2f} | {c['imbalance']:.3f} | "
                         f"{c['replication']:.2f} | {c['match_tasks']:,} |")
        cm = last["cost_model"]
        small = cm.get("per_small_comparison")
        lines += ["", f"Cost model: {cm['overhead_per_task'] * 1e3:.1f} ms per reduce task, "
                      f"{1 / cm['per_comparison'] / 1e6:.1f} M comparisons/s per thread"
                      + (f" ({1 / small / 1e6:.1f} M/s in small match tasks), " if small
                         else ", ")
                      + f"{cm['per_record'] * 1e6:.1f} µs per routed record, "
                      f"{cm['per_match_task'] * 1e6:.0f} µs per match task, "
                      f"{cm.get('overhead_per_job', 0.0):.2f} s per job."]
    lines.append("")
    return "\n".join(lines)


def render(path: str | Path) -> None:
    """Rewrite the markdown fragment next to a results JSON (after a format change)."""
    path = Path(path)
    path.with_suffix(".md").write_text(markdown(json.loads(path.read_text())))


if __name__ == "__main__":
    main()
