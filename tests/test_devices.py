"""Bigger hardware on this CPU: bfloat16 within tolerance of float32, and a tiny model dispatched by accelerate with
a forced CPU/disk offload map gives the same hidden states and the same interventions (hooks move tensors)."""

import copy

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.core.forward import run
from analysis.methods import get_method
from analysis.models.tiny import tiny_backbone

TEXTS = ["The quick brown fox jumps over the lazy dog. A bank by the river was steep.", "Hello world!"]
METHODS = [("mean", {}), ("prompteol", {}), ("kv_embedding", {"layers": "1,2"}),
           ("token_prepending", {"exit": "3"}), ("htp", {"exit": "3", "layer": -1}), ("echo", {})]


def _cos(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("arch", ["llama", "gemma3_text"])
def test_bfloat16_is_within_tolerance_of_float32(arch):
    f32 = tiny_backbone(arch, seed=3)
    bf16 = copy.copy(f32)
    bf16.model = copy.deepcopy(f32.model).to(torch.bfloat16)
    for name, params in METHODS:
        m = get_method(name, **params)
        a, b = m.encode(f32, TEXTS), m.encode(bf16, TEXTS)
        assert b.dtype == np.float32 and np.isfinite(b).all()
        assert _cos(a, b).min() > 0.98, name  # bfloat16 keeps ~3 significant digits per value
        assert np.abs(a - b).max() > 0  # and it really ran in bfloat16


def test_offloaded_model_gives_the_same_states_and_interventions(tmp_path):
    from accelerate import dispatch_model

    ref = tiny_backbone("llama", seed=4)
    split = copy.copy(ref)
    split.model = copy.deepcopy(ref.model)
    device_map = {"model.embed_tokens": "cpu", "model.layers.0": "cpu", "model.layers.1": "disk",
                  "model.layers.2": "cpu", "model.layers.3": "disk", "model.norm": "cpu", "model.rotary_emb": "cpu",
                  "lm_head": "cpu"}
    split.model = dispatch_model(split.model, device_map=device_map, main_device="cpu",
                                 offload_dir=str(tmp_path), offload_buffers=False)
    assert split.layers[1].self_attn.q_proj.weight.device.type == "meta"  # really offloaded to disk
    m = get_method("prompteol")
    batch = m.collate(ref, m.prepare(ref, TEXTS), "right")
    with torch.inference_mode():
        a, b = run(ref, batch, "all"), run(split, batch, "all")
    for k in a.hidden:
        torch.testing.assert_close(b.hidden[k], a.hidden[k], atol=1e-6, rtol=1e-6)
    for name, params in METHODS:
        mm = get_method(name, **params)
        np.testing.assert_allclose(mm.encode(split, TEXTS), mm.encode(ref, TEXTS), atol=1e-5, err_msg=name)


def test_unknown_device_or_dtype_is_one_sentence():
    from analysis.models.backbone import load_backbone, resolve_device

    with pytest.raises(UserError, match="Unknown device"):
        load_backbone("default", device="tpu")
    with pytest.raises(UserError, match="Unknown dtype"):
        load_backbone("default", dtype="int8")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="not available"):
            resolve_device("cuda")
    assert resolve_device("auto") in ("cpu", "cuda", "mps")
