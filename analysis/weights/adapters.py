"""Apply a trained PEFT adapter (e.g. a GIRCSE LoRA) from a local folder.

The adapter is merged into a *copy* of the model (`merge_and_unload`), so the result is an ordinary
decoder: hooks, attention functions and traces work unchanged, and the shared base model is never touched.
The new backbone's identity adds a hash of the adapter's files, so cached results of the frozen model and
of every adapter version stay apart. Loading is memoised per (backbone, adapter content).

    tuned = load_adapter(backbone, "~/gircse-lora")   # Backbone
    tuned = resolve_adapter(backbone, "shipped")       # the adapter this repository trained for the model, if any

`adapter` parameters take "shipped" (the GIRCSE adapter trained by `python -m analysis train gircse` and
committed under analysis/artefacts/gircse/<model>/; models without one stay frozen), "causal-eos" (its fair
baseline, trained by the same command with `--objective causal-eos` and committed beside it under
baselines/causal-eos/; a model without one is refused, never silently frozen), "bidirectional-avg" (its other fair
baseline, `--objective bidirectional-avg`, under ablations/bidirectional-avg/, refused likewise), "none" (frozen) or a
folder. `trained_objective` says which objective trained an adapter (how `soft_tokens` must read it).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from pathlib import Path

from analysis.core.errors import UserError
from analysis.models.backbone import Backbone
from analysis.weights.artefacts import (
    load_artefact,
    read_manifest,
    shipped_dir,
    shipped_root,
)
from analysis.weights.lora import merged_copy, own_lora_bases
from analysis.weights.safefile import read_shapes

CONFIG = "adapter_config.json"
WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin", "weights.safetensors")  # peft's, or our artefact's
SAFE, PICKLE = WEIGHTS[:2]  # peft's two formats: only the first is ever read
MANIFEST = "manifest.json"  # an artefact of `python -m analysis train gircse` (analysis.weights.artefacts)
_SPEC = re.compile(r"^(?P<path>.+)@(?P<fp>[0-9a-f]{16})$")  # "folder@fingerprint", see adapter_spec
SHIPPED, NONE, CAUSAL_EOS, BIDIRECTIONAL_AVG = "shipped", "none", "causal-eos", "bidirectional-avg"
SYSTEM = "gircse"  # the trained system whose shipped folders hold these adapters
# The shipped adapters an `adapter` parameter names by name, and where each sits below the model's folder of shipped
# GIRCSE weights (analysis/artefacts/gircse/<model>/): the GIRCSE adapter itself, and its fair baseline beside it
# (analysis.training.gircse.ship_place sends each trained run to its place). Bidirectional-Avg sits with the ablations,
# where `ship_place` puts every objective but the two the paper's main comparison reads first.
PLACES = {SHIPPED: "", CAUSAL_EOS: "baselines/causal-eos", BIDIRECTIONAL_AVG: "ablations/bidirectional-avg"}
TRAIN = {CAUSAL_EOS: ("Causal-EOS baseline", "--objective causal-eos"),
         BIDIRECTIONAL_AVG: ("Bidirectional-Avg baseline", "--objective bidirectional-avg")}  # how a named one trains


def adapter_folder(path: str) -> Path:
    """The adapter folder named by `path` (a folder or a spec from `adapter_spec`), checked; else UserError."""
    m = _SPEC.match(str(path).strip())
    folder = Path(m["path"] if m else str(path).strip()).expanduser()
    if not str(path).strip():
        raise UserError("No adapter folder was given.")
    if not folder.is_dir():
        raise UserError(f"Adapter folder '{folder}' does not exist.")
    if not (folder / CONFIG).is_file():
        raise UserError(f"'{folder}' is not a PEFT adapter folder: it has no {CONFIG} (save one with "
                        "peft's `save_pretrained`).")
    try:
        config = json.loads((folder / CONFIG).read_text())
    except (OSError, ValueError) as err:
        raise UserError(f"'{folder}/{CONFIG}' could not be read as JSON: {err}") from err
    if not isinstance(config, dict) or "peft_type" not in config:
        raise UserError(f"'{folder}/{CONFIG}' has no peft_type: not a PEFT adapter configuration.")
    if not any((folder / w).is_file() for w in WEIGHTS):
        raise UserError(f"'{folder}' has an adapter configuration but no weights ({' or '.join(WEIGHTS)}).")
    if (folder / PICKLE).is_file() and not (folder / SAFE).is_file():
        raise UserError(f"'{folder / PICKLE}' is a pickle, which is never loaded (unpickling can run code): save the "
                        f"adapter as {SAFE} (peft's save_pretrained does by default).")
    if (folder / SAFE).is_file():
        read_shapes(folder / SAFE)  # a damaged file is one sentence naming it, before peft reads it
    return folder.resolve()


def adapter_fingerprint(folder: Path) -> str:
    """sha256 (16 hex digits) of the configuration and the weight files' bytes: LoRA files are small."""
    h = hashlib.sha256()
    for name in (CONFIG, *WEIGHTS, MANIFEST):
        f = folder / name
        if f.is_file():
            h.update(name.encode())
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()[:16]


def shipped_folder(facts, name: str = SHIPPED) -> Path | None:
    """The adapter this repository ships under `name` ("shipped" or "causal-eos") for the model described by
    `facts`, or None."""
    folder = shipped_dir(SYSTEM, facts) / PLACES[name]
    return folder if (folder / CONFIG).is_file() else None


def _shipped_fingerprint(name: str) -> str:
    """One fingerprint over every model's shipped adapter `name`: cache keys change whenever one is retrained."""
    h = hashlib.sha256()
    for model in sorted(shipped_root(SYSTEM).glob("*")):
        folder = model / PLACES[name]
        if (folder / CONFIG).is_file():
            h.update(f"{model.name}:{adapter_fingerprint(folder)};".encode())
    return h.hexdigest()[:16]


def adapter_spec(path: str) -> str:
    """Canonical form of an `adapter` parameter, what cache keys record: "none" (also for ""), "shipped@<digest
    of the shipped adapters>" (likewise "causal-eos@..."), or "absolute-folder@fingerprint" for a folder (or an
    older spec of it)."""
    value = str(path).strip()
    if value.lower() in ("", NONE):
        return NONE
    for name in PLACES:
        if value == name or value.startswith(name + "@"):
            return f"{name}@{_shipped_fingerprint(name)}"
    folder = adapter_folder(path)
    return f"{folder}@{adapter_fingerprint(folder)}"


def resolve_adapter(backbone: Backbone, adapter: str) -> Backbone:
    """The backbone an `adapter` parameter asks for: the same object for "none" (and for "shipped" on a model
    without a shipped adapter), else a merged copy (`load_adapter`, memoised).

    Raises:
        UserError: "causal-eos" on a model that has no shipped baseline (the frozen model in its place would be
            read as the baseline)."""
    spec = adapter_spec(adapter)
    if spec == NONE:
        return backbone
    name = spec.split("@", 1)[0]
    if name in PLACES:
        folder = shipped_folder(backbone.facts, name)
        if folder is not None:
            return load_adapter(backbone, str(folder))
        if name == SHIPPED:
            return backbone
        what, flags = TRAIN[name]
        raise UserError(f"No {what} is shipped for {backbone.facts.name}: train one with `python -m analysis train "
                        f"gircse {flags} --ship`, or choose adapter=none.")
    return load_adapter(backbone, spec)


def trained_objective(adapter: str) -> str:
    """The objective that trained the adapter an `adapter` parameter (or its spec) names, as its manifest records it
    ("icr", "causal-eos", "bidirectional-avg", ...); "" for the frozen model, a shipped name not shipped here, or a
    PEFT folder trained elsewhere (no manifest). A shipped name answers for every model at once: its place holds one
    objective on all of them (`analysis.training.gircse.ship_place`)."""
    value = str(adapter).strip()
    if value.lower() in ("", NONE):
        return ""
    name = value.split("@", 1)[0]
    if name in PLACES:
        return {SHIPPED: "icr"}.get(name, name)
    folder = adapter_folder(value)
    if not (folder / MANIFEST).is_file():
        return ""
    hp = read_manifest(folder).get("hyperparameters") or {}
    return str(hp.get("objective", hp.get("loss", "")))


# Warnings peft and transformers raise while an adapter is merged that say nothing to a user of this tool: the
# config's base-model path is renamed to the model folder we gave it, and peft asks a deprecated property. A page
# showed both as yellow warnings above every soft-token figure once generation went through the cache.
LIBRARY_NOISE = ((r"The PEFT config's `base_model_name_or_path` was renamed", UserWarning),
                 (r"`is_gradient_checkpointing` is deprecated", FutureWarning))


def load_adapter(backbone: Backbone, path: str) -> Backbone:
    """A new Backbone whose model is a copy of `backbone.model` with the adapter in `path` merged.

    Raises:
        UserError: the folder is not a PEFT adapter, or it does not fit this model.
    """
    folder = adapter_folder(path)
    fingerprint = adapter_fingerprint(folder)

    def build(model):
        from peft import PeftModel  # lazy: keeps peft, torch, transformers off the pages' and the command line's start

        with warnings.catch_warnings():
            for message, category in LIBRARY_NOISE:
                warnings.filterwarnings("ignore", message=message, category=category)
            return _merge(model, PeftModel)

    def _merge(model, PeftModel):
        try:
            if (folder / MANIFEST).is_file():  # trained here: check it was trained for this very model
                return _artefact_model(model, folder, backbone.identity)
            peft_model = PeftModel.from_pretrained(model, str(folder), is_trainable=False)
            return own_lora_bases(peft_model).merge_and_unload()
        except UserError:
            raise
        except (OSError, ValueError, KeyError, RuntimeError, AttributeError, TypeError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(f"The adapter in '{folder}' does not fit {backbone.facts.name}: {first}") from err

    return merged_copy(backbone, f"{folder}@{fingerprint}", build, f"adapter:{fingerprint}")


def _artefact_model(model, folder: Path, identity: str):
    """Merge an artefact adapter (weights.safetensors + manifest.json + adapter_config.json) into `model`,
    after checking the manifest names this model (one UserError sentence otherwise)."""
    # lazy: keeps peft, torch, transformers off the pages' and the command line's start
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

    tensors, _ = load_artefact(folder, method="gircse", model_identity=identity)
    config = LoraConfig.from_pretrained(str(folder))
    peft_model = get_peft_model(model, config)
    result = set_peft_model_state_dict(peft_model, tensors)
    if getattr(result, "unexpected_keys", None):
        raise ValueError(f"unexpected adapter weights {result.unexpected_keys[:3]}")
    return own_lora_bases(peft_model).merge_and_unload()
