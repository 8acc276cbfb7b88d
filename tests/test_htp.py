"""Hierarchical Token Prepending: partitions and placeholder layout on known texts, exact reduction to mean
pooling when disabled, hooks that copy block ends into local and global tokens, ablations, long inputs,
padding safety."""

import time

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.core.forward import hooks, run
from analysis.methods import get_method
from analysis.methods._rewiring import GLOBAL, LOCAL, TOKEN
from analysis.core.partition import sentence_starts, token_blocks
from analysis.models.tiny import tiny_backbone

DOC = "The quick brown fox. It jumps over the dog! Does it? Yes."
TEXTS = [DOC, "Hello world", "A bank by the river was steep; the bank in town raised its rates. Numbers 0123."]


def _text_tokens(tokenizer, text):
    out = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [text[s:e] for s, e in out["offset_mapping"]], np.array([e for _, e in out["offset_mapping"]])


# ---- partition -------------------------------------------------------------------------------------------
def test_sentence_starts_on_known_texts():
    assert sentence_starts(DOC).tolist() == [0, 21, 44, 53]
    assert sentence_starts("Dr. Smith went home. He slept.").tolist() == [0, 21]  # "Dr." is not a sentence end
    assert sentence_starts("one sentence only.").tolist() == [0]
    assert sentence_starts("no punctuation at all here").tolist() == [0]
    assert sentence_starts("  Leading space. Two.").tolist() == [0, 17]  # the leading spaces join sentence 1


def test_token_blocks_by_sentences_and_by_tokens(tiny_llama):
    pieces, ends = _text_tokens(tiny_llama.tokenizer, DOC)
    blocks = token_blocks(ends, DOC, "sentences", 1)
    text_of = ["".join(p for p, b in zip(pieces, blocks) if b == k) for k in range(blocks.max() + 1)]
    assert [t.strip() for t in text_of] == ["The quick brown fox.", "It jumps over the dog!", "Does it?", "Yes."]
    two = token_blocks(ends, DOC, "sentences", 2)
    assert two.max() == 1 and np.array_equal(two, blocks // 2)
    by5 = token_blocks(ends, DOC, "tokens", 5)
    assert np.array_equal(by5, np.arange(len(ends)) // 5)
    assert np.array_equal(token_blocks(ends, DOC, "sentences", 100), np.zeros(len(ends)))
    with pytest.raises(UserError):
        token_blocks(ends, DOC, "paragraphs", 1)
    with pytest.raises(UserError):
        token_blocks(ends, DOC, "tokens", 0)


def _check_layout(e, n_blocks, summary="both"):
    kind, seg = e.kind, e.segments
    text = np.flatnonzero(seg == 1)
    ph = np.flatnonzero(kind != TOKEN)
    n_global = int((kind == GLOBAL).sum())
    n_local = int((kind == LOCAL).sum())
    assert n_global == (n_blocks if summary in ("both", "global") else 0)
    assert n_local == (n_blocks if summary in ("both", "local") else 0)
    assert (seg[ph] == 0).all()  # placeholders are never pooled as text
    first = ph.min() if len(ph) else text[0]
    assert (kind[first: first + n_global] == GLOBAL).all()  # the globals open the text, as one run
    assert text[0] > first or not len(ph)
    # every local sits right before a block's first token and takes that block's final token
    locals_ = np.flatnonzero(kind == LOCAL)
    ends = e.source[locals_]
    assert (seg[ends] == 1).all() and (np.diff(ends) > 0).all() if len(ends) else True
    if len(locals_):
        assert (seg[locals_ + 1] == 1).all()
        assert ends[-1] == text[-1]
        assert (ends[:-1] + 1 == locals_[1:]).all()  # a block ends right before the next local token
    globals_ = np.flatnonzero(kind == GLOBAL)
    if len(globals_) and len(locals_):
        assert np.array_equal(e.source[globals_], e.source[locals_])  # G_k takes what L_k takes: end of block k
    if len(globals_):
        assert e.source[globals_][-1] == text[-1]
    plain = np.flatnonzero(kind == TOKEN)
    assert np.array_equal(e.source[plain], plain)


@pytest.mark.parametrize("text, n_blocks", [(DOC, 4), ("one sentence only.", 1), ("no punctuation at all here", 1)])
def test_layout_k1(tiny, text, n_blocks):
    e = get_method("htp").prepare(tiny, [text])[0]
    _check_layout(e, n_blocks)
    # the tiny tokenizers add no BOS: HTP puts theirs in front, so that position 0 is never a placeholder
    assert len(e) == len(get_method("mean").prepare(tiny, [text])[0]) + 2 * n_blocks + 1
    assert e.ids[0] == tiny.tokenizer.bos_token_id and e.kind[0] == TOKEN and e.segments[0] == 0


def test_position_0_is_never_a_placeholder(tiny_llama, real):
    """The first position is the model's attention sink; a bare template must not put a rewired placeholder
    there (the paper's models start with <s>). A tokenizer that adds its own BOS gets nothing more; TP with a
    template that starts with the text gets the same start token; no placeholders, no start token."""
    for bb in (tiny_llama, real):
        bare_tp = get_method("token_prepending", template="{text}")
        for m in (get_method("htp"), get_method("htp", summary="global"), bare_tp):
            e = m.prepare(bb, [DOC])[0]
            assert e.kind[0] == TOKEN and e.ids[0] == bb.tokenizer.bos_token_id, (m.name, m.params)
        assert get_method("htp", summary="none").prepare(bb, [DOC])[0].ids[0] != bb.tokenizer.bos_token_id
    tp = get_method("token_prepending").prepare(tiny_llama, [DOC])[0]  # PromptEOL's template starts with words
    assert np.array_equal(np.delete(tp.ids, np.flatnonzero(tp.kind)),
                          get_method("prompteol").prepare(tiny_llama, [DOC])[0].ids)


def test_a_tokenizer_with_its_own_bos_gets_no_second_one():
    import copy

    from tokenizers import processors

    from analysis.core.tokens import start_token

    tok = copy.deepcopy(tiny_backbone("llama").tokenizer)  # a copy: the tiny backbones are shared
    assert start_token(tok) == tok.bos_token
    bos = tok.bos_token
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", special_tokens=[(bos, tok.bos_token_id)])  # what LLaMA/Mistral tokenizers do
    assert tok("a")["input_ids"][0] == tok.bos_token_id
    assert start_token(tok) == ""


def test_layout_k2_every_n_tokens_and_ablations(tiny_llama):
    _check_layout(get_method("htp", k=2).prepare(tiny_llama, [DOC])[0], 2)
    n_text = int((get_method("mean").prepare(tiny_llama, [DOC])[0].segments == 1).sum())
    e = get_method("htp", partition="tokens", n_tokens=7).prepare(tiny_llama, [DOC])[0]
    _check_layout(e, -(-n_text // 7))
    locals_ = np.flatnonzero(e.kind == LOCAL)
    sizes = np.diff(np.r_[locals_, len(e)]) - 1
    assert sizes[:-1].tolist() == [7] * (len(sizes) - 1) and 1 <= sizes[-1] <= 7
    for summary in ("local", "global", "none"):
        _check_layout(get_method("htp", summary=summary).prepare(tiny_llama, [DOC])[0], 4, summary)


# ---- forward -------------------------------------------------------------------------------------------------
def test_disabled_reproduces_mean_pooling_exactly(tiny):
    htp = get_method("htp", summary="none", start=3, exit=3)
    a = htp.encode_layers(tiny, TEXTS)
    b = get_method("mean").encode_layers(tiny, TEXTS)
    assert np.array_equal(a, b)
    assert np.array_equal(htp.encode(tiny, TEXTS), get_method("mean", layer=-2).encode(tiny, TEXTS))


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_hooks_copy_block_ends_into_local_and_global_tokens(tiny, padding_side):
    htp = get_method("htp", start=1, exit=3, layer=-1)
    batch = htp.collate(tiny, htp.prepare(tiny, TEXTS), padding_side)
    seen = {}

    def grab(l):
        def hook(module, args, kwargs):
            seen[l] = (args[0] if args else kwargs["hidden_states"]).detach().clone()
        return hook

    regs = [lambda l=l: tiny.layers[l].register_forward_pre_hook(grab(l), with_kwargs=True)
            for l in range(tiny.facts.n_layers)]
    with torch.inference_mode(), htp.intervention(tiny, batch), hooks(*regs):
        cap = run(tiny, batch, "all", inputs_embeds=htp.input_embeds(tiny, batch))
    rows, ph = torch.nonzero(batch.kind, as_tuple=True)
    src = batch.source[rows, ph]
    assert (batch.segments[rows, src] == 1).all()
    for l in range(tiny.facts.n_layers):
        x = seen[l]
        if l in (1, 2):
            assert torch.equal(x[rows, ph], x[rows, src])
            assert torch.equal(x[rows, ph], cap.hidden[l][rows, src])
        else:
            assert not torch.allclose(x[rows, ph], x[rows, src])
    # global k and local k hold the same state after rewiring
    for b in range(len(TEXTS)):
        g = torch.nonzero(batch.kind[b] == GLOBAL).squeeze(1)
        loc = torch.nonzero(batch.kind[b] == LOCAL).squeeze(1)
        assert torch.equal(seen[1][b, g], seen[1][b, loc])
    assert all(not layer._forward_pre_hooks for layer in tiny.layers)


def test_placeholder_kinds_get_distinct_seeded_vectors(tiny_llama):
    htp = get_method("htp")
    batch = htp.collate(tiny_llama, htp.prepare(tiny_llama, [DOC]), "right")
    with torch.inference_mode():
        x = htp.input_embeds(tiny_llama, batch)[0]
    g, loc = x[batch.kind[0] == GLOBAL], x[batch.kind[0] == LOCAL]
    assert torch.equal(g, g[:1].expand_as(g)) and torch.equal(loc, loc[:1].expand_as(loc))
    assert not torch.allclose(g[0], loc[0])
    tok = batch.kind[0] == TOKEN
    torch.testing.assert_close(x[tok], tiny_llama.input_embeddings(batch.input_ids[0, tok]))


def test_rewiring_changes_the_embedding_and_is_padding_and_batch_safe(tiny):
    htp = get_method("htp", start=1, exit=3, layer=-1)
    right = htp.encode(tiny, TEXTS, padding_side="right")
    left = htp.encode(tiny, TEXTS, padding_side="left")
    alone = np.stack([htp.encode(tiny, [t])[0] for t in TEXTS])
    np.testing.assert_allclose(right, left, atol=2e-5)
    np.testing.assert_allclose(right, alone, atol=2e-5)
    assert np.abs(right - get_method("htp", start=1, exit=1, layer=-1).encode(tiny, TEXTS)).max() > 1e-3
    local = get_method("htp", summary="local", start=1, exit=3, layer=-1).encode(tiny, TEXTS)
    assert np.abs(right - local).max() > 1e-3


def test_trace_labels(tiny_llama):
    _, tr = get_method("htp").encode(tiny_llama, [DOC], trace=True)
    labels = [t for t, k in zip(tr.tokens[0], tr["placeholders"][0]) if k]
    assert labels == ["<B-PST>"] * 4 + ["<PST>"] * 4


def test_hundreds_of_sentences_without_quadratic_loops():
    bb = tiny_backbone("llama", max_length=4096)
    doc = " ".join(f"Go {i}." for i in range(300))
    htp = get_method("htp")
    start = time.perf_counter()
    items = htp.prepare(bb, [doc, doc[: len(doc) // 2]])
    batch = htp.collate(bb, items, "left")
    layout_seconds = time.perf_counter() - start
    assert not items[0].truncated
    assert int((items[0].kind == LOCAL).sum()) == 300 and int((items[0].kind == GLOBAL).sum()) == 300
    assert layout_seconds < 10, layout_seconds
    with torch.inference_mode():
        h = htp.forward(bb, batch, [-2]).hidden[bb.facts.n_layers - 1]
    assert torch.isfinite(h[batch.attention_mask.bool()]).all()


def test_truncation_counts_the_summary_tokens():
    bb = tiny_backbone("llama", max_length=128)
    doc = " ".join(f"Sentence {i}." for i in range(60))
    with pytest.warns(Warning, match="truncated"):
        e = get_method("htp").prepare(bb, [doc])[0]
    assert e.truncated and 120 <= len(e) <= 128  # cut to fit, placeholders included, without wasting room
    m = int((e.kind == LOCAL).sum())
    assert m == int((e.kind == GLOBAL).sum()) and m >= 10


def test_real_model_htp_runs(real):
    htp = get_method("htp")
    emb = htp.encode(real, [DOC, "A single sentence without a full stop"])
    assert emb.shape == (2, real.facts.hidden_size) and np.isfinite(emb).all()


def test_a_cut_text_is_laid_out_as_the_text_it_keeps():
    """A text past the limit is cut by a search that may try a longer text after the one it keeps: the blocks must
    be the kept text's (they were the last tried text's, which failed with an IndexError on this text)."""
    bb = tiny_backbone("llama", max_length=64)
    doc = ("Rain a the steep ran fox a. Fox and over was ran. Steep bank rain. Over rain. Ran while rain over bank. "
           "River while river fell it. Fox ran river and a and. Ran fox fox fell. Steep the rain ran the river while "
           "fell a. Over. Fell fell and was while and while fell. Was over.")
    with pytest.warns(Warning, match="truncated"):
        e = get_method("htp").prepare(bb, [doc])[0]
    assert e.truncated and len(e) <= 64
    _check_layout(e, int((e.kind == LOCAL).sum()))
