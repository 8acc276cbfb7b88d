"""The small sentence encoder on its own (all-MiniLM-L6-v2, mean pooling): the reference every decoder method, and
Causal2Vec in particular, is compared with. It does not use the loaded decoder at all. It embeds queries and documents
alike, as it was trained to (symmetric pairs)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from analysis.core.errors import UserError
from analysis.methods.base import BatchDone, EmbeddingMethod

DEVIATIONS = ()  # a reference, not a paper's method: nothing to differ from (`analysis.core.deviations`)
from analysis.core.tokens import check_texts
from analysis.models import minilm  # by module: tests replace load_encoder


@dataclass(frozen=True)
class SentenceEncoderParams:
    pass  # nothing to choose: the encoder's own readout (mean over tokens) is the one it was trained for


class SentenceEncoderMethod(EmbeddingMethod):
    name = "sentence_encoder"
    title = "Sentence encoder (MiniLM)"
    summary = ("all-MiniLM-L6-v2 alone (384-d, mean pooling; trained on a billion pairs): the small encoder that "
               "Causal2Vec feeds into the decoder, so one sees what the decoder adds. Ignores the loaded model.")
    Params = SentenceEncoderParams
    pooling = "mean"

    def output_dim(self, backbone) -> int:
        return minilm.load_encoder().dim

    def encode(self, backbone, texts, *, batch_size: int = 16, normalize: bool = True, trace: bool = False,
               attention: bool = False, padding_side: str = "right", progress=None, max_tokens=None, on_batch=None,
               role=None):
        """(n, 384) float32; `backbone`, `max_tokens` (the encoder reads at most 256 tokens a text) and `role` (queries
        and documents alike) are accepted for the common signature and not used; `on_batch` gets each batch (its token
        counts are not known: 0)."""
        if trace:
            raise UserError("The sentence encoder does not run the decoder, so it has no decoder trace to show.")
        texts = check_texts(texts)
        enc = minilm.load_encoder()
        out = []
        step = max(batch_size, 32)
        for i in range(0, len(texts), step):
            began = time.perf_counter()
            out.append(enc.embed(texts[i : i + step], normalize=normalize).numpy().astype(np.float32))
            if on_batch is not None:
                n = len(out[-1])
                seconds = time.perf_counter() - began
                on_batch(BatchDone(list(range(i, i + n)), out[-1], [0] * n, [False] * n, seconds, 0))
            if progress is not None:
                progress(min(i + step, len(texts)), len(texts))
        return np.concatenate(out).astype(np.float32)

    def encode_layers(self, backbone, texts, layers="all", *, batch_size: int = 16, padding_side: str = "right",
                      progress=None, readout: str | None = None) -> np.ndarray:
        """The ENCODER's mean-pooled hidden states: (n, 7, 384) for "all" (embeddings and its 6 layers); the
        encoder has one readout (mean), so `readout` is accepted for the common signature and ignored."""
        texts = check_texts(texts)
        enc = minilm.load_encoder()
        if layers != "all":
            top = enc.n_layers
            bad = [l for l in layers if not -(top + 1) <= l <= top]
            if bad:
                raise UserError(f"The sentence encoder has hidden states 0..{top}, not {bad}.")
            layers = [l % (top + 1) for l in layers]
        out = enc.embed(texts, layers=layers, batch_size=max(batch_size, 32)).numpy()
        if progress is not None:
            progress(len(texts), len(texts))
        return out.astype(np.float32)
