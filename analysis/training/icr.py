"""Iterative Contrastive Refinement (GIRCSE, Tsai et al. 2025): the stepwise loss and its regulariser.

Pure functions on tensors. A model that generated K soft tokens for each query and each document gives their
final-layer states (B, K, d); the embedding after k steps is the mean of the first k states, z_k. Each step k
gets its own InfoNCE loss L_k (cosine, in-batch negatives), and the refinement regulariser penalises every step
that makes the loss worse than the one before, in log space. As the paper writes it (sum over steps, λ = 1):

    ICR = sum_k L_k + λ · mean_{k<K} max(log L_{k+1} − log L_k, 0)

`icr-mean` (mean over steps instead of the sum) is the variant this project trained first, and what GIRCSE's
reference code computes: with K = 5 it weighs the regulariser five times more than the sum does; it is an option.

The paper's ablation ladder, each rung one objective trained with the same recipe: `final` (generation only: one
contrastive loss on the K-token embedding, L_K), `stepwise` (+ the stepwise loss: sum_k L_k, ICR with λ = 0), `icr`
(+ the regulariser). Each rung adds exactly one thing to the one below.

    states_q, states_d = ...                          # (B, K, d) each
    losses = stepwise_losses(cumulative_means(states_q), cumulative_means(states_d))   # (K,)
    loss = objective(losses, "icr")                   # scalar; "stepwise" (λ = 0) and "final" (L_K) for the ladder
"""

from __future__ import annotations

import torch

from analysis.training.losses import info_nce

TEMPERATURE = 0.02  # GIRCSE's InfoNCE temperature
OBJECTIVES = ("icr", "icr-mean", "stepwise", "final")  # the ladder: final < stepwise < icr; icr-mean = the reference's
LADDER = ("final", "stepwise", "icr")  # generation only, + the stepwise loss, + the regulariser


def cumulative_means(states: torch.Tensor) -> torch.Tensor:
    """z_k = mean of the first k states, for k = 1..K: (B, K, d) -> (B, K, d)."""
    counts = torch.arange(1, states.shape[1] + 1, dtype=states.dtype, device=states.device)  # (K,)
    return states.cumsum(dim=1) / counts[None, :, None]


def stepwise_losses(zq: torch.Tensor, zd: torch.Tensor, *, temperature: float = TEMPERATURE,
                    symmetric: bool = False, hard: torch.Tensor | None = None) -> torch.Tensor:
    """L_k = InfoNCE(zq[:, k], zd[:, k]) with in-batch negatives, for every step: (B, K, d) x2 -> (K,).
    `hard`: (H, K, d) extra negatives shared by every row (each step compares against the same step's state)."""
    if zq.shape != zd.shape or zq.dim() != 3:
        raise ValueError(f"expected two (B, K, d) tensors of one shape, got {tuple(zq.shape)} and {tuple(zd.shape)}")
    B = zq.shape[0]
    return torch.stack([info_nce(zq[:, k], zd[:, k], temperature=temperature, symmetric=symmetric,
                                 hard_negatives=None if hard is None or not len(hard) else
                                 hard[:, k].unsqueeze(0).expand(B, -1, -1))  # (B, H, d)
                        for k in range(zq.shape[1])])


def refinement_penalty(losses: torch.Tensor) -> torch.Tensor:
    """mean_k max(log L_{k+1} − log L_k, 0) over k = 1..K−1: zero when every step lowers the loss. (K,) -> ()."""
    if losses.shape[0] < 2:
        return losses.sum() * 0.0  # one step: nothing to refine (keeps the graph and the dtype)
    logs = losses.clamp_min(1e-12).log()  # (K,)
    return torch.relu(logs[1:] - logs[:-1]).mean()


def objective(losses: torch.Tensor, kind: str = "icr", lam: float = 1.0) -> torch.Tensor:
    """The training loss from the per-step losses (K,): icr = sum L_k + λ·penalty (the paper); icr-mean = mean L_k
    + λ·penalty (its reference code); stepwise = sum L_k (icr with λ = 0); final = L_K (a single-step contrastive
    loss on the K-token embedding)."""
    if kind == "icr":
        return losses.sum() + lam * refinement_penalty(losses)
    if kind == "icr-mean":
        return losses.mean() + lam * refinement_penalty(losses)
    if kind == "stepwise":
        return losses.sum()
    if kind == "final":
        return losses[-1]
    raise ValueError(f"unknown objective {kind!r}; choose one of {OBJECTIVES}")
