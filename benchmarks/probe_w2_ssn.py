"""Development probe: pseudopeople's W-2 and 1099 forms deduplicated with the SSN compared.

Not a held-out set: it was built to reproduce a failure found while probing the
pseudopeople links (an SSN that some forms copied from a housemate's joined the address
group, and related records were made to agree on it: F1 0.904), and to check its fix on
draws never scored before (seeds 2 to 5). The recipe is the quality benchmark's with
the ``pp_census_w2`` blocking: ``compare`` = that set's kinds plus ``ssn: exact``,
``scoring=FellegiSunter()`` with defaults, decision ``match_probability >= 0.5``.
Truth: forms of the same simulant.

    python benchmarks/probe_w2_ssn.py            # seeds 1 to 5
    python benchmarks/probe_w2_ssn.py 1 2        # some seeds
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import heldout_pseudopeople as hp  # noqa: E402

import erblock  # noqa: E402
from erblock.blocking import composite, prefix, soundex, token  # noqa: E402

KINDS = {**hp.W2_KINDS, "ssn": "exact"}
KEY = [composite(soundex("last_name"), prefix("first_name", 1)),
       composite("street_number", token("street_name", 0))]


def score(seed: int) -> dict[str, float]:
    """Precision, recall and F1 at the default decision on the W-2 forms of ``seed``."""
    w2 = hp._generated("w2", seed).rename(columns=hp.MAILING)
    df, sid = hp._frame(w2, KINDS), w2["simulant_id"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = erblock.dedupe(df, key=KEY, compare=KINDS, scoring=erblock.FellegiSunter())
    left, right = pairs["left_id"].to_numpy(), pairs["right_id"].to_numpy()
    decided = pairs["match_probability"].to_numpy() >= 0.5
    true = sid[left] == sid[right]
    sizes = pd.Series(sid).value_counts().to_numpy()
    tp, fp = int((decided & true).sum()), int((decided & ~true).sum())
    p, r = tp / max(tp + fp, 1), tp / int((sizes * (sizes - 1) // 2).sum())
    return {"records": len(df), "precision": p, "recall": r,
            "f1": 2 * p * r / (p + r) if p + r else 0.0}


if __name__ == "__main__":
    for s in [int(a) for a in sys.argv[1:]] or [1, 2, 3, 4, 5]:
        got = score(s)
        print(f"seed {s}: {got['records']:,} forms, precision {got['precision']:.4f}, "
              f"recall {got['recall']:.4f}, F1 {got['f1']:.4f}", flush=True)
