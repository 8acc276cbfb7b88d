"""Reading attention maps from a trace: the mass on KV-Embedding's re-routed prefix, and the final token's
attention over the input WORDS (sub-word tokens aggregated with the tokenizer's character offsets).

    _, tr = method.encode(backbone, [text], trace=True, attention=True)
    template = method.prompt_template(backbone.tokenizer)  # as tokenized (TP/HTP may add a start token)
    words = final_token_word_attention(backbone.tokenizer, template, text, tr, layers=range(L))
    # DataFrame(word_index, word, start, end, mass): mass = share of the final token's attention (mean over the
    # chosen decoder layers and all heads) that lands on the word, summed over every copy of the text

A word is a maximal run of non-space characters; a token that straddles two words counts for the first.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analysis.core.tokens import tokenize_prompt


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, word) for each maximal run of non-space characters."""
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]


def token_text_spans(tokenizer, template: str, text: str) -> list[tuple[int, int, int] | None]:
    """For every token of the prompt as the model sees it: (copy k >= 1, start, end) of the characters it covers
    inside the k-th copy of `text`, or None for template and special tokens. Tokenizes the full prompt exactly
    like `analysis.core.tokens` does, so the list lines up with the trace's tokens (before any truncation)."""
    return [(k, a, b) if k else None for _, k, a, b in tokenize_prompt(tokenizer, template, text)]


def token_word_index(spans, words) -> np.ndarray:
    """(T,) index of the word each token belongs to (-1 = not in the text)."""
    starts = np.array([w[0] for w in words])
    ends = np.array([w[1] for w in words])
    idx = np.full(len(spans), -1, dtype=np.int64)
    for t, s in enumerate(spans):
        if s is None:
            continue
        _, a, b = s
        overlap = np.flatnonzero((starts < b) & (ends > a))
        if len(overlap):
            idx[t] = overlap[0]
        else:  # a token of only spaces: the word that follows it
            after = np.flatnonzero(starts >= a)
            idx[t] = after[0] if len(after) else -1
    return idx


def final_token_word_attention(tokenizer, template: str, text: str, trace, *, text_index: int = 0,
                               layers=None, heads=None):
    """The final token's attention over the words of `text` (from a trace with attention maps); see
    `word_attention`."""
    att = trace["attention"][text_index]  # (L, H, T, S), S - T extra (prefix) columns first
    T = att.shape[2]
    return word_attention(tokenizer, template, text, att[:, :, T - 1, :], T, layers=layers, heads=heads)


def word_attention(tokenizer, template: str, text: str, final, n_tokens: int, *, layers=None, heads=None):
    """Aggregate the final token's attention rows `final` (L, H, S) over the words of `text`.

    Returns DataFrame(word_index, word, start, end, mass): the attention (mean over the chosen decoder layers and
    heads) landing on each word, summed over its sub-word tokens and over every copy of the text; attrs hold
    "prefix_mass" (re-routed columns) and "template_mass" (prompt and special tokens)."""
    final = np.asarray(final)
    L, H, S = final.shape
    extra = S - n_tokens
    layers = list(range(L)) if layers is None else list(layers)
    heads = list(range(H)) if heads is None else list(heads)
    row = final[layers][:, heads].mean(axis=(0, 1))  # (S,)
    spans = token_text_spans(tokenizer, template, text)
    if len(spans) != n_tokens:
        raise ValueError(f"the trace has {n_tokens} tokens but the prompt tokenizes to {len(spans)} (truncated?)")
    words = word_spans(text)
    idx = token_word_index(spans, words)
    mass = np.zeros(len(words))
    np.add.at(mass, idx[idx >= 0], row[extra:][idx >= 0])
    frame = pd.DataFrame({"word_index": range(len(words)), "word": [w[2] for w in words],
                          "start": [w[0] for w in words], "end": [w[1] for w in words], "mass": mass})
    frame.attrs["prefix_mass"] = float(row[:extra].sum())
    frame.attrs["template_mass"] = float(row[extra:][idx < 0].sum())
    return frame


def prefix_mass_summary(mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From `kv.prefix_mass` (L, H, T) of one text: the (L, H) mean over query positions, and the (L, T) mean
    over heads (each layer's profile along the sequence)."""
    mass = np.asarray(mass)
    return mass.mean(axis=2), mass.mean(axis=1)


def contextual_mass(att: np.ndarray, segments: np.ndarray, c_index: int) -> np.ndarray:
    """Causal2Vec: the attention the text's tokens pay to the contextual token, per decoder layer and head.

    Args:
        att: (L, H, T, S) one text's attention (S - T extra columns first).
        segments: (T,) segment ids; text tokens have 1.
        c_index: position of the contextual token among the T tokens.

    Returns:
        (L, H): mean over the text's tokens (query rows) of the weight on the contextual token's column.
    """
    att = np.asarray(att)
    extra = att.shape[-1] - att.shape[-2]
    rows = np.flatnonzero(np.asarray(segments) == 1)
    return att[:, :, rows, extra + c_index].mean(axis=2)
