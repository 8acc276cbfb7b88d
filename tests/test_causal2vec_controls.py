"""The paper's Causal2Vec controls, trained with the system's own recipe (`train causal2vec --control`): Table 2's
decoder without the contextual token and Table 4's trained concatenation. Mechanics on a tiny model with a stand-in
encoder: they train, ship beside the system, and the method reads them without C."""


import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.data.corpora import Pairs
from analysis.methods import get_method
from analysis.methods.causal2vec import CONTEXTUAL
from analysis.models.tiny import tiny_backbone
from toys import TEXTS, toy_pairs


def train_control(tmp_path, encoder, control: str):
    from analysis.training.causal2vec import Config
    from analysis.training.systems import run

    bb = tiny_backbone("llama")
    pairs = toy_pairs(16)
    config = Config(out=str(tmp_path / control), steps=8, batch_size=8, lora_rank=4, lr=3e-3, eval_every=4,
                    eval_pairs=10, hard_negatives=2, instruction="Query: ", control=control)
    dev = Pairs("toy dev", pairs.left * 3, pairs.right * 3, np.tile(pairs.scores, 3))
    return bb, run("causal2vec", config, backbone=bb, train_pairs=pairs, dev_pairs=dev, encoder=encoder)


@pytest.mark.parametrize("control,readout", [("no-contextual", "eos"), ("concat", "direct")])
def test_a_control_trains_without_the_contextual_token(tmp_path, hash_encoder, control, readout):
    from analysis.training.systems import ship_place
    from analysis.weights.artefacts import load_artefact

    bb, summary = train_control(tmp_path, hash_encoder, control)
    assert summary["best_step"] > 0
    tensors, manifest = load_artefact(tmp_path / control, method="causal2vec", model_identity=bb.identity)
    assert not any(k.startswith("bridge.") for k in tensors)  # no bridge: the LoRA is what trains
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in tensors.items())
    assert manifest["hyperparameters"]["control"] == control and f"--control {control}" in manifest["command"]
    losses = [r["loss"] for r in manifest["curves"]["train"]]
    assert np.mean(losses[-2:]) < losses[0]
    assert ship_place("causal2vec", manifest["hyperparameters"]) == f"ablations/{control}"
    assert ship_place("causal2vec", {"steps": 180}) == ""  # the system itself (older manifests: no control)

    m = get_method("causal2vec", bridge=str(tmp_path / control), readout=readout)
    assert m.control() == control and not m.contextual() and m.params.instruction == "Query: "
    items = m.prepare(bb, TEXTS)
    assert all((e.segments != CONTEXTUAL).all() and e.c_index == -1 for e in items)  # no C in the input
    emb = m.encode(bb, TEXTS)
    d = bb.facts.hidden_size
    assert emb.shape == (3, d if readout == "eos" else d + 32)
    frozen = get_method("causal2vec", bridge="untrained", readout=readout, instruction="Query: ").encode(bb, TEXTS)
    assert np.abs(emb - frozen).max() > 1e-4  # the trained LoRA runs
    with pytest.raises(UserError, match="without the contextual token"):
        get_method("causal2vec", bridge=str(tmp_path / control), readout="concat")


def test_a_control_with_its_lora_at_zero_is_the_frozen_decoder_without_c(tmp_path, hash_encoder):
    """Known answer: LoRA's B at zero leaves the decoder as it was, so Table 2's control reads exactly the frozen
    decoder's EOS state of the prompt without C (the first half of the frozen concatenation, before normalising)."""
    from analysis.weights.artefacts import load_artefact, save_artefact

    bb, _ = train_control(tmp_path, hash_encoder, "no-contextual")
    tensors, manifest = load_artefact(tmp_path / "no-contextual", method="causal2vec")
    zero = {k: torch.zeros_like(v) if "lora_B" in k else v for k, v in tensors.items()}
    save_artefact(tmp_path / "zero", zero, manifest)
    eos = get_method("causal2vec", bridge=str(tmp_path / "zero"), readout="eos").encode(bb, TEXTS)
    frozen = get_method("causal2vec", bridge="untrained", readout="direct", instruction="Query: ").encode(
        bb, TEXTS, normalize=False)[:, : bb.facts.hidden_size]  # the frozen EOS half, L2-normalised by the readout
    np.testing.assert_allclose(eos, frozen, atol=1e-5)


def test_control_settings_are_checked_before_training(tiny_llama):
    from analysis.training.causal2vec import Config, setup

    with pytest.raises(UserError, match="needs a LoRA"):
        setup(Config(control="concat", lora_rank=0), tiny_llama)
    with pytest.raises(UserError, match="--train-readout concat"):
        setup(Config(control="no-contextual", train_readout="contextual"), tiny_llama)


def test_the_experiment_finds_the_trained_controls(tmp_path, hash_encoder):
    from analysis.experiments.causal2vec import NO_C, trained_controls

    bb, _ = train_control(tmp_path, hash_encoder, "no-contextual")
    found = trained_controls(bb.facts, str(tmp_path))
    assert list(found.values()) == [(NO_C, "eos")]
    assert trained_controls(bb.facts, "") == {}


def test_an_experiment_with_controls_is_the_causal2vec_record_not_a_variant(tmp_path, hash_encoder, monkeypatch):
    """The controls' rows must not rename the record: their loop once reused the variant's `label`, and the
    measured record was written as causal2vec_<the last control's row>. The held-out scoring is stubbed (no STS-B
    here); the methods are the real ones on a tiny model."""
    from types import SimpleNamespace

    from analysis.experiments import causal2vec as exp
    from analysis.experiments.machinery import heldout_sts
    from analysis.experiments.machinery.records import Sample, Table

    bb, _ = train_control(tmp_path, hash_encoder, "no-contextual")
    system = train_control(tmp_path, hash_encoder, "none")[1]
    seen = {}

    def cosines(compute, backbone, methods, pairs, progress=None):
        seen.update(methods)
        return {k: np.ones(len(pairs.left)) for k in methods}, {}

    monkeypatch.setattr(heldout_sts, "report_pairs", lambda n, seed: (toy_pairs(8), Sample(n=8, how="toy", seed=0)))
    monkeypatch.setattr(heldout_sts, "cosines", cosines)
    monkeypatch.setattr(heldout_sts, "score_table", lambda *a, **k: (Table("scores", "s", ("c",), ()), {}))
    monkeypatch.setattr(heldout_sts, "paired_table", lambda *a, **k: (Table("paired", "p", ("c",), ()), {}))
    config = exp.Config(bridge=str(system["out"]), ablation="", controls=str(tmp_path), speed_n=0, speed_long=0)
    measured = exp.measure(config, SimpleNamespace(backbone=lambda name: bb), lambda *a: None)
    assert exp.NO_C in seen and measured.variant == "" and not measured.title
