"""Data with ground truth: bundled DBLP-ACM, loaders for the other benchmark sets, and a
generator of synthetic records with controlled block skew (for scale and balance tests)."""

from erblock.datasets.generator import block_shares, columns_of, generate
from erblock.datasets.loaders import (
    load_abt_buy,
    load_dblp_acm,
    load_historical_50k,
    pairs_from_clusters,
)

__all__ = [
    "block_shares",
    "columns_of",
    "generate",
    "load_abt_buy",
    "load_dblp_acm",
    "load_historical_50k",
    "pairs_from_clusters",
]
