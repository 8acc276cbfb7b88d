"""One forward pass with named captures, early exit, and hooks that always remove themselves.

Hidden states are captured with hooks instead of `output_hidden_states`, for two reasons: a readout at an
early layer can stop the pass there (TP/HTP early exit, ID trajectories of the first layers), and the
same code works for every decoder whose layers live in `model.model.layers` (Llama, Qwen2/3, Mistral,
Gemma, ...). Convention: hidden state 0 = embedding output (what enters layer 0), hidden state l+1 = output
of decoder layer l, hidden state L = output of the last layer *after* the final norm (as HF reports it).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch

from analysis.core.errors import UserError
from analysis.core.tokens import Batch


class LayerError(UserError, ValueError):
    """A layer index the model does not have: a UserError for the app and the command line, and still a
    ValueError for callers that caught that before."""


class _StopForward(Exception):
    """Raised by a hook once every requested layer is captured."""


@dataclass
class Captured:
    hidden: dict[int, torch.Tensor] = field(default_factory=dict)  # hidden-state index -> (B, T, d)
    attention: dict[int, torch.Tensor] = field(default_factory=dict)  # decoder layer -> (B, H, T, S)
    extras: dict[str, torch.Tensor] = field(default_factory=dict)  # method-specific captures, named like the trace's


def resolve_layer(n_layers: int, layer: int) -> int:
    """Map a hidden-state index (negative allowed, -1 = final) to 0..n_layers; raise on out of range."""
    if not -(n_layers + 1) <= layer <= n_layers:
        raise LayerError(f"Layer {layer} is out of range: this model has hidden states 0..{n_layers} "
                         f"(or -{n_layers + 1}..-1 counted from the end).")
    return layer % (n_layers + 1)


@contextlib.contextmanager
def hooks(*registrations):
    """Register hooks and remove them on exit, even after an exception.

    Each registration is a callable returning a RemovableHandle, e.g.
    `lambda: layer.register_forward_pre_hook(fn, with_kwargs=True)`.
    """
    handles = []
    try:
        for register in registrations:
            handles.append(register())
        yield handles
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def attention_backend(backbone, name: str):
    """Temporarily switch the attention implementation ("eager" for attention maps, or a registered one)."""
    model = backbone.model
    previous = model.config._attn_implementation
    if previous == name:
        yield
        return
    with backbone.lock:
        model.set_attn_implementation(name)
        try:
            yield
        finally:
            model.set_attn_implementation(previous)


def input_device(backbone) -> torch.device:
    """Where the model's inputs must go: the input embeddings' device (the first real one if offloaded)."""
    w = backbone.input_embeddings.weight
    if w.device.type != "meta":
        return w.device
    hook = getattr(backbone.input_embeddings, "_hf_hook", None)  # accelerate's offload hook knows its device
    dev = getattr(hook, "execution_device", None)
    return torch.device(dev) if dev is not None else torch.device("cpu")


def _first_tensor(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def run(
    backbone,
    batch: Batch | None,
    layers,
    *,
    attention: bool = False,
    inputs_embeds: torch.Tensor | None = None,
    **model_kwargs,
) -> Captured:
    """Run the decoder once and capture the requested hidden states (and attention weights).

    Args:
        backbone: a loaded `Backbone`.
        batch: padded inputs; its input_ids are replaced by `inputs_embeds` when that is given.
        layers: hidden-state indices to capture (negative allowed), or "all".
        attention: also capture per-layer attention weights (B, H, T, S). Needs a backend that returns them
            (wrap the call in `attention_backend(backbone, "eager")`); sdpa returns none.
        **model_kwargs: passed to the decoder's forward and so to every attention function
            (this is how the KV re-routing gets its per-call configuration).
    """
    L = backbone.facts.n_layers
    wanted = set(range(L + 1)) if layers == "all" else {resolve_layer(L, l) for l in layers}
    top = max(wanted)
    cap = Captured()
    decoder = backbone.decoder
    blocks = decoder.layers

    def grab_input(module, args, kwargs):
        h = args[0] if args else kwargs["hidden_states"]
        if 0 in wanted:
            cap.hidden[0] = h
        if top == 0:
            raise _StopForward

    def grab_output(i):
        def hook(module, args, output):
            if i + 1 in wanted and i + 1 < L:
                cap.hidden[i + 1] = _first_tensor(output)
            if i + 1 == top and top < L:
                raise _StopForward

        return hook

    def grab_attention(i):
        def hook(module, args, output):
            if isinstance(output, (tuple, list)) and len(output) > 1 and output[1] is not None:
                cap.attention[i] = output[1]

        return hook

    def grab_norm(module, args, output):
        cap.hidden[L] = output

    regs = [lambda: blocks[0].register_forward_pre_hook(grab_input, with_kwargs=True)]
    regs += [lambda i=i: blocks[i].register_forward_hook(grab_output(i)) for i in range(min(top, L))]
    if attention:
        regs += [lambda i=i: blocks[i].self_attn.register_forward_hook(grab_attention(i)) for i in range(min(top, L))]
    if L in wanted:
        regs.append(lambda: decoder.norm.register_forward_hook(grab_norm))

    inputs = batch.model_inputs() if batch is not None else {}
    if inputs_embeds is not None:
        inputs.pop("input_ids", None)
        inputs["inputs_embeds"] = inputs_embeds
    device = input_device(backbone)
    inputs = {k: v.to(device) for k, v in inputs.items()}  # no-op on the CPU; a GPU / split model gets its inputs
    model_kwargs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in model_kwargs.items()}
    with hooks(*regs):
        try:
            decoder(**inputs, use_cache=False, **model_kwargs)
        except _StopForward:
            pass
    if any(h.device.type != "cpu" for h in cap.hidden.values()):  # readouts, pooling and numpy live on the CPU
        cap.hidden = {k: h.to("cpu") for k, h in cap.hidden.items()}
        cap.attention = {k: a.to("cpu") for k, a in cap.attention.items()}
    missing = wanted - cap.hidden.keys()
    if missing:
        raise RuntimeError(f"hidden states {sorted(missing)} were not captured; is this a decoder-only model?")
    return cap
