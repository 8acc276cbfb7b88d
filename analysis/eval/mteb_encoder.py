"""Any embedding method as a sentence-transformers-style encoder that also satisfies MTEB's v2
`EncoderProtocol` structurally (no inheritance, no mteb import until its metadata is asked for).

    from analysis.eval.mteb_encoder import Encoder
    enc = Encoder("default", "prompteol")                  # or Encoder(backbone, get_method("echo"))
    emb = enc.encode(["A cat sat.", "A dog ran."])         # (2, 576) float32, L2-normalised
    enc.similarity(emb, emb)                               # (2, 2) cosine

With internet access, the full MTEB suite runs on any method:

    import mteb
    from analysis.eval.mteb_encoder import Encoder
    mteb.evaluate(Encoder("default", "prompteol"), mteb.get_tasks(tasks=["STSBenchmark"]))
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from analysis import get_method, load_backbone
from analysis.core.errors import UserError
from analysis.core.vectors import normalize


class Encoder:
    """`encode(list[str]) -> (n, d)` for one backbone and one configured method.

    Args:
        backbone: a loaded `Backbone`, or a model name for `load_backbone` ("default").
        method: an `EmbeddingMethod`, or a method name (then `**params` configure it).
        batch_size: texts per forward pass when `encode` is not told otherwise.
    """

    def __init__(self, backbone: Any = "default", method: Any = "prompteol", *, batch_size: int = 16,
                 revision: str | None = None, device: str | None = None, **params):
        if device not in (None, "cpu"):
            raise UserError(f"embedscope runs on the CPU; device {device!r} is not supported.")
        self.backbone = load_backbone(backbone) if isinstance(backbone, str) else backbone
        self.method = get_method(method, **params) if isinstance(method, str) else method
        if params and not isinstance(method, str):
            raise UserError("Pass parameters either to get_method or to Encoder with a method name, not both.")
        self.batch_size = batch_size
        self.revision = revision

    def __repr__(self) -> str:
        return f"Encoder({self.backbone.identity!r}, {self.method!r})"

    @property
    def name(self) -> str:
        """`embedscope/<model>__<method>`: the name MTEB files results under."""
        model = re.sub(r"[^A-Za-z0-9._-]+", "-", self.backbone.identity).strip("-")
        return f"embedscope/{model}__{self.method.name}"

    @property
    def params_digest(self) -> str:
        """Short hash of the method parameters, so two configurations of a method never share results."""
        blob = json.dumps(dataclasses.asdict(self.method.params), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def get_sentence_embedding_dimension(self) -> int:  # the sentence-transformers name
        if hasattr(self.method, "output_dim"):  # a readout may concatenate states (Causal2Vec: 2d)
            return self.method.output_dim(self.backbone)
        return self.backbone.facts.hidden_size

    # ---- encoding ------------------------------------------------------------------------------------------------
    def encode(
        self,
        inputs,
        *,
        task_metadata=None,
        hf_split: str | None = None,
        hf_subset: str | None = None,
        prompt_type=None,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        normalize_embeddings: bool = True,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        prompt_name: str | None = None,
        prompt: str | None = None,
        progress=None,
        **kwargs,
    ):
        """Embed texts.

        Args:
            inputs: a string, a list of strings (sentence-transformers), or an iterable of batches — dicts
                with a "text" list, as MTEB's `DataLoader[BatchedInput]` yields them.
            task_metadata, hf_split, hf_subset: MTEB's context, ignored: the method's own template is the prompt.
            prompt_type: MTEB's query or document side; a query is embedded as the method embeds queries (its role,
                `analysis.methods.base`), anything else as a document.
            batch_size: texts per forward pass (default: the encoder's).
            show_progress_bar: print a text progress bar on stderr.
            normalize_embeddings: L2-normalise rows (cosine = dot product).
            convert_to_numpy / convert_to_tensor: numpy (default) or a torch tensor.
            prompt_name, prompt: sentence-transformers prompts; a prompt is put in front of every text.
            progress: progress(done, total) callback.

        Returns:
            (n, d) float32 array (or tensor); (d,) for a single string, as sentence-transformers does.
        """
        single = isinstance(inputs, str)
        texts = [inputs] if single else _texts_of(inputs)
        if prompt_name is not None and prompt is None:
            raise UserError(f"This encoder has no named prompts (asked for {prompt_name!r}); pass prompt= instead.")
        if prompt:
            texts = [prompt + t for t in texts]
        if show_progress_bar and progress is None:
            progress = _stderr_progress
        role = "query" if str(getattr(prompt_type, "value", prompt_type)) == "query" else "document"
        emb = self.method.encode(self.backbone, texts, batch_size=batch_size or self.batch_size,
                                 normalize=normalize_embeddings, progress=progress, role=role)
        emb = np.asarray(emb, dtype=np.float32)  # (n, d)
        if single:
            emb = emb[0]
        if convert_to_tensor:
            return torch.from_numpy(emb)
        return emb

    # ---- similarity (cosine, as the methods are evaluated) ------------------------------------------------------------
    def similarity(self, embeddings1, embeddings2) -> np.ndarray:
        """(n1, n2) cosine similarities; 1-D inputs count as one row."""
        a, b = normalize(_rows(embeddings1)), normalize(_rows(embeddings2))
        return (a @ b.T).astype(np.float32)

    def similarity_pairwise(self, embeddings1, embeddings2) -> np.ndarray:
        """(n,) cosine similarity of row i with row i."""
        a, b = normalize(_rows(embeddings1)), normalize(_rows(embeddings2))
        if a.shape != b.shape:
            raise UserError(f"Pairwise similarity needs equally many rows: {a.shape} vs {b.shape}.")
        return np.einsum("nd,nd->n", a, b).astype(np.float32)

    @property
    def mteb_model_meta(self):
        """mteb.ModelMeta describing this encoder (None when mteb is not installed)."""
        try:
            from mteb.models import ModelMeta  # lazy: optional dependency (mteb)
        except ImportError:
            return None
        facts = self.backbone.facts
        return ModelMeta.create_empty(overwrites={
            "name": self.name,
            "revision": self.revision or self.params_digest,
            "n_parameters": getattr(facts, "n_params", None),
            "embed_dim": self.get_sentence_embedding_dimension(),
            "max_tokens": facts.max_length,
            "similarity_fn_name": "cosine",
            "framework": ["PyTorch"],
            "use_instructions": self.method.asymmetric(),
            "modalities": ["text"],
        })


def _texts_of(inputs) -> list[str]:
    """Flatten a list of strings or an iterable of {"text": [...]} batches into one list of strings."""
    if isinstance(inputs, Mapping):
        inputs = [inputs]
    texts: list[str] = []
    for item in inputs if isinstance(inputs, Iterable) else [inputs]:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, Mapping) and "text" in item:
            batch = item["text"]
            texts.extend([batch] if isinstance(batch, str) else list(batch))
        else:
            raise UserError(f"Cannot encode a {type(item).__name__}: give strings or batches with a 'text' list.")
    return texts


def _rows(x) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    x = np.asarray(x, dtype=np.float64)
    return x[None] if x.ndim == 1 else x


def _stderr_progress(done: int, total: int) -> None:
    print(f"\rencoding {done}/{total}", end="\n" if done >= total else "", file=sys.stderr, flush=True)
