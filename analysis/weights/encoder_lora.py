"""LoRA on a copy of the sentence encoder (MiniLM), through `peft`: Causal2Vec's option to tune the encoder too.

    enc = trainable_copy(load_encoder(), lora_config(8, targets=TARGETS))   # only lora_* trainable
    h = vectors(enc, texts)                          # (n, 384) pooled, unit norm, with gradients to the LoRA
    saved = tensors(enc)                             # {"encoder_lora.<name>": tensor} beside the bridge's
    tuned = merged_copy(load_encoder(), saved, cfg, tag)   # a SentenceEncoder with the update merged (inference)

A module of its own, not an edit of `models/minilm.py` or `weights/lora.py`: their source is in the cache keys of
the sentence-encoder, soft-token and compression results, which this option does not change.
"""

from __future__ import annotations

import copy

import torch

from analysis.core.errors import UserError
from analysis.models.minilm import SentenceEncoder
from analysis.weights.lora import add_lora, lora_tensors

# BERT's (MiniLM's) attention projections q/k/v/o. peft matches a module name or a dotted suffix of it; the output
# projection is named with its parent, since a bare "dense" would also take the feed-forward layers and the pooler.
TARGETS = ("query", "key", "value", "attention.output.dense")
PREFIX = "encoder_lora."  # the artefact's names: beside "bridge." and the decoder's "lora."


def trainable_copy(encoder: SentenceEncoder, cfg: dict) -> SentenceEncoder:
    """A sentence encoder over a copy of `encoder`'s model with trainable LoRA layers (`weights.lora.lora_config`
    settings); the shared encoder, which other methods use, is not touched."""
    with encoder.lock:
        model = copy.deepcopy(encoder.model)
    add_lora(model, cfg)
    return SentenceEncoder(model, encoder.tokenizer, f"{encoder.identity}+lora-training", encoder.max_tokens)


def vectors(encoder: SentenceEncoder, texts: list[str]):
    """(n, dim) pooled, unit-norm sentence vectors WITH gradients: `SentenceEncoder.embed`'s own body without its
    no_grad decorator (`functools.wraps` keeps it as `__wrapped__`), so the tuned encoder trains on exactly the
    computation (tokenisation, mean over real tokens, L2 normalisation) the method embeds with."""
    return SentenceEncoder.embed.__wrapped__(encoder, texts)


def tensors(encoder: SentenceEncoder) -> dict:
    """{"encoder_lora.<parameter name>": tensor} of every LoRA weight of a `trainable_copy`."""
    return {f"encoder_{k}": v for k, v in lora_tensors(encoder.model).items()}  # "lora.<name>" -> PREFIX + name


def merged_copy(encoder: SentenceEncoder, saved: dict, cfg: dict, tag: str) -> SentenceEncoder:
    """A sentence encoder over a copy of `encoder`'s model with the LoRA update in `saved` (the PREFIX tensors of an
    artefact; others are ignored) merged into its weights, identity `<identity>+<tag>`; so it embeds at the frozen
    encoder's cost. Raises UserError when the tensors do not fit the encoder, or the rank `cfg` claims is not
    theirs (checked before the layers are built, so a manifest cannot make us allocate a huge rank)."""
    from peft.tuners.lora import LoraLayer  # lazy: keeps peft, transformers off the pages' and the command line's start

    wanted = {k[len(PREFIX):]: v for k, v in saved.items() if k.startswith(PREFIX)}
    if {v.shape[0] for k, v in wanted.items() if "lora_A" in k} != {cfg.get("rank")}:  # lora_A: (rank, in)
        raise UserError(f"The encoder's LoRA weights are not of the rank their manifest gives ({cfg.get('rank')}).")
    with encoder.lock:
        model = copy.deepcopy(encoder.model)
    add_lora(model, cfg)
    if set(wanted) != {n for n, _ in model.named_parameters() if "lora_" in n}:
        raise UserError(f"The encoder's LoRA weights do not fit {encoder.identity} (different layers or names).")
    try:
        with torch.no_grad():
            model.load_state_dict(wanted, strict=False)  # only the LoRA weights: the base stays the encoder's
    except RuntimeError as err:  # a shape that does not fit
        raise UserError(f"The encoder's LoRA weights do not fit {encoder.identity}: {str(err)[:200]}") from None
    for module in model.modules():
        if isinstance(module, LoraLayer):
            module.merge()
    model.eval().requires_grad_(False)
    return SentenceEncoder(model, encoder.tokenizer, f"{encoder.identity}+{tag}", encoder.max_tokens)
