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
      --scheduler tcp://scheduler:8786 -o s3-or-shared-dir/pairs""",
    "dedupe": """examples:
  erblock dedupe people.csv --key soundex:surname --key dob \\
      --compare first_name:jaro_winkler --compare surname:jaro_winkler --compare dob:exact \\
      --threshold 0.85 -o dupes/ --report run.json
  erblock dedupe 'data/part-*.parquet' --key prefix:title:3 --compare title:indel -o out/""",
    "plan": """examples:
  erblock plan titles.csv --key prefix:title:3 --n-tasks 100
  erblock plan dblp.csv acm.csv --key year --strategy blocksplit --json""",
    "demo": """examples:
  erblock demo                      # link the bundled DBLP-ACM sample and score it
  erblock demo -o demo-pairs/ --report demo.json""",
}


class UsageError(ValueError):
    """A bad command-line argument (exit code 2)."""


def parse_key(text: str) -> Any:
    """CLI key syntax -> key spec (see KEY_HELP)."""
    from .blocking import keys as k

    parts = [p for p in text.split("+") if p]
    if not parts:
        raise UsageError(f"--key {text!r}: empty key")
    specs = []
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


def _add_common(p: argparse.ArgumentParser, compare: bool = True) -> None:
    p.add_argument("--key", action="append", required=True, metavar="KEY", help=KEY_HELP)
    if compare:
        p.add_argument("--compare", action="append", required=True, metavar="SPEC",
                       help=COMPARE_HELP)
        p.add_argument("--threshold", type=float, default=None,
                       help="keep pairs with score >= THRESHOLD (in [0, 1])")
        p.add_argument("-o", "--output", default=None,
                       help="directory for the pairs (parquet parts written by the workers); "
                            "without it the pairs are printed")
        p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
        p.add_argument("--report", default=None, metavar="JSON",
                       help="write the run report (per task and per phase) to this file")
        p.add_argument("--no-sort", action="store_true",
                       help="skip sorting pairs (sorted output is byte-identical across runs)")
    p.add_argument("--strategy", default="auto", help="auto, basic, blocksplit, … (default auto)")
    p.add_argument("--n-tasks", type=int, default=None, help="reduce tasks (default 4 × threads)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="use an existing Dask cluster, e.g. tcp://127.0.0.1:8786")
    p.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help="input format (default: from the file name)")
    p.add_argument("--encoding", default=None, help="CSV text encoding (default utf-8)")
    p.add_argument("--id", default=None, metavar="COLUMN",
                   help="column holding unique record ids (default: row number)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--json", action="store_true", help="print the result as JSON (for scripts)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="erblock",
        description="Entity resolution with blocking on Dask, balanced for skewed blocks.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(EXAMPLES.values()),
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"erblock {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("link", help="link two sources R × S", epilog=EXAMPLES["link"],
                       formatter_class=fmt)
    p.add_argument("left", help="CSV/parquet file, glob or URL of R")
    p.add_argument("right", help="CSV/parquet file, glob or URL of S")
    _add_common(p)
    p.set_defaults(func=cmd_link)
    p = sub.add_parser("dedupe", help="find duplicates in one source", epilog=EXAMPLES["dedupe"],
                       formatter_class=fmt)
    p.add_argument("input", help="CSV/parquet file, glob or URL")
    _add_common(p)
    p.set_defaults(func=cmd_dedupe)
    p = sub.add_parser("plan", help="profile the input and print the plan, without comparing",
                       epilog=EXAMPLES["plan"], formatter_class=fmt)
    p.add_argument("left", help="input (dedupe) or R (link)")
    p.add_argument("right", nargs="?", default=None, help="S (link)")
    _add_common(p, compare=False)
    p.add_argument("--plot", default=None, metavar="PNG", help="draw the plan's loads to a PNG")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("demo", help="link the bundled DBLP-ACM sample and report quality",
                       epilog=EXAMPLES["demo"], formatter_class=fmt)
    p.add_argument("-o", "--output", default=None, help="also write the pairs here (parquet)")
    p.add_argument("--report", default=None, metavar="JSON", help="write the run report")
    p.add_argument("--threshold", type=float, default=0.75, help="score threshold (default 0.75)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="existing Dask cluster")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_demo)
    return parser


def _say(args: argparse.Namespace, *msg: Any) -> None:
    if not args.quiet and not args.json:
        print(*msg, file=sys.stderr)


def _client(args: argparse.Namespace) -> Any:
    from .engine.cluster import dashboard_link, get_client

    client = get_client(args.scheduler)
    link = dashboard_link(client)
    if link:
        _say(args, f"dashboard: {link}")
    return client


def _read(path: str, args: argparse.Namespace) -> Any:
    from .engine.io import read_table

    return read_table(path, args.format, encoding=args.encoding, id_column=args.id)


def _parse(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    keys = [parse_key(k) for k in args.key]
    compare = [parse_compare(c) for c in args.compare]
    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        raise UsageError(f"--threshold must be in [0, 1], got {args.threshold}")
    return keys, compare


def _run(args: argparse.Namespace, frames: list[Any], keys: list[Any], compare: list[Any]) -> int:
    import erblock

    client = _client(args)
    kwargs: dict[str, Any] = dict(
        key=keys if len(keys) > 1 else keys[0], compare=compare, strategy=args.strategy,
        n_tasks=args.n_tasks, threshold=args.threshold, client=client, output=args.output,
        progress=not (args.quiet or args.json), sort=not args.no_sort, overwrite=args.overwrite,
    )
    start = time.perf_counter()
    if len(frames) == 2:
        result = erblock.link(frames[0], frames[1], **kwargs)
    else:
        result = erblock.dedupe(frames[0], **kwargs)
    report = result if isinstance(result, erblock.RunReport) else result.attrs["erblock_report"]
    if args.report:
        report.to_json(args.report)
    wall = time.perf_counter() - start
    if args.json:
        out = report.to_dict()
        out["wall_seconds"] = wall
        out.pop("tasks", None) if not args.report else None
        print(json.dumps(out, default=str))
    else:
        _say(args, report.summary())
        if args.output:
            _say(args, f"pairs written to {report.output}")
        else:
            import pandas as pd

            with pd.option_context("display.width", 160, "display.max_columns", 20):
                print(result.head(20).to_string(index=False))
                if len(result) > 20:
                    print(f"… {len(result) - 20:,} more pairs (use -o DIR to write them all)")
    return 0


def cmd_link(args: argparse.Namespace) -> int:
    keys, compare = _parse(args)
    return _run(args, [_read(args.left, args), _read(args.right, args)], keys, compare)


def cmd_dedupe(args: argparse.Namespace) -> int:
    keys, compare = _parse(args)
    return _run(args, [_read(args.input, args)], keys, compare)


def cmd_plan(args: argparse.Namespace) -> int:
    import erblock

    keys = [parse_key(k) for k in args.key]
    client = _client(args)
    left = _read(args.left, args)
    right = _read(args.right, args) if args.right else None
    p = erblock.plan(left, right, key=keys if len(keys) > 1 else keys[0],
                     strategy=args.strategy, n_tasks=args.n_tasks, client=client)
    if args.plot:
        if not hasattr(p, "plot"):
            raise UsageError("--plot is not available in this version")
        p.plot(args.plot)
    if args.json:
        print(json.dumps(p.summary(), default=str))
    else:
        print(p.describe())
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
                         progress=not (args.quiet or args.json), sort=True)
    report = pairs.attrs["erblock_report"]
    kept = pairs[pairs["score"] >= args.threshold]
    quality = _quality(kept, pairs, truth, len(dblp), len(acm))
    if args.output:
        import os
        import shutil

        if os.path.exists(args.output):
            shutil.rmtree(args.output)
        os.makedirs(args.output)
        kept.to_parquet(os.path.join(args.output, "part-00000.parquet"), index=False)
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
