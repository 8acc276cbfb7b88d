"""Known answers and mechanics of the method library, on tiny random models of every architecture.

Pooling is checked against hand computations on hand-built batches; the shared encode loop against
itself under other batchings and padding sides; the hook-based forward against Hugging Face's own
`output_hidden_states`. Bad input must give a `UserError` sentence, never a traceback.
"""

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from analysis import TruncationWarning, UserError
from analysis.models.backbone import load_backbone
from analysis.core.forward import hooks, resolve_layer, run
from analysis.methods import get_method, list_methods, parse_params
from analysis.core.pooling import pool
from analysis.models.tiny import tiny_backbone
from tests.conftest import tiny_method
from analysis.core.tokens import Encoded, collate, encode_texts

METHODS = [m.name for m in list_methods()]  # later methods are tested automatically

# Different lengths (so batches need padding), words the tiny tokenizer knows and some it does not.
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A bank",
    "Sentence embeddings from decoder-only language models.",
    "Hello world!",
    "The bank in town raised its rates",
]


def _hand_batch(lengths, side, segments=None):
    """A collated batch of fake token ids (distinct per row and position) with the given lengths."""
    items = []
    for b, n in enumerate(lengths):
        seg = np.ones(n, np.int8) if segments is None else np.asarray(segments[b], np.int8)
        items.append(Encoded(np.arange(n, dtype=np.int64) + 10 * (b + 1), seg, truncated=False))
    return collate(items, pad_id=0, padding_side=side)


def _place(per_text, batch, fill=1e6):
    """Put per-text states (n_b, d) into a padded (B, T, d) tensor at the real positions; pads get `fill`
    so any readout that touches a pad is visibly wrong."""
    B, T = batch.input_ids.shape
    d = per_text[0].shape[1]
    hidden = torch.full((B, T, d), fill, dtype=torch.float32)
    for b, h in enumerate(per_text):
        hidden[b, batch.attention_mask[b].bool()] = h
    return hidden


def _hooks_count(model) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


# ---- known answers on hand-built batches ---------------------------------------------------------------------
@pytest.mark.parametrize("side", ["right", "left"])
def test_masked_mean_equals_hand_computation(side):
    gen = torch.Generator().manual_seed(0)
    # Segments: 0 = template, 1 = text, 2 = second copy; every row has a different layout.
    segments = [[0, 1, 1, 2, 0], [1, 2, 2], [0, 0, 1, 2, 2, 2, 0]]
    batch = _hand_batch([len(s) for s in segments], side, segments)
    per_text = [torch.randn(len(s), 3, generator=gen) for s in segments]
    hidden = _place(per_text, batch)  # (B, T, 3)

    for keep in [(1,), (2,), (1, 2)]:
        got = pool(hidden, batch, "mean", keep)
        for b, (seg, h) in enumerate(zip(segments, per_text)):
            rows = [h[t] for t in range(len(seg)) if seg[t] in keep]
            want = sum(rows) / len(rows)
            torch.testing.assert_close(got[b], want, rtol=0, atol=1e-6)
    # No segment filter: every real token, pads excluded.
    got = pool(hidden, batch, "mean", None)
    for b, h in enumerate(per_text):
        torch.testing.assert_close(got[b], h.mean(0), rtol=0, atol=1e-6)
    # The mean method reads the text segment (1): same as the hand computation for segment 1.
    two = _hand_batch([5, 3], side, segments[:2])
    got = get_method("mean").readout(_place(per_text[:2], two), two)
    torch.testing.assert_close(got[0], per_text[0][1:3].mean(0), rtol=0, atol=1e-6)
    torch.testing.assert_close(got[1], per_text[1][0], rtol=0, atol=1e-6)


def test_mean_over_missing_segment_is_an_error():
    batch = _hand_batch([3, 2], "right", [[0, 1, 0], [0, 0]])
    with pytest.raises(ValueError, match="no token to average"):
        pool(torch.zeros(2, 3, 4), batch, "mean", (1,))


@pytest.mark.parametrize("side", ["right", "left"])
def test_last_token_picks_the_final_real_token(side):
    lengths = [3, 5, 2, 1]
    batch = _hand_batch(lengths, side)
    T = max(lengths)
    want_index = [n - 1 for n in lengths] if side == "right" else [T - 1] * len(lengths)
    assert batch.last_index.tolist() == want_index
    # The token at that index is the text's own final token, not a pad.
    for b, n in enumerate(lengths):
        assert batch.input_ids[b, batch.last_index[b]].item() == 10 * (b + 1) + n - 1
    # State of token t of text b is (b, t, t): the readout must return (b, n_b - 1, n_b - 1).
    per_text = [torch.tensor([[b, t, t] for t in range(n)], dtype=torch.float32) for b, n in enumerate(lengths)]
    hidden = _place(per_text, batch)
    got = get_method("last").readout(hidden, batch)
    want = torch.tensor([[b, n - 1, n - 1] for b, n in enumerate(lengths)], dtype=torch.float32)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_position_ids_ignore_padding_side():
    right, left = _hand_batch([3, 5], "right"), _hand_batch([3, 5], "left")
    for b in range(2):
        r = right.position_ids[b][right.attention_mask[b].bool()]
        l = left.position_ids[b][left.attention_mask[b].bool()]
        assert r.tolist() == l.tolist() == list(range([3, 5][b]))


# ---- Echo pools only the second copy --------------------------------------------------------------------------
def test_echo_pools_only_the_second_copy(tiny):
    texts = ["The quick brown fox jumps", "A bank by the river was steep"]
    emb, tr = get_method("echo").encode(tiny, texts, normalize=False, trace=True)
    L = tiny.facts.n_layers
    for i, text in enumerate(texts):
        seg = tr["segments"][i]  # (T,)
        mask = tr["pool_mask"][i]  # (T,)
        assert (seg == 1).sum() > 0 and (seg == 2).sum() > 0
        np.testing.assert_array_equal(mask > 0, seg == 2)  # weight exactly on the second copy
        assert mask.sum() == pytest.approx(1.0, abs=1e-6)
        # Each copy's tokens spell the text (not the template).
        for k in (1, 2):
            toks = [t for t, s in zip(tr.tokens[i], seg) if s == k]
            spelled = tiny.tokenizer.convert_tokens_to_string(toks).strip()
            assert text in spelled and len(spelled) <= len(text) + 2, (k, spelled)
        # The embedding is the plain mean of the final-layer states of segment-2 tokens ...
        h = tr.hidden(i, L)  # (T, d)
        np.testing.assert_allclose(emb[i], h[seg == 2].mean(0), atol=1e-5)
        # ... and differs from the first copy's mean (the two copies see different context).
        assert not np.allclose(emb[i], h[seg == 1].mean(0), atol=1e-3)


def test_echo_template_needs_two_copies():
    with pytest.raises(UserError, match="exactly twice"):
        get_method("echo", template="Rewrite: {text}")


# ---- the shared encode loop: batching and padding never change a result ----------------------------------------
@pytest.mark.parametrize("name", METHODS)
def test_batch_equals_one_by_one_and_padding_sides_agree(tiny, name):
    method = tiny_method(name)
    hooks_before = _hooks_count(tiny.model)
    backend_before = tiny.model.config._attn_implementation
    batched = method.encode(tiny, TEXTS, batch_size=3)
    single = np.stack([method.encode(tiny, [t])[0] for t in TEXTS])
    left = method.encode(tiny, TEXTS, batch_size=3, padding_side="left")
    mixed = method.encode(tiny, TEXTS[::-1] + ["another text in the batch"], batch_size=6)[:len(TEXTS)][::-1]
    assert batched.shape == (len(TEXTS), method.output_dim(tiny)) and batched.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(batched, single, atol=1e-4)
    np.testing.assert_allclose(batched, left, atol=1e-4)
    np.testing.assert_allclose(batched, mixed, atol=1e-4)  # order restored, neighbours do not matter
    # Different texts must give different embeddings, or the comparisons above prove nothing.
    assert not np.allclose(batched[0], batched[1], atol=1e-3)
    # Whatever the method did to the model is undone.
    assert _hooks_count(tiny.model) == hooks_before
    assert tiny.model.config._attn_implementation == backend_before


@pytest.mark.parametrize("name", METHODS)
def test_encode_layers_equals_encode_at_that_layer(tiny_llama, name):
    fields = {f.name for f in dataclasses.fields(get_method(name).params)}
    if "layer" not in fields:
        pytest.skip(f"{name} has no readout layer parameter")
    L = tiny_llama.facts.n_layers
    layers = [0, 2, L, -1, -2]
    method = tiny_method(name)
    per_layer = method.encode_layers(tiny_llama, TEXTS[:3], layers=layers)  # (n, 5, d)
    assert per_layer.shape == (3, len(layers), method.output_dim(tiny_llama))
    for j, layer in enumerate(layers):
        one = tiny_method(name, layer=layer).encode(tiny_llama, TEXTS[:3], normalize=False)
        np.testing.assert_allclose(per_layer[:, j], one, atol=1e-5, err_msg=f"layer {layer}")
    assert not np.allclose(per_layer[:, 1], per_layer[:, 2], atol=1e-3)  # layers really differ


# ---- the forward pass ------------------------------------------------------------------------------------------
def _batch(backbone, texts, side="right"):
    items = encode_texts(backbone.tokenizer, "{text}", texts, backbone.facts.max_length)
    return collate(items, backbone.tokenizer.pad_token_id, side)


@pytest.mark.parametrize("side", ["right", "left"])
def test_captured_hidden_states_equal_hf_output_hidden_states(tiny, side):
    batch = _batch(tiny, TEXTS[:3], side)
    L = tiny.facts.n_layers
    with torch.inference_mode():
        cap = run(tiny, batch, "all")
        ref = tiny.decoder(**batch.model_inputs(), output_hidden_states=True, use_cache=False)
    assert len(ref.hidden_states) == L + 1 and sorted(cap.hidden) == list(range(L + 1))
    real = batch.attention_mask.bool()
    for k in range(L + 1):
        torch.testing.assert_close(cap.hidden[k][real], ref.hidden_states[k][real], rtol=0, atol=1e-6)
    torch.testing.assert_close(cap.hidden[L][real], ref.last_hidden_state[real], rtol=0, atol=1e-6)  # after norm


def test_early_exit_gives_the_same_states_and_stops(tiny):
    batch = _batch(tiny, TEXTS[:3])
    L = tiny.facts.n_layers
    with torch.inference_mode():
        full = run(tiny, batch, "all")
        for top in range(L):
            calls = []
            counters = [lambda i=i: tiny.layers[i].register_forward_hook(lambda *a, i=i: calls.append(i))
                        for i in range(L)]
            with hooks(*counters):
                early = run(tiny, batch, [top])
            assert sorted(early.hidden) == [top]
            torch.testing.assert_close(early.hidden[top], full.hidden[top], rtol=0, atol=0)
            assert calls == list(range(top))  # hidden state k is made by decoder layers 0..k-1 only


def test_hooks_are_removed_after_run_and_after_an_exception(tiny_llama):
    bb = tiny_llama
    before = _hooks_count(bb.model)
    batch = _batch(bb, TEXTS[:2])
    with torch.inference_mode():
        run(bb, batch, "all")
        run(bb, batch, [1])
    assert _hooks_count(bb.model) == before

    def boom(*args):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"), torch.inference_mode():
        with hooks(lambda: bb.layers[1].register_forward_hook(boom)):
            assert _hooks_count(bb.model) == before + 1
            run(bb, batch, "all")  # its own hooks are installed when layer 1 raises
    assert _hooks_count(bb.model) == before
    bad = _batch(bb, TEXTS[:1])
    bad.input_ids[:] = bb.facts.vocab_size + 7  # fails inside the embedding lookup
    with pytest.raises(IndexError), torch.inference_mode():
        run(bb, bad, "all")
    assert _hooks_count(bb.model) == before


def test_every_hidden_layer_can_be_the_readout_layer(tiny_llama):
    bb = tiny_llama
    L = bb.facts.n_layers
    _, tr = get_method("last").encode(bb, TEXTS[:2], trace=True)
    for layer in range(-(L + 1), L + 1):
        emb = get_method("last", layer=layer).encode(bb, TEXTS[:2], normalize=False)
        for i in range(2):
            np.testing.assert_allclose(emb[i], tr.hidden(i, layer)[-1], atol=1e-5, err_msg=f"layer {layer}")
        assert resolve_layer(L, layer) == layer % (L + 1)


@pytest.mark.parametrize("layer", ["too_high", "too_low"])
def test_out_of_range_layer_is_a_clear_error(tiny_llama, layer):
    L = tiny_llama.facts.n_layers
    layer = L + 1 if layer == "too_high" else -(L + 2)
    with pytest.raises(UserError, match=rf"Layer {layer} is out of range.*0\.\.{L}"):
        get_method("prompteol", layer=layer).encode(tiny_llama, TEXTS[:1])
    with pytest.raises(UserError, match="out of range"):
        get_method("mean").encode_layers(tiny_llama, TEXTS[:1], layers=[0, layer])


# ---- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("texts, message", [
    ([], "No texts"),
    ([""], "Text 1 is empty"),
    (["fine", "   \n\t"], "Text 2 is empty or only whitespace"),
    (["fine", None], "Text 2 is not a string"),
])
@pytest.mark.parametrize("trace", [False, True])
def test_bad_texts_are_user_errors(tiny_llama, texts, message, trace):
    with pytest.raises(UserError, match=message):
        get_method("prompteol").encode(tiny_llama, texts, trace=trace)


LONG = "The quick brown fox jumps over the lazy dog. " * 20


@pytest.fixture(scope="module")
def tiny32():
    return tiny_backbone("llama", max_length=32)


def test_long_text_is_truncated_with_a_warning_and_the_prompt_survives(tiny32):
    template = get_method("prompteol").params.template
    with pytest.warns(TruncationWarning, match="1 of 2 text"):
        emb, tr = get_method("prompteol").encode(tiny32, [LONG, "A bank"], trace=True)
    assert emb.shape == (2, 64) and np.isfinite(emb).all()
    tokens, seg = tr.tokens[0], tr["segments"][0]
    assert 20 < len(tokens) <= 32  # cut to the limit, not emptied
    spelled = tiny32.tokenizer.convert_tokens_to_string(tokens)
    head, tail = template.split("{text}")
    assert spelled.startswith(head) and spelled.endswith(tail)  # both ends of the prompt are intact
    n_tail = len(tiny32.tokenizer(tail, add_special_tokens=False)["input_ids"])
    assert (seg[-n_tail + 1:] == 0).all() and (seg == 1).sum() > 5  # final tokens are template, text kept
    # The readout (last token) is the template's final token, as for an untruncated text.
    assert tokens[-1] == tr.tokens[1][-1]


def test_long_text_echo_keeps_both_copies(tiny32):
    with pytest.warns(TruncationWarning):
        _, tr = get_method("echo").encode(tiny32, [LONG], trace=True)
    seg = tr["segments"][0]
    assert len(seg) <= 32 and (seg == 1).sum() > 2 and (seg == 2).sum() > 2
    spelled = tiny32.tokenizer.convert_tokens_to_string(tr.tokens[0])
    assert spelled.startswith("Rewrite the sentence: ") and ", rewritten sentence: " in spelled


def test_short_texts_do_not_warn(tiny32):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        get_method("mean").encode(tiny32, ["A bank", "Hello world!"])


def test_unknown_model_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found on this machine") as err:
        load_backbone("no-such-org/embedscope-no-such-model")
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="no config.json"):
        load_backbone(str(tmp_path))


def test_unknown_method_and_bad_parameters_are_user_errors():
    with pytest.raises(UserError, match="Unknown method 'nope'.*prompteol"):
        get_method("nope")
    with pytest.raises(UserError, match="unknown parameter"):
        get_method("prompteol", nope=1)
    with pytest.raises(UserError, match="bad value for layer"):
        parse_params("last", ["layer=abc"])
    with pytest.raises(UserError, match="expected key=value"):
        parse_params("last", ["layer"])
    with pytest.raises(UserError, match="expected key=value"):
        parse_params("last", ["depth=3"])
    assert parse_params("prompteol", ["layer=-3", 'template=Say "{text}" now:']) == \
        {"layer": -3, "template": 'Say "{text}" now:'}


def test_sessions_discovering_methods_at_once_all_see_every_method(monkeypatch):
    """App sessions are threads: while one fills the registry, another must not read it half-filled (a session of
    CI's four-sessions test was offered no "mean" and drew nothing)."""
    import sys
    import threading

    import analysis.methods as registry

    every = {m.name for m in list_methods()}
    seen, barrier = [], threading.Barrier(6)
    monkeypatch.setattr(registry, "_REGISTRY", {})
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: a race shows (about 1 run in 3 before)

    def session():
        barrier.wait()
        seen.append({m.name for m in list_methods()})

    threads = [threading.Thread(target=session) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert seen == [every] * 6
