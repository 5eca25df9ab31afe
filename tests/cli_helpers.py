"""Running the command line in a test: one call, its JSON output."""

from __future__ import annotations

import json

from erblock.cli import main


def run_json(argv: list[str], capsys) -> dict:
    """``erblock ARGV --json``: asserts exit 0 (showing stderr if not), returns the JSON."""
    capsys.readouterr()
    code = main(argv + ["--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)
