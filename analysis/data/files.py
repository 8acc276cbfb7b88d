"""Reading user files (paths or uploaded bytes): texts, similarity pairs and BEIR retrieval folders. No network,
no Streamlit, no torch. Every problem is one `UserError` sentence naming the file and, where it helps, the line.

    from analysis.data.files import read_texts, read_sts
    mine = read_texts(upload_bytes, filename="notes.csv")   # `text` column, optional `label`
    pairs = read_sts("sts-dev.csv")                         # STS-B format or sentence1, sentence2, score
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.data.corpora import Pairs, Texts, pair_texts
from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.intake import read_bytes
from analysis.core.text import has_visible_text
from analysis.data.corpus_size import check_corpus
from analysis.data.corpus_stream import StreamedCorpus, checked_line, document_text

PathOrBytes = str | os.PathLike | bytes


def _load(source: PathOrBytes, display: str | None) -> tuple[str, str]:
    """(decoded text, name to show in messages) from a path or from bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        display = display or "uploaded file"
    else:
        path = Path(source)
        display = display or path.name
        try:
            raw = read_bytes(path)  # at most the byte budget: a device or a huge file is refused, not read whole
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
    if not has_visible_text(text):
        raise UserError(f"{display} holds no readable text, only NUL bytes or other control characters.")
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
    """Texts from a user file, in every format the tool reads:

    * .txt: one text per non-empty line;
    * .csv/.tsv with a header: the column named `text` (any case), labels from an optional `label` column;
    * similarity pairs, as an STS-B file (tab-separated, no header) or a table with sentence1, sentence2 and
      score: their distinct sentences in order of appearance, labelled with their genre when there is one.

    A table without a `text` column is an error naming the columns it has (never a silent guess). `filename`
    names the upload when bytes are given (its extension picks the format; bytes without a name are read as
    .txt). `limit` keeps the first N texts.
    """
    _check_limit(limit)
    if filename is None and not isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        filename = Path(path_or_bytes).name
    text, display = _load(path_or_bytes, filename)
    suffix = Path(filename).suffix.lower() if filename else ".txt"
    if suffix not in (".txt", ".csv", ".tsv"):
        raise UserError(f"{display}: only .txt, .csv and .tsv files can be read as texts.")
    if _is_pairs(text):
        texts = pair_texts(read_sts(text.encode("utf-8"), name=display))
        return texts if limit is None else texts.head(limit)
    if suffix == ".txt":
        texts = [line.strip() for line in text.split("\n") if line.strip()]
        return Texts(display, texts[:limit])

    header, rows = _read_table(text, display, allow_extra=False)
    if "text" not in header:
        found = ", ".join(repr(h) for h in header if h) or "none with a name"
        raise UserError(f"{display} has no 'text' column (its columns: {found}); name the column of texts 'text' "
                        "(or give sentence1, sentence2 and score for pairs).")
    text_col = header.index("text")
    label_col = header.index("label") if "label" in header else None
    texts, labels = [], []
    for _, fields in rows:
        if fields[text_col].strip():
            texts.append(fields[text_col].strip())
            if label_col is not None:
                labels.append(fields[label_col].strip())
    if not texts:
        raise UserError(f"{display} has a header but no texts in its 'text' column.")
    return Texts(display, texts[:limit], None if label_col is None else labels[:limit])


def _is_pairs(text: str) -> bool:
    """Whether decoded file content is similarity pairs: a header with sentence1, sentence2 and score, or an
    STS-B line (7+ tab-separated fields with a number in the score column)."""
    first = _first_line(text)
    if "\t" not in first and "," not in first:
        return False
    header = {f.strip().lower() for f in next(csv.reader([first], delimiter="\t" if "\t" in first else ","))}
    if {"sentence1", "sentence2", "score"} <= header:
        return True
    fields = first.split("\t")
    if len(fields) < 7:
        return False
    try:
        return math.isfinite(float(fields[4]))
    except ValueError:
        return False


def read_sts(path_or_bytes: PathOrBytes, *, name: str | None = None, limit: int | None = None) -> Pairs:
    """Similarity pairs from an STS-Benchmark file or from a table with sentence1, sentence2, score.

    STS-B format: tab-separated, no header, no quoting; genre and source in columns 1-2 (kept as
    "genre/source", the strata of a sample), gold score (0-5) in
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
        genres.append(f"{fields[0].strip()}/{fields[1].strip()}")  # genre/source: STS-B's strata (MSRvid, images, ...)
        left.append(fields[5].strip())
        right.append(fields[6].strip())
    return Pairs(name, left, right, np.array(scores), genres)


# ---- the public STS sets as their authors ship them (`analysis.data.fetch` stores them in the data folder) ---------
SICK_COLUMNS = ("sentence_a", "sentence_b", "relatedness_score", "semeval_set")


def read_sick(path, *, part: str = "TEST", name: str | None = None) -> Pairs:
    """SICK relatedness pairs (SICK.txt of the authors' release: tab-separated with a header) of one SemEval
    part (TRAIN, TRIAL or TEST); gold = relatedness_score (1-5). Genre = the corpus the sentences were taken
    from (sentence_A_dataset: FLICKR or SEMEVAL; "A/B" when the two differ), the strata of a sample."""
    text, display = _load(path, None)
    header, rows = _read_table(text, display, allow_extra=True)
    missing = [c for c in SICK_COLUMNS if c not in header]
    if missing:
        raise UserError(f"{display} is not SICK.txt: it has no {', '.join(missing)} column.")
    a, b, score, semeval = (header.index(c) for c in SICK_COLUMNS)
    da, db = (header.index(c) if c in header else None for c in ("sentence_a_dataset", "sentence_b_dataset"))
    left, right, scores, genres = [], [], [], []
    for lineno, fields in rows:
        if fields[semeval].strip() != part:
            continue
        left.append(fields[a].strip())
        right.append(fields[b].strip())
        scores.append(_parse_score(fields[score], display, lineno))
        ga, gb = (fields[i].strip() if i is not None else "SICK" for i in (da, db))
        genres.append(ga if ga == gb else f"{ga}/{gb}")
    if not left:
        raise UserError(f"{display} has no pairs of the SemEval part {part}.")
    return Pairs(name or f"SICK-R {part.lower()}", left, right, np.array(scores), genres)


def read_semeval_sts(folder, subsets: tuple[str, ...], *, name: str | None = None) -> Pairs:
    """One year of the SemEval STS tasks (2012-2016) from its folder: for each sub-set S, STS.input.S.txt (two
    tab-separated sentences a line, extra columns ignored) and STS.gs.S.txt (the gold score of the same line;
    empty where the organisers gave none, and those lines are skipped, as SentEval does). Genre = the sub-set."""
    root = Path(folder)
    left, right, scores, genres = [], [], [], []
    for s in subsets:
        inputs, _ = _load(root / f"STS.input.{s}.txt", None)
        gold, _ = _load(root / f"STS.gs.{s}.txt", None)
        inputs, gold = inputs.splitlines(), gold.splitlines()
        if len(inputs) != len(gold):
            raise UserError(f"{root.name}/STS.input.{s}.txt has {len(inputs)} lines but STS.gs.{s}.txt has "
                            f"{len(gold)}: the two files must match line by line.")
        for lineno, (line, g) in enumerate(zip(inputs, gold), start=1):
            if not g.strip():
                continue
            fields = line.split("\t")
            if len(fields) < 2:
                raise UserError(f"STS.input.{s}.txt, line {lineno}: expected two tab-separated sentences.")
            left.append(fields[0].strip())
            right.append(fields[1].strip())
            scores.append(_parse_score(g, f"STS.gs.{s}.txt", lineno))
            genres.append(s)
    return Pairs(name or root.name, left, right, np.array(scores), genres)


# ---- BEIR retrieval folders -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Beir:
    """A retrieval set in BEIR layout: documents, queries (only those with judgements) and qrels."""

    name: str
    corpus: Mapping[str, str]  # doc id -> "title text": a dict, or a StreamedCorpus read from disk when embedded
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}

    def __len__(self) -> int:
        return len(self.queries)


def load_beir(folder, split: str = "test", limit: int | None = None, tokenizer=None, stream: bool | None = None) -> Beir:
    """Read corpus.jsonl, queries.jsonl and qrels/<split>.tsv from `folder` (BEIR layout).

    Documents are "title text" (BEIR's convention for bi-encoders). Judgements naming unknown queries or
    documents are an error, since they usually mean two folders were mixed. `limit` keeps the first N
    judged queries (all documents stay: they are the haystack). The corpus is counted first (documents, bytes, and
    tokens with `tokenizer`) and refused past the budgets before a line of it is parsed. A corpus past the app's
    budgets (read only with the budgets lifted), or any with `stream=True`, is not read into memory: the corpus is a
    `corpus_stream.StreamedCorpus` (ids and offsets; the texts read from disk in batches when embedded).
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise UserError(f"BEIR folder not found: {root}.")
    files = {"corpus": root / "corpus.jsonl", "queries": root / "queries.jsonl",
             "qrels": root / "qrels" / f"{split}.tsv"}
    missing = [str(p.relative_to(root)) for p in files.values() if not p.is_file()]
    if missing:
        raise UserError(f"{root} is not in BEIR layout: missing {', '.join(missing)} (expected corpus.jsonl, "
                        f"queries.jsonl and qrels/{split}.tsv).")
    size = check_corpus(files["corpus"], tokenizer, name=root.name)
    if stream is None:  # past what the app allows: only with --no-budgets, and then never read whole
        stream = size.documents > budgets.APP.corpus_documents or size.bytes > budgets.APP.corpus_bytes
    corpus = StreamedCorpus.index(files["corpus"]) if stream else \
        {i: document_text(r) for i, r in _jsonl(files["corpus"])}
    queries = {i: str(r.get("text") or "").strip() for i, r in _jsonl(files["queries"])}
    qrels: dict[str, dict[str, int]] = {}
    lines = files["qrels"].read_text(encoding="utf-8-sig").splitlines()
    for lineno, line in enumerate(lines, start=1):
        fields = line.strip().split("\t")
        if not line.strip() or (lineno == 1 and fields[0].lower() in ("query-id", "query_id", "qid")):
            continue
        if len(fields) < 3:
            raise UserError(f"{files['qrels'].name}, line {lineno}: expected query-id, corpus-id and score "
                            "separated by tabs.")
        qid, did, rel = fields[0], fields[1], fields[2]
        try:
            rel_value = int(float(rel))
        except ValueError:
            raise UserError(f"{files['qrels'].name}, line {lineno}: the score {rel!r} is not a number.") from None
        if qid not in queries:
            raise UserError(f"{files['qrels'].name}, line {lineno}: query {qid!r} is not in queries.jsonl.")
        if did not in corpus:
            raise UserError(f"{files['qrels'].name}, line {lineno}: document {did!r} is not in corpus.jsonl.")
        qrels.setdefault(qid, {})[did] = rel_value
    judged = [q for q in qrels if any(r > 0 for r in qrels[q].values())][:limit]
    if not judged:
        raise UserError(f"{files['qrels']} judges no document relevant (score > 0) for any query.")
    empty = [q for q in judged if not queries[q]] + ([] if stream else [d for d in corpus if not corpus[d]])
    if empty:
        raise UserError(f"{root}: {empty[0]!r} has no text.")
    return Beir(root.name, corpus, {q: queries[q] for q in judged}, {q: qrels[q] for q in judged})


def _jsonl(path: Path):
    seen = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        found = checked_line(path, lineno, line, seen)
        if found is not None:
            seen.add(found[0])
            yield found
    if not seen:
        raise UserError(f"{path.name} has no records.")
