"""The ``erblock`` command: link, dedupe, plan and demo from the shell.

Exit codes: 0 ok, 2 bad arguments or input (the message says which), 1 failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

KEY_HELP = """\
blocking key (repeat --key for multi-pass blocking: a pair is a candidate when it agrees
on any pass). Forms: COLUMN | lower:COLUMN | prefix:COLUMN:N | token:COLUMN[:I] |
soundex:COLUMN | metaphone:COLUMN | nysiis:COLUMN; join parts with '+' for a composite key
that must agree on all parts, e.g. year+prefix:title:3"""

COMPARE_HELP = """\
comparison COLUMN:METHOD[:OPTION=VALUE...] (repeatable), METHOD one of exact, jaro_winkler,
jaro, levenshtein, damerau_levenshtein, indel, token_set, token_sort, numeric; options
weight=W, and for numeric scale=S, mode=abs|rel; for link with different column names use
LEFT=RIGHT:METHOD, e.g. title=name:jaro_winkler"""

EXAMPLES = {
    "link": """examples:
  erblock link dblp.csv acm.csv --key year+token:title --compare title:jaro_winkler \\
      --compare authors:token_set --threshold 0.8 -o pairs/ --report run.json
  erblock link r.parquet s.parquet --key soundex:surname --compare surname:jaro_winkler \\
      --scheduler tcp://scheduler:8786 -o /shared/pairs
  erblock link 'r/part-*.csv' s.csv --map surname=family_name --id rid=sid \\
      --key prefix:surname:4 --compare surname:jaro_winkler --compare given=first:jaro""",
    "dedupe": """examples:
  erblock dedupe people.csv --key soundex:surname --key dob \\
      --compare first_name:jaro_winkler --compare surname:jaro_winkler --compare dob:exact \\
      --threshold 0.85 -o dupes/ --report run.json
  erblock dedupe 'data/part-*.parquet' --key prefix:title:3 --compare title:indel -o out/
  erblock dedupe file:///data/people.csv --id person_id --key lower:city \\
      --compare name:jaro --scheduler tls://host:8786 --tls-ca-file ca.pem \\
      --tls-cert client.pem --tls-key client.key --quiet --json""",
    "plan": """examples:
  erblock plan titles.csv --key prefix:title:3 --n-tasks 100
  erblock plan dblp.csv acm.csv --key year --strategy blocksplit --json
  erblock plan people.parquet --key soundex:surname --plot plan.png""",
    "demo": """examples:
  erblock demo                      # link the bundled DBLP-ACM sample and score it
  erblock demo -o demo-pairs/ --report demo.json
  erblock report demo.json --html demo.html   # then open demo.html""",
    "report": """examples:
  erblock report run.json                           # summary on the terminal
  erblock report run.json --html report.html        # one self-contained page
  erblock report run.json --truth truth.csv --html report.html   # with quality metrics
  erblock report run.json --truth truth.parquet --pairs pairs/ --json""",
    "kube-spec": """examples:
  erblock kube-spec --workers 8 --threads 2 --memory 8Gi > cluster.yaml
  kubectl apply -f cluster.yaml
  erblock link r.parquet s.parquet ... --scheduler tcp://erblock-scheduler.default:8786
  erblock kube-spec --image registry.example.com/erblock:0.1.0 -o cluster.yaml""",
}


class UsageError(ValueError):
    """A bad command-line argument (exit code 2)."""


def parse_key(text: str) -> Any:
    """CLI key syntax -> key spec (see KEY_HELP)."""
    from .blocking import keys as k

    parts = [p for p in text.split("+") if p]
    if not parts:
        raise UsageError(f"--key {text!r}: empty key")
    specs: list[k.KeySpec] = []
    for part in parts:
        bits = part.split(":")
        kind = bits[0]
        try:
            if len(bits) == 1:
                specs.append(k.Column(kind))
            elif kind == "lower" and len(bits) == 2:
                specs.append(k.Lower(bits[1]))
            elif kind == "prefix" and len(bits) == 3:
                specs.append(k.Prefix(bits[1], int(bits[2])))
            elif kind == "token" and len(bits) in (2, 3):
                specs.append(k.Token(bits[1], int(bits[2]) if len(bits) == 3 else 0))
            elif kind in k.Phonetic.ALGORITHMS and len(bits) == 2:
                specs.append(k.Phonetic(bits[1], kind))
            else:
                raise UsageError(
                    f"--key {text!r}: cannot read {part!r}; expected COLUMN, lower:COLUMN, "
                    "prefix:COLUMN:N, token:COLUMN[:I], soundex:COLUMN, metaphone:COLUMN or "
                    "nysiis:COLUMN"
                )
        except UsageError:
            raise
        except ValueError as exc:
            raise UsageError(f"--key {text!r}: {exc}") from exc
    return specs[0] if len(specs) == 1 else k.Composite(tuple(specs))


def parse_compare(text: str) -> Any:
    """CLI comparison syntax -> Comparison (see COMPARE_HELP)."""
    from .matchers.comparisons import Comparison

    bits = text.split(":")
    if len(bits) < 2:
        raise UsageError(f"--compare {text!r}: expected COLUMN:METHOD, e.g. name:jaro_winkler")
    col, method, rest = bits[0], bits[1], bits[2:]
    left, _, right = col.partition("=")
    opts: dict[str, Any] = {}
    weight = 1.0
    for item in rest:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--compare {text!r}: option {item!r} must be NAME=VALUE")
        if key == "weight":
            weight = _number(value, text)
        elif key == "scale":
            opts["scale"] = _number(value, text)
        else:
            opts[key] = value
    try:
        return Comparison(left, method, weight, right_column=right,
                          options=tuple(sorted(opts.items())))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _number(value: str, text: str) -> float:
    try:
        return float(value)
    except ValueError as exc:
        raise UsageError(f"--compare {text!r}: {value!r} is not a number") from exc


def parse_pairs(values: Sequence[str] | None, option: str) -> dict[str, str]:
    """``["LEFT=RIGHT", ...]`` -> ``{LEFT: RIGHT}`` (for ``--map``)."""
    out: dict[str, str] = {}
    for text in values or []:
        left, eq, right = text.partition("=")
        if not eq or not left or not right:
            raise UsageError(f"{option} {text!r}: expected LEFT=RIGHT (a column of R, then of S)")
        if left in out:
            raise UsageError(f"{option}: column {left!r} is mapped twice")
        out[left] = right
    return out


def parse_id(text: str | None, n_inputs: int) -> tuple[str | None, str | None]:
    """``--id COLUMN`` (both inputs) or ``--id LEFT=RIGHT`` (link, names differ)."""
    if text is None:
        return None, None
    left, eq, right = text.partition("=")
    if not eq:
        return text, text
    if n_inputs != 2:
        raise UsageError(f"--id {text!r}: LEFT=RIGHT is for two inputs (link); give one column")
    if not left or not right:
        raise UsageError(f"--id {text!r}: expected COLUMN or LEFT=RIGHT")
    return left, right


def _add_cluster(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="use an existing Dask cluster, e.g. tcp://127.0.0.1:8786 "
                        "(default: a local cluster with one thread per core)")
    g.add_argument("--tls-ca-file", default=None, metavar="PEM",
                   help="certificate authority of a TLS-secured scheduler (tls://…)")
    g.add_argument("--tls-cert", default=None, metavar="PEM", help="this client's certificate")
    g.add_argument("--tls-key", default=None, metavar="PEM",
                   help="this client's private key (if not inside --tls-cert)")


def _add_display(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no progress bars or messages on stderr (errors still appear)")
    p.add_argument("--json", action="store_true",
                   help="print the result as one JSON object on stdout (for scripts; implies "
                        "no progress display)")


def _add_common(p: argparse.ArgumentParser, compare: bool = True) -> None:
    p.add_argument("--key", action="append", required=True, metavar="KEY", help=KEY_HELP)
    if compare:
        p.add_argument("--compare", action="append", required=True, metavar="SPEC",
                       help=COMPARE_HELP)
        p.add_argument("--threshold", type=float, default=None,
                       help="keep pairs with score >= THRESHOLD (in [0, 1])")
        p.add_argument("-o", "--output", default=None,
                       help="directory for the pairs (parquet parts written by the workers, "
                            "moved under this name only when the run succeeds); without it "
                            "the pairs are printed")
        p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
        p.add_argument("--report", default=None, metavar="JSON",
                       help="write the run report (per task and per phase) to this file; "
                            "draw it with `erblock report JSON --html FILE`")
        p.add_argument("--no-sort", action="store_true",
                       help="skip sorting pairs (sorted output is byte-identical across runs)")
    from .api import STRATEGY_NAMES

    p.add_argument("--strategy", default="auto",
                   help=f"{', '.join(STRATEGY_NAMES)} (default auto: the lowest predicted "
                        "makespan)")
    p.add_argument("--n-tasks", type=int, default=None, help="reduce tasks (default 4 × threads)")
    if compare:
        p.add_argument("--memory-budget", default=None, metavar="BYTES",
                       help="memory one reduce task may use, e.g. 512MB, or 'auto' (from the "
                            "workers' memory limit); tasks and compare chunks are sized to fit "
                            "(see docs/memory.md)")
    g = p.add_argument_group("input")
    g.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help="input format (default: from the file name)")
    g.add_argument("--encoding", default=None, help="CSV text encoding (default utf-8)")
    g.add_argument("--id", default=None, metavar="COLUMN",
                   help="column holding unique record ids (default: row number in input "
                        "order); for link with different names LEFT=RIGHT")
    g.add_argument("--map", action="append", default=None, metavar="LEFT=RIGHT",
                   help="link only: S's column RIGHT is R's column LEFT (repeatable); keys and "
                        "comparisons then name R's column for both")
    _add_cluster(p)
    _add_display(p)


def build_parser() -> argparse.ArgumentParser:
    """The ``erblock`` argument parser (every command's ``--help`` ends with examples)."""
    parser = argparse.ArgumentParser(
        prog="erblock",
        description="Entity resolution with blocking on Dask, balanced for skewed blocks.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(EXAMPLES.values()) + "\n\nexit codes: 0 ok, 2 bad arguments or "
               "input, 1 failure",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"erblock {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("link", help="link two sources R × S", epilog=EXAMPLES["link"],
                       description="Link two sources: compare every pair (r, s) that shares a "
                                   "block, score it, keep pairs above --threshold.",
                       formatter_class=fmt)
    p.add_argument("left", help="CSV/parquet file, directory, glob or fsspec URL of R")
    p.add_argument("right", help="CSV/parquet file, directory, glob or fsspec URL of S")
    _add_common(p)
    p.set_defaults(func=cmd_link)
    p = sub.add_parser("dedupe", help="find duplicates in one source", epilog=EXAMPLES["dedupe"],
                       description="Deduplicate one source: compare each unordered pair of "
                                   "records that shares a block, once.",
                       formatter_class=fmt)
    p.add_argument("input", help="CSV/parquet file, directory, glob or fsspec URL")
    _add_common(p)
    p.set_defaults(func=cmd_dedupe)
    p = sub.add_parser("plan", help="profile the input and print the plan, without comparing",
                       description="Profile the input (records per block and partition) and "
                                   "print the plan a run would execute: loads per reduce "
                                   "task, imbalance, replication, largest match tasks.",
                       epilog=EXAMPLES["plan"], formatter_class=fmt)
    p.add_argument("left", help="input (dedupe) or R (link)")
    p.add_argument("right", nargs="?", default=None, help="S (link)")
    _add_common(p, compare=False)
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="draw the plan to a PNG: loads per reduce task, basic vs the chosen "
                        "strategy, the largest blocks")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("demo", help="link the bundled DBLP-ACM sample and report quality",
                       description="Link the bundled DBLP-ACM sample (2,616 × 2,294 records "
                                   "with their true matches) and print precision and recall.",
                       epilog=EXAMPLES["demo"], formatter_class=fmt)
    p.add_argument("-o", "--output", default=None, help="also write the pairs here (parquet)")
    p.add_argument("--report", default=None, metavar="JSON", help="write the run report")
    p.add_argument("--threshold", type=float, default=0.75, help="score threshold (default 0.75)")
    _add_cluster(p)
    _add_display(p)
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("report", help="summarise a run report and draw it as an HTML page",
                       description="Read the JSON written by --report: print its summary, "
                                   "and with --html write one self-contained page (plan, "
                                   "per-task times, phases, quality when truth is given).",
                       epilog=EXAMPLES["report"], formatter_class=fmt)
    p.add_argument("report", help="run report JSON (from link/dedupe/demo --report)")
    p.add_argument("--html", default=None, metavar="FILE", help="write the HTML page here")
    p.add_argument("--truth", default=None, metavar="FILE",
                   help="true pairs, CSV or parquet with left_id,right_id: adds precision, "
                        "recall, F1, pair completeness and reduction ratio")
    p.add_argument("--pairs", default=None, metavar="PATH",
                   help="pairs to evaluate (default: the run's output directory)")
    p.add_argument("--threshold", type=float, default=None,
                   help="evaluate only pairs with score >= THRESHOLD")
    p.add_argument("--title", default=None, help="page title")
    _add_display(p)
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("kube-spec", help="print a DaskCluster manifest for Kubernetes",
                       description="Print a DaskCluster resource for the Dask Kubernetes "
                                   "operator whose pods run this erblock version; apply it "
                                   "with kubectl and pass --scheduler "
                                   "tcp://NAME-scheduler.NAMESPACE:8786 to link/dedupe.",
                       epilog=EXAMPLES["kube-spec"], formatter_class=fmt)
    p.add_argument("--name", default="erblock", help="cluster name (default erblock)")
    p.add_argument("--workers", type=int, default=2, help="worker pods (default 2)")
    p.add_argument("--threads", type=int, default=2, help="threads per worker (default 2)")
    p.add_argument("--memory", default="4Gi", help="memory per pod (default 4Gi)")
    p.add_argument("--cpu", default=None, help="CPU per pod (default: --threads)")
    p.add_argument("--image", default=None,
                   help="container image with erblock (default: the Dask image matching this "
                        "Dask/Python, installing erblock at start)")
    p.add_argument("-o", "--output", default=None, metavar="YAML",
                   help="write here instead of stdout")
    p.add_argument("--json", action="store_true", help="JSON instead of YAML")
    p.set_defaults(func=cmd_kube_spec, quiet=True)
    return parser


def _say(args: argparse.Namespace, *msg: Any) -> None:
    if not args.quiet and not args.json:
        print(*msg, file=sys.stderr)


def _progress(args: argparse.Namespace) -> bool:
    return not (args.quiet or args.json)


def _client(args: argparse.Namespace) -> Any:
    """The client of --scheduler (with --tls-* security) or erblock's local cluster; prints
    the dashboard link when the cluster serves one."""
    from .engine.cluster import dashboard_link, get_client, make_security

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
    from .engine.io import read_table, rename_columns

    ids = parse_id(args.id, len(paths))
    mapping = parse_pairs(args.map, "--map")
    if mapping and len(paths) != 2:
        raise UsageError("--map renames columns of S for link; it needs two inputs")
    frames = [read_table(path, args.format, encoding=args.encoding, id_column=ids[i],
                         client=client) for i, path in enumerate(paths)]
    if mapping:
        frames[1] = rename_columns(frames[1], mapping, f"S ({paths[1]!r})")
    return frames


def _parse(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    keys = [parse_key(k) for k in args.key]
    compare = [parse_compare(c) for c in args.compare]
    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise UsageError(f"--threshold must be in [0, 1], got {args.threshold}")
    return keys, compare


def _run(args: argparse.Namespace, paths: Sequence[str]) -> int:
    import erblock

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
    if len(frames) == 2:
        result = erblock.link(frames[0], frames[1], **kwargs)
    else:
        result = erblock.dedupe(frames[0], **kwargs)
    if isinstance(result, erblock.RunReport):
        report, pairs = result, None
    else:
        report, pairs = result.attrs["erblock_report"], result
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

    keys = [parse_key(k) for k in args.key]
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
    from .report import RunReport
    from .report_html import load_report, quality_from_truth, write_html

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
    import dataclasses

    fields = {f.name for f in dataclasses.fields(RunReport)}
    report = RunReport(**{k: v for k, v in data.items() if k in fields})
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
    from .engine.kube import cluster_spec, to_yaml

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
    import pandas as pd

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
    assert isinstance(pairs, pd.DataFrame)  # no output directory: the pairs come back
    report = pairs.attrs["erblock_report"]
    kept = pairs[pairs["score"] >= args.threshold]
    quality = _quality(kept, pairs, truth, len(dblp), len(acm))
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


def _quality(kept: Any, candidates: Any, truth: Any, n_left: int, n_right: int
             ) -> dict[str, Any]:
    true = set(zip(truth["left_id"], truth["right_id"]))
    got = set(zip(kept["left_id"], kept["right_id"]))
    cand = set(zip(candidates["left_id"], candidates["right_id"]))
    tp = len(got & true)
    precision = tp / len(got) if got else 0.0
    recall = tp / len(true) if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "pair_completeness": len(cand & true) / len(true) if true else 0.0,
        "reduction_ratio": 1 - len(cand) / (n_left * n_right),
        "candidates": len(cand),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``erblock`` command; returns the exit code (0 ok, 2 bad arguments, 1 failure).

    argparse itself exits with 2 (usage message on stderr) for unknown options or missing
    arguments, and with 0 for ``--help``/``--version``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (UsageError, ValueError, KeyError, TypeError, FileNotFoundError, FileExistsError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"erblock {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("erblock: interrupted", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the command line reports every failure
        print(f"erblock {args.command}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
