"""What a method costs: its time as a ratio to the plain forward of the same texts, timed in the same run.

    plain_forward(backbone, texts, 16)                    # the bare decoder on the raw text, last real token
    ratios(backbone, {"PromptEOL": lambda: m.encode(bb, texts)}, texts, repeats=3)
        # {"plain forward": (seconds, 1.0), "PromptEOL": (seconds, ratio)}
    rounds(backbone, {"PromptEOL": ...}, texts, repeats=5)
        # {"plain forward": [s1, s2, ...], "PromptEOL": [...]}: each round's seconds, for a ratio's spread

The plain forward is the bare decoder on the raw text with the tokenizer's own padding: no template, no hooks, no
cache, the same batching by length as the methods. Every configuration is warmed up once (lazy loads, merged
adapters, first-call allocations are not a method's cost), then timed in interleaved rounds (`core.timing`), so a
change of machine load hits every configuration alike and the ratios stay meaningful.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from analysis.core.timing import interleaved_medians
from analysis.core.tokens import batches_by_length

PLAIN = "plain forward"


def plain_forward(backbone, texts: list[str], batch_size: int) -> np.ndarray:
    """The plain model: tokenizer padding, the bare decoder, final state of the last real token. (n, d)"""
    tok = backbone.tokenizer
    lengths = [len(ids) for ids in tok(texts)["input_ids"]]
    out = np.zeros((len(texts), backbone.facts.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for idx in batches_by_length(lengths, batch_size):
            enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True)
            hidden = backbone.decoder(**enc, use_cache=False).last_hidden_state  # (B, T, d)
            last = enc["attention_mask"].sum(dim=1) - 1  # (B,): right padding
            out[idx] = hidden[torch.arange(len(idx)), last].float().numpy()
    return out


def rounds(backbone, configs: dict[str, Callable[[], object]], texts: list[str], *, repeats: int,
           batch_size: int = 16) -> dict[str, list[float]]:
    """{label: [seconds of each round]}, the plain forward of `texts` first, every configuration warmed up once."""
    import torch

    from analysis.core.timing import interleaved_rounds

    run = {PLAIN: lambda: plain_forward(backbone, texts, batch_size), **configs}
    with torch.inference_mode():
        for fn in run.values():  # warm-up
            fn()
        return {label: [round(t, 4) for t in times] for label, times in interleaved_rounds(run, repeats).items()}


def ratios(backbone, configs: dict[str, Callable[[], object]], texts: list[str], *, repeats: int,
           batch_size: int = 16) -> dict[str, tuple[float, float]]:
    """{label: (median seconds, ratio to the plain forward)}, the plain forward of `texts` first."""
    run = {PLAIN: lambda: plain_forward(backbone, texts, batch_size), **configs}
    with torch.inference_mode():
        for fn in run.values():  # warm-up
            fn()
        med = interleaved_medians(run, repeats)
    return {label: (round(sec, 3), round(sec / med[PLAIN], 3)) for label, sec in med.items()}
