"""GIRCSE training: known answers for the ICR loss, gradients through the cached soft-token generation into the
LoRA weights (tiny models), a few training steps lower the loss, and the shipped adapter on the real model."""

import copy
import math
import warnings

import numpy as np
import pytest
import torch

from analysis.methods import get_method
from analysis.training.icr import cumulative_means, objective, refinement_penalty, stepwise_losses
from tests.conftest import stsb_dev_or_skip

# ---- the loss: known answers -----------------------------------------------------------------------------------
def test_cumulative_means():
    s = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [5.0, 4.0]]])  # (1, 3, 2)
    want = torch.tensor([[[1.0, 0.0], [2.0, 1.0], [3.0, 2.0]]])
    assert torch.equal(cumulative_means(s), want)


def test_stepwise_losses_known_answer():
    """Two orthogonal unit pairs at temperature 1: each row's softmax is (e, 1)/(e + 1), so
    L = log(1 + e^-1) = 0.313262; swapping the documents at step 2 gives log(1 + e) = 1.313262."""
    q = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])  # (B=2, K=2, d=2)
    d = torch.tensor([[[2.0, 0.0], [0.0, 3.0]], [[0.0, 5.0], [4.0, 0.0]]])  # scale must not matter (cosine)
    got = stepwise_losses(q, d, temperature=1.0)
    assert got.shape == (2,)
    assert got[0].item() == pytest.approx(math.log1p(math.exp(-1)), abs=1e-6)
    assert got[1].item() == pytest.approx(math.log1p(math.e), abs=1e-6)
    # temperature 0.5 doubles the logits: log(1 + e^-2)
    assert stepwise_losses(q, d, temperature=0.5)[0].item() == pytest.approx(math.log1p(math.exp(-2)), abs=1e-6)


def test_refinement_penalty_known_answers():
    # only the step that gets worse counts, in log space, averaged over the K-1 transitions
    assert refinement_penalty(torch.tensor([1.0, 2.0, 1.5])).item() == pytest.approx(math.log(2) / 2, abs=1e-6)
    assert refinement_penalty(torch.tensor([2.0, 4.0, 8.0])).item() == pytest.approx(math.log(2), abs=1e-6)
    assert refinement_penalty(torch.tensor([3.0, 2.0, 1.0, 0.5])).item() == 0.0  # decreasing: no penalty
    assert refinement_penalty(torch.tensor([3.0, 3.0])).item() == 0.0
    assert refinement_penalty(torch.tensor([0.7])).item() == 0.0  # one step: nothing to refine


def test_objectives():
    # the paper: L = sum_k L_k + lambda * R, R = mean over k < K of max(log L_{k+1} - log L_k, 0); by hand for
    # L = (1, 2, 1.5): sum 4.5; R = (max(log 2, 0) + max(log 0.75, 0)) / 2 = log(2) / 2
    losses = torch.tensor([1.0, 2.0, 1.5])
    assert objective(losses, "icr").item() == pytest.approx(4.5 + math.log(2) / 2, abs=1e-6)
    assert objective(losses, "icr", lam=0.0).item() == pytest.approx(4.5)
    assert objective(losses, "icr-mean").item() == pytest.approx(1.5 + math.log(2) / 2, abs=1e-6)
    assert objective(losses, "stepwise").item() == pytest.approx(4.5)  # the ladder's middle rung: icr with λ = 0
    assert objective(losses, "final").item() == pytest.approx(1.5)
    assert objective(torch.tensor([3.0, 2.0, 1.0]), "icr").item() == pytest.approx(6.0)  # no penalty when decreasing
    with pytest.raises(ValueError):
        objective(losses, "bogus")


def test_penalty_gradient_only_on_worsening_steps():
    losses = torch.tensor([1.0, 2.0, 1.5], requires_grad=True)
    refinement_penalty(losses).backward()
    # d/dL of (log L2 - log L1)/2: -1/(2 L1) on L1, +1/(2 L2) on L2; the improving step 2 -> 3 gives nothing
    assert torch.allclose(losses.grad, torch.tensor([-0.5, 0.25, 0.0]))


# ---- gradients through the cached generation ---------------------------------------------------------------------
def _lora(tiny_llama, **overrides):
    from analysis.training.gircse import Config as GircseConfig, lora_backbone

    config = GircseConfig(lora_rank=4, lora_alpha=8, lora_layers=0, **overrides)
    peft_model, tuned = lora_backbone(tiny_llama, config, seed=0)
    with torch.no_grad():  # B starts at zero (the adapter is the identity): give every LoRA weight a value
        g = torch.Generator().manual_seed(1)
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return config, peft_model, tuned


def test_lora_copy_leaves_the_shared_backbone_alone(tiny_llama):
    before = {n: p.clone() for n, p in tiny_llama.model.named_parameters()}
    _, peft_model, tuned = _lora(tiny_llama)
    assert tuned.model is not tiny_llama.model
    assert all(torch.equal(p, before[n]) for n, p in tiny_llama.model.named_parameters())
    assert not any("lora" in n for n, _ in tiny_llama.model.named_modules())
    assert not any(p.requires_grad for p in tiny_llama.model.parameters())


def test_a_merged_lora_shares_every_weight_it_does_not_change(tiny_llama):
    """`merged_backbone` (Causal2Vec's shipped LoRA) on a copy over the model's own tensors: the merged copy gives the
    unmerged LoRA model's logits, the shared model is untouched, and only the adapted weights are held twice."""
    from analysis.weights.lora import add_lora, lora_config, lora_tensors, merged_backbone

    before = {n: p.clone() for n, p in tiny_llama.model.named_parameters()}
    cfg = lora_config(4, targets=("q_proj", "v_proj"))
    unmerged = add_lora(copy.deepcopy(tiny_llama.model), cfg)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n, p in unmerged.named_parameters():
            if "lora_" in n:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    tuned = merged_backbone(tiny_llama, lora_tensors(unmerged), cfg, "test-shared-merge")
    ids = torch.tensor([tiny_llama.tokenizer("A cat sat on the mat.")["input_ids"]])
    with torch.inference_mode():
        torch.testing.assert_close(tuned.model(input_ids=ids).logits, unmerged(input_ids=ids).logits, atol=1e-4,
                                   rtol=1e-4)
    assert all(torch.equal(p, before[n]) for n, p in tiny_llama.model.named_parameters())
    own = {n: p.data_ptr() for n, p in tiny_llama.model.named_parameters()}
    merged = {n.replace(".base_layer", ""): p.data_ptr() for n, p in tuned.model.named_parameters() if "lora_" not in n}
    assert {n for n, ptr in merged.items() if ptr == own[n]} == {n for n in own
                                                                if not n.endswith(("q_proj.weight", "v_proj.weight"))}


def test_gradients_reach_lora_through_every_soft_step(tiny_llama, monkeypatch):
    """A loss on the K-th generated state only: its gradient must reach every fed mix d_1..d_K (so it flows back
    through every soft step and the cache) and the LoRA weights of every layer."""
    import analysis.methods.soft_tokens as st
    from analysis.training.gircse import soft_states

    K = 4
    _, peft_model, tuned = _lora(tiny_llama)
    m = get_method("soft_tokens", k=K, adapter="none")
    mixes = []  # d_1..d_K exactly as generate() feeds them
    original = st.embed_mix
    monkeypatch.setattr(st, "embed_mix", lambda bb, probs: mixes.append(original(bb, probs)) or mixes[-1])
    last = soft_states(tuned, m, ["A cat sat.", "The quick brown fox jumps."])[:, -1]  # (2, d) the K-th state
    assert len(mixes) == K
    grads_mix = torch.autograd.grad(last.square().sum(), mixes, retain_graph=True)
    # d_K is the input of the last position itself; d_1..d_{K-1} reach it only through the cache and later steps
    for k, g in enumerate(grads_mix):
        assert (g.abs().sum(dim=-1) > 0).all(), f"no gradient reaches d_{k + 1}"
    last.square().sum().backward()
    grads = {n: p.grad for n, p in peft_model.named_parameters() if p.requires_grad}
    assert grads and all(g is not None and g.abs().sum() > 0 for g in grads.values())
    layers = {int(n.split(".layers.")[1].split(".")[0]) for n in grads}
    assert layers == set(range(tuned.facts.n_layers))


def test_cached_gradients_equal_recomputing_the_whole_sequence(tiny_llama):
    """Known answer: the gradient with respect to the LoRA weights through the KV cache equals the gradient of the
    slow reference (no cache: the whole prompt + soft tokens recomputed at every step), so nothing is detached."""
    from analysis.core.forward import run
    from analysis.methods.soft_tokens import embed_mix, next_token_logits, token_distribution
    from analysis.training.gircse import soft_states

    K = 3
    _, peft_model, tuned = _lora(tiny_llama)
    peft_model.double()  # in float32, sums in another order differ by ~2e-5 at 1 thread (failed CI once)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    m = get_method("soft_tokens", k=K, adapter="none")
    text = "The quick brown fox jumps."

    got_states = soft_states(tuned, m, [text])[0]  # (K, d)
    got = torch.autograd.grad(got_states.sum() + got_states.square().sum(), params)

    L = tuned.facts.n_layers
    ids = torch.from_numpy(m.prepare(tuned, [text])[0].ids)[None]  # (1, T)
    seq = tuned.input_embeddings(ids)  # (1, T, d)
    for _ in range(K):
        h = run(tuned, None, [L], inputs_embeds=seq).hidden[L][:, -1]  # (1, d)
        seq = torch.cat([seq, embed_mix(tuned, token_distribution(next_token_logits(tuned, h), 1.0))[:, None]], dim=1)
    want_states = run(tuned, None, [L], inputs_embeds=seq).hidden[L][0, -K:]  # (K, d)
    want = torch.autograd.grad(want_states.sum() + want_states.square().sum(), params)
    torch.testing.assert_close(got_states, want_states, atol=1e-8, rtol=1e-6)
    for g, w in zip(got, want):  # measured gap ~5e-8 (rotary tables stay float32); a detached term is orders larger
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-4)


def test_a_few_steps_lower_the_loss(tiny_llama):
    """Plain AdamW on the ICR loss of a fixed toy batch: the loss must fall (the pipeline can learn)."""
    from analysis.training.gircse import pair_losses

    torch.manual_seed(0)
    config, peft_model, tuned = _lora(tiny_llama, temperature=0.1)
    m = get_method("soft_tokens", k=3, adapter="none")
    left = ["a red car", "the cat sleeps", "rain in spring", "two men talk", "a small boat"]
    right = ["a red automobile", "the cat is sleeping", "spring rain", "two men are talking", "a little boat"]
    params = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-3)
    first = None
    for _ in range(12):
        loss = objective(pair_losses(tuned, m, left, right, config), "icr")
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    final = objective(pair_losses(tuned, m, left, right, config), "icr").item()
    assert final < 0.7 * first, (first, final)


def test_causal_eos_trains_the_state_soft_tokens_reads_at_k0(tiny_llama):
    """The baseline's training readout is the prompt's last state, exactly what adapter=causal-eos k=0 embeds: not
    the last of the K generated slots the method's own collate appends (pad ids before generation fills them)."""
    from analysis.training.gircse import eos_states

    texts = ["a cat", "the quick brown fox jumps over the dog"]
    m = get_method("soft_tokens", k=5, adapter="none")
    with torch.no_grad():
        got = eos_states(tiny_llama, m, texts)[:, 0].numpy()  # (B, d)
    want = get_method("soft_tokens", k=0, adapter="none").encode(tiny_llama, texts, normalize=False)
    np.testing.assert_allclose(got, want, atol=1e-5)


# ---- the adapter as an artefact, and the `adapter` parameter -----------------------------------------------------
def test_saved_adapter_loads_merged_and_refuses_another_model(tiny_llama, tmp_path):
    from analysis.weights.adapters import load_adapter
    from analysis.core.errors import UserError
    from analysis.models.tiny import tiny_backbone
    from analysis.training.gircse import save_adapter

    _, peft_model, tuned = _lora(tiny_llama)
    folder = save_adapter(tmp_path / "a", peft_model, {"method": "gircse", "model_identity": tiny_llama.identity,
                                                        "model_name": tiny_llama.facts.name})
    assert {p.name for p in folder.iterdir()} >= {"weights.safetensors", "manifest.json", "adapter_config.json"}
    with warnings.catch_warnings(record=True) as seen:  # no library noise reaches a page's warnings
        warnings.simplefilter("always")
        merged = load_adapter(tiny_llama, str(folder))
    assert not [w for w in seen if "base_model_name_or_path" in str(w.message)
                or "is_gradient_checkpointing" in str(w.message)], [str(w.message) for w in seen]
    ids = torch.tensor([[5, 17, 42, 9, 3]])
    with torch.no_grad():
        want = peft_model(input_ids=ids).logits  # LoRA applied by peft, unmerged
        got = merged.model(input_ids=ids).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    m = get_method("soft_tokens", k=2, adapter=str(folder))
    frozen = get_method("soft_tokens", k=2, adapter="none").encode(tiny_llama, ["a cat"])
    assert not np.allclose(m.encode(tiny_llama, ["a cat"]), frozen, atol=1e-4)
    other = tiny_backbone("llama", seed=3)  # same architecture, other weights: another identity
    with pytest.raises(UserError, match="trained for the model"):
        load_adapter(other, str(folder))


def test_adapter_parameter_values(tiny_llama):
    from analysis.weights.adapters import adapter_spec, resolve_adapter

    assert adapter_spec("") == adapter_spec("none") == adapter_spec(" None ") == "none"
    assert adapter_spec("shipped").startswith("shipped@")
    assert get_method("soft_tokens").params.adapter.startswith("shipped@")  # the default
    # a tiny model has no shipped adapter: "shipped" and "none" are both the frozen model itself
    assert resolve_adapter(tiny_llama, "shipped") is tiny_llama
    assert resolve_adapter(tiny_llama, "none") is tiny_llama
    a = get_method("soft_tokens", k=2).encode(tiny_llama, ["a cat"])
    b = get_method("soft_tokens", k=2, adapter="none").encode(tiny_llama, ["a cat"])
    np.testing.assert_array_equal(a, b)


def test_scaling_curve_intervals(tiny_llama):
    from analysis.data.corpora import demo_pairs
    from analysis.inspect.generation import scaling_curve

    curve = scaling_curve(tiny_llama, demo_pairs(), ks=(0, 2), n_boot=200)
    assert curve["ci"].shape == (2, 2)
    assert (curve["ci"][:, 0] <= curve["spearman"] + 1e-9).all() and (curve["spearman"] <= curve["ci"][:, 1] + 1e-9).all()


# ---- the shipped adapters on the real model -----------------------------------------------------------------------
def _unseen_pairs(n=200):
    """200 genre-stratified pairs of the STS-B dev report part without the first 200 dev pairs: no selection saw
    them (the report part never selects; the adapters trained before the split selected on those 200)."""
    from analysis.data.datasets import stsb_pairs
    from analysis.inspect.generation import OLD_SELECTION, unseen_pairs

    stsb_dev_or_skip()
    pairs, _ = unseen_pairs(n, seed=0)
    dev = stsb_pairs("dev")
    assert not set(zip(dev.left[:OLD_SELECTION], dev.right[:OLD_SELECTION])) & set(zip(pairs.left, pairs.right))
    assert len(set(pairs.genres)) == 6
    return pairs


@pytest.mark.real
def test_shipped_adapter_beats_the_frozen_model(real):
    """On pairs no selection saw, K = 5."""
    from analysis.inspect.generation import scaling_curve
    from analysis.weights.adapters import shipped_folder

    if shipped_folder(real.facts) is None:
        pytest.fail("the default model's shipped GIRCSE adapter is missing (analysis/artefacts/gircse/)")
    pairs = _unseen_pairs()
    trained = scaling_curve(real, pairs, ks=(5,), adapter="shipped", n_boot=0)["spearman"][0]
    frozen = scaling_curve(real, pairs, ks=(5,), adapter="none", n_boot=0)["spearman"][0]
    assert trained > frozen + 0.05, (trained, frozen)


@pytest.mark.real
def test_gircse_and_its_fair_baseline_are_two_different_readers(real):
    """GIRCSE (adapter=shipped, K = 5) and Causal-EOS (adapter=causal-eos, K = 0: the same LoRA, data, steps and loss
    without generation) both score pairs no selection saw, and they are different models. Which one is better is a
    claim the records measure (`python -m analysis measure gircse`), not a constant a test could hold."""
    from analysis.inspect.generation import scaling_curve
    from analysis.weights.adapters import shipped_folder

    if shipped_folder(real.facts, "causal-eos") is None:
        pytest.skip("no Causal-EOS baseline is shipped (analysis/artefacts/gircse/smollm2-135m/baselines/causal-eos/)")
    pairs = _unseen_pairs(60)
    gircse = scaling_curve(real, pairs, ks=(5,), adapter="shipped", n_boot=0)
    baseline = scaling_curve(real, pairs, ks=(0,), adapter="causal-eos", n_boot=0)
    assert all(-1 <= c["spearman"][0] <= 1 for c in (gircse, baseline))
    assert not np.allclose(gircse["sims"][0], baseline["sims"][0])


@pytest.mark.parametrize("objective", ["icr", "causal-eos"])
def test_the_trainer_runs_end_to_end_and_its_adapter_loads(tiny_llama, tmp_path, objective):
    """Both GIRCSE and its fair baseline Causal-EOS train through the one runner, select on the selection part,
    report on the disjoint report part, and load back as a soft_tokens adapter."""
    from analysis.data.corpora import Pairs
    from analysis.training.gircse import Config
    from analysis.training.systems import run

    words = "cat dog bank river money fox runs sleeps".split()
    rng = np.random.default_rng(0)
    left = [" ".join(rng.choice(words, 3)) for _ in range(12)]
    pairs = Pairs("toy", left, [t + " !" for t in left], [5.0] * 8 + [0.5] * 4, ["a"] * 12)
    config = Config(out=str(tmp_path / objective), steps=2, batch_size=4, eval_every=1, k=2, objective=objective,
                    lora_rank=2, lora_alpha=4, lora_layers=2, hard_negatives=2, eval_pairs=10)
    summary = run("gircse", config, backbone=tiny_llama, train_pairs=pairs, dev_pairs=pairs)
    report = summary["results"]["report"]
    assert set(report) == ({"spearman_k0"} if objective == "causal-eos" else
                           {"spearman_k0", "spearman_k1", "spearman_k2", "spearman_k3", "spearman_k10", "spearman_k20"})
    m = get_method("soft_tokens", k=0 if objective == "causal-eos" else 2, adapter=str(tmp_path / objective))
    assert m.encode(tiny_llama, ["a cat"]).shape == (1, tiny_llama.facts.hidden_size)
