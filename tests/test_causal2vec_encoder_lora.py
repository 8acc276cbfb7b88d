"""Causal2Vec's `--encoder-lora-rank`: LoRA on the sentence encoder, trained with the bridge and the decoder's LoRA.
Rank 0 is today's run; with a rank the encoder's pooled vector carries gradients, the loss falls, the artefact
holds `encoder_lora.*` tensors and the method embeds with the tuned encoder; a folder without them loads as before.
A tiny random BERT (the tiny decoders' tokenizer) stands in for MiniLM."""

import numpy as np
import pytest
import torch

import analysis.models.minilm as se
from analysis.core.errors import UserError
from analysis.data.corpora import Pairs
from analysis.methods import causal2vec as c2v_module
from analysis.methods import get_method
from analysis.weights import encoder_lora
from toys import TEXTS, toy_pairs


@pytest.fixture
def bert_encoder(monkeypatch):
    """A 2-layer, 32-wide random BERT behind `SentenceEncoder`, the encoder every Causal2Vec path loads."""
    from transformers import BertConfig, BertModel

    from analysis.models.tiny import tiny_tokenizer

    torch.manual_seed(0)
    config = BertConfig(vocab_size=320, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, pad_token_id=0)
    model = BertModel(config).eval().requires_grad_(False)  # as load_encoder leaves MiniLM
    enc = se.SentenceEncoder(model, tiny_tokenizer(), "tiny-bert", max_tokens=64)
    monkeypatch.setattr(se, "load_encoder", lambda: enc)
    c2v_module._memo.clear()  # bridges loaded with another encoder must not serve this one
    yield enc
    c2v_module._memo.clear()


def _config(tmp_path, **kw):
    from analysis.training.causal2vec import Config

    return Config(**{**dict(out=str(tmp_path / "best"), steps=12, batch_size=8, lora_rank=4, lr=3e-3, eval_every=6,
                            eval_pairs=10, train_readout="concat", loss="infonce", hard_negatives=2,
                            instruction="Query: "), **kw})


def test_a_fresh_encoder_lora_embeds_as_the_frozen_encoder_with_gradients(bert_encoder):
    """LoRA's B starts at zero, so the trainable copy's vectors equal `embed`'s bit for bit; they reach the LoRA."""
    from analysis.weights.lora import lora_config

    tuned = encoder_lora.trainable_copy(bert_encoder, lora_config(4, targets=encoder_lora.TARGETS))
    h = encoder_lora.vectors(tuned, TEXTS)  # (3, 32)
    assert h.requires_grad and torch.equal(h.detach(), bert_encoder.embed(TEXTS))
    names = [n for n, p in tuned.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert {n.split(".lora_")[0].split("layer.0.")[-1] for n in names if ".layer.0." in n} == {
        "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}
    h.sum().backward()
    assert all(p.grad is not None for n, p in tuned.model.named_parameters() if "lora_A" in n)
    assert not any(p.requires_grad for p in bert_encoder.model.parameters())  # the shared encoder is untouched


def test_rank_zero_is_todays_job_and_a_rank_adds_only_the_encoder(tmp_path, tiny_llama, bert_encoder):
    """Rank 0 trains the bridge and the decoder's LoRA only, with no encoder entry in the manifest; a rank adds the
    encoder's LoRA and changes nothing else at the start: the same initial weights, batches and first loss."""
    from analysis.training.causal2vec import setup

    pairs = toy_pairs(16)
    dev = Pairs("toy dev", pairs.left * 3, pairs.right * 3, np.tile(pairs.scores, 3))
    jobs = [setup(_config(tmp_path, encoder_lora_rank=r), tiny_llama, train_pairs=pairs, dev_pairs=dev,
                  encoder=bert_encoder) for r in (0, 4)]
    off, on = jobs
    assert all(k.startswith(("bridge.", "lora.")) for k in off.parameters) and "encoder_lora" not in off.extra
    assert on.extra["encoder_lora"] == {"rank": 4, "alpha": 8.0, "targets": list(encoder_lora.TARGETS),
                                        "dropout": 0.0}
    added = set(on.parameters) - set(off.parameters)
    assert added and all(k.startswith(encoder_lora.PREFIX) for k in added)
    assert all(torch.equal(p, on.parameters[k]) for k, p in off.parameters.items())
    first, again = next(off.batches), next(on.batches)  # (left, right, gold, hard negatives)
    assert first[0] == again[0] and first[1] == again[1] and first[3] == again[3]
    assert np.array_equal(first[2], again[2])
    with torch.no_grad():
        assert float(off.loss_fn(first)[0]) == float(on.loss_fn(first)[0])
    assert set(off.tensors()) == set(off.parameters) and set(on.tensors()) == set(on.parameters)


def test_encoder_lora_trains_saves_and_loads_into_the_method(tmp_path, tiny_llama, bert_encoder):
    from analysis.training.systems import run
    from analysis.weights.artefacts import load_artefact, save_artefact

    pairs = toy_pairs(16)  # 8 positives = one InfoNCE batch: the loss is measured on the same data each step
    dev = Pairs("toy dev", pairs.left * 3, pairs.right * 3, np.tile(pairs.scores, 3))
    summary = run("causal2vec", _config(tmp_path, encoder_lora_rank=4), backbone=tiny_llama, train_pairs=pairs,
                  dev_pairs=dev, encoder=bert_encoder)
    assert summary["best_step"] > 0, summary
    folder = tmp_path / "best"
    tensors, manifest = load_artefact(folder, method="causal2vec", model_identity=tiny_llama.identity,
                                      encoder="tiny-bert")
    losses = [r["loss"] for r in manifest["curves"]["train"]]
    assert np.mean(losses[-3:]) < 0.7 * losses[0], losses
    assert manifest["encoder_lora"]["rank"] == 4 and manifest["hyperparameters"]["encoder_lora_rank"] == 4
    assert "--encoder-lora-rank 4" in manifest["command"]
    enc_bs = [v for k, v in tensors.items() if k.startswith(encoder_lora.PREFIX) and "lora_B" in k]
    assert enc_bs and all(v.abs().sum() > 0 for v in enc_bs)  # B starts at zero: gradients reached the encoder

    loaded = get_method("causal2vec", bridge=str(folder)).load(tiny_llama)
    assert loaded.encoder is not bert_encoder and loaded.encoder.identity.startswith("tiny-bert+c2v-encoder-lora:")
    assert np.abs((loaded.encoder.embed(TEXTS) - bert_encoder.embed(TEXTS)).numpy()).max() > 1e-3
    tuned = get_method("causal2vec", bridge=str(folder)).encode(tiny_llama, TEXTS)

    # the same weights without the encoder's LoRA: an old artefact, which loads the shared, frozen encoder
    old = tmp_path / "old"
    save_artefact(old, {k: v for k, v in tensors.items() if not k.startswith(encoder_lora.PREFIX)},
                  {k: v for k, v in manifest.items() if k != "encoder_lora"})
    frozen = get_method("causal2vec", bridge=str(old))
    assert frozen.load(tiny_llama).encoder is bert_encoder
    assert frozen.params.bridge_digest != get_method("causal2vec", bridge=str(folder)).params.bridge_digest
    assert np.abs(frozen.encode(tiny_llama, TEXTS) - tuned).max() > 1e-3
    huge = tmp_path / "huge"  # a manifest claiming another rank than its tensors is refused before any layer is built
    save_artefact(huge, tensors, {**manifest, "encoder_lora": {**manifest["encoder_lora"], "rank": 10**7}})
    with pytest.raises(UserError, match="rank"):
        get_method("causal2vec", bridge=str(huge)).encode(tiny_llama, TEXTS)
    alone = get_method("sentence_encoder").encode(None, TEXTS)  # MiniLM alone: the shared encoder, untuned
    np.testing.assert_allclose(alone, bert_encoder.embed(TEXTS).numpy(), atol=1e-6)
