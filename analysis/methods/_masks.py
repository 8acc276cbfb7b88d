"""The causal mask removed for whole forward passes: how Causal2Vec's Table 15 variant (`train causal2vec --attention
bidirectional`) and GIRCSE's Bidirectional-Avg baseline (`train gircse --objective bidirectional-avg`) read a
decoder, in training and at inference alike.

It is KV-Embedding's mechanism, not a second one: the attention backends `kv_embedding` registers for its own
bidirectional ablation (`kv_bidirectional[_eager]`, an `AttentionInterface` function with an `AttentionMaskInterface`
mask function of the same name whose causal part is removed) run the model's own sdpa or eager attention unchanged
when a call carries no re-routing configuration, so the only change is the mask: every query sees every real key,
padding stays hidden, a sliding-window layer keeps its window on both sides. No modeling file is copied.

A helper, not a method (its name starts with "_", so discovery skips it): the two methods that read a model this way
import it, and it is the one place that reaches into `kv_embedding` (whose source keys the shipped layers=auto window
seed, so its registration stays where it is).
"""

from __future__ import annotations

import contextlib

from analysis.core.forward import attention_backend
from analysis.methods.kv_embedding import (
    BIDIRECTIONAL,
    BIDIRECTIONAL_EAGER,
    registered_backends,
)

ATTENTIONS = ("causal", "bidirectional")  # what a trained run records as its `attention`


def attention_mask(backbone, kind: str, *, attention: bool = False):
    """Context manager: `backbone`'s forward passes inside run with `kind` attention ("causal": the model as it is,
    nothing switched; "bidirectional": the causal mask removed). `attention` picks the eager backend, which returns
    attention weights (maps, traces). The previous backend is restored on exit; the backbone's lock is held."""
    if kind == "causal":
        return contextlib.nullcontext()
    if kind != "bidirectional":
        raise ValueError(f"unknown attention {kind!r}; choose one of {ATTENTIONS}")
    registered_backends()
    return attention_backend(backbone, BIDIRECTIONAL_EAGER if attention else BIDIRECTIONAL)
