"""The machinery Token Prepending and HTP share: the placeholder layout built at tokenisation time (`Placed`,
`insert_placeholders`), the placeholders' input vectors (`embedding_stats`), depth parameters (`parse_depth`,
`resolve_depth`) and `RewiringMethod`, whose forward pre-hooks overwrite each placeholder's state with its source's
at the input of every rewired decoder layer. How and why it is wired this way: `methods/token_prepending.py`.

A helper, not a method (its name starts with "_", so discovery skips it): methods never import each other, and the
two that rewire import this instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
import weakref
from dataclasses import dataclass

import numpy as np
import torch

from analysis.core.errors import TruncationWarning, UserError
from analysis.core.forward import Captured, hooks, input_device, run
from analysis.core.partition import tokenize_with_offsets
from analysis.core.tokens import PLACEHOLDER, Batch, Encoded, check_texts, collate, start_token
from analysis.methods.base import EmbeddingMethod

TOKEN, LOCAL, GLOBAL = 0, 1, 2  # placeholder kinds (TP's single placeholder is LOCAL)
LAYOUTS = ("clean", "reference")


@dataclass(frozen=True)
class Placed(Encoded):
    """A tokenized text with placeholder positions inserted."""

    kind: np.ndarray  # (T,) int8: TOKEN, LOCAL or GLOBAL
    source: np.ndarray  # (T,) int64: position whose state this one takes at a rewired layer (itself if TOKEN)


@dataclass
class RewiredBatch(Batch):
    kind: torch.Tensor  # (B, T) long, TOKEN on padding
    source: torch.Tensor  # (B, T) long, batch positions (padding offset included); pads point to themselves


def insert_placeholders(enc: Encoded, before: np.ndarray, kinds: np.ndarray, sources: np.ndarray,
                        placeholder_id: int) -> Placed:
    """Insert placeholders into a tokenized text.

    Args:
        enc: the text's tokens (T0,).
        before: (P,) non-decreasing original index each placeholder is inserted in front of.
        kinds: (P,) LOCAL or GLOBAL.
        sources: (P,) original index of the token whose state the placeholder takes when rewired.
        placeholder_id: input id stored at placeholder positions (its embedding is replaced anyway).
    """
    before, sources = np.asarray(before, dtype=np.int64), np.asarray(sources, dtype=np.int64)
    T0, P = len(enc.ids), len(before)
    # With non-decreasing `before`, placeholder p lands at before[p] + p, and original token i moves right by
    # the number of placeholders inserted at or before it.
    new_ph = before + np.arange(P, dtype=np.int64)  # (P,)
    new_tok = np.arange(T0, dtype=np.int64) + np.searchsorted(before, np.arange(T0), side="right")  # (T0,)
    T = T0 + P
    ids = np.full(T, placeholder_id, dtype=np.int64)
    segments = np.zeros(T, dtype=np.int8)  # placeholders count as template: never pooled by mean over the text
    kind = np.zeros(T, dtype=np.int8)
    source = np.arange(T, dtype=np.int64)
    ids[new_tok], segments[new_tok] = enc.ids, enc.segments
    kind[new_ph] = kinds
    source[new_ph] = new_tok[sources]
    return Placed(ids, segments, enc.truncated, kind, source)


_STATS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # embedding module -> (mean, std) (d,)


def embedding_stats(backbone) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-dimension mean and std of the vectors the input embedding layer returns (scaled as the model scales
    them, e.g. Gemma's sqrt(d)). Computed once per model; plain tensors usable with and without autograd."""
    emb = backbone.input_embeddings
    if emb not in _STATS:
        with torch.inference_mode(False), torch.no_grad():
            if emb.weight.device.type == "meta":  # offloaded by accelerate: read the rows through the layer
                V = emb.num_embeddings
                dev = input_device(backbone)
                rows = torch.cat([emb.forward(torch.arange(i, min(i + 8192, V), device=dev)).double().cpu()
                                  for i in range(0, V, 8192)])  # (V, d), already scaled
                _STATS[emb] = (rows.mean(0).float(), rows.std(0).float())
            else:
                W = emb.weight.detach().float().cpu()  # (V, d)
                probe = torch.arange(min(W.shape[0], 64))
                scale = emb.forward(probe.to(emb.weight.device)).float().cpu().norm()  # .forward: no hooks fire
                scale = scale / W[probe].norm().clamp_min(1e-12)  # the layer's own scaling
                _STATS[emb] = (W.mean(0) * scale, W.std(0) * scale)
    return _STATS[emb]


def parse_depth(raw) -> str:
    """Canonical form of a depth parameter: a decoder layer ("7") or a share of the model's depth ("7/32",
    "0.25", "25%"), kept as text so the cache key says which. Raises ValueError for anything else."""
    text = str(raw).strip().replace(" ", "")
    if text.isdigit():
        return str(int(text))
    try:
        share = _share(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{raw!r} is neither a decoder layer nor a share of the depth like 7/32 or 25%") from None
    if not 0 <= share <= 1:
        raise ValueError(f"{raw!r} is not a share of the depth between 0 and 1")
    return text


def _share(text: str) -> float:
    """"25%", "7/32" or "0.25" as a fraction of the depth (ValueError / ZeroDivisionError when it is none)."""
    if text.endswith("%"):
        return float(text[:-1]) / 100
    if "/" in text:
        num, den = text.split("/", 1)
        return int(num) / int(den)
    return float(text)


def resolve_depth(spec: str, n_layers: int) -> int:
    """A depth parameter on a model with `n_layers` decoder layers: a share rounds half up to a decoder layer."""
    spec = parse_depth(spec)
    if spec.isdigit():
        return int(spec)
    return int(_share(spec) * n_layers + 0.5)


EXIT_HELP = ("Rewiring stops before this decoder layer. A share of the depth such as 7/32 (the default) is resolved "
             "against the loaded model, rounding half up: TP's reference code exits at 7 of Llama-2-7B's 32 layers (3 "
             "to 7 on its other backbones), i.e. rewires in the first ~22% of the depth, which gives 7 of SmolLM2's "
             "30 layers and 4 of Gemma 3 270M's 18. An "
             "integer is a fixed decoder layer (clipped to the model's depth).")


class RewiringMethod(EmbeddingMethod):
    """Shared machinery of TP and HTP: placeholder layout, their input vectors, and the pre-hook rewiring.
    Subclasses implement `layout(backbone, text) -> Placed` and set `labels`."""

    labels: dict[int, str] = {LOCAL: "<PST>"}  # trace labels per placeholder kind
    mean_segments = (1,)  # mean readout over the text tokens: placeholders (segment 0) never count

    def validate(self, params):
        try:
            canonical = parse_depth(params.exit)
        except ValueError as err:
            raise UserError(f"{self.name}: exit={params.exit!r}: {err}.") from None
        # one spelling per value (an int passed from Python becomes "7"), so cache keys agree
        params = dataclasses.replace(params, exit=canonical)
        if canonical.isdigit() and params.start > int(canonical):
            raise UserError(f"{self.name}: start ({params.start}) must not be after exit ({params.exit}); "
                            "rewiring runs at decoder layers start .. exit-1.")
        return params

    def exit_layer(self, n_layers: int) -> int:
        """The exit decoder layer on a model with `n_layers` layers (a share of the depth resolved, clipped)."""
        return min(resolve_depth(self.params.exit, n_layers), n_layers)

    # ---- layout ------------------------------------------------------------------------------------------
    def layout(self, backbone, text: str) -> Placed:
        raise NotImplementedError

    def has_placeholders(self) -> bool:
        """Whether the layout inserts any placeholder (False: the plain forward of the template)."""
        raise NotImplementedError

    def prompt_template(self, tokenizer) -> str:
        """The template, with `start_token` in front when it starts with the text and there are placeholders."""
        template = self.template
        if self.has_placeholders() and template.startswith(PLACEHOLDER):
            template = start_token(tokenizer) + template
        return template

    def _tokenize(self, backbone, text: str, reserve):
        return tokenize_with_offsets(backbone.tokenizer, self.prompt_template(backbone.tokenizer), text,
                                     backbone.facts.max_length, reserve)

    def _placeholder_id(self, backbone) -> int:
        tok = backbone.tokenizer
        return tok.pad_token_id if tok.pad_token_id is not None else 0

    def prepare(self, backbone, texts) -> list[Placed]:
        texts = check_texts(texts)
        if self.params.start >= backbone.facts.n_layers:
            raise UserError(f"{self.name}: start={self.params.start} is beyond this model's "
                            f"{backbone.facts.n_layers} decoder layers (0..{backbone.facts.n_layers - 1}).")
        if self.params.start > self.exit_layer(backbone.facts.n_layers):
            raise UserError(f"{self.name}: start ({self.params.start}) is after exit ({self.params.exit} = decoder "
                            f"layer {self.exit_layer(backbone.facts.n_layers)} on this model).")
        items = [self.layout(backbone, t) for t in texts]
        n_cut = sum(e.truncated for e in items)
        if n_cut:
            warnings.warn(f"{n_cut} of {len(texts)} text(s) exceeded the model's limit of "
                          f"{backbone.facts.max_length} tokens and were truncated.", TruncationWarning, stacklevel=3)
        return items

    def collate(self, backbone, items: list[Placed], padding_side: str) -> RewiredBatch:
        base = collate(items, backbone.tokenizer.pad_token_id, padding_side)
        B, T = base.input_ids.shape
        kind = torch.zeros((B, T), dtype=torch.long)
        source = torch.arange(T).repeat(B, 1)  # (B, T): pads (and ordinary tokens) read themselves
        for b, e in enumerate(items):  # one slice assignment per text, no loop over tokens
            off = 0 if padding_side == "right" else T - len(e)
            kind[b, off: off + len(e)] = torch.from_numpy(e.kind.astype(np.int64))
            source[b, off: off + len(e)] = torch.from_numpy(e.source) + off
        return RewiredBatch(base.input_ids, base.attention_mask, base.position_ids, base.segments,
                            base.padding_side, kind, source)

    # ---- placeholder input vectors -------------------------------------------------------------------------
    def placeholder_vectors(self, backbone) -> torch.Tensor:
        """(3, d): row k is the input vector of placeholder kind k (row 0 unused). Same seed, same vectors."""
        mean, std = embedding_stats(backbone)
        g = torch.Generator().manual_seed(int(self.params.seed))
        z = torch.randn(2, mean.shape[0], generator=g)  # (2, d): one vector per kind, like one added token each
        return torch.cat([torch.zeros_like(mean)[None], mean + std * z])  # (3, d)

    def input_embeds(self, backbone, batch: RewiredBatch) -> torch.Tensor:
        """(B, T, d) the model's input embeddings with placeholder rows replaced by their fixed vectors."""
        dev = input_device(backbone)
        emb = backbone.input_embeddings(batch.input_ids.to(dev))  # (B, T, d), scaled as the model scales it
        table = self.placeholder_vectors(backbone).to(emb.device, emb.dtype)  # (3, d)
        kind = batch.kind.to(emb.device)
        return torch.where((kind > 0).unsqueeze(-1), table[kind], emb)  # (B, T, d)

    # ---- rewiring ---------------------------------------------------------------------------------------
    def rewired_layers(self, n_layers: int) -> range:
        """Decoder layers whose input is rewired: [start, exit) within the model."""
        return range(self.params.start, self.exit_layer(n_layers))

    @contextlib.contextmanager
    def intervention(self, backbone, batch: RewiredBatch):
        B, T = batch.source.shape
        idx = batch.source.unsqueeze(-1).expand(B, T, backbone.facts.hidden_size)  # (B, T, d), a view

        on = {}  # device -> idx there: a model split over devices runs its layers in several places

        def rewire(module, args, kwargs):
            # Every position takes the state of its source: placeholders their block's final token, all
            # others themselves. Out of place, so the previous layer's captured output is left untouched.
            h = args[0] if args else kwargs["hidden_states"]
            where = on.setdefault(h.device, idx.to(h.device))
            if args:
                return (h.gather(1, where), *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": h.gather(1, where)}

        layers = backbone.layers
        regs = [lambda l=l: layers[l].register_forward_pre_hook(rewire, with_kwargs=True)
                for l in self.rewired_layers(backbone.facts.n_layers)]
        with hooks(*regs):
            yield {}

    def forward(self, backbone, batch: RewiredBatch, layers, attention: bool = False, trace: bool = False
                ) -> Captured:
        embeds = self.input_embeds(backbone, batch)
        with self.intervention(backbone, batch) as model_kwargs:
            return run(backbone, batch, layers, attention=attention, inputs_embeds=embeds, **model_kwargs)

    # ---- trace ----------------------------------------------------------------------------------------------
    def trace_batch(self, backbone, batch: RewiredBatch, cap: Captured, trace) -> None:
        super().trace_batch(backbone, batch, cap, trace)
        B = batch.input_ids.shape[0]
        for b in range(B):
            idx = batch.attention_mask[b].nonzero().squeeze(1)  # (T_b,)
            kind = batch.kind[b, idx].numpy().astype(np.int8)
            tokens = trace.tokens[len(trace.tokens) - B + b]
            for t in np.flatnonzero(kind):
                tokens[t] = self.labels.get(int(kind[t]), "<PST>")
            trace.add("placeholders", [kind])
