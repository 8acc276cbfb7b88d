"""A built-in model as cache keys see it, read from its converted folder without loading its weights.

Looking a stored result up needs only the model's identity (and, for some entries, its layer count), not the
seconds of loading it. Kept out of `backbone.py` on purpose: every cache key's code version covers that module,
and this reader computes nothing that is stored."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from transformers import AutoTokenizer

from analysis.core.paths import cache_root
from analysis.models.backbone import Facts, _builtin_folder, _torch_dtype, builtin, resolve_device


@dataclass(frozen=True)
class Described:
    """`identity` and `facts` exactly as `load_backbone` gives them (tests/test_real_model.py compares both), so code
    that reads only these (a cache key, `cache.auto_window(..., compute=False)`, the sidebar's facts) takes it as it
    takes a Backbone."""

    identity: str
    facts: Facts
    folder: str  # the converted model: its tokenizer loads from here without the weights (`load_tokenizer`)


def describe(name: str, *, device: str = "cpu", dtype: str = "float32") -> Described | None:
    """A built-in model already converted, on the CPU, described from its files; None when only a load can tell
    (not built in, not converted yet, or another device, where the placement decides the identity)."""
    name = str(name).strip()
    entry = builtin(name)
    if entry is None or resolve_device(device) != "cpu":
        return None
    if dtype == "auto":  # auto's backbone is the float32 one (its twins are described on their own)
        dtype = "float32"
    _torch_dtype(dtype)  # an unknown dtype: the same sentence as load_backbone's
    _, tag, _ = entry.gguf(None)
    if not (cache_root() / "models" / f"{entry.folder_prefix}-{tag}" / "embedscope.json").is_file():
        return None  # not converted yet (the folder `_builtin_folder` converts into): describing never converts
    folder, identity = _builtin_folder(entry)
    config = json.loads(Path(folder, "config.json").read_text(encoding="utf-8"))
    config = config.get("text_config", config)  # what `_facts` reads (`get_text_config`)
    heads = config["num_attention_heads"]
    types = list(config.get("layer_types") or [])
    window = config.get("sliding_window")
    n_sliding = (sum(t == "sliding_attention" for t in types) if types
                 else (config["num_hidden_layers"] if window else 0))
    facts = Facts(name=name, architecture=config["model_type"], n_layers=config["num_hidden_layers"], n_heads=heads,
                  n_kv_heads=config.get("num_key_value_heads") or heads,
                  head_dim=config.get("head_dim") or config["hidden_size"] // heads, hidden_size=config["hidden_size"],
                  vocab_size=config["vocab_size"], max_length=config.get("max_position_embeddings", 2048),
                  n_params=_n_params(Path(folder, "model.safetensors"), config.get("tie_word_embeddings", True)),
                  sliding_window=window if n_sliding else None, n_sliding=n_sliding, title=entry.title,
                  licence=entry.licence, dtype=dtype, device="cpu")
    return Described(identity if dtype == "float32" else f"{identity}|{dtype}|cpu", facts, str(folder))


def load_tokenizer(described: Described):
    """The described model's tokenizer set up as `load_backbone` sets it up (padding on the right, the end-of-text
    token when no padding token is named; tests/test_real_model.py compares the two), without the weights: a view
    that only tokenizes before its stored figure (Attention's word view, Sensitivity's length check) waits a second,
    not for the model (issue 38)."""
    tokenizer = AutoTokenizer.from_pretrained(described.folder, local_files_only=True, trust_remote_code=False)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return tokenizer


def _n_params(weights: Path, tied: bool) -> int:
    """Parameters as `model.parameters()` counts them, from the safetensors header alone (8 bytes of length, then
    JSON: name -> dtype, shape, offsets); a tied output matrix is the input embeddings, counted once."""
    with weights.open("rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    return sum(math.prod(t["shape"]) for k, t in header.items()
               if k != "__metadata__" and not (tied and k == "lm_head.weight"))
