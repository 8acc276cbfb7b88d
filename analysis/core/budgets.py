"""Work budgets: the most one request may ask for, checked before any work starts.

The app is a shared server: one visitor's request must not take it down. Every limit here is chosen so that no
single app request needs more than about 2 GiB above the loaded model (measured with `scripts/stress_pages.py`,
table in docs/BUDGETS.md), or, for limits that only cost time (grid cells, replicates), so that one request
finishes in minutes on two CPU cores. The library and the app use `current()`; the command line and scripts lift
them explicitly (`python -m analysis ... --no-budgets`, or `with budgets.lifted(): ...`), never the server silently.

    from analysis.core import budgets
    budgets.check("attention_tokens", n_tokens, "tokens in one text with attention maps")  # UserError if over
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass

from analysis.core.errors import UserError


@dataclass(frozen=True)
class Budgets:
    texts: int = 5000  # texts per request: a CPU needs minutes per thousand texts and method
    pairs: int = 10_000  # similarity pairs per request (STS-B train's 5,749 fit)
    chars_per_text: int = 50_000  # ~12k tokens, past the default model's 8,192-token limit (truncation reachable)
    total_chars: int = 2_000_000  # all texts of one request together (one upload, one paste)
    upload_bytes: int = 8_000_000  # one uploaded file, checked before it is parsed (UTF-8: >= total_chars)
    upload_files: int = 1  # files per uploader: several files multiply every limit above
    # Attention maps keep (L, H, T, T) float32 per text: 30 x 9 x 512^2 x 4 B = 283 MB on the default model, and
    # the eager pass holds a few such tensors; 909 tokens peaked at 3.7 GB before this limit.
    attention_tokens: int = 512
    attention_cells: int = 80_000_000  # L * H * T^2 of one attention trace: the same limit for any model size
    trace_texts: int = 64  # full per-layer captures are (L+1, T, d) per text: traces are for a handful of texts
    sensitivity_tokens: int = 512  # the autograd graph of every layer is kept for the backward passes
    exact_jacobian_tokens: int = 24  # exact norms take d backward passes (576 on the default model)
    probes: int = 256  # random probes per readout: one backward pass each
    soft_k: int = 64  # soft tokens generated per text (each step keeps a (B, V) distribution)
    grid_cells: int = 64  # Layer explorer cells per sweep: each cell embeds every text of the pairs once
    # cells x texts, in prompt-only forwards (a cell starting at layer s costs (L - s) / L of one): ~10 minutes of
    # short STS texts on two cores; 64 cells on all of STS-B dev (2,910 texts) would take hours
    sweep_text_forwards: int = 30_000
    bootstrap: int = 2000  # bootstrap replicates of one interval
    map_points: int = 5000  # points of one 2-D map / all-pairs statistic: (n, n) float64 = 200 MB at 5,000
    matrix_texts: int = 300  # rows of a drawn similarity heatmap: its hover text grows with n^2 (25M strings at 5,000)
    # Context compression answers each question with up to 12 greedy decoding steps (~0.1 s on the default model):
    # 5,000 questions are minutes on two cores, like `texts`; items are counted before any is generated
    qa_items: int = 5000
    # One pool per sentence, each a decoder position: the scaling curve stops at 100 pools and the largest reported
    # run at 1,000; 10,000 sentences took 1.7 GB and minutes before this limit
    context_sentences: int = 1000
    # Pair attribution (analysis/inspect/attribution.py) keeps the autograd graph of a text's path rows (in chunks
    # of 1,024 row-positions) and costs one forward pass per node and a backward pass per node and output direction:
    # time grows with positions x nodes x directions (the measured pair in docs/BUDGETS.md)
    explain_tokens: int = 160  # positions per text, the method's prompt and added tokens included
    explain_steps: int = 64  # Gauss-Legendre nodes per path
    explain_directions: int = 64  # output directions of the pair matrix (an exact one takes the embedding's width)
    # A retrieval corpus (a BEIR folder) is counted before it is read (`analysis.data.corpus_size`): SciFact's 5,183
    # documents, 8.0 MB and about 1.7M tokens fit (about 40 minutes per method on the default model and two cores);
    # ten times that is refused in one sentence, not read whole into memory and embedded for hours unasked
    corpus_documents: int = 10_000
    corpus_bytes: int = 16_000_000
    corpus_tokens: int = 2_000_000


APP = Budgets()
_LIFTED = Budgets(**{f.name: 2**62 for f in dataclasses.fields(Budgets)})
_current: contextvars.ContextVar[Budgets] = contextvars.ContextVar("embedscope_budgets", default=APP)

DESCRIPTIONS = {  # for the table in docs/BUDGETS.md and messages
    "texts": "texts per request",
    "pairs": "similarity pairs per request",
    "chars_per_text": "characters per text",
    "total_chars": "characters of all texts of one request",
    "upload_bytes": "bytes per uploaded file",
    "upload_files": "files per upload box",
    "attention_tokens": "tokens per text when attention maps are kept",
    "attention_cells": "layers x heads x tokens^2 of one attention trace",
    "trace_texts": "texts per full trace (every layer's states)",
    "sensitivity_tokens": "tokens per text for Jacobian sensitivity",
    "exact_jacobian_tokens": "tokens per text for exact Jacobian norms",
    "probes": "random probes per readout (sensitivity)",
    "soft_k": "soft tokens generated per text",
    "grid_cells": "Layer explorer cells per sweep",
    "sweep_text_forwards": "Layer explorer work per sweep: texts x cells, in prompt-only forwards",
    "bootstrap": "bootstrap replicates per interval",
    "map_points": "points per 2-D map or all-pairs statistic",
    "matrix_texts": "texts per drawn similarity heatmap (more are embedded; the heatmap shows the first ones)",
    "qa_items": "questions answered per context-compression run",
    "context_sentences": "sentences (pools) per compressed context",
    "explain_tokens": "positions per text of a pair explanation (prompt and added tokens included)",
    "explain_steps": "steps along a pair explanation's path",
    "explain_directions": "output directions of a pair explanation's token-pair matrix",
    "corpus_documents": "documents per retrieval corpus (a BEIR folder), counted before it is read",
    "corpus_bytes": "bytes of one retrieval corpus file (corpus.jsonl)",
    "corpus_tokens": "tokens per retrieval corpus, estimated with the model's tokenizer from a sample",
}


def current() -> Budgets:
    """The budgets in force in this thread/context (the app's unless lifted)."""
    return _current.get()


def limit(name: str) -> int:
    return getattr(current(), name)


def is_lifted() -> bool:
    return current() is _LIFTED


@contextlib.contextmanager
def lifted():
    """Run without budgets (the command line's --no-budgets, scripts). Context-local: other threads (other app
    sessions) keep theirs."""
    token = _current.set(_LIFTED)
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def override(**limits):
    """Run with some budgets changed (tests; a script that needs one limit raised and no other)."""
    token = _current.set(dataclasses.replace(current(), **limits))
    try:
        yield
    finally:
        _current.reset(token)


def check(name: str, value: int, what: str | None = None) -> None:
    """Raise a one-sentence UserError when `value` exceeds budget `name`."""
    cap = limit(name)
    if value > cap:
        what = what or DESCRIPTIONS[name]
        raise UserError(f"Too much for one request: {what} is {value:,}, and at most {cap:,} is allowed (the command "
                        "line can go further with --no-budgets).")
