"""Sliding-window layers (tiny Gemma 3 with a window far shorter than the inputs): attention maps, KV-Embedding's
re-routed prefix and TP/HTP placeholders behave as documented; disabled interventions stay exact."""

import numpy as np
import pytest
import torch

from analysis.core.forward import attention_backend, run
from analysis.methods import get_method
from analysis.models.tiny import TINY_SLIDING_WINDOW, tiny_backbone

W = TINY_SLIDING_WINDOW
TEXTS = ["The quick brown fox jumps over the lazy dog. A bank by the river was steep; the bank raised its rates.",
         "Hello world! Numbers 0123456789."]


@pytest.fixture(scope="module")
def gemma3():
    bb = tiny_backbone("gemma3_text", n_layers=4)
    types = bb.model.config.layer_types
    assert types.count("sliding_attention") == 3 and types[3] == "full_attention"
    return bb


def batch_for(bb, m, texts=TEXTS):
    return m.collate(bb, m.prepare(bb, texts), "right")


def test_inputs_are_longer_than_the_window(gemma3):
    batch = batch_for(gemma3, get_method("prompteol"))
    assert batch.attention_mask.sum(1).min() > 2 * W  # every test below really exercises the window


def test_eager_maps_respect_the_window_and_match_sdpa(gemma3):
    """Vanilla: eager attention is zero beyond the window in sliding layers (not in the global one), and the
    hidden states of eager and sdpa agree."""
    m = get_method("prompteol")
    batch = batch_for(gemma3, m)
    with torch.inference_mode():
        sdpa = run(gemma3, batch, "all")
        with attention_backend(gemma3, "eager"):
            eager = run(gemma3, batch, "all", attention=True)
    real = batch.attention_mask.bool()  # (B, T): a pad query whose window holds only pads is undefined in both
    for k in sdpa.hidden:
        torch.testing.assert_close(eager.hidden[k][real], sdpa.hidden[k][real], atol=1e-5, rtol=1e-5)
    T = batch.input_ids.shape[1]
    q, k = torch.arange(T)[:, None], torch.arange(T)[None, :]
    outside = (k <= q - W)  # (T, T): keys further back than the window
    for layer, a in eager.attention.items():
        far = a[0][:, outside].abs().max()  # row 0 has no padding
        if gemma3.model.config.layer_types[layer] == "sliding_attention":
            assert far == 0, f"decoder layer {layer} attends beyond its window"
        else:
            assert far > 1e-3, "the global layer should see the whole sequence"


def test_rerouted_prefix_is_seen_by_every_query_in_sliding_layers(gemma3):
    """The documented choice: the re-routed pair is a column every query reads, also in sliding layers and also
    for tokens much further than the window from the final token, while in-sequence keys keep the window."""
    kv = get_method("kv_embedding", layers="0,1,2,3", bias=1.0)
    batch = batch_for(gemma3, kv, TEXTS[:1])
    with torch.inference_mode(), attention_backend(gemma3, "eager"):
        cap = kv.forward(gemma3, batch, "all", attention=True)
    T = batch.input_ids.shape[1]
    q, k = torch.arange(T)[:, None], torch.arange(T)[None, :]
    outside = (k <= q - W)
    for layer, a in cap.attention.items():  # (1, H, T, 1 + T): the prefix column first
        prefix, seq = a[0, :, :, 0], a[0, :, :, 1:]
        assert (prefix > 0).all(), f"decoder layer {layer}: some query cannot see the re-routed pair"
        assert torch.allclose(a[0].sum(-1), torch.ones(()), atol=1e-5)
        if gemma3.model.config.layer_types[layer] == "sliding_attention":
            assert seq[:, outside].abs().max() == 0
    # the eager maps come from the same computation as the sdpa path
    with torch.inference_mode():
        fast = kv.forward(gemma3, batch, "all")
    for h in fast.hidden:
        torch.testing.assert_close(cap.hidden[h], fast.hidden[h], atol=1e-5, rtol=1e-5)  # one text: no padding


@pytest.mark.parametrize("rerotate", [False, True])
def test_very_negative_bias_is_no_rerouting_with_a_window(gemma3, rerotate):
    off = get_method("kv_embedding", layers="none")
    on = get_method("kv_embedding", layers="0-3", bias=-1e9, rerotate=rerotate)
    batch = batch_for(gemma3, off)
    real = batch.attention_mask.bool()
    with torch.inference_mode():
        a, b = off.forward(gemma3, batch, "all"), on.forward(gemma3, batch, "all")
        vanilla = run(gemma3, batch, "all")
    for k in a.hidden:
        assert torch.equal(a.hidden[k], vanilla.hidden[k])  # disabled = the model's own forward, bit for bit
        torch.testing.assert_close(b.hidden[k][real], a.hidden[k][real], atol=1e-5, rtol=1e-5)


def test_rerotation_uses_each_layer_types_rope(gemma3):
    """Gemma 3's local and global layers have different RoPE bases: re-rotation keeps one (cos, sin) per type."""
    kv = get_method("kv_embedding", layers="0-3", rerotate=True)
    batch = batch_for(gemma3, kv)
    cfg = kv.reroute(gemma3, batch)
    assert set(cfg.rope) == {"sliding_attention", "full_attention"}
    assert not torch.allclose(cfg.rope["sliding_attention"][0], cfg.rope["full_attention"][0])


def test_tp_placeholder_is_an_ordinary_position_in_sliding_layers(gemma3):
    """Nothing widens the window for a placeholder: tokens further than the window after it cannot read it in a
    sliding layer; the global layer can."""
    tp = get_method("token_prepending", start=1, exit="4", layer=-1)
    batch = batch_for(gemma3, tp, TEXTS[:1])
    ph = int(torch.nonzero(batch.kind[0])[0])
    with torch.inference_mode(), attention_backend(gemma3, "eager"):
        cap = tp.forward(gemma3, batch, "all", attention=True)
    T = batch.input_ids.shape[1]
    for layer, a in cap.attention.items():
        reads = a[0, :, ph + W:, ph]  # (H, T - ph - W): queries beyond the window from the placeholder
        assert reads.shape[-1] > 0
        if gemma3.model.config.layer_types[layer] == "sliding_attention":
            assert reads.abs().max() == 0
        else:
            assert reads.abs().max() > 0
    assert T > ph + W


def test_disabled_rewiring_is_vanilla_on_a_sliding_model(gemma3):
    tp = get_method("token_prepending", placeholder=False, start=2, exit="2")
    assert np.array_equal(tp.encode_layers(gemma3, TEXTS), get_method("prompteol").encode_layers(gemma3, TEXTS))
    htp = get_method("htp", summary="none", start=2, exit="2", layer=-1)
    assert np.array_equal(htp.encode(gemma3, TEXTS), get_method("mean").encode(gemma3, TEXTS))


def test_exit_depth_is_relative_to_the_model():
    from analysis.methods._rewiring import parse_depth, resolve_depth

    assert resolve_depth("7/32", 32) == 7 and resolve_depth("7/32", 30) == 7 and resolve_depth("7/32", 18) == 4
    assert resolve_depth("25%", 8) == 2 and resolve_depth("0.5", 18) == 9 and resolve_depth("7", 18) == 7
    assert parse_depth(7) == "7"
    with pytest.raises(ValueError):
        parse_depth("1.5")
    tp = get_method("token_prepending")
    assert list(tp.rewired_layers(30)) == list(range(1, 7)) and list(tp.rewired_layers(18)) == [1, 2, 3]
    assert get_method("htp", exit=" 3 ").params.exit == "3"
