"""What every embedding method shares: templating, batching by length, one forward pass, readout, trace.

A method is a small subclass that sets a few class attributes and, if it intervenes in the forward pass,
overrides `intervention` (hooks / attention-function kwargs) or `forward`. Its parameters are a frozen
dataclass whose fields carry their paper default and the reason for it (`param(default, help=...)`).

    m = get_method("prompteol", layer=-1)
    emb = m.encode(backbone, texts)                      # (n, d) float32, L2-normalised, input order
    emb, tr = m.encode(backbone, texts[:4], trace=True)  # plus named captures (analysis.core.trace)
    per_layer = m.encode_layers(backbone, texts)         # (n, L+1, d) raw readouts at every layer
    q = m.encode(backbone, ["Who wrote it?"], role="query")   # a retrieval query, as the method embeds queries

Queries and documents. Retrieval embeds its queries with the role "query" and everything else (its documents, and
every text of a symmetric task: STS, classification, clustering) with the role "document". Most methods embed both
alike; a method whose paper embeds queries differently (an instruction on queries: GIRCSE, Causal2Vec; a query
prompt: KV-Embedding) overrides `asymmetric` and reads `self.role` where it builds its prompt, and says how in its
docstring and the help of the parameter that controls it. `as_role(role)` is the method embedding that side (itself
for documents); `role_key()` is what cache keys add for it (empty when the role changes nothing, so a symmetric
method's two sides share every stored vector).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import torch

from analysis.core.errors import UserError
from analysis.core.params import check, param
from analysis.core.forward import Captured, attention_backend, resolve_layer, run
from analysis.core.vectors import l2_normalize
from analysis.core.pooling import pool, token_mask
from analysis.core import budgets
from analysis.core.tokens import (TOKEN_BUDGET, Batch, Encoded, batches_by_length,
                                  batches_in_order, check_texts, collate, encode_texts)
from analysis.core.trace import Trace



ROLES = ("query", "document")  # the sides of a retrieval task; symmetric tasks embed every text as a document


def check_role(role: str) -> str:
    if role not in ROLES:
        raise UserError(f"A text is embedded as a query or a document, not {role!r:.40}.")
    return role


def check_params(method: str, params):
    """Every field of a Params dataclass checked against its type and meta (`analysis.core.params`): the one place
    parameters are validated generically (a method's `validate` adds only what is specific to it). Returns `params`."""
    return check(params, name_of=lambda name: f"{method}: {name}")


@dataclass(frozen=True)
class BatchDone:
    """One finished forward pass of `encode`, for a caller that keeps vectors as they come (`cache.vectors` stores
    them in shards, so an interrupted corpus resumes) or estimates the time left from the tokens done."""

    indices: list[int]  # positions in the texts given to `encode`
    vectors: np.ndarray  # (B, d) float32, exactly the rows `encode` returns (normalised when asked)
    tokens: list[int]  # each text's tokens as the method ran it (template included)
    truncated: list[bool]  # each text was cut to the model's limit
    seconds: float  # wall time of this batch
    tokens_total: int  # tokens of every text of the call, so tokens done / tokens_total is the fraction done


@dataclass(frozen=True)
class ReadoutParams:
    layer: int = param(-1, "Hidden state read out (0 = embeddings, -1 = final layer after the final norm).",
                       kind="layer")


@dataclass(frozen=True)
class PromptParams:
    """A prompt around the text and the hidden state read out; prompt methods override the template's default."""

    template: str = param("{text}", "The prompt; {text} stands for the text.", kind="template")
    layer: int = param(-1, "Hidden state read out; the paper uses the final layer.", kind="layer")


class EmbeddingMethod:
    """Base class. Subclasses set `name`, `title`, `summary`, `Params`; most need nothing else."""

    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]
    Params: ClassVar[type] = ReadoutParams
    pooling: ClassVar[str] = "last"  # default readout; a `pooling` field in Params overrides it
    mean_segments: ClassVar[tuple[int, ...] | None] = (1,)  # tokens averaged by mean pooling: the text
    needs_eager: ClassVar[bool] = False  # attention function must return weights (no sdpa) for this method
    role: str = "document"  # the side this instance embeds (`as_role`); subclasses' prompts read it

    def __init__(self, params=None, **overrides):
        base = params if params is not None else self.Params()
        try:
            replaced = dataclasses.replace(base, **overrides)
        except TypeError as err:
            known = ", ".join(f.name for f in dataclasses.fields(self.Params))
            raise UserError(f"{self.name}: unknown parameter in {sorted(overrides)}; known: {known}") from err
        self.params = self.validate(check_params(self.name, replaced))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params})"

    # ---- what subclasses customise -------------------------------------------------------------------
    def validate(self, params):
        """Method-specific checks after the generic ones (`check_params`): return the params to use (a new object
        when a value is canonicalised, e.g. a layer set), or raise UserError with a sentence a user can act on."""
        return params

    def check(self, backbone) -> None:
        """Checks that need the loaded model (layer ranges), run before any work: raise UserError."""
        for f in dataclasses.fields(self.params):
            if f.metadata.get("kind") == "layer":
                try:
                    resolve_layer(backbone.facts.n_layers, getattr(self.params, f.name))
                except UserError as err:
                    raise UserError(f"{self.name}: {f.name}: {err}") from None

    def asymmetric(self) -> bool:
        """Whether this method, with these parameters, embeds a query otherwise than a document (see the module)."""
        return False

    def as_role(self, role: str) -> EmbeddingMethod:
        """This method embedding `role` texts: itself when that changes nothing, else a shallow copy whose `role` is
        set (so a resolved `layers=auto` window and loaded weights come along)."""
        if check_role(role) == self.role or (not self.asymmetric() and self.role == "document"):
            return self
        other = copy.copy(self)
        other.role = role
        return other

    def role_key(self) -> str:
        """What a cache key adds for this instance's side: "" for documents and for a method that embeds queries as
        documents, else the role, so the two sides never share a stored vector when they differ."""
        return self.role if self.role != "document" and self.asymmetric() else ""

    @property
    def template(self) -> str:
        return getattr(self.params, "template", "{text}")

    def prompt_template(self, tokenizer) -> str:
        """The template as this method really tokenizes it for `tokenizer` (a method may add a start token)."""
        return self.template

    @property
    def readout_pooling(self) -> str:
        return getattr(self.params, "pooling", self.pooling)

    def prepare(self, backbone, texts: list[str]) -> list[Encoded]:
        return encode_texts(backbone.tokenizer, self.template, texts, backbone.facts.max_length)

    def collate(self, backbone, items: list[Encoded], padding_side: str) -> Batch:
        return collate(items, backbone.tokenizer.pad_token_id, padding_side)

    def intervention(self, backbone, batch: Batch):
        """Context manager around the forward pass; yields extra keyword arguments for the model call.
        Hooks installed here must be removed on exit (use `analysis.core.forward.hooks`)."""
        return contextlib.nullcontext({})

    def forward(self, backbone, batch: Batch, layers, attention: bool = False, trace: bool = False) -> Captured:
        """One pass capturing hidden states `layers`; `trace` asks for the method's extra captures too
        (`Captured.extras`, e.g. KV-Embedding's prefix masses), which a plain encode skips."""
        with self.intervention(backbone, batch) as model_kwargs:
            return run(backbone, batch, layers, attention=attention, **model_kwargs)

    def readout(self, hidden: torch.Tensor, batch: Batch) -> torch.Tensor:
        """(B, T, d) states of one layer -> (B, d) embeddings."""
        return pool(hidden, batch, self.readout_pooling, self.mean_segments)

    def output_dim(self, backbone) -> int:
        """Width of one embedding (a readout that concatenates states is wider than the hidden size)."""
        return backbone.facts.hidden_size

    def trace_batch(self, backbone, batch: Batch, cap: Captured, trace: Trace) -> None:
        """Add this batch's captures to `trace`, padding removed. Methods extend it for their own names."""
        L = backbone.facts.n_layers
        mask = token_mask(batch, self.mean_segments) if self.readout_pooling != "last" else None
        for b in range(batch.input_ids.shape[0]):
            idx = batch.attention_mask[b].nonzero().squeeze(1)  # (T_b,)
            trace.tokens.append(backbone.tokenizer.convert_ids_to_tokens(batch.input_ids[b, idx].tolist()))
            # float(): numpy has no bfloat16, and widening it to float32 is exact (a --dtype auto twin's states)
            trace.add("hidden", [torch.stack([cap.hidden[l][b, idx] for l in range(L + 1)]).float().numpy()])
            trace.add("segments", [batch.segments[b, idx].numpy().astype(np.int8)])
            if mask is not None:
                trace.add("pool_mask", [(mask[b, idx] / mask[b].sum()).numpy()])
            if cap.attention:
                extra = cap.attention[0].shape[-1] - batch.input_ids.shape[1]  # prefix columns a method adds
                cols = torch.cat([torch.arange(extra), idx + extra])
                att = torch.stack([cap.attention[l][b][:, idx][:, :, cols] for l in range(L)])  # (L, H, T, S)
                trace.add("attention", [att.float().numpy()])

    # ---- the shared loop ---------------------------------------------------------------------------------
    def encode(
        self,
        backbone,
        texts,
        *,
        batch_size: int = 16,
        normalize: bool = True,
        trace: bool = False,
        attention: bool = False,
        padding_side: str = "right",
        progress: Callable[[int, int], None] | None = None,
        max_tokens: int | None = TOKEN_BUDGET,
        on_batch: Callable[[BatchDone], None] | None = None,
        role: str | None = None,
    ):
        """Embed texts.

        Args:
            backbone: a loaded `Backbone`.
            texts: list of non-empty strings (a single string is accepted).
            batch_size: at most this many texts per forward pass; batches group texts of similar length.
            normalize: L2-normalise the embeddings.
            trace: also return a `Trace` with every layer's states (at most 64 texts).
            attention: with `trace`, capture attention weights too (switches to the eager backend).
            padding_side: "right" or "left"; results do not depend on it.
            progress: called as progress(done, total) after each batch.
            max_tokens: at most this many padded tokens per forward pass (texts x the longest), so long documents
                run a few at a time (`analysis.core.tokens.batches_by_length`); None: `batch_size` alone. Results do
                not depend on it.
            on_batch: called with a `BatchDone` after each batch (before `progress`).
            role: "query" or "document" (see the module); None: this instance's own (`as_role`), a document unless
                set.

        Returns:
            (n, d) float32 array in input order, or (array, Trace) when `trace` is set.
        """
        if role is not None and self.as_role(role) is not self:  # (a subclass's encode has already run: base's)
            return EmbeddingMethod.encode(self.as_role(role), backbone, texts, batch_size=batch_size,
                                          normalize=normalize, trace=trace, attention=attention,
                                          padding_side=padding_side, progress=progress, max_tokens=max_tokens,
                                          on_batch=on_batch)
        self.check(backbone)
        layer = resolve_layer(backbone.facts.n_layers, self.params.layer)
        if trace:
            texts = check_texts(texts)
            budgets.check("trace_texts", len(texts), "texts in one trace (every layer's states are kept)")
        done = None
        if on_batch is not None:  # the rows as returned: normalised here, row by row, as below
            def done(step: BatchDone) -> None:
                vectors = step.vectors[:, 0]  # (B, d)
                on_batch(dataclasses.replace(step, vectors=l2_normalize(vectors, axis=1) if normalize else vectors))
        out, tr = self._loop(backbone, texts, "all" if trace else [layer], layer, batch_size, padding_side,
                             progress, trace, attention, max_tokens=max_tokens, on_batch=done)
        emb = out[:, 0]
        if normalize:
            emb = l2_normalize(emb, axis=1)
        return (emb, tr) if trace else emb

    def encode_layers(
        self,
        backbone,
        texts,
        layers="all",
        *,
        batch_size: int = 16,
        padding_side: str = "right",
        progress: Callable[[int, int], None] | None = None,
        readout: str | None = None,
        max_tokens: int | None = TOKEN_BUDGET,
    ) -> np.ndarray:
        """Raw (un-normalised) readouts at several hidden-state indices: (n, len(layers), d), or
        (n, L+1, d) for "all". One forward pass per batch for all layers. `readout` ("last", "mean", "hybrid")
        replaces the method's own readout, keeping its prompt and intervention (intrinsic-dimension states).
        `max_tokens` bounds each batch's padded tokens, as in `encode`."""
        self.check(backbone)
        out, _ = self._loop(backbone, texts, layers, None, batch_size, padding_side, progress, False, False, readout,
                            max_tokens=max_tokens)
        return out

    def _loop(self, backbone, texts, layers, readout_layer, batch_size, padding_side, progress, trace, attention,
              readout=None, *, max_tokens=TOKEN_BUDGET, on_batch=None):
        texts = check_texts(texts)
        L = backbone.facts.n_layers
        wanted = list(range(L + 1)) if layers == "all" else [resolve_layer(L, l) for l in layers]
        items = self.prepare(backbone, texts)
        if attention:  # attention maps keep (L, H, T, S) per text: bound them before the pass
            longest = max(len(e) for e in items)
            budgets.check("attention_tokens", longest, "tokens in one text with attention maps")
            budgets.check("attention_cells", L * backbone.facts.n_heads * longest**2,
                          "layers x heads x tokens² of the attention maps")
        result = np.zeros((len(texts), 1 if readout_layer is not None else len(wanted),
                           self.output_dim(backbone)), dtype=np.float32)
        tr = Trace(texts=[]) if trace else None
        backend = attention_backend(backbone, "eager") if attention and not self.needs_eager else contextlib.nullcontext()
        done = 0
        lengths = [len(e) for e in items]
        groups = batches_by_length(lengths, batch_size, max_tokens) if not trace else \
            batches_in_order(list(range(len(texts))), lengths, batch_size, max_tokens)  # a trace keeps input order
        with torch.inference_mode(), backbone.lock, backend:
            for idx in groups:
                began = time.perf_counter()
                batch = self.collate(backbone, [items[i] for i in idx], padding_side)
                cap = self.forward(backbone, batch, wanted, attention=attention, trace=trace)
                keep = [readout_layer] if readout_layer is not None else wanted
                for j, l in enumerate(keep):
                    pooled = self.readout(cap.hidden[l], batch) if readout is None else \
                        pool(cap.hidden[l], batch, readout, self.mean_segments)  # (B, d)
                    result[idx, j] = pooled.float().numpy()
                if tr is not None:
                    tr.texts.extend(texts[i] for i in idx)  # trace groups keep input order
                    self.trace_batch(backbone, batch, cap, tr)
                done += len(idx)
                if on_batch is not None:
                    on_batch(BatchDone(list(idx), result[idx], [lengths[i] for i in idx],
                                       [bool(items[i].truncated) for i in idx], time.perf_counter() - began,
                                       sum(lengths)))
                if progress is not None:
                    progress(done, len(texts))
        return result, tr
