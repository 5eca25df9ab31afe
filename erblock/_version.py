"""The installed erblock version (from the package metadata)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("erblock")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"
