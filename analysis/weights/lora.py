"""LoRA on a copy of the decoder, through `peft` (no hand-written LoRA), saved as plain tensors in an artefact.

    model = lora_copy(backbone, rank=8)                 # deepcopy + peft LoRA layers, only lora_* trainable
    tensors = lora_tensors(model)                       # {"lora.<name>": tensor} for save_artefact
    tuned = merged_backbone(backbone, tensors, cfg, tag)  # a new Backbone with the update merged (inference)

The copy keeps the shared base model untouched; merging makes the result an ordinary decoder, so hooks,
attention functions and traces work unchanged and inference costs nothing extra.
"""

from __future__ import annotations

import copy
import threading
import weakref

from analysis.core.errors import UserError
from analysis.models.backbone import Backbone

TARGETS = ("q_proj", "v_proj")  # LoRA paper's default; Causal2Vec fine-tunes the attention projections too
_memo: "weakref.WeakKeyDictionary[Backbone, dict[str, Backbone]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _peft():
    try:
        import peft  # lazy: keeps peft, torch, transformers off the pages' and the command line's start
    except ImportError as err:  # pragma: no cover - peft is in requirements.txt
        raise UserError("LoRA needs the peft package: pip install 'peft>=0.17'.") from err
    return peft


def lora_config(rank: int, alpha: float | None = None, targets=TARGETS, dropout: float = 0.0,
                layers: list[int] | None = None) -> dict:
    """JSON-able LoRA settings (stored in the artefact manifest). `layers`: decoder layers to adapt (all if None)."""
    cfg = {"rank": int(rank), "alpha": float(alpha if alpha is not None else 2 * rank), "targets": list(targets),
           "dropout": float(dropout)}
    if layers is not None:
        cfg["layers"] = [int(i) for i in layers]
    return cfg


def add_lora(model, cfg: dict):
    """Inject LoRA layers into `model` in place; freezes everything else. Returns the model."""
    peft = _peft()
    config = peft.LoraConfig(r=cfg["rank"], lora_alpha=cfg["alpha"], target_modules=list(cfg["targets"]),
                             lora_dropout=cfg["dropout"], bias="none", layers_to_transform=cfg.get("layers"))
    model = peft.inject_adapter_in_model(config, model)
    for name, p in model.named_parameters():
        p.requires_grad_("lora_" in name)
    return model


def lora_copy(backbone: Backbone, cfg: dict) -> Backbone:
    """A Backbone over a copy of the model with (trainable) LoRA layers; the original is not touched."""
    with backbone.lock:
        model = copy.deepcopy(backbone.model)
    add_lora(model, cfg)
    return Backbone(model, backbone.tokenizer, backbone.facts, f"{backbone.identity}+lora-training")


def lora_tensors(model) -> dict:
    """{"lora.<parameter name>": tensor} of every LoRA weight."""
    return {f"lora.{n}": p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}


def shared_copy(model):
    """A copy of `model` with new modules over the original's own parameter and buffer tensors: hooks and LoRA
    layers put on the copy never reach the original, and the weights are not held twice (a whole copy was the
    540 MB that put soft tokens with an adapter over 2 GiB on 4,096-token documents, issue 34). A merge writes into
    weights in place, so whatever a build merges into must first be made the copy's own (`own_lora_bases`)."""
    return copy.deepcopy(model, memo={id(t): t for t in (*model.parameters(), *model.buffers())})


def own_lora_bases(model):
    """`model` with every LoRA-wrapped layer's base weight replaced by its own copy: merging adds the update in
    place, and on a `shared_copy` the base weight is the original model's."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    peft = _peft()
    for module in model.modules():
        if isinstance(module, peft.tuners.lora.LoraLayer):
            base = module.get_base_layer()
            base.weight = torch.nn.Parameter(base.weight.detach().clone(), requires_grad=False)
    return model


def merged_copy(backbone: Backbone, key: str, build, suffix: str) -> Backbone:
    """The one memo of merged decoder copies (Causal2Vec's LoRA, GIRCSE adapters): a Backbone over
    `build(shared_copy(backbone.model))`, identity `<identity>+<suffix>`, made once per (backbone, key) and freed
    with the backbone (weak keys). `build` returns the merged model, calling `own_lora_bases` before it merges; it
    runs under the lock, so two pages asking for the same adapter at once build it once."""
    with _lock:
        done = _memo.get(backbone, {}).get(key)
        if done is not None:
            return done
        with backbone.lock:  # nobody hooks the base model while we copy it
            model = shared_copy(backbone.model)
        model = build(model)
        model.eval().requires_grad_(False)
        tuned = Backbone(model, backbone.tokenizer, backbone.facts, f"{backbone.identity}+{suffix}")
        _memo.setdefault(backbone, {})[key] = tuned
        return tuned


def merged_backbone(backbone: Backbone, tensors: dict, cfg: dict, tag: str) -> Backbone:
    """A new Backbone: a copy of `backbone.model` with the LoRA update in `tensors` merged; memoised per tag."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    def build(model):
        peft = _peft()
        add_lora(model, cfg)
        params = dict(model.named_parameters())
        wanted = {k[len("lora."):]: v for k, v in tensors.items() if k.startswith("lora.")}
        if set(wanted) != {n for n in params if "lora_" in n}:
            raise UserError(f"The LoRA weights do not fit {backbone.facts.name} (different layers or names).")
        with torch.no_grad():
            for n, v in wanted.items():
                if params[n].shape != v.shape:
                    raise UserError(f"The LoRA weight {n} has shape {tuple(v.shape)}, the model needs "
                                    f"{tuple(params[n].shape)}.")
                params[n].copy_(v)
        for module in own_lora_bases(model).modules():
            if isinstance(module, peft.tuners.lora.LoraLayer):
                module.merge()
        return model

    return merged_copy(backbone, tag, build, tag)
