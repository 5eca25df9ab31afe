"""Benchmark data sets with ground truth, as pandas frames.

Every loader returns frames indexed by the data set's own record id (unique) and a truth
frame of true pairs with columns ``left_id`` and ``right_id``, whose values have the same
type as the index they refer to. That is the contract :func:`erblock.evaluate` expects.

- :func:`load_dblp_acm` reads the copy bundled in the package (no download, no path).
- :func:`load_abt_buy` and :func:`load_historical_50k` read the original files from a
  directory: ``path`` if given, else ``$ERBLOCK_DATA``, else ``../shared/datasets``
  relative to the working directory.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "DATA_ENV_VAR",
    "load_abt_buy",
    "load_dblp_acm",
    "load_historical_50k",
    "pairs_from_clusters",
]

DATA_ENV_VAR = "ERBLOCK_DATA"
_DEFAULT_DATA_DIR = Path("..") / "shared" / "datasets"

# Bundled DBLP-ACM files (package data must sit directly in datasets/data/).
_BUNDLE = {
    "dblp": "dblp_acm_dblp.parquet",
    "acm": "dblp_acm_acm.parquet",
    "truth": "dblp_acm_truth.parquet",
}
_BIB_COLUMNS = ["title", "authors", "venue", "year"]


# --------------------------------------------------------------------------- DBLP-ACM


def load_dblp_acm() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Load the bundled DBLP-ACM bibliographic link benchmark (Leipzig ER benchmark).

    Returns ``(dblp, acm, truth)``:

    - ``dblp``: 2,616 records indexed by ``id`` (``str``, e.g. ``"conf/vldb/PoosalaI96"``),
    - ``acm``: 2,294 records indexed by ``id`` (``int64``),
    - ``truth``: 2,224 true pairs, ``left_id`` (DBLP, ``str``) and ``right_id`` (ACM,
      ``int64``), sorted by ``(left_id, right_id)``.

    Both record frames have the columns ``title``, ``authors``, ``venue`` (strings; ``authors``
    is missing for 14 ACM records) and ``year`` (nullable ``Int64``). Text is kept exactly as
    in the source files (read as latin-1), including ACM's HTML entities such as ``&mdash;``.
    """
    frames = {name: _read_bundled(file) for name, file in _BUNDLE.items()}
    dblp = frames["dblp"].set_index("id")
    acm = frames["acm"].set_index("id")
    for df in (dblp, acm):
        df["year"] = df["year"].astype("Int64")
    truth = frames["truth"].sort_values(["left_id", "right_id"], ignore_index=True)
    return dblp[_BIB_COLUMNS], acm[_BIB_COLUMNS], truth


def _read_bundled(file: str) -> pd.DataFrame:
    ref = resources.files("erblock.datasets").joinpath("data").joinpath(file)  # one part a call: Python 3.10
    with resources.as_file(ref) as p:
        return pd.read_parquet(p)


def _build_dblp_acm_bundle(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Write the bundled DBLP-ACM parquet files from the original CSVs (maintainers only).

    ``src`` is the folder holding ``DBLP2.csv``, ``ACM.csv`` and
    ``DBLP-ACM_perfectMapping.csv``; ``dst`` is ``erblock/datasets/data``.
    zstd-compressed parquet keeps the three files near 300 kB and preserves dtypes.
    """
    src, dst = Path(src), Path(dst)
    dblp = pd.read_csv(src / "DBLP2.csv", encoding="latin-1", dtype={"id": "str"})
    acm = pd.read_csv(src / "ACM.csv", encoding="latin-1", dtype={"id": "int64"})
    truth = pd.read_csv(
        src / "DBLP-ACM_perfectMapping.csv",
        encoding="latin-1",
        dtype={"idDBLP": "str", "idACM": "int64"},
    ).rename(columns={"idDBLP": "left_id", "idACM": "right_id"})
    truth = truth.sort_values(["left_id", "right_id"], ignore_index=True)
    for name, df in (("dblp", dblp), ("acm", acm), ("truth", truth)):
        df.to_parquet(dst / _BUNDLE[name], compression="zstd", index=False)


# --------------------------------------------------------------------------- directory sets


def _find_dataset(folder: str, files: list[str], path: str | os.PathLike | None) -> Path:
    """Return the directory holding ``files``, searching the documented places in order.

    ``path`` may point at the data set's own folder or at its parent (the folder holding
    ``abt_buy/``, ``historical_50k/``, ...).
    """
    if path is not None:
        roots = [Path(path)]
    else:
        roots = []
        if os.environ.get(DATA_ENV_VAR):
            roots.append(Path(os.environ[DATA_ENV_VAR]))
        roots.append(Path.cwd() / _DEFAULT_DATA_DIR)
    tried = []
    for root in roots:
        for candidate in (root / folder, root):
            if all((candidate / f).is_file() for f in files):
                return candidate
            tried.append(str(candidate.resolve()))
    raise FileNotFoundError(
        f"data set {folder!r} not found: looked for {files} in {tried}. "
        f"Pass path=..., or set ${DATA_ENV_VAR} to the folder holding {folder}/."
    )


def _parse_price(s: pd.Series) -> pd.Series:
    # "$2,699.98" -> 2699.98; missing stays NaN.
    return pd.to_numeric(s.str.replace(r"[$,\s]", "", regex=True), errors="coerce").astype(
        "float64"
    )


def load_abt_buy(
    path: str | os.PathLike | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Load the Abt-Buy product link benchmark (Leipzig ER benchmark) from ``path``.

    Returns ``(abt, buy, truth)``: ``abt`` (1,081 records; ``name``, ``description``,
    ``price``) and ``buy`` (1,092 records; ``name``, ``description``, ``manufacturer``,
    ``price``), both indexed by ``id`` (``int64``), and ``truth`` with 1,097 pairs
    ``left_id`` (Abt) and ``right_id`` (Buy), sorted. ``price`` is parsed from text such as
    ``"$1,000.00"`` to ``float64`` (NaN when missing). Abt and Buy ids are both integers
    but unrelated: do not mix them in one id space.
    """
    files = ["Abt.csv", "Buy.csv", "abt_buy_perfectMapping.csv"]
    d = _find_dataset("abt_buy", files, path)
    abt = pd.read_csv(d / "Abt.csv", encoding="latin-1", dtype={"id": "int64"}).set_index("id")
    buy = pd.read_csv(d / "Buy.csv", encoding="latin-1", dtype={"id": "int64"}).set_index("id")
    for df in (abt, buy):
        df["price"] = _parse_price(df["price"])
    truth = pd.read_csv(d / "abt_buy_perfectMapping.csv", dtype="int64")
    truth = truth.rename(columns={"idAbt": "left_id", "idBuy": "right_id"})
    truth = truth.sort_values(["left_id", "right_id"], ignore_index=True)
    return abt, buy, truth


def load_historical_50k(
    path: str | os.PathLike | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load Splink's ``historical_figures_with_errors_50k`` dedupe benchmark from ``path``.

    Returns ``(df, truth)``. ``df`` has 50,578 records indexed by ``unique_id`` (``str``)
    and keeps every source column, including ``cluster`` (the true entity). ``truth`` holds
    every within-cluster pair (303,961) as produced by :func:`pairs_from_clusters`:
    ``left_id < right_id`` in string order (so ``"Q1-10" < "Q1-2"``), sorted by
    ``(left_id, right_id)``.
    """
    name = "historical_figures_with_errors_50k.parquet"
    d = _find_dataset("historical_50k", [name], path)
    df = pd.read_parquet(d / name).set_index("unique_id")
    return df, pairs_from_clusters(df["cluster"])


# --------------------------------------------------------------------------- truth helpers


def pairs_from_clusters(labels: pd.Series) -> pd.DataFrame:
    """All unordered pairs of records sharing a label: the dedupe truth of a clustering.

    ``labels`` maps record id (its index, unique) to an entity label. Each pair appears once
    with ``left_id < right_id`` (ids compared by value) and the frame is sorted by
    ``(left_id, right_id)``. Records with a missing label are in no pair. Cost is linear in
    the number of output pairs.
    """
    if not labels.index.is_unique:
        raise ValueError("labels: the index (record ids) must be unique")
    labels = labels[labels.notna()]
    ranks, uniques = pd.factorize(labels.index, sort=True)
    groups, _ = pd.factorize(labels.to_numpy())
    left, right = within_group_pairs(ranks, groups)
    ids = np.asarray(uniques)
    return pd.DataFrame(
        {
            "left_id": pd.Index(ids[left], dtype=labels.index.dtype),
            "right_id": pd.Index(ids[right], dtype=labels.index.dtype),
        }
    )


def within_group_pairs(ranks: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised all-pairs inside groups, for unique integer ``ranks``.

    Returns ``(left, right)`` rank arrays with ``left < right``, sorted by ``(left, right)``.
    Records are sorted by (group, rank); pass ``d`` pairs every record with the one ``d``
    places later in its group, so the loop runs (largest group − 1) times over a shrinking
    set of records and the total work is proportional to the number of pairs.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    order = np.lexsort((ranks, groups))
    r, g = ranks[order], groups[order]
    if r.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    size = np.diff(np.r_[start, r.size])
    # records left after this one in the same group
    after = np.repeat(start + size, size) - np.arange(r.size) - 1
    idx = np.flatnonzero(after > 0)
    lefts, rights = [], []
    d = 1
    while idx.size:
        lefts.append(r[idx])
        rights.append(r[idx + d])
        d += 1
        idx = idx[after[idx] >= d]
    left = np.concatenate(lefts) if lefts else np.empty(0, np.int64)
    right = np.concatenate(rights) if rights else np.empty(0, np.int64)
    o = np.lexsort((right, left))
    return left[o], right[o]
