"""What an embedding says: the model's own final norm and language-model head applied to the embedding, and to the
readout at every layer (the logit lens, nostalgebraist 2020), so a student sees that PromptEOL's vector of "a cat sat
on the mat" decodes to "cat", "sitting", "mat".

A decoder's final state at a position is built to predict the next token: norm(h) W_U gives those logits. A method's
embedding is such a state when its readout is one position (last token, PromptEOL, Token Prepending, Causal2Vec's
eos or contextual readout): then the decoded tokens are what the model was about to say there, the words the
embedding points at. Earlier layers are decoded the same way, through the final norm; they read poorly until the
last third of the depth (the head was trained on the last layer only), which is what the per-layer rows show.

Where the reading stops making sense (`Lens.applies`, with the reason in `Lens.reason`):
* "no" for the sentence encoder (MiniLM has no language-model head) and for Causal2Vec's concatenated vectors (2d
  numbers, two states side by side: the head reads d; `readout=direct` adds MiniLM's 384);
* "approximate" for a mean over positions (mean pooling, Echo, HTP, KV-Embedding's hybrid, soft tokens' mean of
  generated states): the mean of states is a vector no position had, and the norm and the head were trained on
  single positions, so the decoded tokens describe the average direction at best.

    lens = decode(backbone, get_method("prompteol"), "A cat sat on the mat.")
    lens.tokens[-1], lens.probs[-1]    # the embedding's top tokens (the readout layer), their probabilities
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from analysis.core.tokens import check_texts
from analysis.inspect.attribution import _runner, grad_mode
from analysis.methods.soft_tokens import next_token_logits, token_text

TOP = 5  # tokens shown per layer
MEAN_READOUTS = ("mean", "hybrid")  # readouts that average positions (soft tokens' "generated" too, below)


@dataclass
class Lens:
    """The embedding's nearest tokens through the LM head, per hidden state up to the readout layer."""

    method: str
    layer: int  # the readout layer (the embedding itself is that row)
    applies: str  # "yes", "approximate" or "no"
    reason: str  # why not, or what to read with care ("" when it applies)
    layers: list[int] = field(default_factory=list)  # hidden states decoded, 0..layer
    tokens: list[list[str]] = field(default_factory=list)  # (layers, TOP) most likely next tokens
    probs: np.ndarray | None = None  # (layers, TOP) their probabilities

    def to_json(self) -> dict:
        """Plain JSON: what `Compute.remember` keeps (`analysis.inspect.explain`) and the `explain` command prints."""
        return {"method": self.method, "layer": self.layer, "applies": self.applies, "reason": self.reason,
                "layers": list(self.layers), "tokens": [list(t) for t in self.tokens],
                "probs": None if self.probs is None else np.asarray(self.probs, dtype=np.float64).tolist()}

    @classmethod
    def from_json(cls, value: dict) -> Lens:
        """The lens `to_json` wrote."""
        probs = value["probs"]
        return cls(value["method"], value["layer"], value["applies"], value["reason"], list(value["layers"]),
                   [list(t) for t in value["tokens"]], None if probs is None else np.asarray(probs, dtype=np.float64))


def applicability(method) -> tuple[str, str]:
    """("yes" | "approximate" | "no", the reason in one sentence) for this method's embedding."""
    if method.name == "sentence_encoder":
        return "no", ("MiniLM has no language-model head to read its vector with: it was trained to place sentences, "
                      "not to predict tokens.")
    readout = getattr(method.params, "readout", None)
    if method.name == "causal2vec" and readout in ("concat", "direct"):
        return "no", ("Causal2Vec's vector is two vectors side by side (the contextual token's state and EOS's" +
                      (", or EOS's and MiniLM's" if readout == "direct" else "") + "): the head reads one state "
                      "of the model's width, so the concatenation has nothing to decode; readout=eos or contextual "
                      "can be read.")
    pooling = method.readout_pooling
    if pooling in MEAN_READOUTS or (method.name == "soft_tokens" and method.params.pooling != "last_generated"
                                    and method.params.k > 0):
        return "approximate", ("This embedding is a mean over positions, a vector no position had; the final norm and "
                               "the head were trained on single positions' states, so the tokens describe the average "
                               "direction at best.")
    return "yes", ""


def decode(backbone, method, text: str, *, top: int = TOP) -> Lens:
    """The readout of `method` on `text` at every hidden state up to its readout layer, through the final norm
    (states before the last) and the LM head (Gemma's logit soft-capping included): the `top` most likely tokens."""
    text = check_texts([text])[0]
    applies, reason = applicability(method)
    if applies == "no":
        return Lens(method.name, getattr(method.params, "layer", -1), applies, reason)
    method.check(backbone)
    runner = _runner(backbone, method)
    L = runner.facts.n_layers
    k = method.params.layer % (L + 1)
    batch = method.collate(runner, method.prepare(runner, [text]), "right")
    with grad_mode(False), runner.lock:
        cap = method.forward(runner, batch, list(range(k + 1)))
        rows = []
        for layer in range(k + 1):
            # (1, d) in the model's dtype: mean pooling's float32 mask widens a bfloat16 twin's states
            y = method.readout(cap.hidden[layer], batch).to(cap.hidden[layer].dtype)
            h = y if layer == L else runner.decoder.norm(y)  # hidden state L is already after the final norm
            rows.append(torch.softmax(next_token_logits(runner, h).float(), dim=-1)[0])
        probs = torch.stack(rows)  # (k + 1, V)
    p, ids = probs.topk(top, dim=-1)
    tokens = [[token_text(runner.tokenizer, int(i)) for i in row] for row in ids]
    return Lens(method.name, k, applies, reason, list(range(k + 1)), tokens, p.numpy())


def summary(lens: Lens, n: int = 3) -> str:
    """"cat, sitting, mat": the embedding's first `n` tokens, for a sentence (empty when the reading does not apply)."""
    if not lens.tokens:
        return ""
    return ", ".join(t.strip() or repr(t) for t in lens.tokens[-1][:n])
