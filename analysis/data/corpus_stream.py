"""A BEIR corpus read from disk as it is needed, for corpora past the budgets (`--no-budgets`): a 100,000-document
corpus.jsonl is never held in memory whole, only its document ids and where each line starts.

One pass indexes the file (each line parsed once, checked as `files.load_beir` checks it, its text dropped), and
hashes its bytes, so a cache key names the corpus without its texts. Then `batches(n)` reads the documents again in
file order, `n` at a time, for embedding; a single document is a seek and one line. The index is plain data (a path,
ids and offsets), so a corpus pickles to a worker without its file handle.

    corpus = StreamedCorpus.index(folder / "corpus.jsonl")   # UserError on a damaged line, as load_beir says it
    for texts in corpus.batches(1024):                       # "title text", in file order
        ...
    corpus["d17"], len(corpus), "d17" in corpus, list(corpus)   # a Mapping of id -> "title text"
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from analysis.core.errors import UserError

BATCH = 1024  # documents read and embedded at a time: ~1 MB of text on BEIR corpora, many forward batches each


def document_text(record: dict) -> str:
    """BEIR's text of a document for bi-encoders: "title text"."""
    return f"{record.get('title') or ''} {record.get('text') or ''}".strip()


class StreamedCorpus(Mapping):
    """id -> "title text" of a corpus.jsonl, read from disk on demand; iteration is in file order."""

    def __init__(self, path, offsets: dict[str, int], sha256: str):
        self.path, self.offsets, self.sha256 = Path(path), offsets, sha256

    @classmethod
    def index(cls, path) -> StreamedCorpus:
        """Read `path` once, line by line: ids, offsets and the file's digest; every line checked (valid JSON, an
        object with an "_id" seen once, some text), no text kept."""
        path = Path(path)
        offsets: dict[str, int] = {}
        sha = hashlib.sha256()
        at = 0
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                sha.update(raw)
                start, at = at, at + len(raw)
                rid = _checked(path, lineno, raw, offsets)
                if rid is not None:
                    offsets[rid] = start
        if not offsets:
            raise UserError(f"{path.name} has no records.")
        return cls(path, offsets, sha.hexdigest())

    def __getitem__(self, rid: str) -> str:
        start = self.offsets[rid]  # KeyError for an unknown id, as a dict
        with open(self.path, "rb") as fh:
            fh.seek(start)
            return document_text(json.loads(_text(fh.readline(), start == 0)))

    def __contains__(self, rid) -> bool:
        return rid in self.offsets  # Mapping's own would read the document

    def __iter__(self) -> Iterator[str]:
        return iter(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)

    def batches(self, n: int | None = None) -> Iterator[list[str]]:
        """The documents' texts in file order (the order of `list(self)`), `n` (default `BATCH`) at a time."""
        n = n or BATCH
        batch: list[str] = []
        with open(self.path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                batch.append(document_text(json.loads(_text(raw, lineno == 1))))
                if len(batch) == n:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def values(self) -> Iterator[str]:  # one pass through the file, not a seek per document
        for batch in self.batches():
            yield from batch

    def items(self) -> Iterator[tuple[str, str]]:
        return zip(self.offsets, self.values())

    def content(self) -> dict:
        """What identifies the corpus in a cache key: its bytes' digest (the texts themselves are never gathered)."""
        return {"corpus.jsonl sha256": self.sha256, "documents": len(self)}


def _text(raw: bytes, first: bool) -> str:
    text = raw.decode("utf-8")
    return text.removeprefix("\ufeff") if first else text  # utf-8-sig, as the whole file is read otherwise


def _checked(path: Path, lineno: int, raw: bytes, seen) -> str | None:
    """The id of one line of the corpus (None for an empty line), or the sentence `files.load_beir` gives; a
    streamed document's text is checked here, as it is never gathered for the check `load_beir` does afterwards."""
    try:
        line = _text(raw, lineno == 1)
    except UnicodeDecodeError:
        raise UserError(f"{path.name}, line {lineno}: not UTF-8 text.") from None
    found = checked_line(path, lineno, line, seen)
    if found is None:
        return None
    rid, record = found
    if not document_text(record):
        raise UserError(f"{path.parent}: {rid!r} has no text.")
    return rid


def checked_line(path: Path, lineno: int, line: str, seen) -> tuple[str, dict] | None:
    """(id, record) of one line of a BEIR .jsonl file, or None for an empty line; else the one sentence naming the
    file and line. The one check of a line, whether the file is read whole (`files.load_beir`) or streamed."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise UserError(f"{path.name}, line {lineno}: not valid JSON ({err.msg}).") from None
    if not isinstance(record, dict) or "_id" not in record:
        raise UserError(f"{path.name}, line {lineno}: expected an object with an \"_id\" field.")
    rid = str(record["_id"])
    if rid in seen:
        raise UserError(f"{path.name}, line {lineno}: the id {rid!r} appears twice.")
    return rid, record
