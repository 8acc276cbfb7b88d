"""The one shape of a trained system: a fourth system is one module and one registry line; every run checks its
settings and its folder before any work, never loses its best weights, and never writes the shipped artefacts
without --ship."""

from __future__ import annotations

import json

import dummy_system
import pytest
import torch
from dummy_system import DummyConfig

from analysis.core.errors import UserError
from analysis.models.tiny import tiny_backbone
from analysis.training import systems


@pytest.fixture
def dummy(monkeypatch):
    return dummy_system.register(monkeypatch)  # the one registry line


def test_a_fourth_system_trains_and_loads_back(dummy, tmp_path):
    bb = tiny_backbone("llama")
    summary = systems.run(dummy, DummyConfig(out=str(tmp_path / "r"), steps=2), backbone=bb)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert summary["steps_done"] == 2 and manifest["schema"] == 1 and manifest["partial"] is False
    assert manifest["system"] == "dummy" and manifest["model_identity"] == bb.identity
    assert manifest["command"] == "python -m analysis train dummy"  # defaults only: no flags, no paths
    assert [r["step"] for r in manifest["curves"]["validation"]] == [0, 1, 2]
    w = systems.system(dummy).load(tmp_path / "r", bb)
    assert 0 < w < 3  # it moved towards the target


def test_the_train_command_is_generated_from_the_config(dummy, capsys):
    from cli import main

    with pytest.raises(SystemExit):
        main(["train", "dummy", "--help"])
    out = capsys.readouterr().out
    assert "--target" in out and "--poison-at" in out and "--ship" in out
    assert main(["train", "dummy", "--lr", "nan"]) == 2
    assert capsys.readouterr().err.strip() == "error: --lr must be a finite number, got nan."


@pytest.mark.parametrize("flag,value,match", [
    ("--steps", "0", "--steps must be >= 1"), ("--steps", "1000000000000", "over this tool's limit"),
    ("--lr", "inf", "--lr must be a finite number"), ("--lr", "-1", "--lr must be > 0.0"),
    ("--max-minutes", "nan", "--max-minutes must be a finite number"), ("--max-minutes", "-1", "--max-minutes"),
    ("--batch-size", "0", "--batch-size must be >= 2"), ("--target", "99", "--target must be >= -10.0"),
])
def test_flags_are_checked_before_any_work(dummy, capsys, flag, value, match):
    from cli import main

    assert main(["train", "dummy", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and match in err and err.count("\n") == 0


def test_out_is_checked_before_the_first_step(dummy, tmp_path):
    from analysis.core.paths import ARTEFACTS

    bb = tiny_backbone("llama")
    file = tmp_path / "a_file"
    file.write_text("x")
    with pytest.raises(UserError, match="names a file"):
        systems.run(dummy, DummyConfig(out=str(file)), backbone=bb)
    with pytest.raises(UserError, match="shipped artefacts"):
        systems.run(dummy, DummyConfig(out=str(ARTEFACTS / "dummy" / "x")), backbone=bb)
    assert not (ARTEFACTS / "dummy").exists()


def test_ship_copies_the_result_into_the_shipped_artefacts(dummy, tmp_path, monkeypatch):
    from analysis.training import runs

    shipped = tmp_path / "artefacts"
    monkeypatch.setattr(runs, "shipped_dir", lambda system, facts: shipped / system / "tiny")
    bb = tiny_backbone("llama")
    systems.run(dummy, DummyConfig(out=str(tmp_path / "r")), backbone=bb)
    assert not shipped.exists()  # without --ship nothing is written there
    summary = systems.run(dummy, DummyConfig(out=str(tmp_path / "r"), ship=True), backbone=bb)
    assert (shipped / "dummy" / "tiny" / "manifest.json").is_file() and summary["shipped"]


def test_a_run_interrupted_halfway_leaves_its_best_checkpoint_with_a_partial_manifest(dummy, tmp_path):
    bb = tiny_backbone("llama")

    def interrupt(step, total, info):
        if step == 3:
            raise KeyboardInterrupt  # what a killed or crashed run looks like from inside

    with pytest.raises(KeyboardInterrupt):
        systems.run(dummy, DummyConfig(out=str(tmp_path / "r"), steps=6), backbone=bb, progress=interrupt)
    best = json.loads((tmp_path / "r" / "run" / "best" / "manifest.json").read_text())
    assert best["partial"] is True
    assert not (tmp_path / "r" / "manifest.json").exists()  # no finished artefact is claimed


def test_a_non_finite_loss_stops_in_one_sentence_and_keeps_the_last_good_weights(dummy, tmp_path):
    from analysis.weights.artefacts import load_artefact

    bb = tiny_backbone("llama")
    with pytest.raises(UserError, match="the loss is nan") as err:
        systems.run(dummy, DummyConfig(out=str(tmp_path / "r"), steps=6, poison_at=3), backbone=bb)
    assert "\n" not in str(err.value)
    tensors, manifest = load_artefact(tmp_path / "r" / "run" / "best", method="dummy")
    assert torch.isfinite(tensors["w"]).all() and manifest["partial"] is True
    assert not (tmp_path / "r" / "manifest.json").exists()
