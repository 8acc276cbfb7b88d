"""Shared fixtures: tiny random decoders of several architectures, and the real default model (once)."""

import os

# MKL may change its thread count with the machine's load (MKL_DYNAMIC), and with it the order of float
# reductions; the bit-for-bit tests compare two passes in one process, so pin it before torch is imported.
os.environ.setdefault("MKL_DYNAMIC", "FALSE")
# `--dtype auto` would run a method in bfloat16 on a CPU with bfloat16 units once its model's dtype record allows it:
# tests compare against float32, so they behave as a machine without the units unless one forces them on itself
os.environ.setdefault("EMBEDSCOPE_BF16", "0")

import pytest  # noqa: E402

from analysis.models.tiny import ARCHITECTURES, tiny_backbone  # noqa: E402

# Tests write their own cache entries (and the converted default model) under the project's cache, unless
# the caller points EMBEDSCOPE_CACHE elsewhere; tests that need isolation use tmp_path explicitly.


# Parameters a method needs on the tiny random models: Causal2Vec's shipped bridge was trained for the default model
# (and refuses any other), so the generic tests use its seeded untrained bridge.
TINY_PARAMS = {"causal2vec": {"bridge": "untrained"}}


def tiny_method(name: str, **params):
    """get_method(name) with the parameters the tiny models need (see TINY_PARAMS)."""
    from analysis.methods import get_method

    return get_method(name, **{**TINY_PARAMS.get(name, {}), **params})


@pytest.fixture(scope="session", params=ARCHITECTURES)
def tiny(request):
    """A tiny random backbone, once per architecture (llama, qwen2, qwen3, mistral, gemma)."""
    return tiny_backbone(request.param)


@pytest.fixture(scope="session")
def tiny_llama():
    return tiny_backbone("llama")


@pytest.fixture(scope="session")
def real():
    """The real default model (SmolLM2-135M-Instruct); converted once into the cache (~30 s the first time)."""
    from analysis import load_backbone

    return load_backbone()


@pytest.fixture(scope="session")
def tiny_model_folder(tmp_path_factory):
    """A tiny random Llama (32-token limit) saved as a Hugging Face folder, for commands run with --model PATH."""
    folder = tmp_path_factory.mktemp("tiny-llama-folder")
    bb = tiny_backbone("llama", max_length=32)
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory):
    """A tiny random Llama saved as a local model folder with a 128-token limit: enough for the app's texts, for
    pages opened on a model chosen as a folder."""
    bb = tiny_backbone("llama", max_length=128)
    folder = tmp_path_factory.mktemp("tiny_llama")
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return folder


def stsb_dev_or_skip():
    from analysis.data.corpora import shared_stsb

    path = shared_stsb("dev")
    if path is None:
        pytest.skip("STS-B dev not found at ../shared/data/stsbenchmark (development data, not shipped with the repo)")
    return path


@pytest.fixture(autouse=True)
def _restore_main_module():
    """streamlit's AppTest runs each script as sys.modules["__main__"] and leaves it there; a later test that
    starts processes with the "spawn" method would then re-run that script in every child. Put it back."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


def run_cli(capsys, *argv):
    """(exit code, parsed JSON output or None, stderr) of one command line run in this process."""
    import json

    from cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err



@pytest.fixture
def hash_encoder(monkeypatch):
    """The hashed-trigram stand-in for MiniLM behind every Causal2Vec path, with no bridge memo of another encoder."""
    from analysis.methods import causal2vec as c2v_module
    from analysis.models import minilm
    from toys import HashEncoder

    enc = HashEncoder()
    monkeypatch.setattr(minilm, "load_encoder", lambda: enc)
    c2v_module._memo.clear()  # bridges loaded with the real encoder must not serve this one
    yield enc
    c2v_module._memo.clear()


@pytest.fixture
def artefacts(tmp_path, monkeypatch):
    """An empty stand-in for analysis/artefacts/: every shipped-weights lookup and --ship write goes there."""
    from analysis.weights import artefacts as module

    root = tmp_path / "artefacts"
    root.mkdir()
    monkeypatch.setattr(module, "ARTEFACTS", root)
    return root
