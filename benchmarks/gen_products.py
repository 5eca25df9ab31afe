"""A generated product-offer link (two shops' catalogues of electronics), for held-out checks.

Written for the quality benchmark's held-out group (``heldout.py``: ``gen_products``) as
a *second* product set beside Abt-Buy, so that a change to the text comparison or the
training is not judged on Abt-Buy alone. The design below was fixed before any score was
computed on it; the seed and every rate stay as they are.

What it models, per entity (a product *model*):

- models come in **families** (brand, product line, category, a model-code stem): one to
  four models a family (sizes, colours, code variants), so the hard non-matches are a
  family's other models: same brand, line and category words, a code that differs in a
  digit or a suffix;
- brands are Zipf-distributed (a few brands hold many offers: one block per first word of
  the name is skewed, as on real shops);
- shop A writes ``"<brand> <size> <colour> <line> <category> - <CODE>"`` with the code
  written plain (``kdl40s51``); shop B writes ``"<brand> <line> <CODE> <size>
  <category> <features>"`` with its own category words and size style (``40'`` /
  ``40-inch``), the code hyphenated after its letters (0.45), with a slash before its last
  letter (0.15) or plain; B leaves the code out (0.15) and has a name typo (0.08);
- descriptions: A (present 0.9) starts with its name without the code and lists 3 to 8
  feature words of the model; B (present 0.45) lists line, category and 3 to 8 feature
  words, about half of them the model's own;
- prices: A present 0.85, B present 0.3, B's price A's times a log-normal factor
  (sigma 0.08), both rounded to .99; a family's models cost about the same.

Entities: ``n_a`` models in A, ``n_b`` in B, ``n_match`` in both; every model of a family
is drawn in the same way, so a non-match of the same family looks like a match except for
its code, size or colour. Truth: (A id, B id), one pair per shared model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_SYL = ("ka", "lo", "ven", "tri", "mar", "zo", "pel", "dra", "ni", "qua", "sen", "tor", "vi",
        "rex", "bo", "lu", "fen", "gar", "sha", "mi", "cor", "tek", "pix", "nex", "ra", "sol")
# (category, A's words, B's words, sizes or None)
_CATEGORIES = (
    ("tv", "lcd hdtv", "lcd flat panel tv", ("32", "40", "46", "52")),
    ("camera", "digital camera", "digital slr camera", None),
    ("camcorder", "flash memory camcorder", "digital camcorder", None),
    ("printer", "all-in-one printer", "color inkjet photo printer", None),
    ("router", "wireless broadband router", "wireless-n router", None),
    ("headphones", "noise canceling headphones", "stereo headphones", None),
    ("laptop", "notebook computer", "laptop notebook", ("13", "14", "15", "17")),
    ("mouse", "cordless laser mouse", "wireless mouse", None),
    ("speaker", "bookshelf speaker system", "speakers pair", None),
    ("dishwasher", "built-in dishwasher", "fully integrated dishwasher", ("18", "24")),
    ("monitor", "widescreen lcd monitor", "lcd display monitor", ("19", "22", "24")),
    ("drive", "external hard drive", "portable hard disk drive", None),
    ("receiver", "home theater receiver", "a/v receiver", None),
    ("phone", "cordless phone system", "dect cordless telephone", None),
    ("turntable", "semi-automatic turntable", "analog record turntable", None),
)
_COLOURS = ("black", "silver", "white", "blue", "red", "pink", "stainless steel")
_FEATURE_TEXT = (
    "hdmi usb bluetooth wifi remote zoom optical stabilizer battery charger lens memory "
    "card slot backlit led 1080p 720p 120hz dual core touchscreen ethernet gigabit "
    "firewire speakerphone caller id digital answering system energy star quiet wash "
    "cycles surround sound dolby subwoofer amplifier tuner am fm preset equalizer "
    "ergonomic rechargeable scroll wheel ink cartridge duplex scanner copier fax "
    "wireless encryption firewall antenna portable compact lightweight")
_FEATURES = tuple(_FEATURE_TEXT.split())


def _words(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """n pseudo-words of k syllables (lower case)."""
    idx = rng.integers(0, len(_SYL), size=(n, k))
    return np.array(["".join(_SYL[i] for i in row) for row in idx], dtype=object)


def _zipf(n: int, a: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** a
    return w / w.sum()


def _features(rng: np.random.Generator, n: int) -> list[list[str]]:
    k = rng.integers(3, 9, size=n)
    return [list(rng.choice(_FEATURES, size=int(x), replace=False)) for x in k]


def generate_products(n_a: int = 1000, n_b: int = 1000, n_match: int = 700,
                      seed: int = 20261126) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Shop A and shop B offers (``name``, ``description``, ``price``) and the truth.

    A's ids are ``0 .. n_a-1``, B's ``n_a .. n_a+n_b-1`` (see the module doc).
    """
    if not 0 <= n_match <= min(n_a, n_b):
        raise ValueError("n_match must be in [0, min(n_a, n_b)]")
    rng = np.random.default_rng(seed)
    n_models = n_a + n_b - n_match
    # --- families, then models
    sizes = rng.choice([1, 2, 3, 4], size=n_models, p=[0.35, 0.3, 0.2, 0.15])
    fam_of = np.repeat(np.arange(len(sizes)), sizes)[:n_models]
    n_fam = int(fam_of.max()) + 1
    brands = _words(rng, 30, 2)
    fam_brand = brands[rng.choice(30, size=n_fam, p=_zipf(30, 1.0))]
    fam_line = _words(rng, n_fam, 2)
    fam_cat = rng.integers(0, len(_CATEGORIES), size=n_fam)
    letters = np.array(list("abcdefghjklmnprstvwxz"))
    fam_prefix = np.array(["".join(r) for r in rng.choice(letters, size=(n_fam, 3))])
    fam_prefix = np.array([p[: int(k)] for p, k in
                           zip(fam_prefix, rng.integers(2, 4, size=n_fam), strict=True)])
    fam_stem = rng.integers(10, 9999, size=n_fam)
    fam_price = np.exp(rng.uniform(np.log(20), np.log(2000), size=n_fam))
    cat = fam_cat[fam_of]
    # a model: its family's stem with a variant digit, a suffix letter, size and colour
    variant = rng.integers(0, 10, size=n_models)
    suffix = rng.choice(letters, size=n_models)
    code = np.array([f"{p}{s}{v}{x}" for p, s, v, x in zip(
        fam_prefix[fam_of], fam_stem[fam_of], variant, suffix, strict=True)], dtype=object)
    size = np.array([(c[3][int(rng.integers(len(c[3])))] if c[3] else "")
                     for c in (_CATEGORIES[i] for i in cat)], dtype=object)
    colour = np.where(rng.random(n_models) < 0.6,
                      rng.choice(np.array(_COLOURS, dtype=object), size=n_models), "")
    feats = _features(rng, n_models)
    price = fam_price[fam_of] * np.exp(rng.normal(0, 0.1, size=n_models))
    # --- which models each shop lists
    order = rng.permutation(n_models)
    both, a_only, b_only = (order[:n_match], order[n_match:n_a],
                            order[n_a:n_models])
    a_models = rng.permutation(np.r_[both, a_only])
    b_models = rng.permutation(np.r_[both, b_only])

    def shop_a(m: int) -> tuple[str, str | None, float | None]:
        _, cat_a, _, _ = _CATEGORIES[cat[m]]
        sz = f"{size[m]}'" if size[m] else ""
        head = " ".join(x for x in (fam_brand[fam_of[m]], sz, colour[m], fam_line[fam_of[m]],
                                    cat_a) if x)
        name = f"{head} - {code[m]}"
        desc = f"{head}. {' '.join(feats[m])}" if rng.random() < 0.9 else None
        p = round(float(price[m])) - 0.01 if rng.random() < 0.85 else None
        return name, desc, p

    def shop_b(m: int) -> tuple[str, str | None, float | None]:
        _, _, cat_b, _ = _CATEGORIES[cat[m]]
        c = code[m]
        u = rng.random()
        k = len(fam_prefix[fam_of[m]])
        if u < 0.45:
            c = f"{c[:k]}-{c[k:]}"
        elif u < 0.6:
            c = f"{c[:-1]}/{c[-1]}"
        if rng.random() < 0.15:
            c = ""
        sz = ((f"{size[m]}'" if rng.random() < 0.5 else f"{size[m]}-inch")
              if size[m] else "")
        extra = " ".join(rng.choice(feats[m], size=min(2, len(feats[m])), replace=False)
                         ) if rng.random() < 0.5 else ""
        name = " ".join(x for x in (fam_brand[fam_of[m]], fam_line[fam_of[m]], c, sz, cat_b,
                                    extra) if x)
        if rng.random() < 0.08:  # one character dropped
            i = int(rng.integers(len(name)))
            name = name[:i] + name[i + 1:]
        desc = None
        if rng.random() < 0.45:
            own = list(rng.choice(feats[m], size=max(1, len(feats[m]) // 2), replace=False))
            other = list(rng.choice(_FEATURES, size=int(rng.integers(1, 5)), replace=False))
            desc = " ".join([fam_line[fam_of[m]], cat_b, *own, *other])
        p = None
        if rng.random() < 0.3:  # a listed model: around A's price
            p = round(float(price[m]) * float(np.exp(rng.normal(0, 0.08)))) - 0.01
        return name, desc, p

    a_set = set(both.tolist())  # models in both shops
    rows_a = [shop_a(int(m)) for m in a_models]
    rows_b = [shop_b(int(m)) for m in b_models]
    cols = ["name", "description", "price"]
    df_a = pd.DataFrame(rows_a, columns=cols, index=pd.Index(np.arange(n_a), name="id"))
    df_b = pd.DataFrame(rows_b, columns=cols,
                        index=pd.Index(n_a + np.arange(n_b), name="id"))
    df_a["price"] = df_a["price"].astype("float64")
    df_b["price"] = df_b["price"].astype("float64")
    pos_b = {int(m): n_a + i for i, m in enumerate(b_models)}
    truth = pd.DataFrame([(i, pos_b[int(m)]) for i, m in enumerate(a_models)
                          if int(m) in a_set], columns=["left_id", "right_id"])
    return df_a, df_b, truth.sort_values(["left_id", "right_id"], ignore_index=True)
