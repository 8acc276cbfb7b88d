"""Readouts: turn one layer's token states into one vector per text."""

from __future__ import annotations

import torch

from analysis.core.tokens import Batch

POOLINGS = ("last", "mean", "hybrid")


def token_mask(batch: Batch, segments: tuple[int, ...] | None) -> torch.Tensor:
    """(B, T) float mask of the tokens to average: all real tokens when `segments` is None, else those
    whose segment id is listed (e.g. (1,) = the text itself, (2,) = Echo's second copy)."""
    if segments is None:
        return batch.attention_mask.float()
    keep = torch.zeros_like(batch.segments, dtype=torch.bool)
    for s in segments:
        keep |= batch.segments == s
    return keep.float()


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean. hidden (B, T, d), mask (B, T) -> (B, d)."""
    counts = mask.sum(dim=1, keepdim=True)  # (B, 1)
    if bool((counts == 0).any()):
        raise ValueError("a text has no token to average over (empty pooling segment)")
    return (hidden * mask.unsqueeze(-1)).sum(dim=1) / counts


def last_pool(hidden: torch.Tensor, batch: Batch) -> torch.Tensor:
    """State of each row's final real token, for either padding side. (B, T, d) -> (B, d)."""
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    return hidden[rows, batch.last_index]


def pool(hidden: torch.Tensor, batch: Batch, how: str, segments: tuple[int, ...] | None = None) -> torch.Tensor:
    """`last`, `mean` over `segments`, or `hybrid` = the average of the two (KV-Embedding's default)."""
    if how == "last":
        return last_pool(hidden, batch)
    if how == "mean":
        return mean_pool(hidden, token_mask(batch, segments))
    if how == "hybrid":
        return 0.5 * (last_pool(hidden, batch) + mean_pool(hidden, token_mask(batch, segments)))
    raise ValueError(f"unknown pooling {how!r}; choose one of {POOLINGS}")
