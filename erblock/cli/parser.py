"""The ``erblock`` command's arguments: one parser, help texts derived from the registries.

Key forms come from the key-spec registry (:data:`erblock.blocking.keys.KEY_KINDS`),
comparison methods and their options from the method registry
(:data:`erblock.matchers.methods.METHODS`), strategies from
:data:`erblock.balancing.strategies.STRATEGIES`, so a new kind shows up here by itself.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .._version import __version__
from ..balancing.strategies import STRATEGIES
from ..blocking.registry import cli_key_forms
from ..matchers.assignment import CARDINALITIES
from ..matchers.comparisons import cli_methods_help
from ..matchers.scoring import NAMED as SCORING_NAMES

KEY_HELP = ("blocking key (repeat --key for multi-pass blocking: a pair is a candidate when it "
            "agrees on any pass). Forms: " + " | ".join(cli_key_forms()) + "; join parts with "
            "'+' for a composite key that must agree on all parts, e.g. year+prefix:title:3")

COMPARE_HELP = ("comparison COLUMN:METHOD[:OPTION=VALUE...] (repeatable); methods: "
                + cli_methods_help() + "; every method takes weight=W; for link with "
                "different column names use LEFT=RIGHT:METHOD, e.g. title=name:jaro_winkler")

STRATEGY_HELP = ("balancing strategy: auto (default: the lowest predicted makespan) or "
                 + "; ".join(f"{n} ({s.summary})" for n, s in STRATEGIES.items()))

EXAMPLES = {
    "link": """examples:
  erblock link dblp.csv acm.csv --key year+token:title --compare title:jaro_winkler \\
      --compare authors:token_set --threshold 0.8 -o pairs/ --report run.json
  erblock link r.parquet s.parquet --key soundex:surname --compare surname:jaro_winkler \\
      --scheduler tcp://scheduler:8786 -o /shared/pairs
  erblock link 'r/part-*.csv' s.csv --map surname=family_name --id rid=sid \\
      --key prefix:surname:4 --compare surname:jaro_winkler --compare given=first:jaro
  erblock link register.csv census.csv --key soundex:surname --key dob \\
      --compare given:name --compare surname:name --compare dob:date --scoring em \\
      --cardinality 1:1 -o links/""",
    "dedupe": """examples:
  erblock dedupe people.csv --key soundex:surname --key dob \\
      --compare first_name:jaro_winkler --compare surname:jaro_winkler --compare dob:exact \\
      --threshold 0.85 -o dupes/ --report run.json
  erblock dedupe 'data/part-*.parquet' --key prefix:title:3 --compare title:indel -o out/
  erblock dedupe file:///data/people.csv --id person_id --key lower:city \\
      --compare name:jaro --scheduler tls://host:8786 --tls-ca-file ca.pem \\
      --tls-cert client.pem --tls-key client.key --quiet --json""",
    "cluster": """examples:
  erblock dedupe people.csv --key soundex:surname --compare name:name --compare dob:date \\
      --scoring em --save-model model.json -o run/ && \\
  erblock cluster run/ --threshold 0.9 --records people.csv -o entities/
  erblock dedupe people.csv ... --scoring em --cluster 0.9 -o out/  # out/pairs, out/entities
  erblock dedupe more.csv ... --model model.json --cluster 0.9 -o out2/""",
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


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return n


def _add_common(p: argparse.ArgumentParser, compare: bool = True, link: bool = True) -> None:
    p.add_argument("--key", action="append", required=True, metavar="KEY", help=KEY_HELP)
    if compare:
        p.add_argument("--compare", action="append", default=None, metavar="SPEC",
                       help=COMPARE_HELP + " (required unless --candidates)")
        p.add_argument("--candidates", action="store_true",
                       help="compare nothing: write the candidate pairs the keys imply, each "
                            "once (left_id, right_id, match_key: the pass that found it), "
                            "for a matcher of your own")
        p.add_argument("--threshold", type=float, default=None,
                       help="keep pairs with score >= THRESHOLD (in [0, 1]; with a model, "
                            "--scoring em or --model: match_probability)")
        p.add_argument("-o", "--output", default=None,
                       help="directory for the pairs (parquet parts written by the workers, "
                            "moved under this name only when the run succeeds); without it "
                            "the pairs are printed")
        p.add_argument("--overwrite", action="store_true",
                       help="replace an earlier erblock --output (not one of other files)")
        p.add_argument("--report", default=None, metavar="JSON",
                       help="write the run report (per task and per phase) to this file; "
                            "draw it with `erblock report JSON --html FILE`")
        p.add_argument("--no-sort", action="store_true",
                       help="skip sorting pairs (sorted output is byte-identical across runs)")
        g = p.add_argument_group("scoring")
        g.add_argument("--scoring", default="mean", choices=tuple(SCORING_NAMES),
                       help="mean: weighted mean of the similarities (default); em: fit an "
                            "unsupervised Fellegi-Sunter model during the run (adds "
                            "match_weight and match_probability; --threshold then applies to "
                            "match_probability, default decision >= 0.5)")
        g.add_argument("--model", default=None, metavar="JSON",
                       help="score with a saved model (from --save-model or model.to_json)")
        g.add_argument("--save-model", default=None, metavar="JSON",
                       help="write the fitted model here (with --scoring em)")
    p.add_argument("--strategy", default="auto", metavar="STRATEGY", help=STRATEGY_HELP)
    p.add_argument("--n-tasks", type=_positive_int, default=None,
                   help="reduce tasks (default 4 × threads, fewer for a small job)")
    if compare:
        p.add_argument("--memory-budget", default=None, metavar="BYTES",
                       help="memory one reduce task may use, e.g. 512MB, or 'auto' (from the "
                            "workers' memory limit); tasks and compare chunks are sized to fit "
                            "(see docs/memory.md)")
    g = _add_input(p, "input", "column holding unique record ids (default: row number in "
                   "input order, or the index a parquet file was written with)"
                   + ("; for link with different names LEFT=RIGHT" if link else ""))
    if link:
        g.add_argument("--map", action="append", default=None, metavar="LEFT=RIGHT",
                       help="link only: S's column RIGHT is R's column LEFT (repeatable); "
                            "keys and comparisons then name R's column for both")
    _add_cluster(p)
    _add_display(p)


def _add_input(p: argparse.ArgumentParser, what: str, id_help: str
               ) -> argparse._ArgumentGroup:
    """``--format``, ``--encoding`` and ``--id`` of the files ``what`` names."""
    g = p.add_argument_group("input")
    g.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help=f"{what} format (default: from the file name)")
    g.add_argument("--encoding", default=None, help="CSV text encoding (default utf-8)")
    g.add_argument("--sep", default=",", help="CSV field separator (default ','; e.g. ';')")
    g.add_argument("--na-values", default=None, metavar="LIST",
                   help="CSV cells that are missing besides empty ones, comma-separated "
                        "(default: pandas' NA, N/A, NULL, nan, None, …; '' for empty cells "
                        "only, so a value such as NA stays one)")
    g.add_argument("--id", default=None, metavar="COLUMN", help=id_help)
    g.set_defaults(map=None)
    return g


def build_parser() -> argparse.ArgumentParser:
    """The ``erblock`` argument parser (every command's ``--help`` ends with examples)."""
    parser = argparse.ArgumentParser(
        prog="erblock",
        description="Entity resolution with blocking on Dask, balanced for skewed blocks.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(EXAMPLES.values()) + "\n\nexit codes: 0 ok, 2 bad arguments or "
               "input, 1 failure",
    )


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
    p.add_argument("--cardinality", default=None, choices=CARDINALITIES,
                   help="which sources hold each entity at most once; the output is then "
                        "the links among the decided pairs: 1:1 neither source has "
                        "duplicates (each record in at most one link), 1:n only LEFT is "
                        "free of them (each record of RIGHT keeps its best pair), n:1 the "
                        "mirror, n:m no constraint (default)")
    p.set_defaults(command_name="link")
    p = sub.add_parser("dedupe", help="find duplicates in one source", epilog=EXAMPLES["dedupe"],
                       description="Deduplicate one source: compare each unordered pair of "
                                   "records that shares a block, once.",
                       formatter_class=fmt)
    p.add_argument("input", help="CSV/parquet file, directory, glob or fsspec URL")
    _add_common(p, link=False)
    p.add_argument("--cluster", type=float, default=None, metavar="T",
                   help="entity id per record: connected components of the pairs whose "
                        "match_probability (score with --scoring mean) is >= T; with -o DIR "
                        "the pairs go to DIR/pairs and the entities (id, entity_id) to "
                        "DIR/entities")
    p.set_defaults(command_name="dedupe")
    p = sub.add_parser("cluster", help="entity ids from written pairs",
                       description="Connected components of the pairs in a parquet "
                                   "directory (run on the cluster): every record gets the "
                                   "smallest id of its entity.",
                       epilog=EXAMPLES["cluster"], formatter_class=fmt)
    p.add_argument("pairs", help="pairs written by erblock dedupe/link -o (parquet)")
    p.add_argument("-o", "--output", required=True, help="directory for id, entity_id (parquet)")
    p.add_argument("--threshold", type=float, default=None,
                   help="keep pairs whose score column is >= T (default: 0.5, the model's "
                        "decision, when the pairs carry match_probability; else every pair)")
    p.add_argument("--score-column", default=None,
                   help="default match_probability when present, else score")
    p.add_argument("--records", default=None, metavar="INPUT",
                   help="the input that was deduplicated, so that records without a match "
                        "get their own entity (default: only ids seen in a pair)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier erblock --output (not one of other files)")
    _add_input(p, "--records", "--records id column")
    _add_cluster(p)
    _add_display(p)
    p.set_defaults(command_name="cluster")
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
    p.set_defaults(command_name="plan")
    p = sub.add_parser("demo", help="link the bundled DBLP-ACM sample and report quality",
                       description="Link the bundled DBLP-ACM sample (2,616 × 2,294 records "
                                   "with their true matches) and print precision and recall.",
                       epilog=EXAMPLES["demo"], formatter_class=fmt)
    p.add_argument("-o", "--output", default=None, help="also write the pairs here (parquet)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier erblock --output (not one of other files)")
    p.add_argument("--report", default=None, metavar="JSON", help="write the run report")
    p.add_argument("--threshold", type=float, default=0.75, help="score threshold (default 0.75)")
    _add_cluster(p)
    _add_display(p)
    p.set_defaults(command_name="demo")
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
                   help="evaluate only pairs with match_probability (a model's pairs; "
                        "default 0.5) or else score >= THRESHOLD")
    p.add_argument("--title", default=None, help="page title")
    _add_display(p)
    p.set_defaults(command_name="report")
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
    p.set_defaults(command_name="kube-spec", quiet=True)
    return parser


