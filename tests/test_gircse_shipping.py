"""Where GIRCSE's trained adapters ship and how they load: the GIRCSE adapter (`adapter=shipped`), its fair baseline
Causal-EOS beside it (`adapter=causal-eos`, baselines/causal-eos) and the ablations; `train --ship` and `ship` after
the fact put each objective in its place and can move the adapter they replace aside; the results script's plumbing.
Tiny models, and temporary copies of the shipped folder (the real one is never written)."""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.methods import get_method
from analysis.methods.soft_tokens import SoftTokenParams
from toys import toy_genre_pairs


REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "analysis" / "artefacts" / "gircse" / "smollm2-135m"


def fake_adapter(bb, folder, seed: int, objective: str | None = "icr") -> Path:
    """A GIRCSE-style artefact with random LoRA weights; objective None = a manifest of the first trainer (`loss`)."""
    from analysis.training.gircse import Config, lora_backbone, save_adapter

    peft_model, _ = lora_backbone(bb, Config(lora_rank=2, lora_alpha=4, lora_layers=2), seed=seed)
    with torch.no_grad():
        g = torch.Generator().manual_seed(seed)
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    hp = {"objective": objective, "k": 5} if objective else {"loss": "icr", "k": 5}
    return save_adapter(folder, peft_model, {"method": "gircse", "model_identity": bb.identity, "model": bb.facts.name,
                                             "hyperparameters": hp, "steps_done": 3, "best_step": 2,
                                             "best_score": 0.5, "wall_seconds": 60.0, "examples_per_second": 1.5,
                                             "partial": False, "command": "python -m analysis train gircse"})


# ---- adapter=causal-eos ------------------------------------------------------------------------------------------
def test_causal_eos_reads_the_prompt_state_at_k0_and_generates_like_any_adapter_above(tiny_llama, artefacts):
    """k=0 is the readout the baseline was trained on (the prompt's last state of the adapted model); k > 0 generates
    with it exactly as any adapter folder does, although it was never trained to."""
    from analysis.weights.adapters import PLACES, load_adapter, shipped_folder

    model_dir = artefacts / "gircse" / "tiny-llama"
    baseline = fake_adapter(tiny_llama, model_dir / PLACES["causal-eos"], seed=2, objective="causal-eos")
    assert shipped_folder(tiny_llama.facts) is None  # no GIRCSE adapter here: "shipped" stays the frozen model
    assert shipped_folder(tiny_llama.facts, "causal-eos") == baseline
    texts = ["a cat sleeps", "money in the bank"]
    eos0 = get_method("soft_tokens", k=0, adapter="causal-eos").encode(tiny_llama, texts)
    np.testing.assert_array_equal(eos0, get_method("soft_tokens", k=0, adapter=str(baseline)).encode(tiny_llama, texts))
    merged = load_adapter(tiny_llama, str(baseline))
    last = get_method("soft_tokens", k=0, adapter="none").encode(merged, texts)  # the prompt's last state, adapted
    np.testing.assert_allclose(eos0, last, atol=1e-6)
    eos3 = get_method("soft_tokens", k=3, adapter="causal-eos").encode(tiny_llama, texts)
    np.testing.assert_array_equal(eos3, get_method("soft_tokens", k=3, adapter=str(baseline)).encode(tiny_llama, texts))
    assert not np.allclose(eos3, eos0, atol=1e-4)
    help_text = next(f.metadata["help"] for f in dataclasses.fields(SoftTokenParams) if f.name == "adapter")
    assert "causal-eos" in help_text and "k=0" in help_text and "never trained to" in help_text


def test_causal_eos_spec_follows_its_weights_and_is_refused_where_none_is_shipped(tiny_llama, artefacts):
    from analysis.weights.adapters import PLACES, adapter_spec

    empty = adapter_spec("causal-eos")
    assert empty.startswith("causal-eos@") and adapter_spec(" causal-eos ") == empty
    with pytest.raises(UserError, match="No Causal-EOS baseline is shipped for tiny-llama") as err:
        get_method("soft_tokens", k=0, adapter="causal-eos").encode(tiny_llama, ["a cat"])
    assert str(err.value).count(". ") == 0  # one sentence
    fake_adapter(tiny_llama, artefacts / "gircse" / "tiny-llama" / PLACES["causal-eos"], seed=2, objective="causal-eos")
    assert adapter_spec("causal-eos") != empty  # cached results of the baseline change with its weights
    assert adapter_spec("shipped") == adapter_spec("shipped@old")  # the GIRCSE adapter's key is not affected


def test_variants_name_the_baseline_and_the_older_recipe(tiny_llama, artefacts):
    from analysis.inspect.generation import adapter_variants

    model_dir = artefacts / "gircse" / "tiny-llama"
    fake_adapter(tiny_llama, model_dir, seed=1)
    fake_adapter(tiny_llama, model_dir / "baselines" / "causal-eos", seed=2, objective="causal-eos")
    fake_adapter(tiny_llama, model_dir / "ablations" / "icr-mean", seed=3, objective=None)
    older = "ablation: mean of the step losses plus the regulariser, older recipe"
    assert adapter_variants(tiny_llama) == {"GIRCSE (shipped)": "shipped", "Causal-EOS (fair baseline)": "causal-eos",
                                            older: str(model_dir / "ablations" / "icr-mean"),
                                            "frozen (no adapter)": "none"}


# ---- --ship and `ship` ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective,place", [("icr", "."), ("causal-eos", "baselines/causal-eos"),
                                             ("stepwise", "ablations/stepwise")])
def test_train_ship_puts_each_objective_in_its_place(tiny_llama, artefacts, tmp_path, objective, place):
    """--ship of the baseline or an ablation never replaces the GIRCSE adapter; shipping the adapter keeps them."""
    from analysis.training.gircse import Config
    from analysis.training.systems import run

    model_dir = artefacts / "gircse" / "tiny-llama"
    fake_adapter(tiny_llama, model_dir, seed=1)
    fake_adapter(tiny_llama, model_dir / "ablations" / "icr-mean", seed=3, objective=None)
    before = (model_dir / "manifest.json").read_text()
    config = Config(out=str(tmp_path / "run"), steps=1, batch_size=4, eval_every=1, k=2, objective=objective,
                    lora_rank=2, lora_alpha=4, lora_layers=2, eval_pairs=10, ship=True)
    summary = run("gircse", config, backbone=tiny_llama, train_pairs=toy_genre_pairs(), dev_pairs=toy_genre_pairs())
    dest = (model_dir / place).resolve()
    assert Path(summary["shipped"]).resolve() == dest
    assert json.loads((dest / "manifest.json").read_text())["hyperparameters"]["objective"] == objective
    assert (dest / "adapter_config.json").is_file()
    assert ((model_dir / "manifest.json").read_text() == before) == (objective != "icr")
    assert (model_dir / "ablations" / "icr-mean" / "manifest.json").is_file()  # folders inside are kept


def test_ship_after_the_fact_on_a_copy_of_the_shipped_folder(artefacts, tmp_path):
    """The lead's two steps, on a temporary copy of analysis/artefacts/gircse/smollm2-135m: the ICR run replaces the
    shipped adapter, which moves to ablations/icr-mean with its manifest unchanged; the Causal-EOS run goes beside."""
    from analysis.training.systems import install

    if not (SHIPPED / "manifest.json").is_file():
        pytest.skip("no shipped GIRCSE adapter to copy")
    model_dir = artefacts / "gircse" / "smollm2-135m"
    shutil.copytree(SHIPPED, model_dir)
    for placed in (model_dir / "ablations" / "icr-mean", model_dir / "baselines"):  # what a ship already put there
        shutil.rmtree(placed, ignore_errors=True)
    old = (model_dir / "manifest.json").read_text()
    runs = {}
    for objective in ("icr", "causal-eos"):  # finished runs: the shipped weights under a new manifest
        runs[objective] = shutil.copytree(SHIPPED, tmp_path / objective, ignore=shutil.ignore_patterns("ablations"))
        man = json.loads(old)
        man["hyperparameters"] = {**man["hyperparameters"], "objective": objective}
        (runs[objective] / "manifest.json").write_text(json.dumps(man))

    with pytest.raises(UserError, match="already holds files"):
        install("gircse", runs["icr"], move_current_to="ablations/stepwise")
    with pytest.raises(UserError, match="below the model's shipped folder"):
        install("gircse", runs["icr"], move_current_to="../elsewhere")
    assert (model_dir / "manifest.json").read_text() == old  # a refusal writes nothing

    done = install("gircse", runs["icr"], move_current_to="ablations/icr-mean")
    assert Path(done["shipped"]) == model_dir and done["place"] == "."
    assert json.loads((model_dir / "manifest.json").read_text())["hyperparameters"]["objective"] == "icr"
    assert (model_dir / "ablations" / "icr-mean" / "manifest.json").read_text() == old
    assert {p.name for p in (model_dir / "ablations" / "icr-mean").iterdir()} == \
        {"manifest.json", "weights.safetensors", "adapter_config.json"}
    assert (model_dir / "ablations" / "stepwise" / "manifest.json").is_file()
    from analysis.training import ledger

    moved = ledger.entry(model_dir, "ablations/icr-mean")  # the ledger follows the move
    assert moved["weights_sha256"] == json.loads(old).get("weights_sha256") and ledger.entry(model_dir, "") is not None

    done = install("gircse", runs["causal-eos"])
    assert Path(done["shipped"]) == model_dir / "baselines" / "causal-eos"
    assert json.loads((model_dir / "manifest.json").read_text())["hyperparameters"]["objective"] == "icr"
    assert not list(artefacts.rglob(".*"))  # no temporary folder left behind
    from analysis.weights.adapters import shipped_folder

    assert shipped_folder("default", "causal-eos") == model_dir / "baselines" / "causal-eos"


def test_ship_refuses_an_unfinished_run_another_system_and_nothing_to_move(tiny_llama, artefacts, tmp_path, capsys):
    from tests.conftest import run_cli

    partial = fake_adapter(tiny_llama, tmp_path / "partial", seed=1)
    man = json.loads((partial / "manifest.json").read_text())
    (partial / "manifest.json").write_text(json.dumps({**man, "partial": True}))
    code, _, err = run_cli(capsys, "ship", "gircse", partial)
    assert code == 2 and "unfinished run" in err
    code, _, err = run_cli(capsys, "ship", "causal2vec", fake_adapter(tiny_llama, tmp_path / "g", seed=1))
    assert code == 2 and "not 'causal2vec'" in err
    code, _, err = run_cli(capsys, "ship", "gircse", tmp_path / "g", "--move-current-to", "ablations/old")
    assert code == 2 and "no shipped artefact" in err
    code, out, _ = run_cli(capsys, "ship", "gircse", tmp_path / "g")
    assert code == 0 and Path(out["shipped"]) == artefacts / "gircse" / "tiny-llama"
    assert not list(artefacts.rglob("ablations"))


# ---- the gircse experiment (analysis/experiments/gircse.py) ---------------------------------------------------------
def test_the_gircse_experiment_on_a_tiny_model(tiny_llama, artefacts, tmp_path, monkeypatch):
    """The experiment's measuring part on a tiny model with fake shipped adapters: every row, claim, genre column,
    cost ratio and training row is there, the record renders, and the page's curves read back from it."""
    from analysis.data.corpora import Pairs
    from analysis.experiments import gircse as exp
    from analysis.experiments.machinery import provenance, records, render
    from analysis.experiments.machinery.records import Record, Sample

    model_dir = artefacts / "gircse" / "tiny-llama"
    fake_adapter(tiny_llama, model_dir, seed=1)
    fake_adapter(tiny_llama, model_dir / "baselines" / "causal-eos", seed=2, objective="causal-eos")
    fake_adapter(tiny_llama, model_dir / "ablations" / "icr-mean", seed=3, objective=None)

    rng = np.random.default_rng(1)
    words = "a cat dog sat ran on the mat river bank money sun".split()
    left = [" ".join(rng.choice(words, 4)) for _ in range(16)]
    right = [" ".join(rng.choice(words, 4)) for _ in range(16)]
    genres = ["main-captions/x"] * 8 + ["main-news/y"] * 8
    pairs = Pairs("toy", left, right, rng.uniform(0, 5, 16), genres)
    ks = [0, 1, 3, 5, 10, 20]
    config = exp.Config(ks=tuple(map(str, ks)), n_boot=50, speed_n=4, repeats=1, batch_size=4)
    out = exp.measure_on(tiny_llama, pairs, config, lambda *a: None, data="toy", sample=Sample(16, "all of it"))
    scores, claims, cost, training = (out.tables[i] for i in range(4))
    assert [t.name for t in out.tables] == ["scores", "paired", "cost", "training"]
    configurations = set(scores.column("configuration"))
    assert {f"GIRCSE K={k}" for k in ks} | {f"frozen model K={k}" for k in ks} <= configurations
    assert {"Causal-EOS K=0", "Causal-EOS K=5", "PromptEOL", "ablation icr-mean (older recipe) K=5"} <= configurations
    assert scores.columns[-2:] == ("captions", "news") and claims.columns == ("A − B", "all", "captions", "news",
                                                                              "p (all)")
    assert claims.column("A − B") == [f"{exp.name(a)} − {exp.name(b)}" for a, b, _ in exp.CLAIMS]
    assert cost.rows[0][0] == "plain forward" and cost.rows[0][2] == 1.0
    assert training.column("configuration") == ["GIRCSE", "Causal-EOS", "ablation icr-mean (older recipe)"]
    assert training.rows[2][1] == "icr (first trainer)"
    curve = next(s for s in out.series if s.name == "k_curve")
    assert list(curve.xs) == ks and set(curve.lines) == {"GIRCSE", "frozen model"}
    assert any("older recipe" in f for f in out.findings)
    assert out.findings[0].startswith("GIRCSE beats its fair baseline Causal-EOS")

    record = Record(id="gircse", experiment="gircse", title="t", command=provenance.command("gircse", config),
                    config={}, data=out.data, sample=out.sample, models=tuple(out.models), code_version="0+x",
                    date="2026-11-25", wall_seconds=1.0, machine=None, tables=tuple(out.tables),
                    series=tuple(out.series), findings=tuple(out.findings), extra=out.extra)
    records.write(record, tmp_path / "records")
    md = render.render(records.read_all(tmp_path / "records"))
    assert "| GIRCSE K=5 − Causal-EOS K=0 |" in md and "How each shipped adapter was trained" in md
    monkeypatch.setattr(records, "folder", lambda: tmp_path / "records")
    got, changed = exp.recorded(tiny_llama)
    references, points = exp.reference_rows(got)
    assert set(references) == {"Causal-EOS (K = 0)", "PromptEOL"} and changed == []
    assert set(points) == {"Causal-EOS K=5", "ablation icr-mean (older recipe) K=5"}
    fake_adapter(tiny_llama, model_dir / "baselines" / "causal-eos", seed=4, objective="causal-eos")
    assert exp.recorded(tiny_llama)[1] == ["causal-eos"]  # the record is older than the weights now


def test_the_ablation_ladder_is_claimed_rung_by_rung(tiny_llama, artefacts):
    """The paper's ladder (generation only < + stepwise loss < + regulariser) becomes three paired claims once its
    rungs are shipped with today's recipe; an ablation whose best step is 0 is named the frozen model and claims
    nothing."""
    from analysis.data.corpora import Pairs
    from analysis.experiments import gircse as exp
    from analysis.experiments.machinery.records import Sample
    from analysis.inspect.generation import adapter_variants

    model_dir = artefacts / "gircse" / "tiny-llama"
    fake_adapter(tiny_llama, model_dir, seed=1)
    fake_adapter(tiny_llama, model_dir / "baselines" / "causal-eos", seed=2, objective="causal-eos")
    fake_adapter(tiny_llama, model_dir / "ablations" / "final", seed=3, objective="final")
    fake_adapter(tiny_llama, model_dir / "ablations" / "stepwise", seed=4, objective="stepwise")
    frozen = fake_adapter(tiny_llama, model_dir / "ablations" / "icr-mean", seed=5, objective="icr-mean")
    manifest = json.loads((frozen / "manifest.json").read_text())
    (frozen / "manifest.json").write_text(json.dumps({**manifest, "best_step": 0}))

    labels = adapter_variants(tiny_llama)
    assert any(label.endswith("best step 0: the frozen model") for label in labels)
    rng = np.random.default_rng(1)
    words = "a cat dog sat ran on the mat river bank money sun".split()
    left = [" ".join(rng.choice(words, 4)) for _ in range(16)]
    pairs = Pairs("toy", left, [" ".join(rng.choice(words, 4)) for _ in range(16)], rng.uniform(0, 5, 16),
                  ["main-captions/x"] * 16)
    config = exp.Config(ks=("0", "5"), n_boot=20, speed_n=0)
    out = exp.measure_on(tiny_llama, pairs, config, lambda *a: None, data="toy", sample=Sample(16, "all of it"))
    claimed = out.tables[1].column("A − B")
    assert claimed[-3:] == ["ablation final K=5 − Causal-EOS K=0", "ablation stepwise K=5 − ablation final K=5",
                            "GIRCSE K=5 − ablation stepwise K=5"]
    assert not any("icr-mean" in c for c in claimed)  # the step-0 ablation claims nothing
    assert any("best step 0" in f for f in out.findings) and not any("ladder lacks" in f for f in out.findings)
