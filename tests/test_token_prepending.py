"""Token Prepending: exact reduction to PromptEOL when disabled, hooks that really copy and always go away,
padding safety, early exit, the placeholder layout and its embedding."""

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.core.forward import hooks, run
from analysis.methods import get_method
from analysis.methods._rewiring import LOCAL, embedding_stats

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Hello world!", "A bank by the river was steep."]


def _hooks(bb):
    """Every hook on the decoder layers. transformers installs its own output-recording hooks the first time a
    model is called with output_hidden_states/attentions (and keeps them), so a session-scoped model may carry
    hooks that are not ours: tests compare before/after instead of expecting none."""
    return [(i, k, h) for i, layer in enumerate(bb.layers)
            for k, d in (("pre", layer._forward_pre_hooks), ("post", layer._forward_hooks)) for h in d.items()]


def _inputs_of(bb, layer_ids):
    """Pre-hooks that record what each decoder layer receives (registered after the rewiring hooks, so they
    see the rewired input)."""
    seen = {}

    def grab(l):
        def hook(module, args, kwargs):
            seen[l] = (args[0] if args else kwargs["hidden_states"]).detach().clone()
        return hook

    return seen, [lambda l=l: bb.layers[l].register_forward_pre_hook(grab(l), with_kwargs=True) for l in layer_ids]


def test_disabled_reproduces_prompteol_exactly(tiny):
    """No placeholder and no rewiring layer: the inputs_embeds path must equal PromptEOL bit for bit, at every
    layer (so the readout at the early-exit layer is PromptEOL's there)."""
    tp = get_method("token_prepending", placeholder=False, start=2, exit=2)
    ref = get_method("prompteol")
    a = tp.encode_layers(tiny, TEXTS)
    b = ref.encode_layers(tiny, TEXTS)
    assert a.shape == b.shape == (3, tiny.facts.n_layers + 1, tiny.facts.hidden_size)
    assert np.array_equal(a, b)
    assert np.array_equal(tp.encode(tiny, TEXTS), get_method("prompteol", layer=-2).encode(tiny, TEXTS))


def test_placeholder_without_rewiring_changes_only_through_attention(tiny_llama):
    """With the placeholder but start == exit, the text tokens before it are untouched (causal), the ones after
    it see one extra position: the embedding differs from PromptEOL's."""
    tp = get_method("token_prepending", start=1, exit=1, layer=-1)
    batch = tp.collate(tiny_llama, tp.prepare(tiny_llama, TEXTS[:1]), "right")
    ref = get_method("prompteol")
    rb = ref.collate(tiny_llama, ref.prepare(tiny_llama, TEXTS[:1]), "right")
    with torch.inference_mode():
        h = tp.forward(tiny_llama, batch, [-1]).hidden[tiny_llama.facts.n_layers][0]
        r = run(tiny_llama, rb, [-1]).hidden[tiny_llama.facts.n_layers][0]
    ph = int(torch.nonzero(batch.kind[0])[0])
    assert torch.equal(h[:ph], r[:ph])  # before the placeholder: identical (causal attention)
    assert not torch.allclose(h[-1], r[-1])


def test_layout_places_one_placeholder_before_the_text(tiny):
    tp = get_method("token_prepending")
    e = tp.prepare(tiny, ["Hello world"])[0]
    ph = np.flatnonzero(e.kind)
    assert len(ph) == 1 and e.kind[ph[0]] == LOCAL
    assert e.segments[ph[0]] == 0 and e.segments[ph[0] + 1] == 1  # right before the first text token
    assert not (e.segments[: ph[0]] == 1).any()
    assert e.source[ph[0]] == len(e) - 1  # takes the prompt's final token
    assert np.array_equal(np.delete(e.source, ph), np.delete(np.arange(len(e)), ph))  # others read themselves
    ref = get_method("prompteol").prepare(tiny, ["Hello world"])[0]
    assert np.array_equal(np.delete(e.ids, ph), ref.ids)  # PromptEOL's tokens with one position added


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_hooks_copy_the_final_token_state(tiny, padding_side):
    """After the rewiring pre-hook, the input of each rewired layer has the source token's state (= previous
    layer's output there) at the placeholder; layers outside [start, exit) are not rewired."""
    tp = get_method("token_prepending", start=1, exit=3, layer=-1)
    batch = tp.collate(tiny, tp.prepare(tiny, TEXTS), padding_side)
    seen, regs = _inputs_of(tiny, range(tiny.facts.n_layers))
    before = _hooks(tiny)
    with torch.inference_mode(), tp.intervention(tiny, batch), hooks(*regs):
        cap = run(tiny, batch, "all", inputs_embeds=tp.input_embeds(tiny, batch))
    rows, ph = torch.nonzero(batch.kind, as_tuple=True)
    assert len(rows) == len(TEXTS)
    src = batch.last_index[rows]
    assert torch.equal(src, batch.source[rows, ph])
    for l in range(tiny.facts.n_layers):
        x = seen[l]
        if l in (1, 2):
            assert torch.equal(x[rows, ph], x[rows, src]), f"layer {l} not rewired"
            assert torch.equal(x[rows, ph], cap.hidden[l][rows, src])  # previous layer's output at the source
            assert not torch.equal(cap.hidden[l][rows, ph], x[rows, ph])  # the capture keeps the un-rewired state
        else:
            assert not torch.allclose(x[rows, ph], x[rows, src]), f"layer {l} rewired but outside [start, exit)"
            if l > 0:
                assert torch.equal(x, cap.hidden[l])
    assert _hooks(tiny) == before


def test_model_unchanged_after_exit_and_after_exception(tiny_llama):
    tp = get_method("token_prepending", start=0, exit=4)
    ref = get_method("prompteol")
    before = ref.encode(tiny_llama, TEXTS)
    batch = tp.collate(tiny_llama, tp.prepare(tiny_llama, TEXTS), "right")
    hooks_before = _hooks(tiny_llama)
    with tp.intervention(tiny_llama, batch):
        assert len(_hooks(tiny_llama)) == len(hooks_before) + 4
    assert _hooks(tiny_llama) == hooks_before
    with pytest.raises(ZeroDivisionError):
        with tp.intervention(tiny_llama, batch):
            1 / 0
    assert _hooks(tiny_llama) == hooks_before
    with pytest.raises(RuntimeError):  # an error inside the hooked forward itself (wrong batch shape)
        with torch.inference_mode(), tp.intervention(tiny_llama, batch):
            run(tiny_llama, None, [-1], inputs_embeds=torch.zeros(1, 3, tiny_llama.facts.hidden_size))
    assert _hooks(tiny_llama) == hooks_before
    assert np.array_equal(ref.encode(tiny_llama, TEXTS), before)


def test_rewiring_matters_and_is_padding_and_batch_safe(tiny):
    tp = get_method("token_prepending", start=1, exit=3, layer=-1)
    right = tp.encode(tiny, TEXTS, padding_side="right")
    left = tp.encode(tiny, TEXTS, padding_side="left")
    alone = np.stack([tp.encode(tiny, [t])[0] for t in TEXTS])
    np.testing.assert_allclose(right, left, atol=2e-5)
    np.testing.assert_allclose(right, alone, atol=2e-5)
    no_rewire = get_method("token_prepending", start=1, exit=1, layer=-1).encode(tiny, TEXTS)
    assert np.abs(right - no_rewire).max() > 1e-3


def test_early_exit_stops_the_pass(tiny_llama):
    called = []
    regs = [lambda l=l: tiny_llama.layers[l].register_forward_hook(lambda *a, l=l: called.append(l))
            for l in range(tiny_llama.facts.n_layers)]
    with hooks(*regs):
        get_method("token_prepending", layer=2).encode(tiny_llama, TEXTS[:1])
    assert called == [0, 1]


def test_mean_readout_excludes_the_placeholder(tiny_llama):
    tp = get_method("token_prepending", pooling="mean", layer=-1)
    batch = tp.collate(tiny_llama, tp.prepare(tiny_llama, TEXTS[:1]), "right")
    with torch.inference_mode():
        h = tp.forward(tiny_llama, batch, [-1]).hidden[tiny_llama.facts.n_layers]
    y = tp.readout(h, batch)[0]
    text = batch.segments[0] == 1
    assert not text[batch.kind[0] > 0].any()
    torch.testing.assert_close(y, h[0, text].mean(0))


def test_placeholder_vector_is_seeded_and_scaled_like_embeddings(tiny):
    a = get_method("token_prepending", seed=3).placeholder_vectors(tiny)
    b = get_method("token_prepending", seed=3).placeholder_vectors(tiny)
    c = get_method("token_prepending", seed=4).placeholder_vectors(tiny)
    assert torch.equal(a, b) and not torch.equal(a, c)
    ids = torch.arange(1, 200)
    real = tiny.input_embeddings(ids).float()  # (n, d), as the model scales it (Gemma: * sqrt(d))
    ratio = a[LOCAL].norm() / real.norm(dim=1).mean()
    assert 0.5 < float(ratio) < 2.0
    mean, std = embedding_stats(tiny)
    assert mean.shape == std.shape == (tiny.facts.hidden_size,)


def test_trace_labels_the_placeholder(tiny_llama):
    _, tr = get_method("token_prepending").encode(tiny_llama, TEXTS[:2], trace=True)
    for tokens, kind in zip(tr.tokens, tr["placeholders"]):
        assert [t for t, k in zip(tokens, kind) if k] == ["<PST>"]
        assert len(tokens) == len(kind)


def test_bad_parameters_are_user_errors(tiny_llama):
    with pytest.raises(UserError, match="start"):
        get_method("token_prepending", start=5, exit=2)
    with pytest.raises(UserError, match="exactly once"):
        get_method("token_prepending", template="no text here").encode(tiny_llama, ["x"])
    with pytest.raises(UserError, match="beyond"):
        get_method("token_prepending", start=9, exit=12).encode(tiny_llama, ["x"])
    with pytest.raises(UserError):
        get_method("token_prepending", pooling="max")


def test_truncation_keeps_room_for_the_placeholder(tiny_llama):
    long = " ".join(["word"] * 400)
    tp = get_method("token_prepending")
    with pytest.warns(Warning, match="truncated"):
        e = tp.prepare(tiny_llama, [long])[0]
    assert len(e) <= tiny_llama.facts.max_length and e.truncated and e.kind.sum() == 1
    assert e.ids[-1] == get_method("prompteol").prepare(tiny_llama, ["x"])[0].ids[-1]  # the prompt's end survives


def test_real_model_tp_runs(real):
    tp = get_method("token_prepending")
    emb = tp.encode(real, ["A man is playing a guitar.", "A woman is slicing an onion."])
    assert emb.shape == (2, real.facts.hidden_size) and np.isfinite(emb).all()
    assert list(tp.rewired_layers(real.facts.n_layers)) == [1, 2, 3, 4, 5, 6]
