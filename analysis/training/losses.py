"""Training losses as small pure functions on tensors (no model, no state), each with known-answer tests.

    info_nce(q, d)                       # contrastive: row i of q should pick row i of d among all rows of d
    cosent(a, b, scores)                 # graded: pairs with a higher gold score should get a higher cosine
    answer_cross_entropy(logits, labels) # next-token loss on answer tokens only (labels -100 are ignored)
    weighted_answer_cross_entropy(logits, labels, weights)  # the same, each token weighted (sum w * ce / sum w)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def info_nce(q: torch.Tensor, d: torch.Tensor, *, temperature: float = 0.05, symmetric: bool = False,
             hard_negatives: torch.Tensor | None = None) -> torch.Tensor:
    """InfoNCE with in-batch negatives on cosine similarities.

    Args:
        q: (B, D) queries (any norm; cosine is taken).
        d: (B, D) positives: d[i] is the positive of q[i]; every other row of d is a negative for q[i].
        temperature: logits are cos / temperature (0.05 as in Causal2Vec and SimCSE).
        symmetric: also the d -> q direction (each d[i] picks q[i] among all q), and average the two.
        hard_negatives: (B, D) or (B, H, D) extra negatives for each row of q only (row i's own hard
            negatives; they enter the q -> d direction only).

    Returns:
        scalar mean cross-entropy.
    """
    if q.shape != d.shape or q.dim() != 2:
        raise ValueError(f"info_nce needs q and d of the same (B, D) shape, got {tuple(q.shape)} and {tuple(d.shape)}")
    q, d = F.normalize(q, dim=-1), F.normalize(d, dim=-1)
    logits = q @ d.T / temperature  # (B, B): logits[i, j] = cos(q_i, d_j) / t
    target = torch.arange(q.shape[0], device=q.device)
    if hard_negatives is not None:
        hn = hard_negatives if hard_negatives.dim() == 3 else hard_negatives.unsqueeze(1)  # (B, H, D)
        hn = F.normalize(hn, dim=-1)
        extra = torch.einsum("bd,bhd->bh", q, hn) / temperature  # (B, H): cos(q_i, hn_ih) / t
        forward = F.cross_entropy(torch.cat([logits, extra], dim=1), target)  # (B, B + H) logits
    else:
        forward = F.cross_entropy(logits, target)
    if not symmetric:
        return forward
    backward = F.cross_entropy(logits.T, target)  # d_i must pick q_i among all q
    return (forward + backward) / 2


def cosent(a: torch.Tensor, b: torch.Tensor, scores: torch.Tensor, *, scale: float = 20.0) -> torch.Tensor:
    """CoSENT (Su 2022): log(1 + sum over pairs (i, j) with scores[i] > scores[j] of exp(scale * (cos_j - cos_i))).

    Uses every pair of a batch with its graded score: it only asks that the cosines be ordered like the gold
    scores, which is exactly what Spearman on STS measures. Ties in `scores` contribute nothing.

    Args:
        a, b: (B, D) the two sides of each pair.
        scores: (B,) gold similarity (any scale; only its order matters).
        scale: 1 / temperature of the pairwise softmax (20 as in the paper and sentence-transformers).
    """
    cos = F.cosine_similarity(a, b, dim=-1) * scale  # (B,)
    diff = cos[None, :] - cos[:, None]  # (B, B): diff[i, j] = cos_j - cos_i
    ordered = scores[:, None] > scores[None, :]  # (B, B): pair i should score above pair j
    diff = diff.masked_fill(~ordered, float("-inf"))
    zero = torch.zeros(1, dtype=diff.dtype, device=diff.device)  # the "1 +" inside the log
    return torch.logsumexp(torch.cat([zero, diff.flatten()]), dim=0)


def answer_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not -100.

    Args:
        logits: (B, T, V) already aligned with `labels` (the caller shifts: logits[:, t] predicts labels[:, t]).
        labels: (B, T) token ids, -100 where there is nothing to predict (prompt, context, padding).

    Returns:
        scalar; 0 (still differentiable) when no position has a label.
    """
    if logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} are not aligned")
    if not (labels != -100).any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)


def weighted_answer_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """`answer_cross_entropy` with a weight per position: sum(w * ce) / sum(w) over the labelled positions (a
    reconstruction's content words weigh 3, the source's Experiment C). Equal weights give `answer_cross_entropy`.

    Args:
        logits: (B, T, V), labels: (B, T) as in `answer_cross_entropy`; weights: (B, T), ignored where the label is
            -100.
    """
    if logits.shape[:-1] != labels.shape or labels.shape != weights.shape:
        raise ValueError(f"logits {tuple(logits.shape)}, labels {tuple(labels.shape)} and weights "
                         f"{tuple(weights.shape)} are not aligned")
    keep = labels != -100
    if not keep.any():
        return logits.sum() * 0.0
    ce = F.cross_entropy(logits[keep].float(), labels[keep], reduction="none")  # (N,)
    w = weights[keep].to(ce.dtype)  # (N,)
    return (ce * w).sum() / w.sum()
