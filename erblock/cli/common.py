"""What every command needs: messages, the cluster client, the inputs, the keys."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from ..blocking.registry import parse_key
from ..errors import InputTypeError
from ..matchers.methods.base import ONE_TYPE
from ..scalars import as_python
from .parser import UsageError, parse_id, parse_pairs

__all__ = ["to_json_line", "_client", "_inputs", "_keys", "_progress", "_say", "in_cli_terms"]

_FRAME = re.compile(r"\b(df_r|df_s|df)\b")
#: the API's advice on repeated ids, and what a command-line user does instead
_ID_ADVICE = re.compile(r"a Dask frame read from files restarts.*?and id='row'")
#: the API's advice on a column typed differently in the two inputs, for the command line
IN_ONE_FORMAT = ("give both inputs in one format (CSV columns are read as text, parquet "
                 "columns keep their type)")


def to_json_line(obj: Any) -> str:
    """``obj`` as one line of strict JSON for ``--json`` (scripts): NaN and infinities,
    which Python writes as bare ``NaN`` that other parsers refuse, become ``null``;
    other values JSON lacks are written as text."""
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    def plain(x: Any) -> Any:  # what json cannot write: NumPy scalars, pandas' missing
        if isinstance(x, np.generic):
            return as_python(x)
        if pd.api.types.is_scalar(x) and pd.isna(x):
            return None
        return str(x)

    return json.dumps(clean(json.loads(json.dumps(obj, default=plain))), allow_nan=False)


def _say(args: argparse.Namespace, *msg: Any) -> None:
    if not args.quiet and not args.json:
        print(*msg, file=sys.stderr)


def _terminal() -> bool:
    return sys.stderr.isatty()


def _progress(args: argparse.Namespace) -> bool:
    """Progress bars only on a terminal (not in logs or a CI's captured stderr)."""
    return not (args.quiet or args.json) and _terminal()


def _check_address(address: str) -> None:
    """``--scheduler``: ``[PROTOCOL://]HOST:PORT`` (refused before connecting, which would
    otherwise wait for its timeout)."""
    from distributed.comm import parse_address, parse_host_port

    try:
        _, loc = parse_address(address)
        _, port = parse_host_port(loc)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--scheduler {address!r}: {exc}; give HOST:PORT, e.g. "
                         "tcp://127.0.0.1:8786") from None
    if not port:
        raise UsageError(f"--scheduler {address!r}: no port; give HOST:PORT, e.g. "
                         "tcp://127.0.0.1:8786")


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
    if args.scheduler is not None:
        _check_address(args.scheduler)
    if security is None and args.scheduler is not None and args.scheduler.startswith("tls://"):
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
    if args.encoding is not None:
        import codecs

        try:
            codecs.lookup(args.encoding)
        except LookupError:
            raise UsageError(f"--encoding {args.encoding!r} is not an encoding Python knows "
                             "(e.g. utf-8, latin-1, cp1252)") from None
    mapping = parse_pairs(args.map, "--map")
    if mapping and len(paths) != 2:
        raise UsageError("--map renames columns of S for link; it needs two inputs")
    sep = getattr(args, "sep", ",")
    sep = "\t" if sep == "\\t" else sep  # --sep '\t' as a shell passes it
    if len(sep) != 1 or sep in '\n\r"':
        raise UsageError(f"--sep must be one character such as ';' or '\\t', got {sep!r}")
    na = getattr(args, "na_values", None)
    frames = [read_table(path, args.format, encoding=args.encoding, id_column=ids[i],
                         client=client, sep=sep, na_values=None if na is None else
                         [v.strip() for v in na.split(",") if v.strip()])
              for i, path in enumerate(paths)]
    if mapping:
        frames[1] = rename_columns(frames[1], mapping, f"S ({paths[1]!r})")
    return frames


def _keys(args: argparse.Namespace) -> list[Any]:
    try:
        return [parse_key(k) for k in args.key]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@contextmanager
def in_cli_terms(paths: Sequence[str]) -> Iterator[None]:
    """Bad-input errors of the Python API, and warnings printed meanwhile, reworded for
    the command line: the input files instead of ``df``/``df_r``/``df_s``, flags and
    file formats instead of keyword arguments and dtypes."""
    names = {"df": f"input {paths[0]!r}", "df_r": f"R ({paths[0]!r})",
             "df_s": f"S ({paths[-1]!r})"}
    shown = warnings.formatwarning  # warnings printed during the run: reworded too
    warnings.formatwarning = lambda message, category, *_, **__: (
        f"erblock: {category.__name__}: {_reworded(str(message), names)}\n")
    try:
        yield
    except UnicodeError as exc:  # raised on a worker, it may arrive without its text
        detail = str(exc) or "a byte that the encoding cannot decode"
        raise UsageError(f"input {' / '.join(map(repr, paths))} is not text in the encoding "
                         f"it was read with (--encoding, utf-8 by default): {detail}; pass "
                         "the file's encoding, e.g. --encoding latin-1") from exc
    except (ValueError, KeyError, InputTypeError) as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise UsageError(_reworded(text, names)) from exc
    finally:
        warnings.formatwarning = shown


def _reworded(text: str, names: Mapping[str, str]) -> str:
    text = _FRAME.sub(lambda m: names[m.group(1)], text)
    text = _ID_ADVICE.sub("pick an --id column whose values are unique", text).replace(
        "pass id='<a unique column without missing values>'",
        "pick an --id column without missing values")
    text = text.replace(ONE_TYPE, IN_ONE_FORMAT).replace(
        "(e.g. with pd.to_numeric)", "(CSV columns are read as text, parquet columns keep "
        "their type: give both inputs in one format)")
    for api, cli in _API_WORDS:
        text = text.replace(api, cli)
    # a comparison's option, as the command line gives it
    text = re.sub(r"comparison\('([^']*)', '(\w+)', right_column='([^']*)', (\w+)='([^']*)'\)",
                  r"--compare \1=\3:\2:\4=\5", text)
    text = re.sub(r"comparison\('([^']*)', '(\w+)', (\w+)='([^']*)'\)", r"--compare \1:\2:\3=\4",
                  text)
    # a date key's format, as the command line gives it
    text = re.sub(r"date\('([^']*)', '(\w+)', format='([^']*)'\)", r"--key date:\1:\2:\3", text)
    return re.sub(r"^(key|compare|id) column", r"--\1 column", text)


#: the API's words in messages, and the command line's flags for them
_API_WORDS = (
    ("pass threshold= (e.g. 0.8), a ScoreThreshold, or scoring='em'",
     "give --threshold (e.g. 0.8) or --scoring em"),
    ("cardinality=", "--cardinality "), ("use the same compare= as when fitting",
                                          "give the --compare flags it was fitted with"),
    ("give compare= in the model's order", "give the --compare flags in the model's order"),
    ("memory_budget must", "--memory-budget must"),
    ("; use 'numeric' or 'exact', or convert the column with .astype(str)",
     "; compare it with numeric or exact (a parquet column keeps its type; CSV is text)"),
)
