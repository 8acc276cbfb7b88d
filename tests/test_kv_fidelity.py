"""KV-Embedding's settings that restore the paper's choices (`DEVIATIONS`), against known answers on tiny models:
the paper's prompt, the mean over every position, the window width, and the bidirectional ablation (one mask
function; switched off, the method is exactly what it was)."""

import numpy as np
import pytest
import torch

from analysis.core.forward import run
from analysis.core.pooling import last_pool
from analysis.inspect.intrinsic_dim import select_window, window_width
from analysis.methods import get_method

TEXTS = ["The quick brown fox jumps over the lazy dog.", "A bank by the river was steep.",
         "Hello world! Numbers 0123456789.", "Sentence embeddings from decoder-only language models."]


def batch_for(bb, method, texts, side="right"):
    return method.collate(bb, method.prepare(bb, texts), side)


def states(bb, method, texts, side="right"):
    with torch.inference_mode():
        batch = batch_for(bb, method, texts, side)
        return batch, method.forward(bb, batch, "all")


def test_causal_mask_setting_is_the_vanilla_forward_bit_for_bit(tiny):
    m = get_method("kv_embedding", layers="none", mask="causal")
    batch, ours = states(tiny, m, TEXTS)
    with torch.inference_mode():
        vanilla = run(tiny, batch, "all")
    assert all(torch.equal(vanilla.hidden[k], ours.hidden[k]) for k in vanilla.hidden)


def test_bidirectional_lets_the_first_position_see_the_last_token(tiny_llama):
    a, b = "The cat sat on the mat", "The cat sat on the hat"  # the same text up to its last word
    for mask, sees in (("causal", False), ("bidirectional", True)):
        m = get_method("kv_embedding", layers="none", mask=mask, template="{text}")
        batch, cap = states(tiny_llama, m, [a, b])
        assert batch.input_ids[0, 0] == batch.input_ids[1, 0]  # position 0 holds the same token in both rows
        first = cap.hidden[1][:, 0]  # (2, d) position 0 after decoder layer 0
        assert (not torch.allclose(first[0], first[1], atol=1e-6)) == sees, mask


@pytest.mark.parametrize("side", ["right", "left"])
def test_bidirectional_hides_padding(tiny, side):
    m = get_method("kv_embedding", layers="1", mask="bidirectional")
    alone = np.stack([m.encode(tiny, [t], padding_side=side)[0] for t in TEXTS])
    together = m.encode(tiny, TEXTS, padding_side=side)
    assert np.abs(alone - together).max() < 1e-5
    causal = get_method("kv_embedding", layers="1").encode(tiny, TEXTS)
    assert np.abs(causal - together).max() > 1e-3  # the mask really changed


def test_bidirectional_eager_and_sdpa_agree(tiny):
    m = get_method("kv_embedding", layers="1,2", mask="bidirectional")
    plain = m.encode(tiny, TEXTS)
    with_maps, tr = m.encode(tiny, TEXTS[:2], trace=True, attention=True)  # the eager backend
    assert np.abs(plain[:2] - with_maps).max() < 1e-5
    att = tr["attention"][0]  # (L, H, T, n + T): the first text's maps, the prefix column first
    assert att[0, :, 0, 1:4].min() > 0.0  # position 0 attends to the positions after it (within any sliding window)


def test_model_backend_is_restored_after_a_bidirectional_pass(tiny_llama):
    before = tiny_llama.model.config._attn_implementation
    get_method("kv_embedding", layers="none", mask="bidirectional").encode(tiny_llama, TEXTS[:2])
    assert tiny_llama.model.config._attn_implementation == before


def test_mean_over_every_position_is_algorithm_1(tiny_llama):
    m = get_method("kv_embedding", layers="1", mean_over="all")
    batch, cap = states(tiny_llama, m, TEXTS)
    h = cap.hidden[tiny_llama.facts.n_layers]  # (B, T, d)
    mask = batch.attention_mask.float()  # every real position, prompt included
    want = 0.5 * (last_pool(h, batch) + (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True))
    got = m.encode(tiny_llama, TEXTS, normalize=False)
    assert np.abs(got - want.numpy()).max() < 1e-5
    text_only = get_method("kv_embedding", layers="1").encode(tiny_llama, TEXTS, normalize=False)
    assert np.abs(text_only - got).max() > 1e-4


def test_the_papers_prompt_word_for_word(tiny_llama):
    m = get_method("kv_embedding", prompt="paper")
    assert m.template == '"Context: {text}" Compress the context in one word:'
    assert get_method("kv_embedding").template != m.template  # the default is not the paper's wording


def test_window_widths():
    # Eq. 4: l* .. l* + floor(0.1 L); reported: about a quarter of the depth, like the paper's 7-10-layer windows
    assert [window_width("eq4", L) + 1 for L in (18, 28, 30, 32, 36)] == [2, 3, 4, 4, 4]
    assert [window_width("reported", L) + 1 for L in (18, 28, 30, 32, 36)] == [5, 7, 8, 8, 9]
    ids = [30.0 - 20 * np.exp(-((k - 10) / 3.0) ** 2) for k in range(31)]  # one clear U with its minimum at 10
    assert select_window(ids, 30).layers == tuple(range(10, 14))
    wide = select_window(ids, 30, "reported")
    assert wide.layers == tuple(range(10, 18)) and wide.rule == "u-shape"
    with pytest.raises(ValueError):
        window_width("widest", 30)


def test_auto_window_follows_the_width_setting(tiny_llama):
    from analysis.inspect.intrinsic_dim import auto_window

    narrow = auto_window(tiny_llama, get_method("kv_embedding", layers="none"))
    wide = auto_window(tiny_llama, get_method("kv_embedding", layers="none", width="reported"))
    assert narrow.start == wide.start and len(wide.layers) >= len(narrow.layers)
