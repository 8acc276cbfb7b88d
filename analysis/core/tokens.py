"""Turn texts into model inputs while remembering which token came from where.

Every method wraps the text in a template (PromptEOL's prompt, Echo's two copies, ...). Pooling must know
which tokens belong to the text and to which copy, so each token gets a *segment* id:
    -1 padding, 0 template (and special tokens), k >= 1 the k-th copy of the text.
Segments come from the tokenizer's character offsets on the full prompt, so we tokenize the prompt exactly
as the model will see it (no piecewise tokenization that would change BPE merges at the boundaries).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from analysis.core.errors import TruncationWarning, UserError
from analysis.core.params import MAX_COPIES, PLACEHOLDER
from analysis.core.text import has_visible_text

PAD, TEMPLATE = -1, 0


@dataclass(frozen=True)
class Encoded:
    """One text, tokenized inside its template."""

    ids: np.ndarray  # (T,) int64
    segments: np.ndarray  # (T,) int8: 0 template, k the k-th copy of the text
    truncated: bool  # the text was cut to fit the model's limit

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class Batch:
    """Right- or left-padded tensors for one forward pass. Position ids follow the attention mask, so a
    text gets the same positions whatever the padding side or the other texts in the batch."""

    input_ids: torch.Tensor  # (B, T) long
    attention_mask: torch.Tensor  # (B, T) long, 1 = real token
    position_ids: torch.Tensor  # (B, T) long, 0.. along real tokens
    segments: torch.Tensor  # (B, T) long, -1 = pad
    padding_side: str

    @property
    def last_index(self) -> torch.Tensor:
        """(B,) index of each row's final real token, for either padding side."""
        T = self.attention_mask.shape[1]
        pos = torch.arange(T, device=self.attention_mask.device).expand_as(self.attention_mask)
        return torch.where(self.attention_mask.bool(), pos, -1).max(dim=1).values

    def model_inputs(self) -> dict:
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask, "position_ids": self.position_ids}


def check_texts(texts) -> list[str]:
    """Validate user texts: a non-empty list of strings, each with some visible characters."""
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    if not texts:
        raise UserError("No texts were given: enter at least one text.")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise UserError(f"Text {i + 1} is not a string ({type(t).__name__}).")
        if not t.strip():
            raise UserError(f"Text {i + 1} is empty or only whitespace: every text needs some words.")
        if not has_visible_text(t):
            raise UserError(f"Text {i + 1} holds only NUL bytes or other control characters: every text needs "
                            "some words.")
    return texts


def encode_template(tokenizer, template: str, text: str, max_length: int) -> Encoded:
    """Tokenize `template` with every `{text}` replaced by `text`, labelling tokens by segment.

    If the result is longer than `max_length`, the text (not the template) is cut at a token boundary so
    that the prompt's instruction survives, and `truncated` is set.
    """
    copies = template.count(PLACEHOLDER)
    if copies > MAX_COPIES:
        raise UserError(f"The template repeats {PLACEHOLDER} {copies} times; at most {MAX_COPIES} copies are allowed.")
    enc = _encode(tokenizer, template, text)
    if len(enc.ids) <= max_length:
        return enc
    # Cut the text to the tokens that fit, measured on the text alone, then re-tokenize the prompt.
    overflow = len(enc.ids) - max_length
    text_ids = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    n_keep = len(text_ids["input_ids"]) - -(-overflow // max(copies, 1)) - 1  # ceil, plus one for merges
    if copies == 0 or n_keep < 1:
        raise UserError(f"The prompt template alone is longer than the model's limit of {max_length} tokens.")
    while n_keep >= 1:
        cut = text[: text_ids["offset_mapping"][n_keep - 1][1]]
        enc = _encode(tokenizer, template, cut)
        if len(enc.ids) <= max_length:
            return Encoded(enc.ids, enc.segments, truncated=True)
        n_keep -= 1
    raise UserError(f"Could not fit the text into the model's limit of {max_length} tokens.")


def tokenize_prompt(tokenizer, template: str, text: str) -> list[tuple[int, int, int, int] | None]:
    """Tokenize `template` with every `{text}` filled in, exactly as the methods do. For each token: its id and,
    when it covers characters of the k-th copy of `text` (k >= 1), (id, k, start, end) of those characters within
    the copy; (id, 0, 0, 0) for template and special tokens. Any overlap counts: a token merged across the
    boundary of a copy belongs to it."""
    parts = template.split(PLACEHOLDER)
    full, copies = parts[0], []
    for part in parts[1:]:
        copies.append((len(full), len(full) + len(text)))
        full += text + part
    out = tokenizer(full, add_special_tokens=True, return_offsets_mapping=True)
    special = set(tokenizer.all_special_ids)
    tokens = []
    for tid, (a, b) in zip(out["input_ids"], out["offset_mapping"]):
        hit = (tid, 0, 0, 0)
        if tid not in special and b > a:
            for k, (s0, s1) in enumerate(copies, start=1):
                if a < s1 and b > s0:
                    hit = (tid, k, max(a, s0) - s0, min(b, s1) - s0)
                    break
        tokens.append(hit)
    return tokens


def _encode(tokenizer, template: str, text: str) -> Encoded:
    tokens = tokenize_prompt(tokenizer, template, text)
    ids = np.asarray([t[0] for t in tokens], dtype=np.int64)
    segments = np.asarray([t[1] for t in tokens], dtype=np.int8)  # 0 template/special, k = k-th copy of the text
    return Encoded(ids, segments, truncated=False)


def encode_texts(tokenizer, template: str, texts: list[str], max_length: int) -> list[Encoded]:
    """Encode many texts; warn once (TruncationWarning) if any had to be cut."""
    encoded = [encode_template(tokenizer, template, t, max_length) for t in texts]
    n_cut = sum(e.truncated for e in encoded)
    if n_cut:
        warnings.warn(truncation_message(n_cut, len(texts), max_length), TruncationWarning, stacklevel=2)
    return encoded


def collate(items: list[Encoded], pad_id: int, padding_side: str = "right") -> Batch:
    """Pad a list of encoded texts into one batch."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', not {padding_side!r}")
    B, T = len(items), max(len(e) for e in items)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.long)
    seg = torch.full((B, T), PAD, dtype=torch.long)
    for b, e in enumerate(items):
        n = len(e)
        sl = slice(0, n) if padding_side == "right" else slice(T - n, T)
        ids[b, sl] = torch.from_numpy(e.ids)
        mask[b, sl] = 1
        seg[b, sl] = torch.from_numpy(e.segments.astype(np.int64))
    pos = (mask.cumsum(dim=1) - 1).clamp(min=0)  # (B, T): 0.. over real tokens, 0 on left pads
    return Batch(ids, mask, pos, seg, padding_side)


TOKEN_BUDGET = 16 * 512  # padded tokens per forward pass: 16 texts of 512 tokens, or two of 4,096 (about 1 GiB on
# SmolLM2-135M; scripts/bench_corpus.py measures it). Up to 512 tokens a batch of 16 is what a fixed count gave.


def batches_by_length(lengths: list[int], batch_size: int, max_tokens: int | None = None) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), so little compute goes to padding.

    Each batch holds at most `batch_size` texts and, with `max_tokens`, at most that many padded tokens (texts x
    its longest text); a text longer than the budget runs alone. `max_tokens=None` is the fixed count alone.

        batches_by_length([5, 9, 2, 7], 2)                 # [[1, 3], [0, 2]]
        batches_by_length([4096] * 3 + [10] * 4, 16, 8192)  # [[0, 1], [2, 3], [4, 5, 6]]: padded to 4,096
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return batches_in_order(order, lengths, batch_size, max_tokens)


def batches_in_order(order: list[int], lengths: list[int], batch_size: int, max_tokens: int | None = None
                     ) -> list[list[int]]:
    """`order` cut into consecutive batches under the same two limits as `batches_by_length` (which sorts first)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    out: list[list[int]] = []
    longest = 0
    for i in order:
        grown = max(longest, lengths[i])
        if out and len(out[-1]) < batch_size and (max_tokens is None or (len(out[-1]) + 1) * grown <= max_tokens):
            out[-1].append(i)
            longest = grown
        else:
            out.append([i])
            longest = lengths[i]
    return out


def truncation_message(n_cut: int, n: int, max_length: int) -> str:
    """The one sentence every method warns with when texts were cut (`TruncationWarning`)."""
    return f"{n_cut} of {n} text(s) exceeded the model's limit of {max_length} tokens and were truncated."


def start_token(tokenizer) -> str:
    """The token put in front of a template that starts with the text, so that position 0 is never a placeholder.

    Decoders use their first position as an attention sink: it soaks up attention mass and grows outlier
    activations in the first layers. The models of the TP and HTP papers (LLaMA, Mistral) always start with
    <s>, so their placeholders never sit there. A tokenizer that adds no BOS of its own (SmolLM2, Qwen) would
    put a placeholder at position 0, and overwriting the sink's state at every rewired layer breaks the model
    (HTP with a bare template on SmolLM2-135M, first 300 STS-B dev pairs: Spearman -0.08; with this start
    token 0.56, against 0.50 for mean pooling). Returns "" when the tokenizer adds a leading special token itself
    or has neither a BOS nor an EOS token to use.
    """
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    if len(with_special) > len(bare) and with_special[-len(bare):] == bare:
        return ""  # the tokenizer prepends its own BOS
    return tokenizer.bos_token or tokenizer.eos_token or ""
