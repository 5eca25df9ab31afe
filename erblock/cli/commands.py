"""The ``erblock`` command's subcommands: link, dedupe, plan, demo, report, kube-spec."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..blocking.registry import parse_key
from ..matchers.comparisons import parse_compare
from .parser import UsageError, parse_id, parse_pairs


def _say(args: argparse.Namespace, *msg: Any) -> None:
    if not args.quiet and not args.json:
        print(*msg, file=sys.stderr)


def _progress(args: argparse.Namespace) -> bool:
    return not (args.quiet or args.json)


def _client(args: argparse.Namespace) -> Any:
    """The client of --scheduler (with --tls-* security) or erblock's local cluster; prints
    the dashboard link when the cluster serves one."""
    from ..engine.cluster import dashboard_link, get_client, make_security

    tls = (args.tls_ca_file, args.tls_cert, args.tls_key)
    security = None
    if any(v is not None for v in tls):
        if args.scheduler is None:
            raise UsageError("--tls-ca-file/--tls-cert/--tls-key secure the connection to "
                             "--scheduler; give --scheduler tls://HOST:PORT too")
        try:
            security = make_security(*tls)
        except (ValueError, FileNotFoundError) as exc:
            raise UsageError(str(exc).replace("tls_ca_file", "--tls-ca-file")
                             .replace("tls_cert", "--tls-cert")
                             .replace("tls_key", "--tls-key")) from exc
    elif args.scheduler is not None and args.scheduler.startswith("tls://"):
        raise UsageError(f"--scheduler {args.scheduler!r} is a TLS address; give "
                         "--tls-ca-file and --tls-cert (and --tls-key)")
    client = get_client(args.scheduler, security=security)
    link = dashboard_link(client)
    if link:
        _say(args, f"dashboard: {link}")
    return client


def _inputs(args: argparse.Namespace, paths: Sequence[str], client: Any) -> list[Any]:
    """Read the inputs (lazy Dask frames indexed by record id), S renamed by --map."""
    from ..engine.io import read_table, rename_columns

    ids = parse_id(args.id, len(paths))
    mapping = parse_pairs(args.map, "--map")
    if mapping and len(paths) != 2:
        raise UsageError("--map renames columns of S for link; it needs two inputs")
    frames = [read_table(path, args.format, encoding=args.encoding, id_column=ids[i],
                         client=client) for i, path in enumerate(paths)]
    if mapping:
        frames[1] = rename_columns(frames[1], mapping, f"S ({paths[1]!r})")
    return frames


def _keys(args: argparse.Namespace) -> list[Any]:
    try:
        return [parse_key(k) for k in args.key]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _parse(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    keys = _keys(args)
    try:
        compare = [parse_compare(c) for c in args.compare]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise UsageError(f"--threshold must be in [0, 1], got {args.threshold}")
    return keys, compare


def _run(args: argparse.Namespace, paths: Sequence[str]) -> int:
    from .. import api

    keys, compare = _parse(args)
    client = _client(args)
    frames = _inputs(args, paths, client)
    kwargs: dict[str, Any] = dict(
        key=keys if len(keys) > 1 else keys[0], compare=compare, strategy=args.strategy,
        n_tasks=args.n_tasks, threshold=args.threshold, client=client, output=args.output,
        progress=_progress(args), sort=not args.no_sort, overwrite=args.overwrite,
    )
    if args.memory_budget is not None:
        kwargs["memory_budget"] = args.memory_budget
    start = time.perf_counter()
    result = api.run_frames(frames, **kwargs)
    report, pairs = result.report, result.pairs
    if args.report:
        report.to_json(args.report)
    wall = time.perf_counter() - start
    if args.json:
        out = report.to_dict()
        out["wall_seconds"] = wall
        if not args.report:
            out.pop("tasks", None)
        print(json.dumps(out, default=str))
    else:
        _say(args, report.summary())
        if pairs is None:
            _say(args, f"pairs written to {report.output}")
        else:
            import pandas as pd

            with pd.option_context("display.width", 160, "display.max_columns", 20):
                print(pairs.head(20).to_string(index=False))
                if len(pairs) > 20:
                    print(f"… {len(pairs) - 20:,} more pairs (use -o DIR to write them all)")
    return 0


def cmd_link(args: argparse.Namespace) -> int:
    """``erblock link R S …``."""
    return _run(args, [args.left, args.right])


def cmd_dedupe(args: argparse.Namespace) -> int:
    """``erblock dedupe IN …``."""
    if args.map:
        raise UsageError("--map renames columns of S for link; dedupe has one input")
    return _run(args, [args.input])


def cmd_plan(args: argparse.Namespace) -> int:
    """``erblock plan IN [S] …``: profile, plan, print (and draw) without comparing."""
    import erblock

    keys = _keys(args)
    client = _client(args)
    frames = _inputs(args, [args.left] + ([args.right] if args.right else []), client)
    p = erblock.plan(frames[0], frames[1] if len(frames) > 1 else None,
                     key=keys if len(keys) > 1 else keys[0], strategy=args.strategy,
                     n_tasks=args.n_tasks, client=client, progress=_progress(args))
    if args.plot:
        plot = getattr(p, "plot", None)
        if plot is None:
            raise RuntimeError("--plot: this erblock's Plan cannot draw itself (Plan.plot is "
                               "missing)")
        plot(args.plot)
        _say(args, f"plan drawn to {args.plot}")
    if args.json:
        print(json.dumps(p.summary(), default=str))
    else:
        print(p.describe())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``erblock report run.json [--html FILE] [--truth FILE]``."""
    from ..report import RunReport
    from ..report_html import load_report, quality_from_truth, write_html

    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise UsageError(f"--threshold must be in [0, 1], got {args.threshold}")
    if args.pairs is not None and args.truth is None:
        raise UsageError("--pairs is evaluated against --truth; give --truth FILE too")
    data = load_report(args.report)
    quality = data.get("quality")
    if args.truth is not None:
        quality = quality_from_truth(data, args.truth, pairs=args.pairs,
                                     threshold=args.threshold)
    if args.html:
        write_html(data, args.html, quality=quality, title=args.title)
        _say(args, f"report page written to {args.html}")
    report = RunReport.from_dict(data)
    if args.json:
        out = {k: v for k, v in report.to_dict().items() if k != "tasks"}
        out["quality"] = quality
        if args.html:
            out["html"] = args.html
        print(json.dumps(out, default=str))
        return 0
    print(report.summary())
    if quality:
        print("quality:")
        for k, v in quality.items():
            if isinstance(v, float):
                print(f"  {k:<18} {v:.4f}")
            elif isinstance(v, int) or v is None:
                print(f"  {k:<18} {v}")
    return 0


def cmd_kube_spec(args: argparse.Namespace) -> int:
    """``erblock kube-spec``: a DaskCluster manifest for the Dask Kubernetes operator."""
    from ..engine.kube import cluster_spec, to_yaml

    spec = cluster_spec(args.name, n_workers=args.workers, image=args.image,
                        threads=args.threads, memory=args.memory, cpu=args.cpu)
    text = json.dumps(spec, indent=2) + "\n" if args.json else to_yaml(spec)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Link the bundled DBLP-ACM sample: bibliographic records with a known true mapping."""

    import erblock
    from erblock.blocking import Column, Composite, Token
    from erblock.datasets import load_dblp_acm

    dblp, acm, truth = load_dblp_acm()
    _say(args, f"DBLP-ACM: {len(dblp):,} DBLP × {len(acm):,} ACM records, "
               f"{len(truth):,} true matches (bundled)")
    client = _client(args)
    key = [Composite((Column("year"), Token("title", 0))),
           Composite((Column("year"), Token("title", 1)))]
    compare = [
        erblock.comparison("title", "jaro_winkler", weight=2.0),
        erblock.comparison("title", "token_set"),
        erblock.comparison("authors", "token_set"),
    ]
    pairs = erblock.link(dblp, acm, key=key, compare=compare, threshold=None, client=client,
                         progress=_progress(args), sort=True)
    report = erblock.RunReport.of(pairs)
    kept = pairs[pairs["score"] >= args.threshold]
    quality = erblock.evaluate(kept, truth, candidates=pairs, n_left=len(dblp),
                               n_right=len(acm))
    if args.output:
        _write_dir_atomically(kept, args.output)
    if args.report:
        d = report.to_dict()
        d["quality"] = quality
        with open(args.report, "w") as fh:
            json.dump(d, fh, indent=2, default=str)
    if args.json:
        print(json.dumps({"report": {k: v for k, v in report.to_dict().items() if k != "tasks"},
                          "quality": quality}, default=str))
        return 0
    print(report.summary())
    print(f"threshold {args.threshold}: {len(kept):,} pairs kept")
    for k, v in quality.items():
        print(f"  {k:<18} {v:.4f}" if isinstance(v, float) else f"  {k:<18} {v}")
    top = kept.merge(dblp[["title"]], left_on="left_id", right_index=True).head(5)
    print("a few matches:")
    for row in top.itertuples(index=False):
        print(f"  {row.score:.3f}  {row.left_id} ~ {row.right_id}  {str(row.title)[:60]}")
    return 0


def _write_dir_atomically(pairs: Any, output: str) -> None:
    """Write ``pairs`` as ``output/part-00000.parquet``, replacing ``output`` only once the
    new directory is complete (an interrupted write leaves the old one, or nothing)."""
    import os
    import shutil
    import tempfile

    final = os.path.abspath(output)
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=os.path.basename(final) + ".erblock-tmp-", dir=parent)
    try:
        pairs.to_parquet(os.path.join(work, "part-00000.parquet"), index=False)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
