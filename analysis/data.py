"""Texts and similarity pairs for embedscope, all offline: demo corpus, gensim's bundled test data,
STS-Benchmark files and user uploads. No network, no Streamlit, no torch.

Two containers come out of here:

* `Texts`: a corpus, optionally labelled (for clustering and probing plots).
* `Pairs`: sentence pairs with a gold similarity score (for Spearman-style evaluation).

Example::

    from analysis.data import lee_pairs, read_texts
    pairs = lee_pairs()                     # 1225 pairs of news documents, human scores in [0, 1]
    texts = pairs.unique_texts()            # encode each document once, then look pairs up
    mine = read_texts(upload_bytes, filename="notes.csv")   # `text` column, optional `label`

Bundled loaders are cached and return the same frozen object on every call: do not mutate the lists
inside (the score array is read-only).
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import io
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from analysis import demo_corpus
from analysis.errors import UserError

__all__ = [
    "Texts",
    "Pairs",
    "demo_texts",
    "demo_pairs",
    "lee_documents",
    "lee_pairs",
    "polarity",
    "read_sts",
    "read_texts",
    "shared_stsb",
    "similarity_sets",
    "text_sets",
]

PathOrBytes = str | os.PathLike | bytes

# Where shared_stsb looks when EMBEDSCOPE_SHARED_DATA is unset: <repo>/../shared/data/stsbenchmark.
_REPO = Path(__file__).resolve().parent.parent
_DEFAULT_STSB_DIR = _REPO.parent / "shared" / "data" / "stsbenchmark"


# ----------------------------------------------------------------------------------------------
# Containers


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
        n = max(n, 0)
        labels = None if self.labels is None else self.labels[:n]
        return replace(self, texts=self.texts[:n], labels=labels)


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
        n = max(n, 0)
        genres = None if self.genres is None else self.genres[:n]
        return replace(self, left=self.left[:n], right=self.right[:n], scores=self.scores[:n], genres=genres)

    def unique_texts(self) -> list[str]:
        """Every sentence once, in order of first appearance in left then right."""
        return list(dict.fromkeys(self.left + self.right))


# ----------------------------------------------------------------------------------------------
# Built-in demo corpus (analysis/demo_corpus.py)

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
# Reading user files (paths or uploaded bytes)


def _load(source: PathOrBytes, display: str | None) -> tuple[str, str]:
    """(decoded text, name to show in messages) from a path or from bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        display = display or "uploaded file"
    else:
        path = Path(source)
        display = display or path.name
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise UserError(f"File not found: {path}.") from None
        except IsADirectoryError:
            raise UserError(f"{path} is a folder, not a file.") from None
        except OSError as e:
            raise UserError(f"Cannot read {path}: {e.strerror}.") from None
    try:
        text = raw.decode("utf-8-sig")  # -sig: Excel writes a byte-order mark
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise UserError(f"{display} is not UTF-8 text (line {line}): save it as UTF-8 and try again.") from None
    if not text.strip():
        raise UserError(f"{display} is empty.")
    return text, display


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise UserError(f"The limit must be a positive number of rows, got {limit}.")


def _first_line(text: str) -> str:
    return next(line for line in text.split("\n") if line.strip())


def _read_table(text: str, display: str, *, allow_extra: bool) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header (lower-cased, stripped) and (line number, fields) rows of a csv or tab-separated table.

    Tab-separated if the header line has a tab, then without quote handling (a quote is just a
    character); comma-separated with standard CSV quoting otherwise. Blank lines are skipped.
    """
    tabbed = "\t" in _first_line(text)
    if tabbed:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    try:
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if header is None:
                header = [f.strip().lower() for f in fields]
                continue
            extra = fields[len(header) :]
            if len(fields) < len(header) or (not allow_extra and any(f.strip() for f in extra)):
                hint = "tab-separated" if tabbed else "comma-separated (quote texts that contain commas)"
                raise UserError(
                    f"{display}, line {reader.line_num}: expected {len(header)} fields like the header, "
                    f"found {len(fields)}; the file is read as {hint}."
                )
            rows.append((reader.line_num, fields[: len(header)]))
    except csv.Error as e:
        raise UserError(f"{display}, line {reader.line_num}: not valid CSV ({e}).") from None
    assert header is not None  # _load rejected blank files
    return header, rows


def _parse_score(value: str, display: str, lineno: int) -> float:
    try:
        score = float(value)
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        raise UserError(f"{display}, line {lineno}: the score {value.strip()!r} is not a number.")
    return score


def read_texts(path_or_bytes: PathOrBytes, *, filename: str | None = None, limit: int | None = None) -> Texts:
    """Texts from a user file: .txt (one text per non-empty line) or .csv/.tsv with a header row.

    In a table the text is the column named `text` (any case), else the first column; a `label`
    column, if present, gives labels. Rows with an empty text are skipped. `filename` names the
    upload when bytes are given (its extension picks the format; bytes without a name are read as
    .txt). `limit` keeps the first N texts.
    """
    _check_limit(limit)
    if filename is None and not isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        filename = Path(path_or_bytes).name
    text, display = _load(path_or_bytes, filename)
    suffix = Path(filename).suffix.lower() if filename else ".txt"

    if suffix == ".txt":
        texts = [line.strip() for line in text.split("\n") if line.strip()]
        return Texts(display, texts[:limit])
    if suffix not in (".csv", ".tsv"):
        raise UserError(f"{display}: only .txt, .csv and .tsv files can be read as texts.")

    header, rows = _read_table(text, display, allow_extra=False)
    label_col = header.index("label") if "label" in header else None
    if "text" in header:
        text_col = header.index("text")
    else:
        others = [k for k in range(len(header)) if k != label_col]
        if not others:
            raise UserError(f"{display} has no text column: add a column named 'text'.")
        text_col = others[0]
    texts, labels = [], []
    for _, fields in rows:
        if fields[text_col].strip():
            texts.append(fields[text_col].strip())
            if label_col is not None:
                labels.append(fields[label_col].strip())
    if not texts:
        raise UserError(f"{display} has a header but no texts in its '{header[text_col]}' column.")
    return Texts(display, texts[:limit], None if label_col is None else labels[:limit])


def read_sts(path_or_bytes: PathOrBytes, *, name: str | None = None, limit: int | None = None) -> Pairs:
    """Similarity pairs from an STS-Benchmark file or from a table with sentence1, sentence2, score.

    STS-B format: tab-separated, no header, no quoting; genre in column 1, gold score (0-5) in
    column 5, the sentences in columns 6 and 7; trailing extra fields are ignored. A table is
    recognised by its header (csv or tab-separated; an optional `genre` column is kept). Scores are
    kept as they are (not rescaled). `name` names the result and, for bytes, the file in messages.
    `limit` keeps the first N pairs.
    """
    _check_limit(limit)
    text, display = _load(path_or_bytes, name)
    name = name or display
    left, right, scores, genres = [], [], [], []

    header_line = _first_line(text)
    tabbed = "\t" in header_line
    header = [f.strip().lower() for f in next(csv.reader([header_line], delimiter="\t" if tabbed else ","))]
    if {"sentence1", "sentence2", "score"} <= set(header):
        header, rows = _read_table(text, display, allow_extra=True)
        s1, s2, sc = header.index("sentence1"), header.index("sentence2"), header.index("score")
        g = header.index("genre") if "genre" in header else None
        for lineno, fields in rows[:limit]:
            left.append(fields[s1].strip())
            right.append(fields[s2].strip())
            scores.append(_parse_score(fields[sc], display, lineno))
            if g is not None:
                genres.append(fields[g].strip())
        return Pairs(name, left, right, np.array(scores), genres if g is not None else None)

    # STS-B: split by hand on tabs, since sentences contain unbalanced quote characters.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if limit is not None and len(left) >= limit:
            break
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise UserError(
                f"{display}, line {lineno}: expected 7 tab-separated fields (STS-B format) or a header "
                f"with sentence1, sentence2 and score, found {len(fields)} field(s)."
            )
        scores.append(_parse_score(fields[4], display, lineno))
        genres.append(fields[0].strip())
        left.append(fields[5].strip())
        right.append(fields[6].strip())
    return Pairs(name, left, right, np.array(scores), genres)


# ----------------------------------------------------------------------------------------------
# STS-B in the shared development folder (never copied into the repo)

_STSB_SPLITS = ("train", "dev", "test")


def shared_stsb(split: str = "dev") -> Path | None:
    """Path of sts-{split}.csv in the shared data folder, or None when it is not there.

    EMBEDSCOPE_SHARED_DATA, if set, names the shared data folder (holding stsbenchmark/) or the
    stsbenchmark folder itself; otherwise <repo>/../shared/data/stsbenchmark is used.
    """
    if split not in _STSB_SPLITS:
        raise UserError(f"Unknown STS-B split {split!r}: choose one of {', '.join(_STSB_SPLITS)}.")
    filename = f"sts-{split}.csv"
    env = os.environ.get("EMBEDSCOPE_SHARED_DATA")
    if env:
        candidates = [Path(env) / "stsbenchmark" / filename, Path(env) / filename]
    else:
        candidates = [_DEFAULT_STSB_DIR / filename]
    return next((p for p in candidates if p.is_file()), None)


@functools.lru_cache(maxsize=8)
def _stsb_pairs(path: str, name: str) -> Pairs:
    return read_sts(path, name=name)


@functools.lru_cache(maxsize=8)
def _stsb_sentences(path: str, name: str) -> Texts:
    pairs = _stsb_pairs(path, name.removesuffix(" sentences"))
    genre_of: dict[str, str] = {}  # first genre a sentence appears with
    for text, genre in zip(pairs.left + pairs.right, pairs.genres + pairs.genres):
        genre_of.setdefault(text, genre)
    return Texts(name, list(genre_of), list(genre_of.values()))


# ----------------------------------------------------------------------------------------------
# Menus


def similarity_sets() -> dict[str, Callable[[], Pairs]]:
    """Named offline pair sets for menus; each value loads its set when called."""
    sets: dict[str, Callable[[], Pairs]] = {
        "Lee corpus (human ratings)": lee_pairs,
        "Demo paraphrase pairs": demo_pairs,
    }
    for split in ("dev", "train"):
        path = shared_stsb(split)
        if path is not None:
            sets[f"STS-B {split}"] = functools.partial(_stsb_pairs, str(path), f"STS-B {split}")
    return sets


def text_sets() -> dict[str, Callable[[], Texts]]:
    """Named offline corpora for menus; each value loads its corpus when called."""
    sets: dict[str, Callable[[], Texts]] = {
        "Demo sentences": functools.partial(demo_texts, "all"),
        "Demo: ambiguous words": functools.partial(demo_texts, "ambiguous"),
        "Polarity sentences": polarity,
        "Lee corpus documents": lee_documents,
    }
    path = shared_stsb("dev")
    if path is not None:
        sets["STS-B dev sentences"] = functools.partial(_stsb_sentences, str(path), "STS-B dev sentences")
    return sets
