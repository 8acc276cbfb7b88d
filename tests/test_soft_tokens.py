"""Soft-token generation (GIRCSE): known-answer tests of the mechanism on tiny models of five architectures,
then the adapter, the library helpers and the command line on the real default model."""

import json

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.core.forward import run
from analysis.methods import get_method, parse_params
from analysis.methods.soft_tokens import (GENERATED, embed_mix, generate, next_token_logits, token_distribution)

TEXTS = ["A cat sat.", "The quick brown fox jumps over the lazy dog, twice.", "Hello world!"]


def reference_generation(bb, method, text, k, temperature=1.0, top_k=0, mode="soft"):
    """Generation the slow, obvious way: one text, no padding, no cache; the whole sequence is recomputed
    at every step. Returns hidden states (L+1, T+k, d), the distributions (k, V) and the fed vectors (k, d)."""
    ids = torch.from_numpy(method.prepare(bb, [text])[0].ids)[None]  # (1, T)
    seq = bb.input_embeddings(ids)  # (1, T, d)
    probs, fed = [], []
    L = bb.facts.n_layers
    with torch.inference_mode():
        for _ in range(k):
            cap = run(bb, None, [L], inputs_embeds=seq)
            p = token_distribution(next_token_logits(bb, cap.hidden[L][:, -1]), temperature, top_k)  # (1, V)
            x = bb.input_embeddings(p.argmax(-1, keepdim=True)) if mode == "hard" else embed_mix(bb, p)[:, None]
            probs.append(p[0])
            fed.append(x[0, 0])
            seq = torch.cat([seq, x], dim=1)
        cap = run(bb, None, "all", inputs_embeds=seq)
    hidden = torch.stack([cap.hidden[l][0] for l in range(L + 1)])  # (L+1, T+k, d)
    return hidden, torch.stack(probs), torch.stack(fed)


def full_generation(bb, method, texts, padding_side="right"):
    """The method's batched, cached generation with every layer, in the batch layout."""
    items = method.prepare(bb, texts)
    batch = method.collate(bb, items, padding_side)
    p = method.params
    with torch.inference_mode():
        cap = generate(bb, batch, "all", temperature=p.temperature, top_k=p.top_k, mode=p.mode,
                       topn=bb.facts.vocab_size, keep_probs=True)
    return batch, cap


# ---- the mechanism ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,top_k", [("soft", 0), ("soft", 7), ("hard", 0)])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_cached_batch_matches_recomputing_each_text(tiny, mode, top_k, padding_side):
    """KV-cached generation of a padded batch == recomputing the whole unpadded sequence at every step."""
    m = get_method("soft_tokens", k=4, mode=mode, top_k=top_k, temperature=0.7)
    batch, cap = full_generation(tiny, m, TEXTS, padding_side)
    L = tiny.facts.n_layers
    for b, text in enumerate(TEXTS):
        ref_hidden, ref_probs, ref_fed = reference_generation(tiny, m, text, 4, 0.7, top_k, mode)
        real = batch.attention_mask[b].nonzero().squeeze(1)  # prompt then generated slots, in order
        assert (batch.segments[b, real][-4:] == GENERATED).all()
        got = torch.stack([cap.hidden[l][b, real] for l in range(L + 1)])  # (L+1, T+k, d)
        torch.testing.assert_close(got, ref_hidden, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(cap.probs[b], ref_probs, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(cap.inputs[b], ref_fed, atol=1e-5, rtol=1e-4)
        # hidden state 0 at a generated position is the soft token itself
        torch.testing.assert_close(got[0, -4:], ref_fed, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "gemma"])
def test_cached_generation_is_exact_in_float64(arch):
    """In float64 the cached, padded batch agrees with recomputation to rounding level: the remaining float32
    differences (up to ~1e-3 on the real model's final layer, whose states reach ~50) are rounding noise
    amplified by the soft-token feedback, not a masking or position error."""
    from analysis.models.tiny import tiny_backbone

    bb = tiny_backbone(arch, seed=5)
    bb.model.double()
    m = get_method("soft_tokens", k=5, temperature=0.5)
    batch, cap = full_generation(bb, m, TEXTS)
    L = bb.facts.n_layers
    for b, text in enumerate(TEXTS):
        ref_hidden, ref_probs, _ = reference_generation(bb, m, text, 5, 0.5)
        real = batch.attention_mask[b].nonzero().squeeze(1)
        torch.testing.assert_close(cap.hidden[L][b, real], ref_hidden[L], atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(cap.probs[b], ref_probs, atol=1e-12, rtol=1e-10)


def test_logits_head_matches_the_causal_lm(tiny):
    ids = torch.tensor([tiny.tokenizer("The bank by the river.")["input_ids"]])
    with torch.inference_mode():
        want = tiny.model(input_ids=ids).logits[:, -1]  # (1, V): the model's own head
        cap = run(tiny, None, [-1], inputs_embeds=tiny.input_embeddings(ids))
        got = next_token_logits(tiny, cap.hidden[tiny.facts.n_layers][:, -1])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_zero_temperature_mix_is_the_argmax_token_embedding(tiny):
    """As τ -> 0 the distribution is one-hot and s·E is exactly the argmax token's input vector (Gemma's
    sqrt(d) scaling included)."""
    logits = torch.randn(6, tiny.facts.vocab_size, generator=torch.Generator().manual_seed(0))
    probs = token_distribution(logits, 1e-8)
    top = logits.argmax(-1)
    assert torch.equal(probs, torch.nn.functional.one_hot(top, probs.shape[-1]).float())
    with torch.inference_mode():
        assert torch.equal(embed_mix(tiny, probs), tiny.input_embeddings(top))
        warm = embed_mix(tiny, token_distribution(logits, 1.0))
    assert not torch.allclose(warm, tiny.input_embeddings(top))  # the limit is not trivially true


def test_low_temperature_soft_generation_equals_hard(tiny_llama):
    soft = get_method("soft_tokens", k=5, temperature=1e-4)
    hard = get_method("soft_tokens", k=5, mode="hard")
    _, cs = full_generation(tiny_llama, soft, TEXTS)
    _, ch = full_generation(tiny_llama, hard, TEXTS)
    gap = cs.top_probs  # (B, K, V) sorted: the top logit must win clearly for the limit to hold
    assert (gap[..., 0] > 1 - 1e-6).all()
    torch.testing.assert_close(cs.inputs, ch.inputs, atol=1e-6, rtol=0)
    np.testing.assert_allclose(soft.encode(tiny_llama, TEXTS), hard.encode(tiny_llama, TEXTS), atol=1e-5)


def test_hard_mode_equals_appending_the_argmax_tokens(tiny):
    """Greedy soft-token generation in hard mode is plain greedy decoding: the same states as a vanilla
    forward over the prompt followed by the generated token ids (through input_ids, not inputs_embeds)."""
    m = get_method("soft_tokens", k=3, mode="hard")
    batch, cap = full_generation(tiny, m, TEXTS[:2])
    L = tiny.facts.n_layers
    for b, text in enumerate(TEXTS[:2]):
        prompt = m.prepare(tiny, [text])[0].ids
        ids = torch.tensor(np.concatenate([prompt, cap.argmax[b].numpy()]))[None]
        with torch.inference_mode():
            want = tiny.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0]  # (T+3, d)
        real = batch.attention_mask[b].nonzero().squeeze(1)
        torch.testing.assert_close(cap.hidden[L][b, real], want, atol=1e-4, rtol=1e-4)


def test_probabilities_sum_to_one_and_top_k_renormalises():
    logits = torch.randn(4, 300, generator=torch.Generator().manual_seed(1)) * 3
    full = token_distribution(logits, 0.8)
    torch.testing.assert_close(full.sum(-1), torch.ones(4))
    cut = token_distribution(logits, 0.8, top_k=5)
    torch.testing.assert_close(cut.sum(-1), torch.ones(4))
    assert ((cut > 0).sum(-1) == 5).all()
    top = logits.topk(5, dim=-1).indices
    kept = full.gather(-1, top)
    torch.testing.assert_close(cut.gather(-1, top), kept / kept.sum(-1, keepdim=True))  # same ratios
    torch.testing.assert_close(token_distribution(logits, 0.8, top_k=300), full)  # k >= V: nothing cut


def test_trace_steps_are_distributions(tiny):
    m = get_method("soft_tokens", k=4, top_k=3)
    emb, tr = m.encode(tiny, TEXTS[:2], trace=True, normalize=False)
    for t in range(2):
        probs = tr["soft.top_probs"][t]  # (K, 10)
        np.testing.assert_allclose(probs[:, :3].sum(-1), 1.0, atol=1e-6)
        assert (probs[:, 3:] == 0).all()
        assert (tr["soft.entropy"][t] <= np.log(3) + 1e-5).all() and (tr["soft.entropy"][t] > 0).all()
        assert tr["soft.top_tokens"][t].shape == (4, 10)
        # the step-K embedding is the method's embedding; the labelled tokens mark the generated positions
        np.testing.assert_allclose(tr["soft.step_embeddings"][t][-1], emb[t], atol=1e-5)
        assert all(tok.startswith("⟨") for tok in tr.tokens[t][-4:])
        assert tr["segments"][t][-4:].tolist() == [GENERATED] * 4
    _, tr = get_method("soft_tokens", k=4).encode(tiny, TEXTS[:1], trace=True)
    probs = tr["soft.top_probs"][0]  # whole vocabulary: the top 10 hold part of the mass, in falling order
    assert (np.diff(probs, axis=-1) <= 0).all() and (probs.sum(-1) < 1).all()


def test_trace_attention_in_batch_layout(tiny_llama):
    """Attention captured step by step equals one eager forward over the whole (prompt + fed vectors)."""
    m = get_method("soft_tokens", k=3)
    _, tr = m.encode(tiny_llama, TEXTS[:2], trace=True, attention=True)
    for t, text in enumerate(TEXTS[:2]):
        _, _, fed = reference_generation(tiny_llama, m, text, 3)
        ids = torch.from_numpy(m.prepare(tiny_llama, [text])[0].ids)[None]
        from analysis.core.forward import attention_backend

        with torch.inference_mode(), attention_backend(tiny_llama, "eager"):
            seq = torch.cat([tiny_llama.input_embeddings(ids), fed[None]], dim=1)
            cap = run(tiny_llama, None, "all", attention=True, inputs_embeds=seq)
        want = torch.stack([cap.attention[l][0] for l in range(tiny_llama.facts.n_layers)]).numpy()
        np.testing.assert_allclose(tr["attention"][t], want, atol=1e-5)


def test_prefix_of_a_longer_run_is_the_shorter_run(tiny):
    """encode_steps reads every K from one generation; each equals a separate run with that K."""
    ks = [0, 1, 3, 5]
    for pooling in ("generated", "generated+text", "last_generated"):
        m = get_method("soft_tokens", k=5, pooling=pooling)
        steps = m.encode_steps(tiny, TEXTS, ks)  # (n, 4, d)
        for j, k in enumerate(ks):
            alone = get_method("soft_tokens", k=k, pooling=pooling).encode(tiny, TEXTS)
            np.testing.assert_allclose(steps[:, j], alone, atol=1e-5)


def test_k0_is_the_last_prompt_token(tiny):
    m = get_method("soft_tokens", k=0)
    got = m.encode(tiny, TEXTS, normalize=False)
    for i, text in enumerate(TEXTS):
        ids = torch.from_numpy(m.prepare(tiny, [text])[0].ids)[None]
        with torch.inference_mode():
            want = tiny.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0, -1]
        np.testing.assert_allclose(got[i], want.numpy(), atol=1e-5)


def test_poolings_read_the_right_positions(tiny_llama):
    texts = TEXTS[:2]
    _, tr = get_method("soft_tokens", k=3).encode(tiny_llama, texts, trace=True)
    for pooling, pick in [("generated", lambda h, seg: h[seg == GENERATED].mean(0)),
                          ("generated+text", lambda h, seg: h[(seg == GENERATED) | (seg == 1)].mean(0)),
                          ("last_generated", lambda h, seg: h[-1])]:
        m = get_method("soft_tokens", k=3, pooling=pooling)
        got = m.encode(tiny_llama, texts, normalize=False)
        _, own = m.encode(tiny_llama, texts, trace=True)
        for t in range(2):
            want = pick(tr.hidden(t, -1), tr["segments"][t])
            np.testing.assert_allclose(got[t], want, atol=1e-5)
            if pooling != "last_generated":  # the trace's pool_mask describes the same readout
                np.testing.assert_allclose(own["pool_mask"][t] @ own.hidden(t, -1), want, atol=1e-5)


def test_readout_layer_and_encode_layers(tiny_llama):
    m = get_method("soft_tokens", k=2, layer=2)
    layers = m.encode_layers(tiny_llama, TEXTS, layers=[2, -1])  # (n, 2, d)
    mid = get_method("soft_tokens", k=2, layer=2).encode(tiny_llama, TEXTS, normalize=False)
    top = get_method("soft_tokens", k=2).encode(tiny_llama, TEXTS, normalize=False)
    np.testing.assert_allclose(layers[:, 0], mid, atol=1e-5)
    np.testing.assert_allclose(layers[:, 1], top, atol=1e-5)


def test_a_generation_pass_holds_at_most_the_generation_budget(tiny_llama, monkeypatch):
    """Generation keeps a pass's whole key-value cache, so soft tokens cap every pass at GENERATION_TOKENS whatever
    budget the caller gives (issue 34); the embeddings do not depend on how the texts were batched."""
    import analysis.methods.soft_tokens as soft

    m = get_method("soft_tokens", k=3)
    whole = m.encode(tiny_llama, TEXTS, max_tokens=None, batch_size=1)
    widths, real = [], soft.generate
    monkeypatch.setattr(soft, "generate", lambda bb, batch, *a, **kw: widths.append(batch.input_ids.numel())
                        or real(bb, batch, *a, **kw))
    monkeypatch.setattr(soft, "GENERATION_TOKENS", 40)
    capped = m.encode(tiny_llama, TEXTS, max_tokens=100_000)
    lengths = [len(e) + 3 for e in m.prepare(tiny_llama, TEXTS)]  # the prompt and its K = 3 slots
    assert len(widths) == len(soft.batches_by_length(lengths, soft.BATCH_SIZE, 40)) > 1  # not one pass of three
    np.testing.assert_allclose(capped, whole, atol=1e-5)


def test_no_state_leaks_between_calls(tiny_llama):
    model = tiny_llama.model
    backend = model.config._attn_implementation
    hooks_before = [(n, dict(m._forward_hooks), dict(m._forward_pre_hooks)) for n, m in model.named_modules()]
    m = get_method("soft_tokens", k=4)
    a1 = m.encode(tiny_llama, TEXTS[:1])
    m.encode(tiny_llama, TEXTS[1:], trace=True, attention=True)
    b = m.encode(tiny_llama, TEXTS[1:])
    a2 = m.encode(tiny_llama, TEXTS[:1])
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_allclose(b, get_method("soft_tokens", k=4).encode(tiny_llama, TEXTS[1:]), atol=0)
    assert model.config._attn_implementation == backend
    # (compared with before, not with none: transformers keeps its own output-recording hooks once installed)
    assert [(n, dict(m._forward_hooks), dict(m._forward_pre_hooks)) for n, m in model.named_modules()] == hooks_before


def test_instruction_changes_the_prompt_and_the_result(tiny_llama):
    neutral = get_method("soft_tokens", k=2)
    emotion = get_method("soft_tokens", k=2, instruction="Which emotion does this text express?")
    assert "Which emotion" in emotion.template and neutral.template.endswith("Query: {text}")
    assert get_method("soft_tokens", instruction="").template == "{text}"
    a, b = neutral.encode(tiny_llama, TEXTS[:1]), emotion.encode(tiny_llama, TEXTS[:1])
    assert not np.allclose(a, b)
    _, tr = emotion.encode(tiny_llama, TEXTS[:1], trace=True)
    seg = tr["segments"][0]
    text_tokens = "".join(t for t, s in zip(tr.tokens[0], seg) if s == 1)
    assert text_tokens.replace("Ġ", " ").strip() == TEXTS[0]


def test_bad_parameters_are_user_errors(tiny_llama, tmp_path):
    with pytest.raises(UserError, match="instruction"):
        get_method("soft_tokens", instruction="Summarise {text} please")
    with pytest.raises(UserError, match="mode"):
        get_method("soft_tokens", mode="greedy")
    with pytest.raises(UserError, match="temperature"):
        get_method("soft_tokens", temperature=0.0)
    with pytest.raises(UserError, match="does not exist"):
        get_method("soft_tokens", adapter=str(tmp_path / "missing"))
    with pytest.raises(UserError, match="not a PEFT adapter"):
        get_method("soft_tokens", adapter=str(tmp_path))
    small = get_method("soft_tokens", k=64)
    from analysis.models.tiny import tiny_backbone

    with pytest.raises(UserError, match="no room"):
        small.encode(tiny_backbone("llama", max_length=60), TEXTS[:1])
    assert parse_params("soft_tokens", ["k=7", "temperature=0.5", "mode=hard", "instruction=Find the emotion",
                                        "top_k=20", "pooling=last_generated"]) == {
        "k": 7, "temperature": 0.5, "mode": "hard", "instruction": "Find the emotion", "top_k": 20,
        "pooling": "last_generated"}


# ---- the adapter -----------------------------------------------------------------------------------------------
def make_lora(bb, folder, seed=0, scale=0.5):
    """Save a small LoRA adapter with random (non-zero) weights for `bb`'s model into `folder`."""
    import copy

    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj"], init_lora_weights=False)
    peft_model = get_peft_model(copy.deepcopy(bb.model), cfg)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.mul_(scale)
    peft_model.save_pretrained(folder)
    return peft_model


def test_adapter_is_merged_into_a_copy(tiny_llama, tmp_path):
    from analysis.weights.adapters import load_adapter

    before = {k: v.clone() for k, v in tiny_llama.model.state_dict().items()}
    peft_model = make_lora(tiny_llama, tmp_path / "lora")
    tuned = load_adapter(tiny_llama, str(tmp_path / "lora"))
    assert tuned is not tiny_llama and tuned.model is not tiny_llama.model
    assert tuned.identity.startswith(tiny_llama.identity + "+adapter:")
    assert load_adapter(tiny_llama, str(tmp_path / "lora")) is tuned  # memoised
    after = tiny_llama.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # the shared model is untouched
    ids = torch.tensor([tiny_llama.tokenizer("A cat sat on the mat.")["input_ids"]])
    with torch.inference_mode():
        want = peft_model(input_ids=ids).logits  # the adapter applied by peft itself (not merged)
        got = tuned.model(input_ids=ids).logits
        base = tiny_llama.model(input_ids=ids).logits
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(got, base, atol=1e-3)  # the adapter does something
    own = {n: p.data_ptr() for n, p in tiny_llama.model.named_parameters()}
    shared = {n for n, p in tuned.model.named_parameters() if p.data_ptr() == own[n]}
    adapted = {n for n in own if any(f"{t}.weight" in n for t in ("q_proj", "v_proj", "o_proj"))}
    assert shared == set(own) - adapted  # the weights the adapter leaves alone are not held twice (issue 34)


def test_adapter_parameter_and_fingerprint(tiny_llama, tmp_path):
    from analysis.weights.adapters import load_adapter

    folder = tmp_path / "lora"
    make_lora(tiny_llama, folder, seed=0)
    m = get_method("soft_tokens", k=3, adapter=str(folder))
    assert m.params.adapter.startswith(str(folder.resolve()) + "@")
    first_identity = load_adapter(tiny_llama, str(folder)).identity
    np.testing.assert_allclose(m.encode(tiny_llama, TEXTS),
                               get_method("soft_tokens", k=3).encode(load_adapter(tiny_llama, str(folder)), TEXTS),
                               atol=1e-6)
    assert not np.allclose(m.encode(tiny_llama, TEXTS), get_method("soft_tokens", k=3).encode(tiny_llama, TEXTS))
    again = get_method("soft_tokens", params=m.params)  # a spec validates again to itself
    assert again.params.adapter == m.params.adapter
    make_lora(tiny_llama, folder, seed=1)  # new weights in the same folder: new fingerprint, new identity
    m2 = get_method("soft_tokens", k=3, adapter=str(folder))
    assert m2.params.adapter != m.params.adapter
    assert load_adapter(tiny_llama, str(folder)).identity != first_identity


def test_adapter_folder_errors(tiny_llama, tmp_path):
    from analysis.weights.adapters import load_adapter

    with pytest.raises(UserError, match="does not exist"):
        load_adapter(tiny_llama, str(tmp_path / "nope"))
    (tmp_path / "adapter_config.json").write_text("{not json")
    with pytest.raises(UserError, match="JSON"):
        load_adapter(tiny_llama, str(tmp_path))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(UserError, match="peft_type"):
        load_adapter(tiny_llama, str(tmp_path))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    with pytest.raises(UserError, match="no weights"):
        load_adapter(tiny_llama, str(tmp_path))
    # an adapter made for another architecture does not fit
    from analysis.models.tiny import tiny_backbone

    other = tiny_backbone("llama", n_layers=2, seed=3)
    make_lora(other, tmp_path / "other")
    wide = tiny_backbone("qwen3")
    cfg = json.loads((tmp_path / "other" / "adapter_config.json").read_text())
    cfg["target_modules"] = ["not_a_module"]
    (tmp_path / "other" / "adapter_config.json").write_text(json.dumps(cfg))
    with pytest.raises(UserError, match="does not fit"):
        load_adapter(wide, str(tmp_path / "other"))


# ---- library helpers and the real model ------------------------------------------------------------------------
def test_generate_soft_tokens_report(tiny_llama):
    from analysis.inspect.generation import generate_soft_tokens, steps_frame, token_heatmap

    r = generate_soft_tokens(tiny_llama, TEXTS[1], k=4, topn=5, temperature=0.5)
    assert r["top_probs"].shape == (4, 5) and len(r["top_tokens"]) == 4 and len(r["argmax_tokens"]) == 4
    np.testing.assert_allclose(r["probs"].sum(-1), 1.0, atol=1e-5)
    assert r["drift"][-1] == pytest.approx(1.0, abs=1e-6) and (r["drift"] <= 1 + 1e-6).all()
    np.testing.assert_allclose(r["embedding"], get_method("soft_tokens", k=4, temperature=0.5).encode(
        tiny_llama, [TEXTS[1]])[0], atol=1e-5)
    entropy = -(r["probs"] * np.log(np.clip(r["probs"], 1e-30, None))).sum(-1)
    np.testing.assert_allclose(r["entropy"], entropy, rtol=1e-4)
    frame = steps_frame(r)
    assert len(frame) == 20 and set(frame.columns) >= {"step", "rank", "token", "probability", "entropy", "drift"}
    heat = token_heatmap(r)
    assert heat.shape[1] == 4 and heat.index.is_unique
    with pytest.raises(UserError):
        generate_soft_tokens(tiny_llama, "   ", k=3)
    with pytest.raises(UserError):
        generate_soft_tokens(tiny_llama, "text", k=0)


def test_scaling_curve_on_tiny(tiny_llama):
    from analysis.data.corpora import demo_pairs
    from analysis.inspect.generation import scaling_curve

    with pytest.raises(UserError, match="gold scores in .* are equal"):
        scaling_curve(tiny_llama, demo_pairs().head(8), ks=(0, 1))
    pairs = demo_pairs()  # 10 paraphrases (1) and 10 unrelated pairs (0)
    calls = []
    curve = scaling_curve(tiny_llama, pairs, ks=(0, 1, 3), progress=lambda d, t: calls.append((d, t)))
    assert curve["ks"].tolist() == [0, 1, 3] and curve["spearman"].shape == (3,)
    assert np.isfinite(curve["spearman"]).all() and calls[-1][0] == calls[-1][1]
    emb = get_method("soft_tokens", k=3).encode(tiny_llama, pairs.left)
    emb_r = get_method("soft_tokens", k=3).encode(tiny_llama, pairs.right)
    np.testing.assert_allclose(curve["sims"][2], (emb * emb_r).sum(1), atol=1e-5)


@pytest.mark.real
def test_real_model_cached_generation_matches_recompute(real):
    m = get_method("soft_tokens", k=3)
    text = "The movie was an absolute delight from start to finish."
    batch, cap = full_generation(real, m, [text, "Short one."])
    ref_hidden, ref_probs, _ = reference_generation(real, m, text, 3)
    real_idx = batch.attention_mask[0].nonzero().squeeze(1)
    L = real.facts.n_layers
    scale = float(ref_hidden[L].abs().max())  # final-layer states reach ~50 on this model
    torch.testing.assert_close(cap.hidden[L][0, real_idx], ref_hidden[L], atol=1e-4 * scale, rtol=0)
    torch.testing.assert_close(cap.probs[0], ref_probs, atol=1e-3, rtol=0)
    assert (cap.argmax[0] == ref_probs.argmax(-1)).all()
    # the instruct model's first soft token after the query is far from uniform
    assert float(cap.entropy[0, 0]) < 0.5 * np.log(real.facts.vocab_size)


@pytest.mark.real
def test_command_line(real, capsys):
    from cli import main

    assert main(["soft-tokens", "--text", "The cat sat on the mat.", "--k", "3", "--top", "4",
                 "--temperature", "0.7", "--instruction", "What is the mood of this text?"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k"] == 3 and len(out["steps"]) == 3
    assert all(len(s["top"]) == 4 and s["top"][0]["prob"] >= s["top"][-1]["prob"] for s in out["steps"])
    assert out["instruction"] == "What is the mood of this text?" and len(out["drift"]) == 3
    assert main(["soft-tokens", "--text", "  ", "--k", "3"]) == 2
    assert "error" in capsys.readouterr().err
