"""Texts and similarity pairs, and the built-in corpora, all offline: the demo corpus, gensim's bundled test data
and STS-Benchmark from the shared data folder. No network, no Streamlit, no torch.

* `Texts`: a corpus, optionally labelled (for probes and plot colours).
* `Pairs`: sentence pairs with a gold similarity score (for Spearman-style evaluation).

Bundled loaders are cached and return the same frozen object on every call: do not mutate the lists inside (the
score array is read-only). `analysis.data.datasets` lists them all by name; `analysis.data.files` reads user files.

    from analysis.data.corpora import lee_pairs
    pairs = lee_pairs()                     # 1225 pairs of news documents, human scores in [0, 1]
    texts = pairs.unique_texts()            # encode each document once, then look pairs up
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from analysis.data import demo_corpus
from analysis.core.errors import UserError
from analysis.core.paths import shared_data_dirs

# ----------------------------------------------------------------------------------------------
# Containers


def _first(container, n: int, fields: tuple[str, ...]):
    """A copy of a frozen container with each of `fields` (lists or arrays, or None) cut to its first n items."""
    n = max(n, 0)
    return replace(container, **{f: None if getattr(container, f) is None else getattr(container, f)[:n]
                                 for f in fields})


@dataclass(frozen=True)
class Texts:
    """A corpus of texts with optional labels (one per text)."""

    name: str
    texts: list[str]
    labels: list[str] | None = None

    def __post_init__(self):
        if self.labels is not None and len(self.labels) != len(self.texts):
            raise ValueError(f"{self.name}: {len(self.texts)} texts but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.texts)

    def head(self, n: int) -> Texts:
        """The first n texts (and their labels), same name."""
        return _first(self, n, ("texts", "labels"))


@dataclass(frozen=True)
class Pairs:
    """Labelled similarity pairs: left[i] vs right[i] with gold score scores[i]."""

    name: str
    left: list[str]
    right: list[str]
    scores: np.ndarray  # float64 (n,), read-only
    genres: list[str] | None = None

    def __post_init__(self):
        scores = np.array(self.scores, dtype=np.float64).reshape(-1)  # copy: the caller keeps theirs
        scores.setflags(write=False)  # cached objects are shared between callers
        object.__setattr__(self, "scores", scores)
        n = len(self.left)
        if len(self.right) != n or len(scores) != n or (self.genres is not None and len(self.genres) != n):
            raise ValueError(f"{self.name}: left, right, scores and genres must have the same length")

    def __len__(self) -> int:
        return len(self.left)

    def head(self, n: int) -> Pairs:
        """The first n pairs, same name."""
        return _first(self, n, ("left", "right", "scores", "genres"))

    def unique_texts(self) -> list[str]:
        """Every sentence once, in order of first appearance in left then right."""
        return list(dict.fromkeys(self.left + self.right))


# ----------------------------------------------------------------------------------------------
# Built-in demo corpus (analysis/data/demo_corpus.py)

_DEMO_KINDS = ("all", "ambiguous", "topics")


@functools.lru_cache(maxsize=None)
def demo_texts(kind: str = "all") -> Texts:
    """Demo sentences. kind: "ambiguous" (label "word:sense"), "topics" (label = topic) or "all"
    (both, plus every sentence of the paraphrase pairs, labelled "pair")."""
    if kind == "ambiguous":
        rows = demo_corpus.AMBIGUOUS
        name = "Demo: ambiguous words"
    elif kind == "topics":
        rows = demo_corpus.TOPICS
        name = "Demo: topics"
    elif kind == "all":
        pair_sentences = dict.fromkeys(s for a, b, _ in demo_corpus.PARAPHRASE_PAIRS for s in (a, b))
        rows = demo_corpus.AMBIGUOUS + demo_corpus.TOPICS + [("pair", s) for s in pair_sentences]
        name = "Demo sentences"
    else:
        raise UserError(f"Unknown demo set {kind!r}: choose one of {', '.join(_DEMO_KINDS)}.")
    return Texts(name, [text for _, text in rows], [label for label, _ in rows])


@functools.lru_cache(maxsize=None)
def demo_pairs() -> Pairs:
    """Paraphrase pairs written for this project: score 1.0 = paraphrase, 0.0 = not (incl. hard negatives)."""
    rows = demo_corpus.PARAPHRASE_PAIRS
    return Pairs(
        "Demo paraphrase pairs",
        [a for a, _, _ in rows],
        [b for _, b, _ in rows],
        np.array([s for _, _, s in rows], dtype=np.float64),
    )


# ----------------------------------------------------------------------------------------------
# gensim's bundled test data: Lee corpus with human ratings, Pang & Lee polarity sentences


def _gensim_test_file(filename: str) -> Path:
    # find_spec locates the package without importing it (gensim's import pulls in scipy and more).
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"gensim is not installed, and {filename} comes with its test data: pip install gensim.")
    path = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data" / filename
    if not path.is_file():
        raise UserError(f"{filename} is missing from gensim's test data at {path.parent}.")
    return path


def _read_bundled_lines(filename: str) -> list[str]:
    # These files predate UTF-8 ("£" in lee.cor, "—" and "é" in the polarity file): they are cp1252.
    text = _gensim_test_file(filename).read_text(encoding="cp1252")
    return [line.strip() for line in text.split("\n") if line.strip()]  # the last line has no newline


@functools.lru_cache(maxsize=None)
def lee_documents() -> Texts:
    """The 50 short news documents of Lee, Pincombe & Welsh (2005), one per line of lee.cor."""
    docs = _read_bundled_lines("lee.cor")
    if len(docs) != 50:
        raise RuntimeError(f"lee.cor: expected 50 documents, found {len(docs)}")
    return Texts("Lee corpus documents", docs)


@functools.lru_cache(maxsize=None)
def lee_pairs() -> Pairs:
    """All 1225 document pairs i<j of the Lee corpus, scored by mean human similarity rating in [0, 1]."""
    docs = lee_documents().texts
    matrix = np.loadtxt(_gensim_test_file("similarities0-1.txt"), delimiter="\t")  # (50, 50), upper triangle
    if matrix.shape != (len(docs), len(docs)):
        raise RuntimeError(f"similarities0-1.txt: expected a 50x50 matrix, found {matrix.shape}")
    i, j = np.triu_indices(len(docs), k=1)  # row-major: (0,1), (0,2), ..., (48,49)
    return Pairs(
        "Lee corpus (human ratings)",
        [docs[k] for k in i],
        [docs[k] for k in j],
        matrix[i, j],
    )


@functools.lru_cache(maxsize=None)
def polarity() -> Texts:
    """200 movie-review sentences (Pang & Lee), labels "pos"/"neg"."""
    texts, labels = [], []
    for lineno, line in enumerate(_read_bundled_lines("pang_lee_polarity.cor"), start=1):
        tag, _, text = line.partition(" ")
        if tag not in ("__label__pos", "__label__neg") or not text.strip():
            raise RuntimeError(f"pang_lee_polarity.cor, line {lineno}: expected '__label__pos|neg text'")
        texts.append(text.strip())
        labels.append(tag.removeprefix("__label__"))
    return Texts("Polarity sentences", texts, labels)


# ----------------------------------------------------------------------------------------------
# STS-B in the shared development folder (never copied into the repo)

STSB_SPLITS = ("train", "dev", "test")


def shared_stsb(split: str = "dev") -> Path | None:
    """Path of sts-{split}.csv in the shared data folder (`analysis.core.paths.shared_data_dirs`), or None."""
    if split not in STSB_SPLITS:
        raise UserError(f"Unknown STS-B split {split!r}: choose one of {', '.join(STSB_SPLITS)}.")
    return next((p for p in (d / f"sts-{split}.csv" for d in shared_data_dirs()) if p.is_file()), None)



def pair_texts(pairs: Pairs, name: str | None = None) -> Texts:
    """The distinct sentences of a pair set in order of appearance (left then right), each labelled with the
    genre it first appears with when the pairs have genres (STS-B)."""
    if pairs.genres is None:
        return Texts(name or pairs.name, pairs.unique_texts())
    genre_of: dict[str, str] = {}
    for text, genre in zip(pairs.left + pairs.right, pairs.genres + pairs.genres):
        genre_of.setdefault(text, genre)
    return Texts(name or pairs.name, list(genre_of), list(genre_of.values()))
