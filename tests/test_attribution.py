"""Pair attribution (analysis/inspect/attribution.py): the parts add up to the interaction within a stated tolerance
on tiny models of two architectures and on the real model; the exact pair matrix is the product of the integrated
Jacobians, the plane's rows are the token attributions, the estimated matrix is unbiased within its standard errors;
captum's integrated gradients agree where both apply; tokens the method adds are labelled apart; the limits refuse
before any work; the deletion curves start where the explanation does; the logit lens says where it does not apply;
the command prints one JSON line; the cache makes a repeat instant."""

import time

import numpy as np
import pytest
import torch

from analysis.compute.direct import Direct
from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.inspect import attribution as A
from analysis.inspect import explain as X
from analysis.inspect import faithfulness as F
from analysis.inspect import logit_lens as LL
from analysis.inspect.explain_settings import GAINS, Settings
from analysis.methods import get_method
from analysis.models.tiny import tiny_backbone
from cache.cached import Cached
from cache.store import Store
from cli.commands import explain as cmd
from conftest import run_cli, tiny_method

TEXT_A = "The quick brown fox jumps over the lazy dog."
TEXT_B = "A bank by the river was steep."
# Stated tolerances on |Σ parts - interaction| / Σ |parts| (`Explanation.gap["relative"]`), at the steps given:
TINY_STEPS, TINY_TOLERANCE = 48, 0.02  # random tiny models (their paths are rough: Gemma 3's needs ~48 nodes)
REAL_STEPS, REAL_TOLERANCE = 64, 0.05  # SmolLM2 turns within hundredths of α (see the module's docstring)
ALL = ("last", "mean", "prompteol", "echo", "token_prepending", "htp", "kv_embedding", "soft_tokens", "causal2vec",
       "sentence_encoder")


def method(name: str, **params):
    return tiny_method(name, **({"layers": "1,2"} if name == "kv_embedding" else {}), **params)


@pytest.fixture(scope="module")
def gemma3():
    return tiny_backbone("gemma3_text")


# ---- completeness ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_the_parts_add_up_on_tiny_llama(tiny_llama, name):
    ex = A.explain_pair(tiny_llama, method(name), TEXT_A, TEXT_B, steps=TINY_STEPS)
    assert ex.gap["relative"] < TINY_TOLERANCE, ex.gap
    assert abs(ex.a.attribution.sum() - ex.interaction) <= TINY_TOLERANCE * np.abs(ex.a.attribution).sum()
    expected = ex.score - ex.score_a - ex.score_b + ex.score_baselines  # I from the four cosines
    assert ex.interaction == pytest.approx(expected, abs=1e-5)
    assert max(ex.nodes) <= TINY_STEPS


@pytest.mark.parametrize("name", ["last", "prompteol", "soft_tokens", "causal2vec", "htp"])
def test_the_parts_add_up_on_tiny_gemma3(gemma3, name):
    ex = A.explain_pair(gemma3, method(name), TEXT_A, TEXT_B, steps=TINY_STEPS)
    assert ex.gap["relative"] < TINY_TOLERANCE, ex.gap


@pytest.mark.real
def test_the_parts_add_up_on_the_real_model(real):
    ex = A.explain_pair(real, A_method("prompteol"), "A black dog jumping off a wood porch.",
                        "A black dog is jumping off a wooden porch", steps=REAL_STEPS, directions=1)
    assert ex.gap["relative"] < REAL_TOLERANCE, ex.gap


def A_method(name: str, **params):
    return get_method(name, **params)


# ---- the pair matrix ---------------------------------------------------------------------------------------------
def test_the_exact_matrix_is_the_product_of_the_integrated_jacobians(tiny_llama):
    m = method("prompteol")
    ex = A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, steps=32, directions=0)
    assert ex.pairs_kind == "exact" and ex.pairs_se is None
    # independently: every output direction (the identity basis) along each text's own path
    preps = [A.prepare(tiny_llama, m, t) for t in (TEXT_A, TEXT_B)]
    C = [A.contributions(p, A.baseline(p, "mean"), torch.eye(p.g.shape[0]), 32)[0] for p in preps]  # (D, P)
    reference = (C[0].T @ C[1]).numpy()
    scale = np.abs(reference).max()
    np.testing.assert_allclose(ex.pairs, reference, atol=0.02 * scale)
    assert ex.pairs.sum() == pytest.approx(ex.interaction, abs=TINY_TOLERANCE * np.abs(ex.pairs).sum())


def test_the_planes_rows_and_columns_are_the_token_attributions(tiny_llama):
    ex = A.explain_pair(tiny_llama, method("mean"), TEXT_A, TEXT_B, steps=32, directions=2)
    assert ex.pairs_kind == "plane" and ex.pairs.shape == (len(ex.a.tokens), len(ex.b.tokens))
    tol = 2 * max(abs(ex.gap["a"]), abs(ex.gap["b"])) + 1e-6
    np.testing.assert_allclose(ex.pairs.sum(1), ex.a.attribution, atol=tol)
    np.testing.assert_allclose(ex.pairs.sum(0), ex.b.attribution, atol=tol)


def test_the_estimated_matrix_is_unbiased_within_its_errors(tiny_llama):
    m = method("last")
    exact = A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, steps=16, directions=0).pairs
    est = A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, steps=16, directions=24, seed=3)
    assert est.pairs_kind == "estimated" and est.pairs_se.shape == exact.shape
    z = np.abs(est.pairs - exact) / np.maximum(est.pairs_se, 1e-12)
    assert np.mean(z < 3) > 0.9  # the stated errors cover the exact cells
    np.testing.assert_allclose(est.pairs.sum(1), est.a.attribution, atol=2 * abs(est.gap["b"]) + 1e-6)


def test_token_attributions_only_need_no_matrix(tiny_llama):
    ex = A.explain_pair(tiny_llama, method("prompteol"), TEXT_A, TEXT_B, steps=16, directions=1)
    both = A.explain_pair(tiny_llama, method("prompteol"), TEXT_A, TEXT_B, steps=16, directions=2)
    assert ex.pairs is None and ex.pairs_kind == ""
    np.testing.assert_allclose(ex.a.attribution, both.a.attribution, atol=1e-4)  # the same paths, nodes, integral


def test_captum_integrated_gradients_agree(tiny_llama):
    """Where both apply (one scalar output, a smooth path: tiny Llama's last token), captum's Gauss-Legendre IG of
    x_A -> g(x_A) . Δg_B gives the token attributions this module gives."""
    captum = pytest.importorskip("captum.attr", reason="captum is an optional cross-check (requirements-dev.txt)")
    m = method("last")
    ex = A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, steps=64, directions=1)
    pa, pb = (A.prepare(tiny_llama, m, t) for t in (TEXT_A, TEXT_B))
    ra, rb = A.baseline(pa, "mean"), A.baseline(pb, "mean")
    with A.grad_mode(False):
        dgb = (pb.g - A.embed_rows(pb, rb[None])[0]).detach()
    with A.grad_mode(True):
        ig = captum.IntegratedGradients(lambda X: A.embed_rows(pa, X) @ dgb)
        attr = ig.attribute(pa.x[None], baselines=ra[None], n_steps=64, method="gausslegendre")  # (1, P, d)
    theirs = attr[0].sum(-1).detach().double().numpy()
    np.testing.assert_allclose(ex.a.attribution, theirs, atol=0.01 * np.abs(theirs).sum())


# ---- what is attributed ------------------------------------------------------------------------------------------
def test_tokens_the_method_adds_are_labelled_apart(tiny_llama):
    kinds = {}
    for name in ("prompteol", "htp", "soft_tokens", "causal2vec", "sentence_encoder"):
        ex = A.explain_pair(tiny_llama, method(name), TEXT_A, TEXT_B, steps=5, directions=1)
        kinds[name] = set(ex.a.kinds)
        text = [i for i, k in enumerate(ex.a.kinds) if k == "text"]
        assert text and all(ex.a.copy[i] >= 1 for i in text) and all(ex.a.copy[i] == 0 for i in A.added_positions(ex.a))
        if name != "sentence_encoder":  # a decoder's first position keeps its own vector: nothing to attribute
            assert ex.a.held[0] and ex.a.attribution[0] == 0 and ex.a.held.sum() == 1
        else:
            assert not ex.a.held.any()
    assert {"template", "text"} <= kinds["prompteol"] and "placeholder" in kinds["htp"]
    assert "contextual" in kinds["causal2vec"] and "soft" in kinds["soft_tokens"]
    soft = A.explain_pair(tiny_llama, method("soft_tokens"), TEXT_A, TEXT_B, steps=5, directions=1)
    assert sum(k == "soft" for k in soft.a.kinds) == 5 and any("held as inputs" in n for n in soft.notes)
    through = A.explain_pair(tiny_llama, method("soft_tokens"), TEXT_A, TEXT_B, steps=5, directions=1,
                             through_generation=True)
    assert "soft" not in through.a.kinds and any("through the generation" in n for n in through.notes)


def test_echo_copies_are_one_word(tiny_llama):
    ex = A.explain_pair(tiny_llama, method("echo"), TEXT_A, TEXT_B, steps=5, directions=2)
    words = A.word_groups(ex.a)
    assert all(len(idx) == 2 for _, idx in words)  # each word's two copies
    rows, cols, M = A.grouped_pairs(ex)
    assert M.sum() == pytest.approx(ex.pairs.sum(), rel=1e-9) and rows[-1] == cols[-1] == "(added by the method)"


# ---- limits ------------------------------------------------------------------------------------------------------
def test_past_the_budget_is_refused_before_any_work(tiny_llama, monkeypatch):
    monkeypatch.setattr(A, "prepare", lambda *a, **k: pytest.fail("work started before the limits were checked"))
    m = method("prompteol")
    for kwargs, words in (({"steps": 10_000}, "steps along the attribution path"),
                          ({"directions": 1000}, "output directions"),
                          ({"steps": 2}, "at least 3 steps")):
        with pytest.raises(UserError, match=words):
            A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, **kwargs)
    with budgets.override(explain_tokens=8), pytest.raises(UserError, match="positions one explanation") as err:
        A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B)
    assert str(err.value).count(". ") == 0  # one sentence
    big = tiny_backbone("llama", n_layers=2)
    with budgets.override(explain_directions=32), pytest.raises(UserError, match="exact pair matrix"):
        A.explain_pair(big, m, TEXT_A, TEXT_B, directions=0)  # d = 64 directions
    with pytest.raises(UserError, match="baseline"):
        A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, baseline_kind="zero")


# ---- faithfulness and the logit lens -----------------------------------------------------------------------------
def test_deletion_starts_at_the_interaction_and_orders_are_seeded(tiny_llama):
    m = method("prompteol")
    ex = A.explain_pair(tiny_llama, m, TEXT_A, TEXT_B, steps=9, directions=1)
    c = F.pair_curves(tiny_llama, m, ex, seed=1)
    for order in F.ORDERS:
        assert c.deletion[order][0] == pytest.approx(ex.interaction, abs=1e-5)  # nothing deleted yet
        assert c.insertion[order][-1] == pytest.approx(ex.interaction, abs=1e-5)  # everything back
        assert c.deletion[order][-1] == pytest.approx(c.insertion[order][0], abs=1e-6)  # no word: the same input
    again = F.pair_curves(tiny_llama, m, ex, seed=1)
    assert np.array_equal(c.random_deletion, again.random_deletion) and c.random_deletion.shape == (F.RANDOMS, 8)
    assert set(c.gains) == set(GAINS) and c.words == sum(
        k == "text" and not h for s in ex.sides() for k, h in zip(s.kinds, s.held))


def test_the_logit_lens_says_where_it_applies(tiny_llama):
    lens = LL.decode(tiny_llama, method("prompteol"), TEXT_A)
    assert lens.applies == "yes" and lens.layers == list(range(5)) and lens.probs.shape == (5, LL.TOP)
    assert np.all(np.diff(lens.probs, axis=1) <= 0)  # most likely first
    assert LL.decode(tiny_llama, method("mean"), TEXT_A).applies == "approximate"
    for name, params in (("sentence_encoder", {}), ("causal2vec", {}), ("causal2vec", {"readout": "direct"})):
        no = LL.decode(tiny_llama, method(name, **params), TEXT_A)
        assert no.applies == "no" and no.reason and not no.tokens
    assert LL.decode(tiny_llama, method("causal2vec", readout="eos"), TEXT_A).applies == "yes"


@pytest.mark.real
def test_promptEOL_decodes_to_the_sentences_words(real):
    lens = LL.decode(real, A_method("prompteol"), "A cat sat on the mat.")
    assert "cat" in [t.strip().lower() for t in lens.tokens[-1]], lens.tokens[-1]


# ---- the command line and the cache ------------------------------------------------------------------------------
def test_cli_prints_one_json_line(tiny_llama, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(cmd, "load_model", lambda args: tiny_llama)
    code, out, err = run_cli(capsys, "explain", "--a", TEXT_A, "--b", TEXT_B, "--method", "soft_tokens",
                             "--steps", "9", "--curves", "--lens")
    assert code == 0, err
    assert len(out["a"]["tokens"]) == len(out["a"]["attribution"]) == len(out["pairs"])
    assert "soft" in out["a"]["kinds"] and out["pairs_kind"] == "plane" and not out["cached"]
    assert set(out["curves"]["gains"]) == set(GAINS) and out["lens"]["a"]["applies"] == "approximate"
    code, again, _ = run_cli(capsys, "explain", "--a", TEXT_A, "--b", TEXT_B, "--method", "soft_tokens", "--steps", "9")
    assert code == 0 and again["cached"] and again["a"]["attribution"] == out["a"]["attribution"]
    code, _, err = run_cli(capsys, "explain", "--a", TEXT_A, "--b", TEXT_B, "--steps", "100000")
    assert code == 2 and err.startswith("error: Too much for one request") and err.count("\n") == 1
    code, _, err = run_cli(capsys, "explain", "--a", " ", "--b", TEXT_B)
    assert code == 2 and "empty" in err


def test_the_cache_makes_a_repeat_instant(tiny_llama, tmp_path):
    """Through the `Compute` door (`analysis.inspect.explain`): the cached door reads a repeat back, the same numbers
    as computed; other settings are another entry; the direct door computes every time."""
    compute, m, settings = Cached(Store(tmp_path)), method("htp"), Settings(steps=9)
    ex, hit = X.explanation(compute, tiny_llama, m, TEXT_A, TEXT_B, settings)
    began = time.perf_counter()
    again, hit2 = X.explanation(compute, tiny_llama, m, TEXT_A, TEXT_B, settings)
    assert not hit and hit2 and time.perf_counter() - began < 1.0
    assert np.array_equal(ex.pairs, again.pairs) and again.a.tokens == ex.a.tokens and again.gap == ex.gap
    assert np.array_equal(ex.a.held, again.a.held) and again.a.held.dtype == bool
    direct, hit3 = X.explanation(Direct(), tiny_llama, m, TEXT_A, TEXT_B, settings)
    assert not hit3 and np.allclose(direct.pairs, ex.pairs, atol=1e-6)
    c, _ = X.curves(compute, tiny_llama, m, TEXT_A, TEXT_B, settings)  # reads the explanation, adds the curves
    c2, hit4 = X.curves(compute, tiny_llama, m, TEXT_A, TEXT_B, settings)
    assert hit4 and c2.gains == c.gains and np.array_equal(c2.deletion["attribution"], c.deletion["attribution"])
    lens, _ = X.logit_lens(compute, tiny_llama, m, TEXT_A)
    assert X.logit_lens(compute, tiny_llama, m, TEXT_A)[0].tokens == lens.tokens
    _, other = X.explanation(compute, tiny_llama, m, TEXT_A, TEXT_B, Settings(steps=10, directions=1))
    assert not other


def test_kv_embeddings_auto_window_is_resolved_before_the_passes_are_recorded(tiny_llama):
    """`explain --no-cache --method kv_embedding` failed with "N first-layer inputs but M labelled positions": left to
    the method, `layers=auto` ran its window's own forward passes inside the recorded ones. The door resolves it
    first, through `Compute.window` (computed by the direct door, read by the cached one)."""
    m, settings = get_method("kv_embedding", layers="auto"), Settings(steps=4, directions=1)
    assert m.needs_window(tiny_llama)
    ex, _ = X.explanation(Direct(), tiny_llama, m, TEXT_A, TEXT_B, settings)
    assert np.isfinite(ex.gap["relative"])
    curves, _ = X.curves(Direct(), tiny_llama, m, TEXT_A, TEXT_B, settings)
    assert curves.gains and X.logit_lens(Direct(), tiny_llama, m, TEXT_A)[0].tokens
