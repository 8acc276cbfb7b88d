"""Token Prepending (Fu et al., 2024, ACL 2025, "Token Prepending: A Training-Free Approach for Eliciting Better
Sentence Embeddings from LLMs").

Under causal attention the text's early tokens never see its end. TP puts one placeholder token in front of the
text and, at the input of every decoder layer in [start, exit), overwrites the placeholder's state with the
state of the final token (which has read everything) from the previous layer's output. From then on every text
token can attend to a running summary of the whole sentence. The embedding is read out at an early-exit layer:
the PromptEOL last token (the paper's recipe) or the mean of the text tokens.

How it is wired here (no modeling code copied):
* The layout is built at tokenisation time: a placeholder position is inserted in front of the text's first
  token, with a fixed random input embedding (see below). Each position carries `source`, the position whose
  state it takes at a rewired layer (itself for ordinary tokens), and `kind` (0 token, 1 placeholder).
* Rewiring is a forward PRE-hook on each decoder layer in [start, exit) that replaces the incoming
  hidden_states by `hidden.gather(1, source)`: one vectorised gather per layer, padding-safe (pads map to
  themselves), out of place (captured states and autograd stay intact). `intervention` installs the hooks with
  `analysis.core.forward.hooks`, so they are removed on exit, also after an exception.
* Because the source is read from the layer's *input*, "the final token's state from the previous layer's
  output" is exactly what arrives. Hidden state l in a trace is the output of decoder layer l-1, before the
  rewiring of layer l's input.

Placeholder embedding: the paper adds a `<PST>` token to the vocabulary with a random embedding. A frozen model
cannot grow its vocabulary here, so the placeholder's input vector is drawn once from a Gaussian with the
per-dimension mean and spread of the model's own input embeddings, with an exposed `seed`. (Hugging Face's
`resize_token_embeddings` does something else: it initialises new rows at the mean embedding with a tiny
covariance, so its new tokens are all nearly the mean vector.) The TP reference used a standard normal vector; under RMSNorm only
its direction matters, and from layer `start` on it is overwritten anyway. Its input id is the pad id (never
looked up: the embedding row is replaced); traces label it `<PST>`.

Placement (`layout`): the reference prompt is `This sentence : <PST> "{text}" ...`, with <PST> a vocabulary token,
so the tokenizer splits the prompt at it: the text before it ends with a lone-space token on byte-level BPE
tokenizers (SmolLM2), and the placeholder sits before the opening quote. `layout="reference"` rebuilds exactly that
(the prompt up to the opening quote tokenized on its own, the placeholder, then ' "{text}" ...').
`layout="clean"` (default) inserts the placeholder immediately before the text's first token, so the prompt's own
tokenisation is exactly PromptEOL's with one position added (no lone-space token; the placeholder one token to the
right). On SmolLM2 the two layouts' embeddings have cosine 0.94-0.97.

Sliding-window layers (Gemma 3, Mistral): placeholders are ordinary positions, so in a sliding layer only the
tokens within `sliding_window` positions after a placeholder read it, exactly as for any token; nothing is
widened. TP's single placeholder reaches the rest of a text longer than the window only through the global
layers (Gemma 3 270M: every sixth; window 512, so it matters only for long documents). HTP's local placeholders
sit in front of their own block, so blocks shorter than the window always see their summaries; its global
placeholders at the start are, like TP's, out of a sliding layer's reach for tokens further than the window.

Trace capture (`encode(..., trace=True)`): `placeholders` (T,) int8 per text, 0 token, 1 local/TP placeholder,
2 HTP global placeholder.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from analysis.core.errors import TruncationWarning, UserError
from analysis.core.forward import Captured, hooks, input_device, run
from analysis.methods.base import EmbeddingMethod, param
from analysis.core.partition import tokenize_with_offsets
from analysis.core.tokens import PLACEHOLDER, Batch, Encoded, check_texts, collate

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


def start_token(tokenizer) -> str:
    """The token put in front of a template that starts with the text, so that position 0 is never a placeholder.

    Decoders use their first position as an attention sink: it soaks up attention mass and grows outlier
    activations in the first layers. The models of the TP and HTP papers (LLaMA, Mistral) always start with
    <s>, so their placeholders never sit there. A tokenizer that adds no BOS of its own (SmolLM2, Qwen) would
    put a placeholder at position 0, and overwriting the sink's state at every rewired layer breaks the model
    (HTP with a bare template on SmolLM2-135M, first 300 STS-B dev pairs: Spearman -0.08; with this start
    token 0.56, against 0.50 for mean pooling). Returns "" when the tokenizer adds a leading special token itself
    or has neither a BOS nor an EOS token to use.
    """
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    if len(with_special) > len(bare) and with_special[-len(bare):] == bare:
        return ""  # the tokenizer prepends its own BOS
    return tokenizer.bos_token or tokenizer.eos_token or ""


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
             "against the loaded model, rounding half up: the paper tuned 7 of Llama-2-7B's 32 layers, i.e. rewire "
             "in the first ~22% of the depth, which gives 7 of SmolLM2's 30 layers and 4 of Gemma 3 270M's 18. An "
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


@dataclass(frozen=True)
class TokenPrependingParams:
    template: str = param(
        'This sentence : "{text}" means in one word:"',
        "PromptEOL's prompt, the paper's main recipe; the placeholder goes in front of the text. Needs {text} once.",
        kind="template", copies=(1, 1),
    )
    start: int = param(
        1,
        "First decoder layer whose input is rewired. The paper starts at 1: layer 0 sees the plain embeddings, "
        "where the final token has not read anything yet.",
        min=0, max=512,
    )
    exit: str = param("7/32", EXIT_HELP, parse=parse_depth)
    layer: int = param(
        -2,
        "Hidden state read out (early exit). -2 = output of the second-to-last decoder layer, no final norm: the "
        "paper's setting for most backbones (Llama-2-7B used 27 of 32). The pass stops there.", kind="layer",
    )
    pooling: str = param("last", "Readout: the PromptEOL last token (the paper) or the mean over the text tokens "
                         "(placeholder excluded).", choices=("last", "mean"))
    seed: int = param(0, "Seed of the placeholder's random input embedding (the paper's <PST> is random too).",
                      min=0, max=2**31 - 1)
    placeholder: bool = param(True, "Insert the placeholder. Off (with start = exit) is plain PromptEOL at the "
                              "readout layer: the ablation.")
    layout: str = param("clean", "Where the placeholder goes. clean: immediately before the text, the prompt tokenized "
                        "exactly as PromptEOL's. reference: as the reference code's prompt `This sentence : <PST> "
                        "\"{text}\"`, before the opening quote, with the lone-space token its tokenizer produces "
                        "before <PST> on byte-level BPE tokenizers such as SmolLM2's.", choices=LAYOUTS)


class TokenPrepending(RewiringMethod):
    name = "token_prepending"
    bench_reference = "prompteol"  # benchmark: against the same prompt without the placeholder and the hooks
    title = "Token Prepending (TP)"
    summary = "One placeholder before the text takes the final token's state in early layers; early exit."
    Params = TokenPrependingParams
    pooling = "last"
    labels = {LOCAL: "<PST>"}

    def has_placeholders(self) -> bool:
        return bool(self.params.placeholder)

    def layout(self, backbone, text: str) -> Placed:
        n_ph = int(self.params.placeholder)
        if n_ph and self.params.layout == "reference":
            return self._reference_layout(backbone, text)
        enc, _, _ = self._tokenize(backbone, text, lambda text_end, kept: n_ph)
        if not n_ph:
            return Placed(enc.ids, enc.segments, enc.truncated, np.zeros(len(enc), np.int8), np.arange(len(enc)))
        first_text = int(np.flatnonzero(enc.segments == 1)[0])
        # Source: the prompt's final token (the PromptEOL position), as in the reference's hidden[:, -1].
        return insert_placeholders(enc, [first_text], [LOCAL], [len(enc) - 1], self._placeholder_id(backbone))

    def _reference_layout(self, backbone, text: str) -> Placed:
        """The reference's tokenisation: the prompt up to the opening quote before {text} tokenized on its own (a
        vocabulary <PST> splits it there), the placeholder, then ' ' + the rest of the prompt with the text."""
        tok = backbone.tokenizer
        template = self.prompt_template(tok)
        prefix, rest = template.split(PLACEHOLDER, 1)
        q = len(prefix.rstrip()) - 1 if prefix.rstrip()[-1:] in ('"', "'") else len(prefix)
        head = tok(prefix[:q], add_special_tokens=True)["input_ids"]  # BOS (if the tokenizer adds one) + prefix
        lead, trail = _special_counts(tok)
        head = head[: len(head) - trail] if trail else head
        tail, _, _ = tokenize_with_offsets(tok, " " + prefix[q:].lstrip() + PLACEHOLDER + rest, text,
                                           backbone.facts.max_length - len(head) - 1 + lead)
        ids = np.concatenate([np.asarray(head, np.int64), [self._placeholder_id(backbone)], tail.ids[lead:]])
        segments = np.concatenate([np.zeros(len(head) + 1, np.int8), tail.segments[lead:]])
        T, ph = len(ids), len(head)
        kind, source = np.zeros(T, np.int8), np.arange(T, dtype=np.int64)
        kind[ph], source[ph] = LOCAL, T - 1  # the prompt's final token, as the reference's hidden[:, -1]
        return Placed(ids.astype(np.int64), segments, tail.truncated, kind, source)


def _special_counts(tokenizer) -> tuple[int, int]:
    """How many special tokens the tokenizer adds in front of and behind a text."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    for lead in range(len(with_special) - len(bare) + 1):
        if with_special[lead: lead + len(bare)] == bare:
            return lead, len(with_special) - len(bare) - lead
    return 0, 0
