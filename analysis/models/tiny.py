"""Tiny randomly initialised decoders of several architectures, built from configs with no download.

They exercise the mechanics (hooks, attention functions, padding, pooling) on every architecture we
claim to support, in milliseconds. Their embeddings mean nothing; the real model is for integration.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

from analysis.models.backbone import Backbone, _facts

ARCHITECTURES = ("llama", "qwen2", "qwen3", "mistral", "gemma", "gemma3_text")
# Gemma 3's sliding window in the tiny model: far shorter than most test inputs, so the sliding-window layers
# really mask (the real 270M model's window is 512 tokens).
TINY_SLIDING_WINDOW = 6

_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A bank by the river was steep; the bank in town raised its rates.",
    "Sentence embeddings from decoder-only language models.",
    "Rewrite the sentence: this, rewritten sentence: that. This sentence means in one word:",
    "Context: Compress the context in one word. Query: What is it?",
    "Hello world! Numbers 0123456789, punctuation .,;:!?'\"()-",
]


@functools.lru_cache(maxsize=1)
def tiny_tokenizer():
    """A byte-level BPE tokenizer trained in memory (about 300 tokens); offsets work as in real models."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<pad>", "<bos>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>")


def tiny_config(arch: str, *, n_layers: int = 4, max_length: int = 128, vocab_size: int = 320, **overrides):
    common = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=n_layers,
        num_attention_heads=4,
        num_key_value_heads=2,  # grouped-query attention, like the real default model
        head_dim=16,
        max_position_embeddings=max_length,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=True,
    )
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose from {ARCHITECTURES}")
    if arch == "gemma3_text":
        # Gemma 3's layout in miniature: sliding-window layers with one global layer last (the real model:
        # five sliding for every global one), a small window, 1 KV head, and its separate local RoPE base.
        common.update(num_key_value_heads=1, sliding_window=TINY_SLIDING_WINDOW, query_pre_attn_scalar=16,
                      layer_types=[("full_attention" if (i + 1) % 4 == 0 else "sliding_attention")
                                   for i in range(n_layers)])
    return AutoConfig.for_model(arch, **{**common, **overrides})


def tiny_backbone(arch: str = "llama", *, seed: int = 0, n_layers: int = 4, max_length: int = 128,
                  attn_implementation: str = "sdpa", **overrides) -> Backbone:
    """A tiny random model of `arch` with the in-memory tokenizer, wrapped like a loaded backbone.
    `overrides` go to the config (e.g. sliding_window=6)."""
    torch.manual_seed(seed)
    cfg = tiny_config(arch, n_layers=n_layers, max_length=max_length, **overrides)
    cfg._attn_implementation = attn_implementation
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation=attn_implementation)
    model.eval()
    model.requires_grad_(False)
    tok = tiny_tokenizer()
    tok.padding_side = "right"
    identity = f"tiny:{arch}:L{n_layers}:seed{seed}" + "".join(f":{k}={v}" for k, v in sorted(overrides.items()))
    return Backbone(model, tok, _facts(f"tiny-{arch}", model), identity=identity)


def save_tiny(folder, arch: str = "llama", **kwargs) -> str:
    """Write a tiny random model and its tokenizer as a Hugging Face folder (safetensors), loadable with
    `load_backbone(folder)`: lets the app and the command line be tested on a model that loads in milliseconds."""
    folder = Path(folder)
    bb = tiny_backbone(arch, **kwargs)
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return str(folder)
