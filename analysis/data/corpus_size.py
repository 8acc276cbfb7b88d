"""A corpus counted before any work: documents, bytes, tokens (estimated with the model's tokenizer from a sample) and
the memory its vectors will take, so a corpus past the budgets is one sentence in a fraction of a second instead of
an hour of embedding or a process that runs out of memory.

The count never reads the corpus into memory: documents are the file's non-empty lines, counted in 1 MiB chunks;
tokens are the mean of `SAMPLE` documents read at evenly spaced places in the file (a seek, then the next whole
line) times the documents. A 100,000-document BEIR folder is counted in well under a second.

    size = check_corpus(folder / "corpus.jsonl", tokenizer)   # UserError past a budget (lifted by --no-budgets)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from analysis.core import budgets

SAMPLE = 64  # documents read to estimate tokens per document: enough for +-10% on BEIR corpora, a few ms to read
CHUNK = 1 << 20


@dataclass(frozen=True)
class CorpusSize:
    """What a corpus will cost, before any of it is read."""

    documents: int
    bytes: int
    tokens: int | None  # estimated from `sampled` documents with the model's tokenizer; None without one
    sampled: int

    def vector_bytes(self, dim: int) -> int:
        """Memory of its float32 vectors, (documents, dim)."""
        return self.documents * dim * 4


def count_corpus(path, tokenizer=None, sample: int = SAMPLE) -> CorpusSize:
    """Count `path` (one JSON document per line, BEIR's corpus.jsonl) without reading it whole."""
    path = Path(path)
    size = path.stat().st_size
    documents, last = 0, b"\n"
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            documents += chunk.count(b"\n")  # BEIR writes no empty lines; one would count as a document here
            last = chunk[-1:]
    documents += last != b"\n"  # a last line without its line end
    tokens, seen = None, 0
    if tokenizer is not None and documents:
        lengths = [len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in _sample(path, size, sample)]
        seen = len(lengths)
        tokens = round(sum(lengths) / seen * documents) if seen else None
    return CorpusSize(documents, size, tokens, seen)


def _sample(path: Path, size: int, n: int) -> list[str]:
    """Up to `n` documents' "title text", read at evenly spaced offsets (each the next whole line after a seek)."""
    texts = []
    with open(path, "rb") as fh:
        for i in range(n):
            fh.seek(size * i // n)
            if i:
                fh.readline()  # the rest of the line the seek landed in
            line = fh.readline()
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a damaged line is named when the corpus is read
            if isinstance(record, dict):
                texts.append(f"{record.get('title') or ''} {record.get('text') or ''}".strip())
    return texts


def check_corpus(path, tokenizer=None, *, name: str | None = None) -> CorpusSize:
    """Count `path` and refuse it, in one sentence naming the budget, when its documents, bytes or (with a
    tokenizer) estimated tokens are past the budgets in force (`analysis.core.budgets`; `--no-budgets` lifts them)."""
    size = count_corpus(path, tokenizer)
    name = name or Path(path).parent.name
    budgets.check("corpus_documents", size.documents, f"documents in the corpus of {name}")
    budgets.check("corpus_bytes", size.bytes, f"bytes of {name}'s corpus.jsonl")
    if size.tokens is not None:
        budgets.check("corpus_tokens", size.tokens, f"tokens in the corpus of {name} (estimated from "
                                                    f"{size.sampled} documents)")
    return size
