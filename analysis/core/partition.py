"""Blocks of a text for Hierarchical Token Prepending, and the token/character bookkeeping both prepending
methods need.

HTP puts a summary token in front of every block of the text. A block is K consecutive sentences (found by
pysbd, a maintained rule-based splitter that runs offline; it handles "Dr.", "e.g.", ellipses and quotes that a
regex would cut at) or, as the paper's ablation, every N text tokens; "matched" is the paper's Fig. 8 baseline, every
floor(tokens / sentences) tokens, so a text gets about as many fixed-length blocks as it has sentences. Sentences are character spans; a token
belongs to the block that contains its *last* character, so a token that starts with the space before a
sentence (" The") lands in that sentence, not the previous one.

    ids, segments, text_end, truncated = tokenize_with_offsets(tok, "{text}", text, max_length, reserve)
    block = token_blocks(text_end[segments == 1], text_kept, by="sentences", size=1)   # (n_text,) 0, 0, 1, ...

Everything here is per text and vectorised over tokens (numpy searchsorted), so a document with hundreds of
sentences costs one pysbd pass and a few array operations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from analysis.core.errors import UserError
from analysis.core.tokens import PLACEHOLDER, Encoded, _encode

PARTITIONS = ("sentences", "tokens", "matched")


@functools.lru_cache(maxsize=1)
def _segmenter():
    import pysbd  # lazy: keeps pysbd off the pages' and the command line's start

    # clean=False keeps the text as is (spans must index the original string); char_span gives offsets.
    return pysbd.Segmenter(language="en", clean=False, char_span=True)


def sentence_starts(text: str) -> np.ndarray:
    """(S,) character index where each sentence begins; the first is always 0 (leading spaces belong to it).
    A text without sentence punctuation is one sentence."""
    spans = _segmenter().segment(text) if text.strip() else []
    starts = sorted({int(s.start) for s in spans if s.sent.strip()})
    return np.asarray([0] + starts[1:], dtype=np.int64)  # text before the first sentence joins it


def token_blocks(text_end: np.ndarray, text: str, by: str = "sentences", size: int = 1) -> np.ndarray:
    """Block number of each text token.

    Args:
        text_end: (n,) for each text token, the character offset (exclusive) where it ends, relative to `text`.
        text: the text those offsets refer to.
        by: "sentences" (blocks of `size` sentences), "tokens" (blocks of `size` tokens) or "matched" (blocks of
            floor(n / sentences) tokens, `size` unused: HTP's Fig. 8 baseline).
        size: sentences or tokens per block (>= 1).

    Returns:
        (n,) int64, non-decreasing, 0 .. M-1 with every block non-empty.
    """
    n = len(text_end)
    if size < 1:
        raise UserError(f"Blocks need at least one {by[:-1]} each, not {size}.")
    if by == "tokens":
        return np.arange(n, dtype=np.int64) // size
    if by == "matched":
        per_block = max(1, n // max(len(sentence_starts(text)), 1))
        return np.arange(n, dtype=np.int64) // per_block
    if by != "sentences":
        raise UserError(f"Unknown partition '{by}'; choose one of {PARTITIONS}.")
    starts = sentence_starts(text)[::size]  # (M0,) first character of every K-th sentence
    last_char = np.maximum(np.asarray(text_end, dtype=np.int64) - 1, 0)  # (n,)
    raw = np.searchsorted(starts, last_char, side="right") - 1  # (n,) block whose span holds the last char
    # A block can end up without tokens (a token merged across its boundary): renumber 0..M-1 without gaps.
    _, block = np.unique(raw, return_inverse=True)
    return block.astype(np.int64)


def tokenize_with_offsets(tokenizer, template: str, text: str, max_length: int,
                          reserve: Callable[[np.ndarray, str], int] = lambda text_end, text: 0):
    """Tokenize `template` around `text` (exactly one `{text}`), with each text token's end offset.

    `reserve(text_end, kept_text)` says how many extra positions (placeholders) the layout will add for this
    text; if tokens + reserve exceed `max_length`, the text (never the template) is cut at a token boundary
    until everything fits, as `analysis.core.tokens.encode_template` does.

    Returns:
        (Encoded, text_end, kept_text): `text_end` is (T,) int64, the end offset of each token inside the
        kept text (-1 for template and special tokens).
    """
    if template.count(PLACEHOLDER) != 1:
        raise UserError("The template must contain {text} exactly once for token prepending.")
    prefix = template.split(PLACEHOLDER)[0]

    def attempt(kept: str):
        enc = _encode(tokenizer, template, kept)
        full = template.replace(PLACEHOLDER, kept)
        offsets = np.asarray(tokenizer(full, add_special_tokens=True, return_offsets_mapping=True)["offset_mapping"],
                             dtype=np.int64).reshape(-1, 2)  # (T, 2) characters in the full prompt
        if len(offsets) != len(enc.ids):
            raise RuntimeError("tokenizer returned offsets that do not match its ids")
        text_end = np.where(enc.segments == 1, np.clip(offsets[:, 1] - len(prefix), 0, len(kept)), -1)
        return enc, text_end, len(enc) + reserve(text_end[enc.segments == 1], kept)

    enc, text_end, total = attempt(text)
    if total <= max_length:
        return enc, text_end, text
    pieces = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    # The longest prefix (in whole tokens) that fits with its placeholders: binary search, since the total
    # grows with the kept text but not linearly (each sentence kept also adds its summary tokens).
    lo, hi, best = 1, len(pieces) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        kept = text[: pieces[mid - 1][1]]
        enc, text_end, total = attempt(kept)
        if total <= max_length:
            best, lo = (Encoded(enc.ids, enc.segments, truncated=True), text_end, kept), mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return best
    raise UserError(f"The prompt template alone (with its summary tokens) is longer than the model's limit of "
                    f"{max_length} tokens.")
