"""A built-in model as cache keys see it, read from its converted folder without loading its weights.

Looking a stored result up needs only the model's identity (and, for some entries, its layer count), not the
seconds of loading it. Kept out of `backbone.py` on purpose: every cache key's code version covers that module,
and this reader computes nothing that is stored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from analysis.core.paths import cache_root
from analysis.models.backbone import _builtin_folder, _torch_dtype, builtin, resolve_device


@dataclass(frozen=True)
class Described:
    """`identity` exactly as `load_backbone` gives it, the name asked for, the title and the decoder layers.
    `facts` is itself, so code that reads only `.identity` and `.facts.n_layers` / `.name` / `.title` (a key,
    `cache.auto_window(..., compute=False)`) takes it as it takes a Backbone."""

    identity: str
    name: str
    title: str
    n_layers: int

    @property
    def facts(self) -> Described:
        return self


def describe(name: str, *, device: str = "cpu", dtype: str = "float32") -> Described | None:
    """A built-in model already converted, on the CPU, described from its files; None when only a load can tell
    (not built in, not converted yet, or another device, where the placement decides the identity)."""
    name = str(name).strip()
    entry = builtin(name)
    if entry is None or resolve_device(device) != "cpu":
        return None
    _torch_dtype(dtype)  # an unknown dtype: the same sentence as load_backbone's
    _, tag, _ = entry.gguf(None)
    if not (cache_root() / "models" / f"{entry.folder_prefix}-{tag}" / "embedscope.json").is_file():
        return None  # not converted yet (the folder `_builtin_folder` converts into): describing never converts
    folder, identity = _builtin_folder(entry)
    config = json.loads(Path(folder, "config.json").read_text(encoding="utf-8"))
    config = config.get("text_config", config)  # what `_facts` reads (`get_text_config`)
    return Described(identity if dtype == "float32" else f"{identity}|{dtype}|cpu", name, entry.title,
                     int(config["num_hidden_layers"]))
