"""Jacobian sensitivity: the mean readout's Jacobian is the average of the positions' Jacobians, the exact norms
match an independent full Jacobian, the probe estimate matches the exact norms within a stated tolerance, the
attention-product bound has the structure the theory says, and the command line prints one JSON line."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from analysis.core.errors import UserError
from analysis.core.forward import run
from analysis.methods import get_method, list_methods
from analysis.inspect import sensitivity as S
from analysis.models.tiny import tiny_backbone

TEXT = "The quick brown fox. It jumps over the lazy dog!"


def test_mean_jacobian_is_the_average_of_position_jacobians(tiny):
    m = get_method("mean")
    v, ys, batch, k, h = S.differentiable_readouts(tiny, m, TEXT, layer=-1)
    pooled = batch.segments[0] == 1
    d = v.shape[-1]
    with torch.enable_grad():
        for c in (0, d - 1):  # two output coordinates are enough to pin the identity down
            u = torch.zeros(d)
            u[c] = 1.0
            j_mean = torch.autograd.grad(ys["mean"], v, u, retain_graph=True)[0]  # row c of J_mean, (1, T, d)
            per_pos = [torch.autograd.grad(h[0, j, c], v, retain_graph=True)[0] for j in torch.nonzero(pooled)[:, 0]]
            scale = float(j_mean.abs().max())  # float32 sums in a different order: compare relative to scale
            torch.testing.assert_close(j_mean, torch.stack(per_pos).mean(0), rtol=1e-4, atol=1e-5 * scale)


def _full_jacobian_norms(bb, method, text):
    """Independent reference: torch.autograd.functional.jacobian of the readouts as a function of the input
    embeddings (vanilla methods only), then the Frobenius norm of each (d, d) block."""
    batch = method.collate(bb, method.prepare(bb, [text]), "right")
    v0 = bb.input_embeddings(batch.input_ids).detach()
    L = bb.facts.n_layers

    def readouts(v):
        h = run(bb, batch, [-1], inputs_embeds=v).hidden[L]
        last = h[0, batch.last_index[0]]
        mask = (batch.segments[0] == 1).float()
        mean = (h[0] * mask[:, None]).sum(0) / mask.sum()
        return last, mean

    with torch.enable_grad():
        J_last, J_mean = torch.autograd.functional.jacobian(readouts, v0, vectorize=True)  # (d, 1, T, d) each
    return (J_last[:, 0].pow(2).sum((0, 2)).sqrt().numpy(), J_mean[:, 0].pow(2).sum((0, 2)).sqrt().numpy())


def test_exact_norms_match_the_full_jacobian(tiny):
    m = get_method("mean")
    with pytest.raises(UserError, match=f"at most {S.MAX_EXACT_TOKENS} tokens"):  # the cap lives in the library
        S.jacobian_norms(tiny, m, TEXT, layer=-1, probes=0, exact=True)
    s = S.jacobian_norms(tiny, m, TEXT, layer=-1, probes=0, exact=True, max_exact_tokens=64)  # tiny model: d = 64
    ref_last, ref_mean = _full_jacobian_norms(tiny, m, TEXT)
    np.testing.assert_allclose(s.exact_last, ref_last, rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(s.exact_mean, ref_mean, rtol=1e-4, atol=1e-8)
    assert s.probes == 0 and np.array_equal(s.last, s.exact_last)


PROBE_TOLERANCE = 0.15  # stated tolerance: with 64 probes every position's estimate is within 15 % of exact


@pytest.mark.parametrize("probe", ["rademacher", "gaussian"])
def test_probe_estimate_agrees_with_exact_norms(tiny_llama, probe):
    for method in (get_method("mean"), get_method("htp", exit=3, layer=-1)):
        s = S.jacobian_norms(tiny_llama, method, TEXT, probes=64, probe=probe, exact=True, seed=1,
                             max_exact_tokens=64)
        ok = ~s.placeholder
        rel = np.abs(s.last[ok] / s.exact_last[ok] - 1)
        rel_mean = np.abs(s.mean[ok] / s.exact_mean[ok] - 1)
        assert rel.max() < PROBE_TOLERANCE and rel_mean.max() < PROBE_TOLERANCE, (probe, method.name)
        # the reported standard error is honest: most errors within 3 standard errors
        z = np.abs(s.last[ok] - s.exact_last[ok]) / s.last_se[ok]
        assert np.mean(z < 3) > 0.8
        assert np.isnan(s.last[s.placeholder]).all() and (s.placeholder.sum() == (method.name == "htp") * 4)


def test_estimate_is_reproducible_and_seeded(tiny_llama):
    m = get_method("mean")
    a = S.jacobian_norms(tiny_llama, m, TEXT, probes=4, seed=5)
    b = S.jacobian_norms(tiny_llama, m, TEXT, probes=4, seed=5)
    c = S.jacobian_norms(tiny_llama, m, TEXT, probes=4, seed=6)
    assert np.array_equal(a.last, b.last) and not np.array_equal(a.last, c.last)
    assert a.tokens == tiny_llama.tokenizer.convert_ids_to_tokens(
        get_method("mean").prepare(tiny_llama, [TEXT])[0].ids.tolist())


def test_causal_structure_of_the_sensitivities(tiny):
    """Under causal attention the final token's state depends on every position; the state of an early
    position cannot depend on later ones -- the TP/HTP rewiring is what breaks that."""
    m = get_method("mean")
    v, ys, batch, k, h = S.differentiable_readouts(tiny, m, TEXT, layer=-1)
    with torch.enable_grad():
        g = torch.autograd.grad(h[0, 2].sum(), v)[0][0]  # (T, d) sensitivity of position 2
    assert g[3:].abs().max() == 0 and g[:3].abs().max() > 0
    htp = get_method("htp", exit=3, layer=-1)
    v, ys, batch, k, h = S.differentiable_readouts(tiny, htp, TEXT)
    first_text = int(torch.nonzero(batch.segments[0] == 1)[0])
    with torch.enable_grad():
        g = torch.autograd.grad(h[0, first_text].sum(), v)[0][0]
    assert g[first_text + 1:].abs().max() > 0  # the first text token now hears later sentences


def test_bound_structure(tiny):
    m = get_method("mean")
    b = S.attention_bound(tiny, m, TEXT, layer=-1)
    T = b.A.shape[0]
    np.testing.assert_allclose(b.A.sum(1), 1.0, atol=1e-9)  # row-stochastic
    assert np.allclose(np.triu(b.A, 1), 0)  # causal: no influence from later positions
    assert (b.last > 0).all()  # the last row reaches everything
    assert np.isclose(b.mean.sum(), 1.0)
    b0 = S.attention_bound(tiny, m, TEXT, layer=0)  # no layer: A = I
    assert np.array_equal(b0.A, np.eye(T)) and b0.last[-1] == 1
    h = S.attention_bound(tiny, get_method("htp", exit=3, layer=-1), TEXT)
    assert np.triu(h.A, 1).sum() > 1e-3  # rewiring lets early positions hear later ones
    np.testing.assert_allclose(h.A.sum(1), 1.0, atol=1e-9)


def test_compare_decay_and_words():
    T = 20
    sens = S.Sensitivity("x", 3, ["t"] * T, np.zeros(T, bool), np.ones(T, bool),
                         last=np.exp(np.arange(T, dtype=float)), mean=np.ones(T) + 0.01 * np.arange(T),
                         last_se=np.zeros(T), mean_se=np.zeros(T), probes=4, probe="rademacher")
    bound = S.Bound(3, last=np.exp(2 * np.arange(T, dtype=float)), mean=np.arange(T, 0, -1.0), A=np.eye(T))
    c = S.compare(sens, bound)
    assert c["last"]["spearman"] == pytest.approx(1.0) and c["mean"]["spearman"] == pytest.approx(-1.0)
    dec = S.decay(sens)
    assert dec["last"]["decades"] > 5 and abs(dec["mean"]["decades"]) < 0.1
    assert dec["mean"]["spread"] < dec["last"]["spread"]
    assert S.describe_agreement(0.9) == "closely" and S.describe_agreement(-0.3) == "not at all"


def test_bad_input_is_a_user_error(tiny_llama):
    m = get_method("mean")
    with pytest.raises(UserError):
        S.jacobian_norms(tiny_llama, m, "   ")
    with pytest.raises(UserError, match="2 probes"):
        S.jacobian_norms(tiny_llama, m, TEXT, probes=1)
    with pytest.raises(UserError, match="probe"):
        S.jacobian_norms(tiny_llama, m, TEXT, probe="sobol")
    with pytest.raises(UserError, match="at most"):
        S.jacobian_norms(tiny_backbone("llama", max_length=4096), m, "word " * 600)


def test_kv_embedding_if_available(tiny_llama):
    if "kv_embedding" not in {m.name for m in list_methods()}:
        pytest.skip("kv_embedding is not registered")
    m = get_method("kv_embedding", layers="1,2")
    s = S.jacobian_norms(tiny_llama, m, TEXT, probes=4)
    assert np.isfinite(s.last).all() and np.isfinite(s.mean).all() and (s.last > 0).all()
    b = S.attention_bound(tiny_llama, m, TEXT)
    np.testing.assert_allclose(b.A.sum(1), 1.0, atol=1e-9)


def test_real_model_16_probes_of_both_readouts_take_one_batched_backward(real):
    """What keeps 16 probes fast (the page's time is measured by scripts/stress_pages.py and bench_first_figure.py,
    not by a timed test): the probes of both readouts go through one vmap'd backward pass, not 32."""
    text = S.SAMPLE_TEXT
    m = get_method("mean")
    assert len(m.prepare(real, [text])[0]) == 64
    passes = []
    s = S.jacobian_norms(real, m, text, probes=16, progress=lambda done, total: passes.append((done, total)))
    assert passes == [(32, 32)]
    assert np.isfinite(s.last).all() and s.probes == 16


def test_cli_prints_one_json_line(tiny_llama, monkeypatch, capsys):
    from cli import main
    from cli.commands import sensitivity as cmd

    monkeypatch.setattr(cmd, "load_model", lambda name: tiny_llama)
    assert main(["sensitivity", "--text", TEXT, "--probes", "4", "--method", "htp", "--param", "exit=3"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    res = json.loads(out[0])
    T = len(res["tokens"])
    assert len(res["last"]) == len(res["mean"]) == T and res["probes"] == 4 and res["method"] == "htp"
    assert res["tokens"][0] == tiny_llama.tokenizer.bos_token and res["last"][0] is not None  # HTP's start token
    assert res["last"][1] is None  # the first global summary token: a placeholder, no token embedding
    assert main(["sensitivity", "--text", "  ", "--probes", "4"]) == 2


def test_cli_real_model_subprocess():
    out = subprocess.run([sys.executable, "-m", "analysis", "sensitivity", "--text", "A cat sat on the mat.",
                          "--probes", "4", "--bound"], capture_output=True, text=True, timeout=600,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    res = json.loads(lines[0])
    assert set(res) >= {"tokens", "last", "mean", "bound_last", "bound_mean", "agreement"}
    assert len(res["tokens"]) == len(res["last"])
