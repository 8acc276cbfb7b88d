"""Trained weights a method asks for and the model lacks (#48, nothing silent): GIRCSE's soft tokens at their default
adapter=shipped on a model with no shipped adapter run the frozen model, and every output names them so (the command
line's warning and `stand_in`, the benchmark's rows, the report's labels); Causal2Vec's shipped bridge has no stand-in
and is refused in one sentence before any work. On tiny random models, for which nothing is shipped."""

from types import SimpleNamespace

import numpy as np

from analysis.methods import get_method
from analysis.weights import stand_in
from tests.conftest import run_cli

FROZEN = "frozen: no adapter shipped for tiny-llama"


def test_soft_tokens_without_a_shipped_adapter_are_named_frozen(tiny_llama):
    method = get_method("soft_tokens")  # adapter=shipped, the default
    found = stand_in.stand_in(method, tiny_llama)
    assert found is not None and found.param == "adapter" and found.label == FROZEN
    assert "python -m analysis train gircse --model tiny-llama --ship" in found.warning
    assert stand_in.label(method, tiny_llama) == f"soft_tokens ({FROZEN})"
    assert stand_in.label(method, tiny_llama, "GIRCSE") == f"GIRCSE ({FROZEN})"
    # the frozen model asked for by name stands in for nothing; nor does a method without trained weights
    assert stand_in.stand_in(get_method("soft_tokens", adapter="none"), tiny_llama) is None
    assert stand_in.label(get_method("prompteol"), tiny_llama) == "prompteol"


def test_the_default_model_runs_its_shipped_adapter_and_bridge():
    """SmolLM2 has both shipped (analysis/artefacts/): nothing stands in, nothing is refused; no model is loaded."""
    smollm2 = SimpleNamespace(facts=SimpleNamespace(name="default"))
    assert stand_in.stand_in(get_method("soft_tokens"), smollm2) is None
    assert stand_in.refusal(get_method("causal2vec"), smollm2) == ""


def test_a_missing_causal2vec_bridge_is_refused_not_replaced(tiny_llama):
    why = stand_in.refusal(get_method("causal2vec"), tiny_llama)
    assert why.startswith("causal2vec: no bridge is shipped for tiny-llama: train one with `python -m analysis train "
                          "causal2vec --model tiny-llama --ship`")
    assert stand_in.refusal(get_method("causal2vec", bridge="untrained"), tiny_llama) == ""  # asked for by name
    assert stand_in.refusal(get_method("causal2vec", readout="direct"), tiny_llama) == ""  # reads no bridge


def test_embed_says_the_frozen_model_ran(tmp_path, tiny_folder, capsys, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    texts = tmp_path / "texts.txt"
    texts.write_text("A cat sat.\nStocks fell.\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "embed", "--method", "soft_tokens", "--param", "k=2", "--model", tiny_folder,
                             "--input", texts, "--output", tmp_path / "out.npy")
    assert code == 0, err
    name = str(tiny_folder)
    label = f"soft_tokens (frozen: no adapter shipped for {name})"
    assert list(out["stand_in"]) == [label] and "no GIRCSE adapter is shipped for" in out["stand_in"][label]
    assert err.count("warning: soft_tokens ran the frozen model") == 1
    assert np.load(tmp_path / "out.npy").shape[0] == 2
    code, out, err = run_cli(capsys, "embed", "--method", "soft_tokens", "--param", "k=2", "adapter=none", "--model",
                             tiny_folder, "--input", texts, "--output", tmp_path / "none.npy")
    assert code == 0 and "stand_in" not in out and "frozen model" not in err  # asked for: nothing to say


def test_bench_rows_name_the_stand_in_and_refuse_a_missing_bridge(tmp_path, tiny_folder, capsys, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    sts = tmp_path / "pairs.csv"
    sts.write_text("sentence1,sentence2,score\n" + "".join(f"a cat {i}.,a dog {i}.,{i % 5}\n" for i in range(8)),
                   encoding="utf-8")
    code, rows, err = run_cli(capsys, "bench", "--model", tiny_folder, "--methods", "last,soft_tokens",
                              "--param", "soft_tokens.k=1", "--data", f"sts:{sts}", "--n-boot", "10", "--format",
                              "json")
    assert code == 0, err
    assert [r["method"] for r in rows] == ["last", f"soft_tokens (frozen: no adapter shipped for {tiny_folder})"]
    assert "warning: soft_tokens ran the frozen model" in err
    code, _, err = run_cli(capsys, "bench", "--model", tiny_folder, "--methods", "last,causal2vec", "--data",
                           f"sts:{sts}", "--n-boot", "10", "--format", "json")
    assert code == 2 and err.count("\n") == 1 and "causal2vec: no bridge is shipped for" in err, err
    assert "[1/" not in err  # refused before the first cell


def test_the_benchmark_page_names_and_says_the_stand_in(tiny_folder, tmp_path_factory):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from tests.apptools import isolated_cache, shown, tables

    page = str(Path(__file__).resolve().parent.parent / "pages" / "8_benchmark.py")
    with isolated_cache(tmp_path_factory):
        at = AppTest.from_file(page, default_timeout=600)
        for key, value in {"embedscope_model": str(tiny_folder), "bench_sets": ["Demo pairs (STS)"],
                           "bench_methods": ["last", "soft_tokens"], "bench_boot": 100, "bench_soft_tokens_k": 1}.items():
            at.session_state[key] = value  # one run, with every choice made
        at.run()
    assert not at.exception, at.exception
    assert any("soft_tokens ran the frozen model" in shown(w.value) for w in at.warning)  # beside the picker
    frozen = f"Soft tokens (GIRCSE) (soft_tokens (frozen: no adapter shipped for {tiny_folder}))"
    assert list(tables(at)[0].index) == ["Last token (last)", frozen]
