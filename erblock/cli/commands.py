"""The ``erblock`` command's subcommands: link, dedupe, plan, demo, report, kube-spec."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..engine.output import check_output, staged_output
from ..matchers.comparisons import parse_compare
from ..report import REPORT_FILE
from .common import (
    _client,
    _inputs,
    _keys,
    _progress,
    _say,
    in_cli_terms,
    to_json_line,
)
from .parser import UsageError
from .paths import check_apart

#: options that compare, score or decide: none of them goes with --candidates
_COMPARING = (("compare", None), ("threshold", None), ("scoring", "mean"), ("model", None),
              ("save_model", None), ("cardinality", None), ("cluster", None))


def _parse(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    keys = _keys(args)
    if args.candidates:
        given = [f"--{n.replace('_', '-')}" for n, unset in _COMPARING
                 if getattr(args, n, unset) != unset]
        if given:
            raise UsageError(f"--candidates compares nothing, so {', '.join(given)} cannot "
                             "go with it")
        return keys, []
    if not args.compare:
        raise UsageError("--compare is required (e.g. --compare name:jaro_winkler), or "
                         "--candidates for the candidate pairs only")
    try:
        compare = [parse_compare(c) for c in args.compare]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise UsageError(f"--threshold must be in [0, 1], got {args.threshold}")
    return keys, compare


def _scoring(args: argparse.Namespace) -> Any:
    """``--scoring`` / ``--model``: a name the API knows, or the loaded model."""
    if args.model is None:
        if args.save_model and args.scoring == "mean":
            raise UsageError("--save-model saves the fitted model; use it with --scoring em "
                             "(or --model)")
        return args.scoring
    if args.scoring != "mean":
        raise UsageError(f"--model scores with a saved model; drop --scoring {args.scoring}")
    from ..matchers.scoring import load_model

    try:
        model = load_model(args.model)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise UsageError(f"--model {args.model!r}: {what}") from None
    if not getattr(model, "fitted", True):
        raise UsageError(f"--model {args.model!r} is not a fitted model (it holds no "
                         "parameters); fit one with --scoring em --save-model")
    return model


def _check_writable(flag: str, path: str | None, make_parent: bool = False) -> None:
    """A file the run writes at its end: refused now when it cannot be written then
    (``make_parent``: the writer makes a missing directory itself)."""
    if path is None:
        return
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path!r} is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not make_parent and not os.path.isdir(parent):
        raise UsageError(f"{flag} {path!r}: no directory {parent!r}")


def _run(args: argparse.Namespace, paths: Sequence[str]) -> int:
    from .. import api

    keys, compare = _parse(args)
    check_apart(args.output, [*paths, args.model],
                [("--report", args.report), ("--save-model", args.save_model)], args.format)
    for flag, path in (("--save-model", args.save_model), ("--report", args.report)):
        _check_writable(flag, path)
    scoring = None if args.candidates else _scoring(args)
    cluster_at = getattr(args, "cluster", None)
    if cluster_at is not None and not 0.0 <= cluster_at <= 1.0:
        raise UsageError(f"--cluster must be in [0, 1], got {cluster_at}")
    client = _client(args)
    frames = _inputs(args, paths, client)
    staged = args.output if cluster_at is not None else None  # DIR/pairs and DIR/entities
    kwargs: dict[str, Any] = dict(
        key=keys if len(keys) > 1 else keys[0], strategy=args.strategy, n_tasks=args.n_tasks,
        client=client, output=args.output, progress=_progress(args), sort=not args.no_sort,
        overwrite=args.overwrite,
    )
    if not args.candidates:
        kwargs.update(compare=compare, scoring=scoring, threshold=args.threshold)
    if args.memory_budget is not None:
        kwargs["memory_budget"] = args.memory_budget
    if getattr(args, "cardinality", None) is not None:
        kwargs["cardinality"] = args.cardinality
    start = time.perf_counter()
    with staged_output(staged, args.overwrite) as work:
        if work is not None:
            kwargs["output"] = os.path.join(work, "pairs")
        with in_cli_terms(paths):
            result = (api.run_candidates if args.candidates else api.run_frames)(frames,
                                                                                  **kwargs)
        entities = _entities(args, cluster_at, result, frames[0], work, client)
    report, pairs = result.report, result.pairs
    if work is not None:  # the staged directory now has its final name
        report = _moved(report, os.path.join(os.path.abspath(args.output), "pairs"))
    if args.report:
        report.to_json(args.report)
    saved = args.save_model and getattr(result.model, "fitted", False)
    if saved:  # a run without candidate pairs fits nothing (it warned)
        result.model.to_json(args.save_model)  # type: ignore[union-attr]
    wall = time.perf_counter() - start
    if args.json:
        out = report.to_dict()
        out["wall_seconds"] = wall
        if entities is not None:
            out["entities"] = entities
        if not args.report:
            out.pop("tasks", None)
        print(to_json_line(out))
    else:
        _say(args, report.summary())
        if entities is not None:
            _say(args, f"{entities['records']:,} records in {entities['entities']:,} "
                       f"entities (largest {entities['largest']:,})"
                       + (f"; written to {args.output}/entities" if args.output
                          else "; the entity ids are not kept: use -o DIR to write them"))
        if args.save_model:
            _say(args, f"model saved to {args.save_model}" if saved else
                 "model not saved: it is not fitted (no candidate pairs)")
        if pairs is None:
            _say(args, "pairs written to " + (os.path.join(args.output, "pairs")
                                              if work is not None else str(report.output)))
        else:

            with pd.option_context("display.width", 160, "display.max_columns", 20):
                print(pairs.head(20).to_string(index=False))
                if len(pairs) > 20:
                    print(f"… {len(pairs) - 20:,} more pairs (use -o DIR to write them all)")
    return 0


def _moved(report: Any, pairs_dir: str) -> Any:
    """``report`` naming ``pairs_dir`` as its output, also in the directory's own report
    file (both were written while the pairs sat in the staging directory)."""
    import dataclasses

    report = dataclasses.replace(report, output=pairs_dir)
    if os.path.exists(os.path.join(pairs_dir, REPORT_FILE)):
        report.to_json(os.path.join(pairs_dir, REPORT_FILE))
    return report


def _entities(args: argparse.Namespace, threshold: float | None, result: Any, records: Any,
              work: str | None, client: Any) -> dict[str, Any] | None:
    """``--cluster T``: entity ids over the pairs scoring >= T (connected components)."""
    from . import entities as ent

    if threshold is None:
        return None
    if result.pairs is not None:
        column = ent.score_column_of(result.pairs.columns)
        ids = client.compute(records.index, sync=True)
        _, info = ent.in_memory_entities(result.pairs, pd.Index(ids), threshold, column)
        return info
    import dask.dataframe as dd

    assert work is not None
    pairs = dd.read_parquet(os.path.join(work, "pairs"))
    column = ent.score_column_of(pairs.columns)
    info = ent.write_entities(ent.entity_frame(pairs, records, threshold, column, client),
                              os.path.join(work, "entities"), client)
    info["path"] = os.path.join(args.output, "entities")
    return info


def cmd_link(args: argparse.Namespace) -> int:
    """``erblock link R S …``."""
    return _run(args, [args.left, args.right])


def cmd_dedupe(args: argparse.Namespace) -> int:
    """``erblock dedupe IN …``."""
    return _run(args, [args.input])


def cmd_plan(args: argparse.Namespace) -> int:
    """``erblock plan IN [S] …``: profile, plan, print (and draw) without comparing."""
    import erblock

    keys = _keys(args)
    _check_writable("--plot", args.plot)  # before the profile, not after it
    client = _client(args)
    frames = _inputs(args, [args.left] + ([args.right] if args.right else []), client)
    with in_cli_terms([args.left] + ([args.right] if args.right else [])):
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
        print(to_json_line(p.summary()))
    else:
        print(p.describe())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``erblock report run.json [--html FILE] [--truth FILE]``."""
    from ..report import RunReport, report_path
    from ..report_html import load_report, quality_from_truth, write_html

    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise UsageError(f"--threshold must be in [0, 1], got {args.threshold}")
    if args.pairs is not None and args.truth is None:
        raise UsageError("--pairs is evaluated against --truth; give --truth FILE too")
    _check_writable("--html", args.html, make_parent=True)
    check_apart(None, [args.report, args.truth, args.pairs], [("--html", args.html)])
    path = args.report  # an output directory holds its run's report
    if os.path.isdir(path) and os.path.isfile(report_path(path)):
        path = report_path(path)
    data = load_report(path)
    quality = data.get("quality")
    if args.truth is not None:
        quality = quality_from_truth(data, args.truth, pairs=args.pairs,
                                     threshold=args.threshold)
        if quality.get("ids_in_common") == 0:
            print(f"erblock report: warning: no id of --truth {args.truth!r} is an id of the "
                  "pairs: the run used other ids (give the run the --id the truth uses)",
                  file=sys.stderr)
    if args.html:
        write_html(data, args.html, quality=quality, title=args.title)
        _say(args, f"report page written to {args.html}")
    report = RunReport.from_dict(data)
    if args.json:
        out = {k: v for k, v in report.to_dict().items() if k != "tasks"}
        out["quality"] = quality
        if args.html:
            out["html"] = args.html
        print(to_json_line(out))
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

    _check_writable("-o", args.output)
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

    if not 0.0 <= args.threshold <= 1.0:  # the mean score is in [0, 1]
        raise UsageError(f"--threshold must be between 0 and 1, got {args.threshold}")
    if args.output:  # before the run: an existing directory is never replaced unasked
        check_output(args.output, args.overwrite)
        check_apart(args.output, [], [("--report", args.report)])
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
    quality = erblock.evaluate(pairs, truth, threshold=args.threshold, score_column="score",
                               n_left=len(dblp), n_right=len(acm))
    d = report.to_dict()
    d["quality"] = quality  # over every candidate: the run computed them all
    # what the output and this report hold: the pairs at the threshold (pair completeness
    # is then the quality's, not the kept pairs' recall, for `erblock report --truth`)
    d["settings"] = {**d.get("settings", {}), "threshold": args.threshold}
    d["pairs"] = len(kept)
    if args.output:  # the kept pairs, and the report beside them (it marks the output)
        d["output"] = os.path.abspath(args.output)
        _write_dir_atomically(kept, args.output, args.overwrite, d)
    if args.report:
        with open(args.report, "w") as fh:
            json.dump(d, fh, indent=2, default=str)
    if args.json:
        print(to_json_line({"report": {k: v for k, v in report.to_dict().items()
                                       if k != "tasks"}, "quality": quality}))
        return 0
    print(report.summary())
    print(f"score >= {args.threshold}: {len(kept):,} of the {len(pairs):,} compared pairs kept")
    for k, v in quality.items():
        print(f"  {k:<18} {v:.4f}" if isinstance(v, float) else f"  {k:<18} {v}")
    top = kept.merge(dblp[["title"]], left_on="left_id", right_index=True).head(5)
    print("a few matches:")
    for row in top.itertuples(index=False):
        print(f"  {row.score:.3f}  {row.left_id} ~ {row.right_id}  {str(row.title)[:60]}")
    return 0


def _write_dir_atomically(pairs: Any, output: str, overwrite: bool,
                          report: dict[str, Any]) -> None:
    """Write ``pairs`` as ``output/part-00000.parquet`` with ``report`` beside them,
    replacing an existing ``output`` (only with ``overwrite``) once the new directory is
    complete (an interrupted write leaves the old one, or nothing)."""
    with staged_output(output, overwrite=overwrite) as work:
        assert work is not None
        pairs.to_parquet(os.path.join(work, "part-00000.parquet"), index=False)
        with open(os.path.join(work, REPORT_FILE), "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, default=str)
