"""Known answers for alignment, uniformity, anisotropy, bootstrap intervals and 2-D maps."""

import numpy as np
import pytest
from scipy.special import i0

from analysis import get_method
from analysis.data.corpora import Pairs, demo_pairs, lee_pairs
from analysis.core.errors import UserError
from analysis.inspect.geometry import (
    alignment,
    anisotropy,
    anisotropy_by_layer,
    bootstrap_pairs_ci,
    embedding_map,
    measure,
    positive_pairs,
    positive_threshold,
    uniformity,
)


def circle(n):
    angles = 2 * np.pi * np.arange(n) / n
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (n, 2)


def test_alignment_of_identical_pairs_is_zero():
    x = np.random.default_rng(0).normal(size=(50, 32))
    assert alignment(x, x.copy()) == pytest.approx(0.0, abs=1e-12)
    assert alignment(x, 3 * x) == pytest.approx(0.0, abs=1e-12)  # scale does not matter: rows are normalised


def test_alignment_of_antipodal_and_orthogonal_pairs():
    x = np.eye(4)
    assert alignment(x, -x) == pytest.approx(4.0)  # ||u - (-u)||^2 = 4
    assert alignment(x, np.roll(x, 1, axis=1)) == pytest.approx(2.0)  # orthogonal unit vectors: 2
    assert alignment(x, np.roll(x, 1, axis=1), alpha=1) == pytest.approx(np.sqrt(2))


@pytest.mark.parametrize("n", [3, 7, 40])
@pytest.mark.parametrize("t", [1.0, 2.0])
def test_uniformity_of_points_evenly_on_a_circle(n, t):
    # ||x_i - x_j||^2 = 2 - 2 cos(2 pi (i - j) / n); every point sees each offset k = 1..n-1 once, so the
    # mean over pairs is (1 / (n - 1)) sum_k exp(-2t + 2t cos(2 pi k / n)).
    k = np.arange(1, n)
    expected = np.log(np.mean(np.exp(-2 * t + 2 * t * np.cos(2 * np.pi * k / n))))
    assert uniformity(circle(n), t=t) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [40, 720])
def test_uniformity_of_a_circle_matches_its_closed_form(n):
    # Including the offset k = 0 (exp(0) = 1), the sum over k is the n-point trapezoid rule of the periodic
    # integral (1 / 2 pi) int exp(-2t + 2t cos a) da = exp(-2t) I0(2t), exact up to ~I_n(2t) (< 1e-30 here).
    # Dropping k = 0: uniformity = log((n exp(-2t) I0(2t) - 1) / (n - 1)).
    t = 2.0
    closed = np.log((n * np.exp(-2 * t) * i0(2 * t) - 1) / (n - 1))
    assert uniformity(circle(n), t=t) == pytest.approx(closed, abs=1e-12)
    assert uniformity(circle(n), t=t) == pytest.approx(-4 + np.log(i0(4.0)), abs=5 / n)  # the n -> inf limit


def test_uniformity_of_a_collapsed_set_is_zero_and_of_a_spread_set_is_negative():
    same = np.tile([[1.0, 2.0, 3.0]], (10, 1))
    assert uniformity(same) == pytest.approx(0.0, abs=1e-12)
    assert uniformity(np.random.default_rng(0).normal(size=(200, 64))) < -3.5  # near -4 in high dimension


def test_anisotropy_of_an_isotropic_sample_is_near_zero():
    x = np.random.default_rng(1).normal(size=(2000, 256))
    assert abs(anisotropy(x)) < 0.005
    assert abs(anisotropy(x, n_pairs=20000, seed=3)) < 0.02


def test_anisotropy_exact_formula_matches_brute_force_and_a_cone_is_anisotropic():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 8)) + np.array([10.0] + [0] * 7)  # a narrow cone around e1
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    i, j = np.triu_indices(30, k=1)
    brute = np.mean(np.sum(u[i] * u[j], axis=1))
    assert anisotropy(x) == pytest.approx(brute, abs=1e-12)
    assert anisotropy(x) > 0.9
    assert anisotropy(x, n_pairs=50000, seed=0) == pytest.approx(brute, abs=0.01)


def test_bootstrap_pairs_never_pairs_a_text_with_itself():
    # A matrix that is 1 off the diagonal and 100 on it: every replicate must be exactly 1.
    m = np.ones((20, 20)) + 99 * np.eye(20)
    assert bootstrap_pairs_ci(m, n_boot=50) == pytest.approx((1.0, 1.0))


def test_measure_intervals_contain_the_estimate_and_are_reproducible():
    rng = np.random.default_rng(4)
    emb = rng.normal(size=(60, 16))
    left, right = np.arange(0, 30), np.arange(30, 60)
    g = measure(emb, left, right, n_boot=200, seed=1)
    assert g.alignment == pytest.approx(alignment(emb[left], emb[right]))
    assert g.uniformity == pytest.approx(uniformity(emb))
    assert g.anisotropy == pytest.approx(anisotropy(emb))
    for value, (lo, hi) in [(g.alignment, g.alignment_ci), (g.uniformity, g.uniformity_ci),
                            (g.anisotropy, g.anisotropy_ci)]:
        assert lo < value < hi
    assert measure(emb, left, right, n_boot=200, seed=1) == g
    assert (g.n_texts, g.n_pairs) == (60, 30)


def test_positive_pairs_are_scale_aware():
    assert positive_threshold(np.array([0.0, 2.5, 5.0]))[0] == 4.0
    assert positive_threshold(np.array([0.2, 1.0]))[0] == 0.8
    lee = positive_pairs(lee_pairs())
    assert len(lee.left_index) == int((lee_pairs().scores >= 0.8).sum()) == 18  # the top-rated Lee pairs
    demo = positive_pairs(demo_pairs())
    assert len(demo.left_index) == 10  # the demo set's paraphrases (score 1)
    for k, (a, b) in enumerate(zip(demo.left_index, demo.right_index)):
        assert (demo.texts[a], demo.texts[b]) in set(zip(demo_pairs().left, demo_pairs().right))
    sts = Pairs("sts", ["a", "b", "c", "d"], ["e", "f", "g", "h"], np.array([4.0, 5.0, 3.9, 1.0]))
    pos = positive_pairs(sts)
    assert [pos.texts[i] for i in pos.left_index] == ["a", "b"]
    marked = positive_pairs(sts, marked=[2, 3])
    assert [marked.texts[i] for i in marked.right_index] == ["g", "h"]
    with pytest.raises(UserError, match="at least 2"):
        positive_pairs(sts, threshold=4.5)


def test_embedding_maps_have_the_right_shape_and_are_reproducible():
    emb = np.random.default_rng(5).normal(size=(40, 24)).astype(np.float32)
    for kind in ("pca", "umap"):
        a, b = embedding_map(emb, kind, seed=0), embedding_map(emb, kind, seed=0)
        assert a.shape == (40, 2) and np.isfinite(a).all()
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(embedding_map(emb, "umap", seed=0), embedding_map(emb, "umap", seed=1))
    assert embedding_map(emb[:4], "umap").shape == (4, 2)  # n_neighbors clipped for tiny corpora
    with pytest.raises(UserError):
        embedding_map(emb[:2], "pca")
    with pytest.raises(UserError):
        embedding_map(emb, "tsne")


def test_pca_map_recovers_a_planar_structure():
    # Points on a circle in a 2-D plane of a 10-D space: PCA must give back the circle (up to rotation).
    basis = np.linalg.qr(np.random.default_rng(6).normal(size=(10, 2)))[0]  # (10, 2) orthonormal
    emb = 3 * circle(24) @ basis.T  # unit circle scaled by 3: rows are normalised first, so the map is a circle
    xy = embedding_map(emb, "pca")
    r = np.linalg.norm(xy - xy.mean(axis=0), axis=1)
    assert r.std() / r.mean() < 1e-5


def test_anisotropy_by_layer_on_a_tiny_model(tiny_llama):
    texts = ["a cat sat on the mat", "dogs bark at night", "the stock market fell", "rain again today"]
    curve = anisotropy_by_layer(tiny_llama, get_method("prompteol"), texts)
    assert curve.shape == (tiny_llama.facts.n_layers + 1,)
    # Hidden state 0 at the prompt's last token is the same token embedding for every text: cosine 1.
    assert curve[0] == pytest.approx(1.0, abs=1e-5)
    per_layer = get_method("mean").encode_layers(tiny_llama, texts, "all")
    assert anisotropy_by_layer(tiny_llama, get_method("mean"), texts)[2] == pytest.approx(anisotropy(per_layer[:, 2]))


@pytest.mark.real
def test_geometry_command_on_the_real_model(real, capsys):
    import json

    from cli import main

    assert main(["geometry", "--method", "mean", "--data", "demo", "--n-boot", "50"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"alignment", "uniformity", "anisotropy", "n_pairs", "n_texts", "method"} <= set(out)
    assert (out["method"], out["n_pairs"], out["n_texts"]) == ("mean", 10, 40)
    assert 0 <= out["alignment"] <= 4 and out["uniformity"] <= 0 and -1 <= out["anisotropy"] <= 1
    assert out["alignment_ci"][0] <= out["alignment"] <= out["alignment_ci"][1]
    # the numbers are those of the library on the same embeddings
    pos = positive_pairs(demo_pairs())
    emb = get_method("mean").encode(real, pos.texts)
    assert out["alignment"] == pytest.approx(alignment(emb[pos.left_index], emb[pos.right_index]), abs=1e-5)
    assert out["uniformity"] == pytest.approx(uniformity(emb), abs=1e-5)
    assert main(["geometry", "--method", "mean", "--data", "demo", "--threshold", "2"]) == 2
    assert "only 0 pair(s) count as positive" in capsys.readouterr().err
