"""KV-Embedding (Tang & Yang, 2026, "KV-Embedding: Training-free Text Embedding via Internal KV Re-routing in
Decoder-only LLMs"): in a few chosen layers, the key and value of the final token -- which has read the whole
text -- are prepended as an extra attended position, so every token can see a summary of the sequence in the
same forward pass. A compression prompt pushes the final token towards summarising, and the embedding is the
average of last-token and mean pooling over the final layer. The paper has a Query and a Context prompt: retrieval
queries get the Query prompt, documents and every text of a symmetric task the one `prompt` names (Context).

How it is wired (no modeling code copied, no second pass):
* `kv_reroute` is a registered attention function (`transformers.AttentionInterface`) with a mask function of
  the same name (`AttentionMaskInterface`, the stock `sdpa_mask`, so the causal/padding mask is exactly the one
  sdpa would get). It reads its per-call configuration from the keyword argument `kv_reroute` (a `Reroute`)
  that `analysis.core.forward.run(..., kv_reroute=...)` passes to every attention call, and `module.layer_idx`.
  `kv_reroute_eager` is the same with the eager mask and eager attention, for attention maps.
* In a layer outside the set it calls the model's own sdpa/eager function with the untouched arguments, so an
  empty set reproduces the prompt-only forward exactly. In a layer inside the set it gathers each row's final
  real token's key/value (right or left padding), prepends them, widens the mask by n columns that every query
  may attend to with additive score `bias`, and calls the same function.

Sliding-window layers (Gemma 3: five of every six layers see only the last `sliding_window` positions; Mistral):
the re-routed pair is an extra key column, not a position in the sequence, so it is visible to EVERY query in
every re-routed layer, sliding or global, while the in-sequence keys keep the layer's own window exactly (the
mask the model builds for that layer, widened by the prefix columns). This is the paper's intent -- every token
reads the summary in the same layer -- and the only consistent choice: with the window applied to the prefix,
which rotary position would it have? Its key keeps the final token's (or position 0 when re-rotated), so the
window would hide it from every token more than `sliding_window` before the end in one case and after the start
in the other. The re-rotation uses the RoPE of the layer's own type (Gemma 3's local and global bases differ).

Layer numbers: the set holds DECODER layer indices (attention runs inside decoder layers). Decoder layer l reads
hidden state l and produces hidden state l+1, so the pair re-routed at decoder layer l is a projection of hidden
state l: an intrinsic-dimension window over hidden states s..e maps to decoder layers s..e.

Trace capture (with `encode(..., trace=True)`): `kv.prefix_mass` (L, H, T) per text, the attention mass each
query puts on the re-routed positions, per decoder layer and head (zero outside the set). With
`attention=True`, `attention` has n + T columns in every layer, the n prefix columns first (zero outside the set).

The paper's bidirectional ablation (`mask="bidirectional"`): the causal mask removed in every layer, so every token
sees the whole text; padding stays hidden and a sliding-window layer keeps its window on both sides. It is one mask
function (`_without_causality`) registered under two more backend names (`kv_bidirectional[_eager]`) with the same
attention functions, so re-routing combines with it and the default (`mask="causal"`) runs exactly as before.

Readout and window: the hybrid's mean half averages the text's tokens by default (`mean_over="text"`; the paper's
Algorithm 1, as this project read it, averages every position, `mean_over="all"`), and `layers=auto`'s window spans
floor(0.1 L) + 1 layers by the paper's Eq. 4 as this project read it (`width="eq4"`; `width="reported"` spans about a
quarter of the depth, like the windows this project read in the paper's results). `DEVIATIONS` lists what differs
from the paper; the prompt's exact wording, Algorithm 1, Eq. 4 and the reported windows are this project's reading,
not checked against the paper's full text (the abstract says none of them).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import sys
from dataclasses import dataclass, field

import torch

from analysis.core.deviations import Deviation
from analysis.core.errors import UserError
from analysis.core.forward import attention_backend, run
from analysis.core.params import param
from analysis.inspect import intrinsic_dim
from analysis.methods.base import EmbeddingMethod

MAX_LAYER = 1023  # decoder layer numbers above this are refused while parsing (no model is that deep)
KWARG = "kv_reroute"  # the model keyword argument that carries a `Reroute`
PREFIX_MASS = "kv.prefix_mass"  # trace capture: (L, H, T) attention mass on the re-routed prefix per text
BACKEND, BACKEND_EAGER = "kv_reroute", "kv_reroute_eager"
BIDIRECTIONAL, BIDIRECTIONAL_EAGER = "kv_bidirectional", "kv_bidirectional_eager"  # the same, causal mask removed
MASKS = ("causal", "bidirectional")
MEAN_OVER = ("text", "all")

PROMPTS = {
    "document": 'Context: "{text}"\nCompress the context in one word:',
    "paper": '"Context: {text}" Compress the context in one word:',  # the paper's prompt as this project read it
    "query": 'Query: "{text}"\nCompress the query in one word:',
}


# ---- the layer-set parameter ---------------------------------------------------------------------------------
def parse_layers(raw: str) -> str:
    """Canonical form of a layer-set string: "auto", "none", or sorted decoder layers like "3,4,5".
    Accepts ranges ("3-5") and spaces. Raises ValueError (shown as a UserError by the callers)."""
    text = str(raw).strip().lower()
    if text in ("auto", "none", ""):
        return text or "none"
    out: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"{part!r:.30} is not a layer number or range like 3-5")
        lo, hi = int(lo), int(hi) if sep else int(lo)
        if max(lo, hi) > MAX_LAYER:  # checked before the range is built: 0-99999999 must not hang
            raise ValueError(f"{max(lo, hi)} is past any model's depth (at most {MAX_LAYER})")
        if hi < lo:
            raise ValueError(f"the range {lo}-{hi} runs backwards; write {hi}-{lo}")
        out.update(range(lo, hi + 1))
    if not out:
        return "none"
    return ",".join(str(l) for l in sorted(out))


@dataclass(frozen=True)
class KVEmbeddingParams:
    layers: str = param(
        "auto",
        "Decoder layers whose attention gets the re-routed pair: 'auto' (the intrinsic-dimension window of this "
        "model, computed once on the built-in texts), 'none' (prompt only, the ablation) or a list like '3,4,5' / "
        "'3-5'. The paper chooses the layers by intrinsic dimension.",
        parse=parse_layers,
    )
    bias: float = param(
        1.0,
        "Added to the pre-softmax score of the re-routed position(s); 1.0 (the paper's default as this project read "
        "it, not verified) nudges every token to read the summary. A very negative (finite) value such as -1e9 "
        "switches the re-routing off.",
        max=50.0, step=0.5,
    )
    n: int = param(1, "How many final tokens are re-routed (the last n); the paper re-routes the final token only.",
                   min=1, max=16)
    rerotate: bool = param(
        False,
        "Re-rotate the re-routed key from the final token's rotary position to position 0 (n tokens -> 0..n-1). "
        "Off = the literal reading of the paper: the key keeps the final token's position.",
    )
    prompt: str = param("document", "The compression prompt of documents and every text of a symmetric task: "
                        "document = 'Context: \"{text}\"' and 'Compress the context in one word:' on a new line "
                        "(this repository's default, not the paper's wording); paper = the paper's prompt as this "
                        "project read it, '\"Context: {text}\" Compress the context in one word:' (not verified word "
                        "for word); query = the Query prompt. Retrieval queries get "
                        "the Query prompt, as the paper embeds queries and contexts.", choices=tuple(PROMPTS))
    template: str = param("", "Custom prompt with {text}; empty = the compression prompt chosen by `prompt`.",
                          kind="template", optional=True)
    pooling: str = param("hybrid", "Readout over the final layer: the paper's hybrid (mean of last-token and mean "
                         "pooling, the mean over `mean_over`'s positions) balances the summary token with the whole "
                         "text; last and mean as options.", choices=("hybrid", "last", "mean"))
    mean_over: str = param("text", "Positions the mean half of the hybrid (and the mean readout) averages: text = the "
                           "text's tokens only (this repository's default); all = every position, prompt included, "
                           "as this project read the paper's Algorithm 1 (not verified).", choices=MEAN_OVER)
    width: str = param("eq4", "How wide `layers=auto`'s window is: eq4 = floor(0.1 L) + 1 layers by the paper's Eq. 4 "
                       "as this project read it (4 of SmolLM2's 30); reported = about a quarter of the depth, "
                       "round(L/4) layers (8 of 30), like the 7-10-layer windows this project read in the paper's "
                       "results for its 28-36-layer backbones (neither verified against the full text).",
                       choices=intrinsic_dim.WIDTHS)
    mask: str = param("causal", "causal = the model's own attention mask; bidirectional = the causal mask removed in "
                      "every layer (an ablation of the paper, as this project read it: every token sees the whole "
                      "text, padding stays hidden).",
                      choices=MASKS)
    layer: int = param(-1, "Hidden state read out; the paper pools the final layer.", kind="layer")


DEVIATIONS = (
    Deviation("prompt", paper="asks, as this project read it, '\"Context: {text}\" Compress the context in one "
              "word:' (the quotes around 'Context: ' and the text, one line; not verified word for word: the abstract "
              "quotes no prompt, and third-party reimplementations write 'Compress the Context in one word:')",
              here="asks 'Context: \"{text}\"' then 'Compress the context in one word:' on a new line (and lays out "
                   "the Query prompt of retrieval queries the same way)",
              why="an earlier reading of the paper; it stays the default so that the published records and stored "
                  "windows keep their meaning", restore="prompt=paper"),
    Deviation("mean readout", paper="averages every position in the mean half of its hybrid readout (Algorithm 1 as "
              "this project read it; not verified against the full text)",
              here="averages the text's tokens only", why="the prompt's tokens are the same for every text and pull "
              "every embedding towards one point", restore="mean_over=all"),
    Deviation("window width", paper="defines the window as l* .. l* + floor(0.1 L) (Eq. 4) but reports windows of "
              "7-10 layers on its 28-36-layer backbones (both as this project read the paper; not verified against "
              "its full text, the abstract says only that layers are selected by intrinsic dimensionality)",
              here="follows Eq. 4: 4 layers on SmolLM2's 30, 2 on Gemma 3 270M's 18",
              why="the rule is what a new model can be given; the reported windows are offered too",
              restore="width=reported"),
)


# ---- the attention function ----------------------------------------------------------------------------------
@dataclass
class Reroute:
    """Per-call configuration read by the attention function (passed as model kwarg `kv_reroute`)."""

    layers: frozenset  # decoder layers that re-route
    bias: float
    index: torch.Tensor  # (B, n) token indices of each row's re-routed tokens (its last n real tokens)
    rope: dict | None = None  # layer type (None if one) -> (cos_src, sin_src, cos_dst, sin_dst), (B|1, n, d) each
    weights: bool = False  # return attention weights (eager backend): every layer gets n leading columns
    masses: dict | None = None  # if a dict: decoder layer -> (B, H, T) attention mass on the prefix, filled here
    n: int = field(init=False)

    def __post_init__(self):
        self.n = self.index.shape[1]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rerotate(k: torch.Tensor, rope: tuple) -> torch.Tensor:
    """Undo the rotary rotation at the source positions and apply the target positions' (rotate_half RoPE, as in
    Llama/Qwen/Mistral/Gemma). k: (B, H_kv, n, d); cos/sin: (B|1, n, d)."""
    cos_s, sin_s, cos_t, sin_t = (t.unsqueeze(1) for t in rope)  # (B|1, 1, n, d): broadcast over heads
    # RoPE is x*cos + rot(x)*sin with cos^2+sin^2 = scale^2 per element; its inverse divides by that.
    k0 = (k * cos_s - _rotate_half(k) * sin_s) / (cos_s**2 + sin_s**2)
    return k0 * cos_t + _rotate_half(k0) * sin_t


def rotary_device(rotary):
    buffers = list(rotary.buffers())
    return buffers[0].device if buffers and buffers[0].device.type != "meta" else torch.device("cpu")


def _eager_of(module):
    """The model's own eager attention function (from its modeling module), for exact delegation."""
    fn = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if fn is None:
        # lazy: keeps transformers off the pages' and the command line's start
        from transformers.models.llama.modeling_llama import eager_attention_forward as fn
    return fn


def _additive(mask: torch.Tensor | None, B: int, T: int, dtype, device) -> torch.Tensor:
    """Any mask the model hands us -> additive float (B|1, 1, T, T): 0 = visible, dtype-min = hidden."""
    lowest = torch.finfo(dtype).min
    if mask is None:  # sdpa skipped the mask for a plain causal batch without padding
        causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
        return torch.zeros((), dtype=dtype, device=device).masked_fill(~causal, lowest)[None, None]
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, lowest)
    return mask.to(dtype)


def _kv_attention(module, query, key, value, attention_mask, *, eager: bool, **kwargs):
    # lazy: keeps transformers off the pages' and the command line's start
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    cfg: Reroute | None = kwargs.pop(KWARG, None)
    base = _eager_of(module) if eager else sdpa_attention_forward
    if cfg is None or module.layer_idx not in cfg.layers:
        out, weights = base(module, query, key, value, attention_mask, **kwargs)  # exactly the vanilla layer
        if weights is not None and cfg is not None and cfg.weights:
            pad = weights.new_zeros(*weights.shape[:3], cfg.n)  # (B, H, T, n): nothing on the absent prefix
            weights = torch.cat([pad, weights], dim=-1)  # (B, H, T, n+T)
        return out, weights

    B, Hkv, T, d = key.shape  # (B, H_kv, T, d): before repeat_kv, so grouped-query attention needs nothing special
    idx = cfg.index.to(key.device)[:, None, :, None].expand(B, Hkv, cfg.n, d)  # (B, H_kv, n, d)
    k_pre = key.gather(2, idx)  # (B, H_kv, n, d): each row's own final real token(s), whatever the padding
    v_pre = value.gather(2, idx)  # (B, H_kv, n, d)
    if cfg.rope is not None:  # Gemma 3: sliding and global layers have different RoPE bases
        rope = cfg.rope.get(getattr(module, "layer_type", None)) or next(iter(cfg.rope.values()))
        k_pre = _rerotate(k_pre, tuple(t.to(k_pre.device, k_pre.dtype) for t in rope))
    key = torch.cat([k_pre, key], dim=2)  # (B, H_kv, n+T, d)
    value = torch.cat([v_pre, value], dim=2)  # (B, H_kv, n+T, d)

    mask = _additive(attention_mask, B, T, query.dtype, query.device)  # (B|1, 1, T, T)
    bias = max(float(cfg.bias), torch.finfo(query.dtype).min)  # -inf -> dtype-min: padded rows stay finite
    prefix = torch.full((mask.shape[0], 1, T, cfg.n), bias, dtype=query.dtype, device=query.device)
    mask = torch.cat([prefix, mask], dim=-1)  # (B|1, 1, T, n+T): every query sees the prefix, with score + bias

    out, weights = base(module, query, key, value, mask, **kwargs)
    if cfg.masses is not None:
        if weights is None:  # sdpa returns no weights: compute them for this layer only (trace mode)
            k_full = key.repeat_interleave(query.shape[1] // Hkv, dim=1)  # (B, H, n+T, d)
            scale = kwargs.get("scaling") or d**-0.5
            weights = torch.softmax((query @ k_full.transpose(2, 3)) * scale + mask, dim=-1)  # (B, H, T, n+T)
        cfg.masses[module.layer_idx] = weights[..., : cfg.n].sum(-1).cpu()  # (B, H, T)
    return out, (weights if eager else None)


def _sdpa_reroute(module, query, key, value, attention_mask, **kwargs):
    return _kv_attention(module, query, key, value, attention_mask, eager=False, **kwargs)


def _eager_reroute(module, query, key, value, attention_mask, **kwargs):
    return _kv_attention(module, query, key, value, attention_mask, eager=True, **kwargs)


def _without_causality(make_mask):
    """The mask function `make_mask` (sdpa's or eager's) with the causal part removed: every query sees every real
    key, padding stays hidden, and a sliding-window layer (it is given `local_size`) keeps its window on both sides.
    Never skipped to sdpa's `is_causal` shortcut, which would put the causal mask back."""

    # lazy: keeps transformers off the pages' and the command line's start
    from transformers.masking_utils import bidirectional_mask_function, sliding_window_bidirectional_mask_function

    def mask(*args, mask_function=None, local_size=None, allow_is_causal_skip=True, **kwargs):
        pattern = sliding_window_bidirectional_mask_function(local_size) if local_size else bidirectional_mask_function
        return make_mask(*args, mask_function=pattern, allow_is_causal_skip=False, **kwargs)

    return mask


@functools.cache
def registered_backends() -> None:
    """Registers the re-routing attention functions and their mask functions with transformers, once, on first use
    rather than on import: importing transformers costs over a second, which every page that only lists the methods
    paid (issue 38). The mask functions must be registered too, or transformers builds no causal mask at all for
    these names."""
    from transformers import AttentionInterface  # lazy: keeps transformers off the pages' and the command line's start

    # lazy: keeps transformers off the pages' and the command line's start
    from transformers.masking_utils import AttentionMaskInterface, eager_mask, sdpa_mask

    for name, attention, mask in ((BACKEND, _sdpa_reroute, sdpa_mask), (BACKEND_EAGER, _eager_reroute, eager_mask),
                                  (BIDIRECTIONAL, _sdpa_reroute, _without_causality(sdpa_mask)),
                                  (BIDIRECTIONAL_EAGER, _eager_reroute, _without_causality(eager_mask))):
        AttentionInterface.register(name, attention)
        AttentionMaskInterface.register(name, mask)


# ---- the method ----------------------------------------------------------------------------------------------
class KVEmbedding(EmbeddingMethod):
    name = "kv_embedding"
    title = "KV-Embedding"
    summary = "Final token's key/value re-routed as a prefix in ID-chosen layers; hybrid pooling."
    Params = KVEmbeddingParams
    pooling = "hybrid"
    bench_reference = {"layers": "none"}  # the benchmark compares against the prompt-only forward

    @property
    def mean_segments(self):
        """The text's tokens, or every position (`mean_over="all"`, the paper's Algorithm 1 as this project read it)."""
        return None if self.params.mean_over == "all" else (1,)

    def backend(self, attention: bool = False) -> str:
        """The registered attention backend this configuration runs under (eager when attention maps are kept)."""
        registered_backends()
        if self.params.mask == "bidirectional":
            return BIDIRECTIONAL_EAGER if attention else BIDIRECTIONAL
        return BACKEND_EAGER if attention else BACKEND

    def validate(self, params):
        try:
            canonical = parse_layers(params.layers)
        except ValueError as err:
            raise UserError(f"kv_embedding: layers={params.layers!r:.40}: {err}; use auto, none or e.g. 3,4,5.") \
                from None
        return dataclasses.replace(params, layers=canonical)  # one spelling per layer set, so cache keys agree

    def check(self, backbone) -> None:
        super().check(backbone)
        if self.params.layers not in ("auto", "none"):
            self.decoder_layers(backbone)  # an explicit set must exist in this model: say so before any work

    @property
    def template(self) -> str:
        return self.params.template or PROMPTS["query" if self.role == "query" else self.params.prompt]

    def asymmetric(self) -> bool:
        """Queries get the Query prompt (laid out as `document` is, not word for word the paper's: DEVIATIONS),
        documents `prompt`'s (a custom template serves both sides)."""
        return not self.params.template and self.params.prompt != "query"

    _window: tuple[str, frozenset] | None = None  # (model identity, decoder layers) that layers=auto stands for

    def prompt_only(self) -> KVEmbedding:
        """The same prompt and readout without re-routing: the states `layers=auto` picks its window from."""
        return KVEmbedding(dataclasses.replace(self.params, layers="none"))

    def needs_window(self, backbone) -> bool:
        """Whether `layers=auto` still has to be resolved for this model (see `with_window`)."""
        return self.params.layers == "auto" and (self._window is None or self._window[0] != backbone.identity)

    def with_window(self, backbone, layers) -> KVEmbedding:
        """A copy whose `layers=auto` stands for `layers` on this model (resolved by the caller, e.g. through the
        compute cache). The parameters are unchanged, so cache keys and displays still say 'auto'."""
        ready = copy.copy(self)
        ready._window = (backbone.identity, frozenset(int(l) for l in layers))
        return ready

    def decoder_layers(self, backbone) -> frozenset:
        """The decoder layers that re-route on this model (resolves 'auto'; validates explicit sets). An unresolved
        'auto' is computed here (once per process, nothing stored); `cache.resolve_method` stores it."""
        L = backbone.facts.n_layers
        spec = self.params.layers
        if spec == "none":
            return frozenset()
        if spec == "auto":
            if not self.needs_window(backbone):
                return self._window[1]
            return frozenset(intrinsic_dim.auto_window(backbone, self.prompt_only()).layers)
        layers = frozenset(int(x) for x in spec.split(","))
        if max(layers) >= L:  # name the highest only: a huge range must not make a huge message
            raise UserError(f"kv_embedding: decoder layers past {L - 1} do not exist (the set reaches {max(layers)}); "
                            f"this model has decoder layers 0..{L - 1}.")
        return layers

    def reroute(self, backbone, batch, *, weights: bool = False, masses: dict | None = None) -> Reroute:
        """The per-call configuration for one padded batch."""
        n = self.params.n
        last = batch.last_index  # (B,)
        index = (last[:, None] - torch.arange(n - 1, -1, -1)[None, :]).clamp(min=0)  # (B, n): last n, in order
        if batch.padding_side == "left":  # left pads sit before the text: never re-route a pad
            first = batch.attention_mask.argmax(dim=1)  # (B,) first real token
            index = torch.maximum(index, first[:, None])
        rope = None
        if self.params.rerotate:
            rotary = getattr(backbone.decoder, "rotary_emb", None)
            if rotary is None:
                raise UserError(f"kv_embedding: re-rotation needs a rotary embedding; {backbone.facts.architecture} "
                                "has none where expected (decoder.rotary_emb).")
            src = batch.position_ids.gather(1, index)  # (B, n) rotary positions of the re-routed tokens
            dst = torch.arange(n)[None, :]  # (1, n): positions 0..n-1
            probe = torch.zeros(1, dtype=backbone.model.dtype, device=rotary_device(rotary))
            src, dst = src.to(probe.device), dst.to(probe.device)
            per_type = isinstance(getattr(rotary, "rope_type", None), dict)  # Gemma 3: one RoPE per layer type
            types = sorted(set(backbone.model.config.get_text_config().layer_types)) if per_type else [None]
            rope = {}
            for t in types:  # one (cos, sin) pair per attention type: Gemma 3's local and global bases differ
                extra = {} if t is None else {"layer_type": t}
                rope[t] = (*rotary(probe, src, **extra), *rotary(probe, dst, **extra))  # (B, n, d) x2, (1, n, d) x2
        return Reroute(self.decoder_layers(backbone), float(self.params.bias), index, rope, weights, masses)

    def forward(self, backbone, batch, layers, attention: bool = False, trace: bool = False):
        masses = {} if trace else None  # prefix masses cost an extra softmax per layer: only when tracing
        cfg = self.reroute(backbone, batch, weights=attention, masses=masses)
        with attention_backend(backbone, self.backend(attention)):
            cap = run(backbone, batch, layers, attention=attention, **{KWARG: cfg})
        if masses is not None:
            B, T = batch.input_ids.shape
            zero = torch.zeros(B, backbone.facts.n_heads, T)
            cap.extras[PREFIX_MASS] = torch.stack(
                [masses.get(l, zero) for l in range(backbone.facts.n_layers)], dim=1)  # (B, L, H, T)
        return cap

    def trace_batch(self, backbone, batch, cap, trace) -> None:
        super().trace_batch(backbone, batch, cap, trace)
        mass = cap.extras.get(PREFIX_MASS)
        if mass is None:
            return
        for b in range(batch.input_ids.shape[0]):
            idx = batch.attention_mask[b].nonzero().squeeze(1)  # (T_b,) real tokens
            trace.add(PREFIX_MASS, [mass[b][:, :, idx].float().numpy()])  # (L, H, T_b)
