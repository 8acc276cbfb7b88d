"""Hostile model folders and weight files (issues 10, 23): a broken model folder (a config that is not an object,
zero heads, truncated weights, a pickle) and damaged or mismatched trained weights (compression systems,
Causal2Vec bridges, adapters) are one sentence naming the folder or file, in the library and on the command
line, before any work; no pickle is ever unpickled, and whole weights still load. Tiny random models only."""

# ruff: noqa: F811 -- pytest fixtures imported from hostile.py are named again as test arguments
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from analysis.core.errors import UserError
from hostile import (BROKEN, ITEM, _jsonl, broken_dirs, cache_dir, cli, one_error_line, one_sentence,  # noqa: F401
                     refused, short_tiny, short_tiny_dir, texts_file, tiny, tiny_dir, warm_imports)

pytestmark = pytest.mark.usefixtures("warm_imports")


# ==== broken model folders (library) ============================================================================
@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_model_folder_is_one_sentence(broken_dirs, name):
    from analysis.models.backbone import load_backbone

    with pytest.raises(UserError) as err:
        load_backbone(broken_dirs[name])
    one_sentence(str(err.value))
    assert BROKEN[name][1] in str(err.value)


def test_a_file_is_not_a_model_folder(tiny_dir):
    from analysis.models.backbone import load_backbone

    with pytest.raises(UserError) as err:
        load_backbone(str(Path(tiny_dir) / "config.json"))
    assert "is a file" in str(err.value) and "not found" not in str(err.value)


@pytest.mark.parametrize("name", list(BROKEN))
def test_cli_broken_model_folder_exits_2(capsys, tmp_path, broken_dirs, texts_file, name):
    one_error_line(*cli(capsys, "embed", "--method", "mean", "--input", texts_file, "--output", str(tmp_path / "o.npy"),
                 "--model", broken_dirs[name], "--no-cache"))


def test_cli_model_path_that_is_a_file(capsys, tmp_path, tiny_dir, texts_file):
    err = one_error_line(*cli(capsys, "embed", "--method", "mean", "--input", texts_file, "--output",
                       str(tmp_path / "o.npy"), "--model", str(Path(tiny_dir) / "config.json")))
    assert "is a file" in err


# ==== weight files made for a tiny model (issue 23) ====================================================
def _without_sha(folder: Path) -> None:
    """Drop the manifest's checksum, so the damaged file itself is what must be caught (a hand-made artefact)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.pop("weights_sha256", None)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _truncate(path: Path, keep: int = 200) -> None:
    path.write_bytes(path.read_bytes()[:keep])


@pytest.fixture(scope="module")
def weights(short_tiny, tmp_path_factory) -> dict[str, Path]:
    """Good and broken weight folders for the tiny model: compression systems, Causal2Vec bridges, adapters."""
    import torch

    from analysis.compression.system import METHOD, CompressionSystem, encoder_name
    from analysis.methods.causal2vec import Bridge
    from analysis.models.minilm import load_encoder
    from analysis.weights.artefacts import save_artefact

    root, out = tmp_path_factory.mktemp("weights"), {}
    compression = {"method": METHOD, "model_identity": short_tiny.identity, "encoder": encoder_name()}
    tensors = CompressionSystem(short_tiny).tensors()
    out["cc"] = save_artefact(root / "cc", tensors, compression)
    out["cc-truncated"] = save_artefact(root / "cc-truncated", tensors, compression)
    _truncate(out["cc-truncated"] / "weights.safetensors")
    _without_sha(out["cc-truncated"])
    wide = dict(tensors, **{"adapter.weight": torch.zeros(2 * short_tiny.facts.hidden_size, 384),
                            "adapter.bias": torch.zeros(2 * short_tiny.facts.hidden_size)})
    out["cc-wide"] = save_artefact(root / "cc-wide", wide, compression)  # the manifest names this very model
    out["cc-rank"] = save_artefact(root / "cc-rank", tensors, {**compression, "config": {"lora_rank": 10**7}})
    out["cc-list"] = save_artefact(root / "cc-list", tensors, compression)
    (out["cc-list"] / "manifest.json").write_text("[1, 2, 3]")
    out["cc-no-weights"] = save_artefact(root / "cc-no-weights", tensors, compression)
    (out["cc-no-weights"] / "weights.safetensors").unlink()

    enc = load_encoder()
    bridge = {"method": "causal2vec", "model_identity": short_tiny.identity, "encoder": enc.identity, "lora": None}

    def bridge_tensors(d):
        return {f"bridge.{k}": v for k, v in Bridge(enc.dim, d).state_dict().items()}

    out["br-wide"] = save_artefact(root / "br-wide", bridge_tensors(2 * short_tiny.facts.hidden_size), bridge)
    out["br-corrupt"] = save_artefact(root / "br-corrupt", bridge_tensors(short_tiny.facts.hidden_size), bridge)
    raw = bytearray((out["br-corrupt"] / "weights.safetensors").read_bytes())
    raw[8:24] = b"#" * 16  # the JSON header, overwritten
    (out["br-corrupt"] / "weights.safetensors").write_bytes(bytes(raw))
    _without_sha(out["br-corrupt"])

    config = json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]})
    for name in ("ad-pickle", "ad-corrupt", "ad-artefact"):
        (root / name).mkdir()
        (root / name / "adapter_config.json").write_text(config)
        out[name] = root / name

    class Payload:  # would run a command if it were ever unpickled
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with open(out["ad-pickle"] / "adapter_model.bin", "wb") as fh:
        pickle.dump({"base_model.model.q_proj.lora_A.weight": Payload()}, fh)
    (out["ad-corrupt"] / "adapter_model.safetensors").write_bytes(b"\x40" + b"\x00" * 7 + b"{not a header}")
    save_artefact(out["ad-artefact"], {"w": torch.zeros(4)}, {"method": "gircse", "model_identity": short_tiny.identity})
    _truncate(out["ad-artefact"] / "weights.safetensors", 40)
    _without_sha(out["ad-artefact"])
    return out


COMPRESS_MODEL_CASES = {  # name -> (argv after `compress-qa --model TINY --weights W`, weights, words)
    "positions-sentence-pools": (["--pools", "sentence"], "cc", "positions"),
    "positions-text": (["--pools", "text"], "cc", "positions"),
    "weights-truncated": ([], "cc-truncated", "damaged or truncated"),
    "weights-for-a-wider-model": ([], "cc-wide", "another size"),
    "manifest-rank-ten-million": ([], "cc-rank", "LoRA rank 10000000"),
    "manifest-a-list": ([], "cc-list", "not a manifest"),
    "no-weights-file": ([], "cc-no-weights", "no weights.safetensors"),
}


@pytest.mark.parametrize("case", list(COMPRESS_MODEL_CASES))
def test_compress_qa_weights_and_contexts_against_the_model(capfd, cache_dir, tmp_path, short_tiny_dir, weights, case):
    argv, folder, words = COMPRESS_MODEL_CASES[case]
    long = dict(ITEM, context=[f"Fact number {i} is here." for i in range(200)])  # 200 pools > 128 positions
    data = _jsonl(tmp_path, "items.jsonl", [long if case.startswith("positions") else ITEM])
    message = refused(capfd, cache_dir, "compress-qa", "--model", short_tiny_dir, "--data", data, "--weights",
                      str(weights[folder]), *argv, keep=(weights[folder],))
    assert words in message, message
    if folder != "cc":
        assert str(weights[folder]) in message  # the sentence names the folder or file


# ==== weights reached through a method's parameter (embed) ======================================================
WEIGHT_CASES = {  # name -> (method, parameter, weights folder, words)
    "bridge-for-a-wider-model": ("causal2vec", "bridge", "br-wide", "another size"),
    "bridge-corrupt": ("causal2vec", "bridge", "br-corrupt", "damaged or truncated"),
    "adapter-pickle": ("soft_tokens", "adapter", "ad-pickle", "pickle"),
    "adapter-corrupt-safetensors": ("soft_tokens", "adapter", "ad-corrupt", "damaged or truncated"),
    "adapter-artefact-truncated": ("soft_tokens", "adapter", "ad-artefact", "damaged or truncated"),
}


@pytest.mark.parametrize("case", list(WEIGHT_CASES))
def test_damaged_or_mismatched_weights_are_one_sentence_naming_the_file(capfd, cache_dir, tmp_path, short_tiny_dir,
                                                                         weights, case):
    method, key, folder, words = WEIGHT_CASES[case]
    texts = tmp_path / "texts.txt"
    texts.write_text("A cat sat on the mat.\nStocks fell sharply.\n")
    out = tmp_path / "o.npy"
    message = refused(capfd, cache_dir, "embed", "--method", method, "--param", f"{key}={weights[folder]}",
                      "--input", str(texts), "--output", str(out), "--model", short_tiny_dir, keep=(weights[folder],))
    assert words in message and str(weights[folder]) in message, message
    assert not out.exists()


def test_the_pickle_is_never_unpickled(weights, capfd, monkeypatch):
    """Refused by its name: no loader is ever handed the file (unpickling it would run the payload)."""
    import torch

    from analysis.core.errors import UserError
    from analysis.methods import get_method

    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle.load was called"))
    with pytest.raises(UserError, match="pickle"):
        get_method("soft_tokens", adapter=str(weights["ad-pickle"]))
    assert "pwned" not in capfd.readouterr().out


def test_good_weights_still_load(short_tiny, weights):
    """The checks refuse only what is wrong: the same artefact, whole, loads and answers."""
    from analysis.compression.system import CompressionSystem

    system = CompressionSystem.from_artefact(short_tiny, weights["cc"])
    assert len(system.answer([ITEM], "sentence")) == 1


def test_safetensors_header_checks(tmp_path):
    import torch
    from safetensors.torch import save_file

    from analysis.core.errors import UserError
    from analysis.weights import safefile

    good = tmp_path / "w.safetensors"
    save_file({"a": torch.zeros(3, 4)}, str(good))
    assert safefile.read_shapes(good) == {"a": ("F32", (3, 4))}
    safefile.check_shapes(good, safefile.read_shapes(good), {"a": (3, None)})
    bad = tmp_path / "bad.safetensors"
    for data, words in [(b"", "no header"), (good.read_bytes()[:-4], "describes"),
                        (good.read_bytes()[:20], "ends inside its header"), (b"\xff" * 8 + b"{}", "no header")]:
        bad.write_bytes(data)
        with pytest.raises(UserError, match=words):
            safefile.read_shapes(bad)
    with pytest.raises(UserError, match="another size"):
        safefile.check_shapes(good, safefile.read_shapes(good), {"a": (4, None)})
