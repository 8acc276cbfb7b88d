"""KV-Embedding: the re-routing attention function against known answers, on tiny models of every supported
architecture (mechanics) and on the real default model (integration)."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.core.forward import run
from analysis.methods import get_method, parse_params
from analysis.methods.kv_embedding import KWARG, PROMPTS, Reroute, _rerotate, parse_layers

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A bank by the river was steep.",
    "Hello world! Numbers 0123456789, punctuation .,;:!?",
    "Sentence embeddings from decoder-only language models.",
]


def batch_for(bb, method, texts, side="right"):
    items = method.prepare(bb, texts)
    return method.collate(bb, items, side)


# ---- switched off = the prompt-only forward --------------------------------------------------------------------
def test_empty_layer_set_is_the_vanilla_forward_bit_for_bit(tiny):
    m = get_method("kv_embedding", layers="none")
    batch = batch_for(tiny, m, TEXTS)
    with torch.inference_mode():
        vanilla = run(tiny, batch, "all")  # the model's own sdpa, no re-routing machinery
        ours = m.forward(tiny, batch, "all")
    for k in vanilla.hidden:
        assert torch.equal(vanilla.hidden[k], ours.hidden[k]), f"hidden state {k} differs"


@pytest.mark.parametrize("bias", [-3.0e38, -1e9])  # finite only: NaN and infinities are refused (test_hostile_params)
def test_minus_infinite_bias_reproduces_prompt_only(tiny, bias):
    every = ",".join(str(l) for l in range(tiny.facts.n_layers))
    ref = get_method("kv_embedding", layers="none").encode(tiny, TEXTS)
    off = get_method("kv_embedding", layers=every, bias=bias).encode(tiny, TEXTS)
    assert np.abs(ref - off).max() <= 1e-6
    on = get_method("kv_embedding", layers=every, bias=1.0).encode(tiny, TEXTS)
    assert np.abs(ref - on).max() > 1e-3  # the same path with a finite bias does change the result


# ---- switched on: the prefix is really attended ---------------------------------------------------------------
def test_large_bias_puts_all_mass_on_prefix_and_changes_later_layers(tiny):
    m = get_method("kv_embedding", layers="1,2", bias=30.0)
    ref = get_method("kv_embedding", layers="none")
    _, tr = m.encode(tiny, TEXTS[:2], trace=True, attention=True)
    _, tr0 = ref.encode(tiny, TEXTS[:2], trace=True, attention=True)  # same (eager) backend
    for t in range(2):
        mass = tr["kv.prefix_mass"][t]  # (L, H, T)
        assert mass.shape == (tiny.facts.n_layers, tiny.facts.n_heads, len(tr.tokens[t]))
        assert mass[[1, 2]].min() > 0.999
        assert mass[[0, 3]].max() == 0.0
        att = tr["attention"][t]  # (L, H, T, 1+T)
        assert att.shape[-1] == att.shape[-2] + 1
        np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(att[..., 0], mass, atol=1e-6)
        h, h0 = tr["hidden"][t], tr0["hidden"][t]  # (L+1, T, d)
        assert np.array_equal(h[:2], h0[:2])  # hidden states 0, 1 are computed before decoder layer 1
        assert np.abs(h[2] - h0[2]).max() > 1e-2  # decoder layer 1 re-routes -> hidden state 2 changes
        assert np.abs(h[-1] - h0[-1]).max() > 1e-2  # and so does every later layer


def test_prefix_is_the_final_tokens_key_with_the_bias_added(tiny):
    """For the final query, the prefix key and the final token's own key are the same vector, so their
    attention weights differ exactly by the factor exp(bias)."""
    b = 0.7
    m = get_method("kv_embedding", layers="0,2", bias=b)
    _, tr = m.encode(tiny, TEXTS[:3], trace=True, attention=True, padding_side="right")
    for t in range(3):
        att = tr["attention"][t]  # (L, H, T, 1+T)
        last = att.shape[2] - 1
        ratio = att[[0, 2], :, last, 0] / att[[0, 2], :, last, 1 + last]
        np.testing.assert_allclose(ratio, math.exp(b), rtol=1e-4)
        assert np.all(att[[1, 3], :, :, 0] == 0)  # layers outside the set: zero prefix column
    rot = get_method("kv_embedding", layers="0,2", bias=b, rerotate=True)
    _, trr = rot.encode(tiny, TEXTS[:1], trace=True, attention=True)
    att = trr["attention"][0]
    last = att.shape[2] - 1
    assert not np.allclose(att[2, :, last, 0] / att[2, :, last, 1 + last], math.exp(b), rtol=1e-3)


def test_n_rerouted_tokens(tiny_llama):
    m = get_method("kv_embedding", layers="1", bias=2.0, n=3)
    _, tr = m.encode(tiny_llama, TEXTS[:2], trace=True, attention=True)
    att = tr["attention"][0]  # (L, H, T, 3+T)
    assert att.shape[-1] == att.shape[-2] + 3
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-5)
    last = att.shape[2] - 1
    # prefix column 2 is the final token (keys in order), column 0 the third-to-last
    np.testing.assert_allclose(att[1, :, last, 2] / att[1, :, last, 3 + last], math.exp(2.0), rtol=1e-4)
    np.testing.assert_allclose(att[1, :, last, 0] / att[1, :, last, 3 + last - 2], math.exp(2.0), rtol=1e-4)


def test_rerotation_moves_the_key_to_position_zero(tiny):
    """Rotating a raw key to position p, then re-rotating p -> 0, gives the raw key rotated to position 0."""
    rotary = tiny.decoder.rotary_emb
    torch.manual_seed(0)
    raw = torch.randn(2, tiny.facts.n_kv_heads, 1, tiny.facts.head_dim)  # (B, H_kv, n, d)
    pos = torch.tensor([[7], [23]])
    extra = {"layer_type": "full_attention"} if isinstance(rotary.rope_type, dict) else {}  # Gemma 3: per type
    cos_p, sin_p = rotary(raw, pos, **extra)  # (B, n, d)
    cos_0, sin_0 = rotary(raw, torch.zeros(1, 1, dtype=torch.long), **extra)
    rotated = raw * cos_p[:, None] + torch.cat([-raw[..., 8:], raw[..., :8]], -1) * sin_p[:, None]
    back = _rerotate(rotated, (cos_p, sin_p, cos_0, sin_0))
    expected = raw * cos_0[:, None]  # sin(0) = 0
    torch.testing.assert_close(back, expected, atol=1e-5, rtol=1e-5)


# ---- batching, padding, backends ------------------------------------------------------------------------------
@pytest.mark.parametrize("side", ["right", "left"])
def test_alone_or_in_a_padded_batch_gives_the_same_embedding(tiny, side):
    m = get_method("kv_embedding", layers="1,2", bias=1.0)
    alone = m.encode(tiny, [TEXTS[1]])
    batch = m.encode(tiny, [TEXTS[0], TEXTS[1], TEXTS[2]], padding_side=side, batch_size=3)
    np.testing.assert_allclose(alone[0], batch[1], atol=1e-5)
    rot = get_method("kv_embedding", layers="1,2", rerotate=True)
    np.testing.assert_allclose(rot.encode(tiny, [TEXTS[1]])[0],
                               rot.encode(tiny, TEXTS[:3], padding_side=side, batch_size=3)[1], atol=1e-5)


def test_eager_and_sdpa_paths_agree(tiny):
    m = get_method("kv_embedding", layers="0,3", bias=1.5)
    sdpa = m.encode(tiny, TEXTS)
    eager, tr = m.encode(tiny, TEXTS, trace=True, attention=True)
    np.testing.assert_allclose(sdpa, eager, atol=2e-5)
    _, tr2 = m.encode(tiny, TEXTS, trace=True)  # prefix mass computed inside the sdpa path
    for a, b in zip(tr["kv.prefix_mass"], tr2["kv.prefix_mass"]):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert tiny.model.config._attn_implementation == "sdpa"  # the backend is restored afterwards


def test_model_is_restored_after_an_error(tiny_llama):
    m = get_method("kv_embedding", layers="1")
    batch = batch_for(tiny_llama, m, TEXTS[:2])
    cfg = m.reroute(tiny_llama, batch)
    cfg.index = cfg.index + 10_000  # out of range: the attention function fails inside the pass
    with pytest.raises(RuntimeError):
        with torch.inference_mode():
            from analysis.core.forward import attention_backend

            with attention_backend(tiny_llama, m.backend()):
                run(tiny_llama, batch, [-1], **{KWARG: cfg})
    assert tiny_llama.model.config._attn_implementation == "sdpa"
    assert isinstance(cfg, Reroute)


# ---- parameters -------------------------------------------------------------------------------------------------
def test_layer_parameter_parsing():
    assert parse_layers(" 5, 3,4 ") == "3,4,5"
    assert parse_layers("3-5,9") == "3,4,5,9"
    assert parse_layers("AUTO") == "auto" and parse_layers("none") == "none"
    with pytest.raises(ValueError):
        parse_layers("three")
    assert parse_params("kv_embedding", ["layers=2-4", "bias=2.5", "rerotate=true"]) == {
        "layers": "2,3,4", "bias": 2.5, "rerotate": True}
    assert get_method("kv_embedding", layers="4,3").params.layers == "3,4"  # one spelling per set (cache keys)


def test_bad_parameters_are_user_errors(tiny_llama):
    with pytest.raises(UserError, match="layers"):
        get_method("kv_embedding", layers="x")
    with pytest.raises(UserError, match=r"\{text\}"):
        get_method("kv_embedding", template="no placeholder")
    with pytest.raises(UserError, match="do not exist"):
        get_method("kv_embedding", layers="2,9").encode(tiny_llama, TEXTS[:1])
    with pytest.raises(UserError):
        get_method("kv_embedding", prompt="essay")


def test_prompt_roles_and_pooling(tiny_llama):
    assert get_method("kv_embedding").template == PROMPTS["document"]
    assert "Query" in get_method("kv_embedding", prompt="query").template
    a = get_method("kv_embedding", layers="none", pooling="last").encode(tiny_llama, TEXTS, normalize=False)
    b = get_method("kv_embedding", layers="none", pooling="mean").encode(tiny_llama, TEXTS, normalize=False)
    h = get_method("kv_embedding", layers="none").encode(tiny_llama, TEXTS, normalize=False)
    np.testing.assert_allclose(h, (a + b) / 2, atol=1e-5)  # hybrid = mean of last and mean pooling


# ---- the real default model ---------------------------------------------------------------------------------------
@pytest.mark.real
def test_real_model_prompt_only_and_rerouting(real):
    m0 = get_method("kv_embedding", layers="none")
    batch = batch_for(real, m0, TEXTS[:2])
    with torch.inference_mode():
        vanilla = run(real, batch, [-1])
        ours = m0.forward(real, batch, [-1])
    assert torch.equal(vanilla.hidden[real.facts.n_layers], ours.hidden[real.facts.n_layers])
    on = get_method("kv_embedding", layers="12,13,14,15").encode(real, TEXTS[:2])
    off = m0.encode(real, TEXTS[:2])
    assert on.shape == (2, real.facts.hidden_size)
    assert np.all(np.isfinite(on)) and np.abs(on - off).max() > 1e-3


@pytest.mark.real
def test_real_model_auto_layers_resolve_to_an_id_window(real):
    from analysis.inspect.intrinsic_dim import auto_window

    m = get_method("kv_embedding")  # layers=auto
    layers = sorted(m.decoder_layers(real))
    sel = auto_window(real, m.prompt_only())
    assert layers == list(sel.layers) and len(layers) >= 1
    assert 1 <= layers[0] and layers[-1] <= real.facts.n_layers - 1
    assert sel.rule in ("u-shape", "several-minima", "flat")


# ---- word-level attention and the explorer's sweep logic ---------------------------------------------------------
def test_final_token_attention_over_words_accounts_for_every_column(tiny_llama):
    from analysis.inspect.attention import final_token_word_attention, token_text_spans, word_spans

    text = "The quick brown fox jumps."
    for name, kw in [("kv_embedding", {"layers": "1,2", "bias": 3.0}), ("echo", {}), ("prompteol", {})]:
        m = get_method(name, **kw)
        _, tr = m.encode(tiny_llama, [text], trace=True, attention=True)
        words = final_token_word_attention(tiny_llama.tokenizer, m.template, text, tr)
        assert list(words["word"]) == [w for _, _, w in word_spans(text)]
        total = words["mass"].sum() + words.attrs["template_mass"] + words.attrs["prefix_mass"]
        assert abs(total - 1) < 1e-5  # every attended column is a word, the prompt, or the prefix
        assert (words.attrs["prefix_mass"] > 0) == (name == "kv_embedding")
        # known answer for the first word: the summed attention of the tokens inside "The", over all copies
        att = tr["attention"][0]  # (L, H, T, S)
        row = att[:, :, -1, att.shape[-1] - att.shape[-2]:].mean(axis=(0, 1))  # (T,)
        spans = token_text_spans(tiny_llama.tokenizer, m.template, text)
        first = sum(row[t] for t, s in enumerate(spans) if s is not None and s[1] < 3)
        assert abs(words["mass"].iloc[0] - first) < 1e-6
        copies = {s[0] for s in spans if s is not None}
        assert copies == ({1, 2} if name == "echo" else {1})


def test_explorer_grid_sweep_and_summary():
    from analysis.sweep import windows

    cells = windows.grid(4, [2, 3], [2, 3], [1.0])
    assert [c.layers(4) for c in cells] == [(2, 3), (3,)]  # clipped duplicates dropped
    assert windows.paper_width(30) == 4
    m = windows.cell_method(windows.Cell(1, 2, 0.5, True), 4)
    assert (m.params.layers, m.params.bias, m.params.rerotate) == ("1,2", 0.5, True)
    with pytest.raises(UserError):
        windows.grid(4, [5], [1], [1.0])
    with pytest.raises(UserError):
        windows.grid(4, [1], [], [1.0])
    scores = {1: 0.2, 2: 0.5, 3: 0.4}
    rows = [{**dataclasses.asdict(c), "spearman": scores[c.start]} for c in windows.grid(4, [1, 2, 3], [1], [1.0])]
    out = windows.summary(rows, 4, (3,), 0.4, {"prompt only": 0.1})
    assert out["best"]["start"] == 2 and out["best"]["layers"] == [2]
    assert out["id_window"]["rank_among_cells"] == 2 and abs(out["id_window"]["gap_to_best"] - 0.1) < 1e-12
