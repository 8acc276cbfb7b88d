"""Intrinsic dimension: TwoNN on manifolds of known dimension, duplicates, bands, trajectories on tiny models, and
the layer-selection rules on synthetic trajectories with a known answer."""

import json

import numpy as np
import pytest

from analysis.inspect.intrinsic_dim import (
    auto_window, bootstrap_twonn, select_window, trajectory, trajectory_from_states, twonn,
)
from analysis.methods import get_method


def gaussian(n, k, ambient, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, k)) @ rng.normal(size=(k, ambient))  # k-dim Gaussian, linearly embedded


# ---- TwoNN ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 5, 8])
def test_twonn_recovers_a_known_dimension(k):
    est = twonn(gaussian(1000, k, 64))
    assert est.reason is None and est.n_unique == 1000
    assert abs(est.value - k) <= 0.15 * k


def test_duplicates_are_removed_not_nan():
    x = gaussian(300, 5, 64)
    est = twonn(np.vstack([x, x, x[:50]]))
    assert est.n_unique == 300 and np.isfinite(est.value)
    assert abs(est.value - twonn(x).value) < 1e-9  # the copies changed nothing


def test_undefined_estimates_carry_a_reason():
    same = twonn(np.ones((40, 8)))
    assert same.value is None and same.n_unique == 1 and "distinct" in same.reason
    few = twonn(gaussian(5, 3, 16))
    assert few.value is None and few.n_unique == 5
    bad = gaussian(50, 3, 16)
    bad[3, 2] = np.nan
    assert twonn(bad).value is None
    with pytest.raises(ValueError):
        twonn(np.zeros(10))


def test_bootstrap_band_brackets_the_estimate():
    est, lo, hi = bootstrap_twonn(gaussian(600, 6, 64), n_boot=30, seed=1)
    assert lo < hi and lo <= est.value * 1.05 and hi >= est.value * 0.95
    assert abs(est.value - 6) < 0.9
    est2, lo2, hi2 = bootstrap_twonn(gaussian(600, 6, 64), n_boot=30, seed=1)
    assert (lo, hi) == (lo2, hi2)  # seeded


def test_trajectory_from_states_reports_every_layer():
    states = np.stack([gaussian(200, k, 32, seed=k) for k in (2, 4, 6)], axis=1)  # (n, 3, d)
    states[:, 0] = 1.0  # one layer where every point coincides
    df = trajectory_from_states(states, bootstrap=5)
    assert list(df.columns) == ["layer", "id", "lo", "hi", "n_points", "n_unique", "defined", "reason"]
    assert not df.loc[0, "defined"] and df.loc[0, "n_unique"] == 1 and np.isnan(df.loc[0, "id"])
    assert df.loc[1:, "defined"].all()
    assert df.loc[1, "id"] < df.loc[2, "id"]


# ---- selection rules ----------------------------------------------------------------------------------------------
L = 30


def test_clear_u_shape_picks_min_to_min_plus_tenth():
    ids = [(l - 12) ** 2 / 10 + 5 for l in range(L + 1)]
    sel = select_window(ids, L)
    assert sel.rule == "u-shape" and (sel.start, sel.end) == (12, 15) and sel.layers == (12, 13, 14, 15)


def test_minimum_near_the_end_is_no_u_and_is_clipped_to_the_last_decoder_layer():
    ids = [(l - 28) ** 2 / 10 + 5 for l in range(L + 1)]  # the right arm barely rises: not a clear U
    sel = select_window(ids, L)
    assert sel.rule == "several-minima" and sel.layers == (28, 29)


def test_u_shape_tolerates_small_wiggles_and_an_early_minimum():
    ids = np.array([5 + 4 * (5 - l) if l < 5 else 5 + (l - 5) for l in range(L + 1)], dtype=float)
    ids[20] -= 1.5  # a shallow dip, far below the prominence threshold
    sel = select_window(ids, L)
    assert sel.rule == "u-shape" and sel.layers == (5, 6, 7, 8)  # the U rule has no early-layer exclusion


def test_several_minima_exclude_the_first_fifth():
    ids = np.full(L + 1, 20.0)
    ids[4], ids[15], ids[24] = 3.0, 8.0, 6.0  # the global minimum is early, at 4
    sel = select_window(ids, L)
    assert sel.rule == "several-minima" and (sel.start, sel.end) == (24, 27)
    assert "4" in sel.reason and "15" in sel.reason


def test_flat_trajectory_is_called_flat():
    ids = 10 + 0.01 * np.sin(np.arange(L + 1))
    sel = select_window(ids, L)
    assert sel.rule == "flat" and sel.start >= 6 and len(sel.layers) == 4 and "arbitrary" in sel.reason


def test_undefined_layers_are_skipped_and_too_few_is_undefined():
    ids = [(l - 12) ** 2 / 10 + 5 for l in range(L + 1)]
    ids[0] = None
    ids[7] = np.nan
    assert select_window(ids, L).layers == (12, 13, 14, 15)
    sel = select_window([np.nan] * 29 + [1.0, 2.0], L)
    assert sel.rule == "undefined" and sel.layers == () and sel.start is None
    with pytest.raises(ValueError):
        select_window([1.0] * 5, L)


# ---- trajectories on a model --------------------------------------------------------------------------------------
WORDS = "river bank money loan fox dog cat bird tree stone music rain sun moon ship road city field".split()
CORPUS = [f"The {a} near the {b} saw a {c}." for a in WORDS[:6] for b in WORDS[6:12] for c in WORDS[12:15]]


def test_tiny_trajectory_shape_and_fixed_prompt_state_zero_is_undefined(tiny_llama):
    m = get_method("kv_embedding", layers="none")
    df = trajectory(tiny_llama, m, CORPUS, "last", bootstrap=3)
    assert len(df) == tiny_llama.facts.n_layers + 1 and (df["n_points"] == len(CORPUS)).all()
    # Hidden state 0 of the final token is the embedding of the prompt's last token: the same for every text.
    assert not df.loc[0, "defined"] and df.loc[0, "n_unique"] == 1
    assert df.loc[1:, "defined"].all()
    states = m.encode_layers(tiny_llama, CORPUS)  # the method's own hybrid readout
    df_mean = trajectory(tiny_llama, m, CORPUS, "mean", bootstrap=0)
    assert df_mean.loc[0, "defined"]  # mean over the text tokens differs between texts even at state 0
    assert states.shape == (len(CORPUS), tiny_llama.facts.n_layers + 1, tiny_llama.facts.hidden_size)


def test_trajectory_progress_reaches_total(tiny_llama):
    calls = []
    trajectory(tiny_llama, get_method("last"), CORPUS[:40], bootstrap=0, progress=lambda d, t: calls.append((d, t)))
    assert calls[-1][0] == calls[-1][1] and all(a <= b for (a, _), (b, _) in zip(calls, calls[1:]))


def test_auto_window_library_memo_touches_no_disk(tiny_llama, tmp_path, monkeypatch):
    import analysis.inspect.intrinsic_dim as idm

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(idm, "_AUTO", {})
    monkeypatch.setattr(idm, "auto_corpus", lambda: CORPUS)
    m = get_method("kv_embedding", template="Context: {text} in one word:")
    sel = auto_window(tiny_llama, m.prompt_only())
    assert sel.layers and all(1 <= l <= tiny_llama.facts.n_layers - 1 for l in sel.layers)
    assert sorted(m.decoder_layers(tiny_llama)) == list(sel.layers)  # the method resolves 'auto' the same way
    assert not any(tmp_path.iterdir())  # the library writes nothing; cache.auto_window stores it

    def boom(*a, **k):
        raise AssertionError("recomputed although remembered")

    monkeypatch.setattr(idm, "trajectory", boom)
    assert auto_window(tiny_llama, m.prompt_only()) == sel
    with pytest.raises(AssertionError):  # another prompt is another window
        auto_window(tiny_llama, get_method("kv_embedding", template="Query: {text} in one word:").prompt_only())


def test_auto_window_is_a_validated_store_entry_that_clear_removes(tiny_llama, tmp_path, monkeypatch):
    import analysis.inspect.intrinsic_dim as idm
    import cache
    from cache import keys

    monkeypatch.setattr(idm, "_AUTO", {})
    monkeypatch.setattr(idm, "auto_corpus", lambda: CORPUS)
    store = cache.Store(tmp_path)
    m = get_method("kv_embedding", template="Context: {text} in one word:")
    assert cache.auto_window(store, tiny_llama, m, compute=False) is None
    sel, ids = cache.auto_window(store, tiny_llama, m)
    ready = cache.resolve_method(store, tiny_llama, m)
    assert not ready.needs_window(tiny_llama) and sorted(ready.decoder_layers(tiny_llama)) == list(sel.layers)
    assert ready.params == m.params  # still layers=auto: same cache keys as before
    assert store.count() == 1 and (tmp_path / keys.AUTO_LAYERS).is_dir()

    monkeypatch.setattr(idm, "_AUTO", {})  # a new process: memory is empty, the store answers

    def boom(*a, **k):
        raise AssertionError("recomputed although stored")

    real_trajectory = idm.trajectory
    monkeypatch.setattr(idm, "trajectory", boom)
    assert cache.auto_window(store, tiny_llama, m) == (sel, ids)

    # A hand-edited record (layers that do not exist, or not numbers) is rejected, removed and recomputed.
    path = store.path_for(keys.make_key(keys.auto_window_parts(tiny_llama, m.prompt_only())), keys.AUTO_LAYERS)
    monkeypatch.setattr(idm, "trajectory", real_trajectory)
    for bad in ([999], "abc", []):
        record = json.loads((path / "meta.json").read_text())
        record["meta"]["layers"] = bad
        (path / "meta.json").write_text(json.dumps(record))
        monkeypatch.setattr(idm, "_AUTO", {})
        assert cache.auto_window(store, tiny_llama, m, compute=False) is None  # rejected and removed
        assert cache.auto_window(store, tiny_llama, m) == (sel, ids)
        assert json.loads((path / "meta.json").read_text())["meta"]["layers"] == list(sel.layers)

    assert store.clear() == 1  # Clear cache removes the auto-layer record like any other result
    assert cache.auto_window(store, tiny_llama, m, compute=False) is None
