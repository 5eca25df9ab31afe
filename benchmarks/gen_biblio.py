"""Generated bibliographic data in the DBLP-Scholar style, for held-out checks.

Written in session 15 (2026-11-26) for ``bench_sweep.py``: the quality benchmark's only
bibliographic set is DBLP-ACM (shared, clean on both sides), while hidden bibliographic
data is often one clean and one scraped source (Google Scholar, CiteSeer) or a dedupe of
scraped citations (Cora). The design and every rate below were fixed before any score
was computed on it; seeds and rates stay as they are.

Papers (entities):

- authors: 1 to 5 (0.15, 0.3, 0.3, 0.15, 0.1) from a pool of 1,200 people whose
  productivity is Zipf-like (a few write many papers: same-author non-matches);
- title: 3 to 10 content words (the generator vocabulary's CS words, Zipf-like), a glue
  word ("of", "for", ...) after a content word with probability 0.35, a leading "a",
  "on" or "towards" with 0.1;
- sequels (0.08 of papers): an earlier paper's authors (one added or dropped, 0.3; an
  added author may already be on the list, so a few papers name one author twice), its
  title with one word (any word, glue too) replaced by a vocabulary word drawn uniformly
  (possibly the same word) or ": extended abstract", " part ii", " revisited" appended,
  year the same to two later, another venue: hard non-matches;
- recurring titles (0.02): "editorial", "book review column", "guest editors
  introduction", "foreword", "letter from the editor", "report on the workshop" ... by
  one of six editors (with none to two co-editors), in a journal;
- venue: one of the generator's twelve, year 1994 to 2006.

Writing styles. The clean source (A, DBLP-like): full author names, the venue's DBLP
name (missing 0.02), the year. The scraped style (B, Scholar-like), with rates times
``noise``: venue missing 0.35, else its long form (0.4), DBLP name (0.3) or lower-case
acronym (0.3); year missing 0.3, one off 0.07; title: a typo per word 0.03 (substitution,
deletion, insertion or swap), one word dropped 0.1, cut after 60 % of its words 0.05, a
"[citation]" or "[book]" prefix 0.05; authors: initial and surname per author 0.75 (else
the full name), list cut after two 0.25, missing 0.08, a surname typo per author 0.03.

:func:`generate_biblio_link`: A holds ``n_a`` papers; B holds ``n_b_match`` of them,
each written 1, 2 or 3 times (0.6, 0.3, 0.1), and ``n_b_other`` papers of its own; truth
is every (A id, B id) of one paper. :func:`generate_biblio_dedupe`: ``n`` papers, each
cited Geometric(0.35) times (1 or more, mean 2.9, at most 12) in the scraped style; truth is every pair
of citations of one paper.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from erblock.datasets import fields as _f

_VENUE_LONG = {
    "SIGMOD Conference": "proceedings of the acm sigmod international conference on "
                         "management of data",
    "VLDB": "proceedings of the international conference on very large data bases",
    "ICDE": "proceedings of the ieee international conference on data engineering",
    "EDBT": "international conference on extending database technology",
    "CIKM": "conference on information and knowledge management",
    "KDD": "acm sigkdd international conference on knowledge discovery and data mining",
    "PODS": "symposium on principles of database systems",
    "SIGMOD Record": "acm sigmod record",
    "VLDB Journal": "the vldb journal the international journal on very large data bases",
    "ACM Trans. Database Syst.": "acm transactions on database systems",
    "IEEE Trans. Knowl. Data Eng.": "ieee transactions on knowledge and data engineering",
    "Information Systems": "information systems journal",
}
_ACRONYM = {"SIGMOD Conference": "sigmod", "VLDB": "vldb", "ICDE": "icde", "EDBT": "edbt",
            "CIKM": "cikm", "KDD": "kdd", "PODS": "pods", "SIGMOD Record": "sigmod rec",
            "VLDB Journal": "vldb j", "ACM Trans. Database Syst.": "tods",
            "IEEE Trans. Knowl. Data Eng.": "tkde", "Information Systems": "inf syst"}
_JOURNALS = ("SIGMOD Record", "VLDB Journal", "ACM Trans. Database Syst.",
             "IEEE Trans. Knowl. Data Eng.", "Information Systems")
_RECURRING = ("editorial", "book review column", "guest editors introduction", "foreword",
              "letter from the editor", "report on the workshop", "in memoriam",
              "research surveys column", "database principles column")
_SUFFIX = (": extended abstract", " part ii", " revisited")
_LEAD = ("a", "on", "towards")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class _Papers:
    """Canonical papers: authors (pool indices), title words, venue, year."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        n_pool = 1200
        first = rng.choice(len(_f._FIRST), n_pool, p=_f._zipf_weights(len(_f._FIRST)))
        last = rng.choice(len(_f._SURNAMES), n_pool, p=_f._zipf_weights(len(_f._SURNAMES), 0.6))
        self.people = [(_f._FIRST[a].lower(), _f._SURNAMES[b].lower())
                       for a, b in zip(first, last)]
        self.productivity = _f._zipf_weights(n_pool, 0.9)
        self.word_w = _f._zipf_weights(len(_f._TITLE_WORDS), 0.6)
        self.editors = list(rng.choice(n_pool, 6, replace=False))
        self.papers: list[dict] = []

    def _authors(self) -> list[int]:
        k = int(self.rng.choice([1, 2, 3, 4, 5], p=[0.15, 0.3, 0.3, 0.15, 0.1]))
        return list(self.rng.choice(len(self.people), k, replace=False, p=self.productivity))

    def _title(self) -> str:
        rng = self.rng
        n = int(rng.integers(3, 11))
        words = list(rng.choice(_f._TITLE_WORDS, n, p=self.word_w))
        out: list[str] = [str(rng.choice(_LEAD))] if rng.random() < 0.1 else []
        for i, w in enumerate(words):
            out.append(str(w))
            if i < n - 1 and rng.random() < 0.35:
                out.append(str(rng.choice(_f._TITLE_GLUE)))
        return " ".join(out)

    def new(self) -> dict:
        """One more paper (a sequel, a recurring title or a fresh one)."""
        rng = self.rng
        u = rng.random()
        if u < 0.08 and self.papers:
            base = self.papers[int(rng.integers(len(self.papers)))]
            authors = list(base["authors"])
            if rng.random() < 0.3:
                if len(authors) > 1 and rng.random() < 0.5:
                    authors.pop(int(rng.integers(len(authors))))
                else:
                    authors.append(int(rng.choice(len(self.people), p=self.productivity)))
            words = base["title"].split()
            if rng.random() < 0.5:
                words[int(rng.integers(len(words)))] = str(rng.choice(_f._TITLE_WORDS))
                title = " ".join(words)
            else:
                title = base["title"] + str(rng.choice(_SUFFIX))
            venue = str(rng.choice([v for v in _f._VENUES if v != base["venue"]]))
            year = min(2006, base["year"] + int(rng.integers(0, 3)))
        elif u < 0.10:
            authors = [int(rng.choice(self.editors))]
            authors += [int(rng.choice(self.editors)) for _ in range(int(rng.integers(0, 3)))]
            authors = list(dict.fromkeys(authors))
            title = str(rng.choice(_RECURRING))
            venue = str(rng.choice(_JOURNALS))
            year = int(rng.integers(1994, 2007))
        else:
            authors, title = self._authors(), self._title()
            venue = str(rng.choice(_f._VENUES))
            year = int(rng.integers(1994, 2007))
        paper = {"authors": authors, "title": title, "venue": venue, "year": year}
        self.papers.append(paper)
        return paper


def _typo(rng: np.random.Generator, w: str) -> str:
    if len(w) < 2:
        return w
    i = int(rng.integers(len(w)))
    op = int(rng.integers(4))
    c = str(rng.choice(list(_LETTERS)))
    if op == 0:
        return w[:i] + c + w[i + 1:]
    if op == 1:
        return w[:i] + w[i + 1:]
    if op == 2:
        return w[:i] + c + w[i:]
    j = min(i + 1, len(w) - 1)
    return w[:i] + w[j] + w[i] + w[j + 1:] if j > i else w


def _clean_style(p: dict, people: list, rng: np.random.Generator) -> dict:
    return {"title": p["title"],
            "authors": ", ".join(f"{people[a][0]} {people[a][1]}" for a in p["authors"]),
            "venue": None if rng.random() < 0.02 else p["venue"].lower(),
            "year": p["year"]}


def _scraped_style(p: dict, people: list, rng: np.random.Generator, noise: float) -> dict:
    def q(x: float) -> bool:
        return bool(rng.random() < min(0.9, x * noise))

    words = p["title"].split()
    words = [_typo(rng, w) if q(0.03) else w for w in words]
    if len(words) > 2 and q(0.1):
        words.pop(int(rng.integers(len(words))))
    if len(words) > 3 and q(0.05):
        words = words[:max(2, int(round(0.6 * len(words))))]
    title = " ".join(words)
    if q(0.05):
        title = str(rng.choice(["[citation] ", "[book] "])) + title
    if q(0.08):
        authors = None
    else:
        names = []
        for a in p["authors"]:
            first, last = people[a]
            if q(0.03):
                last = _typo(rng, last)
            names.append(f"{first[0]} {last}" if rng.random() < 0.75 else f"{first} {last}")
        if len(names) > 2 and q(0.25):
            names = names[:2]
        authors = ", ".join(names)
    if q(0.35):
        venue = None
    else:
        v = rng.random()
        venue = (_VENUE_LONG[p["venue"]] if v < 0.4 else p["venue"].lower() if v < 0.7
                 else _ACRONYM[p["venue"]])
    year: float | int = p["year"]
    if q(0.3):
        year = np.nan
    elif q(0.07):
        year = p["year"] + int(rng.choice([-1, 1]))
    return {"title": title, "authors": authors, "venue": venue, "year": year}


def _frame(rows: list[dict], start: int) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["title", "authors", "venue", "year"])
    df.index = pd.RangeIndex(start, start + len(df), name="id")
    df["year"] = df["year"].astype("Int64")
    return df


def generate_biblio_link(n_a: int = 2500, n_b_match: int = 2000, n_b_other: int = 2500,
                         seed: int = 0, noise: float = 1.0
                         ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A (clean, ids 0..) and B (scraped, ids after A's) and the truth (A id, B id)."""
    rng = np.random.default_rng(seed)
    gen = _Papers(rng)
    papers = [gen.new() for _ in range(n_a + n_b_other)]
    in_a = rng.permutation(len(papers))
    a_idx, b_only = in_a[:n_a], in_a[n_a:]
    a = _frame([_clean_style(papers[i], gen.people, rng) for i in a_idx], 0)
    shared = rng.choice(n_a, n_b_match, replace=False)
    b_rows, b_paper = [], []
    for j in shared:
        for _ in range(int(rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))):
            b_rows.append(_scraped_style(papers[a_idx[j]], gen.people, rng, noise))
            b_paper.append(int(j))
    for i in b_only:
        b_rows.append(_scraped_style(papers[i], gen.people, rng, noise))
        b_paper.append(-1)
    order = rng.permutation(len(b_rows))
    b = _frame([b_rows[k] for k in order], n_a)
    paper_of_b = np.asarray(b_paper)[order]
    hit = np.flatnonzero(paper_of_b >= 0)
    truth = pd.DataFrame({"left_id": paper_of_b[hit], "right_id": n_a + hit})
    return a, b, truth.sort_values(["left_id", "right_id"]).reset_index(drop=True)


def generate_biblio_dedupe(n: int = 1500, seed: int = 0, noise: float = 1.0
                           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Citations of ``n`` papers in the scraped style (ids 0..) and the truth pairs."""
    rng = np.random.default_rng(seed)
    gen = _Papers(rng)
    rows, paper = [], []
    for i in range(n):
        p = gen.new()
        for _ in range(min(12, int(rng.geometric(0.35)))):
            rows.append(_scraped_style(p, gen.people, rng, noise))
            paper.append(i)
    order = rng.permutation(len(rows))
    df = _frame([rows[k] for k in order], 0)
    lab = pd.Series(np.asarray(paper)[order], index=df.index)
    pairs = [(int(x), int(y)) for _, g in lab.groupby(lab) for k, x in enumerate(g.index)
             for y in g.index[k + 1:]]
    truth = pd.DataFrame(pairs, columns=["left_id", "right_id"])
    return df, truth.sort_values(["left_id", "right_id"]).reset_index(drop=True)
