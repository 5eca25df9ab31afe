"""The ``erblock`` command: link, dedupe, cluster, plan, demo, report and kube-spec.

Exit codes: 0 ok, 2 bad arguments or input (the message says which), 1 failure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence

from ..engine.output import OutputNotWritable
from . import commands, entities
from .parser import UsageError, build_parser, parse_id, parse_pairs

COMMANDS = {
    "link": commands.cmd_link,
    "dedupe": commands.cmd_dedupe,
    "cluster": entities.cmd_cluster,
    "plan": commands.cmd_plan,
    "demo": commands.cmd_demo,
    "report": commands.cmd_report,
    "kube-spec": commands.cmd_kube_spec,
}


#: flags naming a local file that erblock opens itself (inputs go through fsspec, which
#: reads '~' as the home directory; these were written to a folder named '~')
_FILE_FLAGS = ("report", "save_model", "html", "model", "truth")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``erblock`` command; returns the exit code (0 ok, 2 bad arguments, 1 failure).

    argparse itself exits with 2 (usage message on stderr) for unknown options or missing
    arguments, and with 0 for ``--help``/``--version``. ``ERBLOCK_TRACEBACK=1`` prints the
    traceback of a failure.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in _FILE_FLAGS:  # '~/run.json' as the checks and the inputs read it
        if isinstance(getattr(args, name, None), str):
            setattr(args, name, os.path.expanduser(getattr(args, name)))
    try:
        with _quiet(getattr(args, "quiet", False)), _stoppable(), _plain_warnings(args.command):
            return int(COMMANDS[args.command_name](args))
    except (UsageError, ValueError, KeyError, TypeError, FileNotFoundError, FileExistsError,
            PermissionError, OutputNotWritable) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        if os.environ.get("ERBLOCK_TRACEBACK"):
            traceback.print_exc()
        print(f"erblock {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except Terminated:
        print("erblock: terminated (SIGTERM)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("erblock: interrupted", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the command line reports every failure
        if os.environ.get("ERBLOCK_TRACEBACK"):
            traceback.print_exc()
        print(f"erblock {args.command}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch scheduler or Kubernetes stopping the job), raised like Ctrl-C so
    that the run unwinds: the cluster closes and the staged output is removed."""


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the run as an exception, quietly: the Dask client's
    cancelled gathers would each log "Task exception was never retrieved" (asyncio), and
    SIGTERM's default action left the staged ``*.erblock-tmp-*`` directory behind."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    quiet = logging.getLogger("asyncio")
    level = quiet.level
    stopped = []

    def _stop(signum: int, _frame: object) -> None:
        quiet.setLevel(logging.CRITICAL)
        stopped.append(signum)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    # a signal the parent chose to ignore (``erblock … &`` ignores Ctrl-C) stays ignored
    before = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)
              if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        if not stopped:  # after a stop, the cancelled gathers are collected later, even at
            quiet.setLevel(level)  # exit, and would log "never retrieved" (AllExit) then


@contextlib.contextmanager
def _plain_warnings(command: str) -> Iterator[None]:
    """Warnings as one line naming the command, not Python's source line (a run rewords
    its own further: :func:`.common.in_cli_terms`)."""
    shown = warnings.formatwarning
    warnings.formatwarning = lambda message, category, *_, **__: (
        f"erblock {command}: {category.__name__}: {message}\n")
    try:
        yield
    finally:
        warnings.formatwarning = shown


@contextlib.contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """``--quiet``: nothing on stderr but errors. Warnings (the model's, Dask's) and log
    records (a worker's "Compute Failed" of a task whose error the run then reports) are
    held back; the run report still holds the model's warnings."""
    if not quiet:
        yield
        return
    before = logging.root.manager.disable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(max(before, logging.ERROR))
        try:
            yield
        finally:
            logging.disable(before)


__all__ = ["COMMANDS", "UsageError", "build_parser", "main", "parse_id", "parse_pairs"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
