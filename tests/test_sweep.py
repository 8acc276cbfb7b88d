"""Layer sweeps at the cost floor: running only decoder layers s..L-1 per cell must give exactly what a full
forward per cell gives (tiny models of every architecture, sliding-window ones included; the real model to float
tolerance), and the sweep command's executors must agree with each other."""

import functools
import json

import numpy as np
import pytest

from analysis.sweep import windows
from analysis.data.corpora import Pairs
from analysis.sweep.windows import Cell
from analysis.sweep.runner import SuffixRunner, cost, score_local
from analysis.models.tiny import tiny_backbone

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A bank by the river was steep; the bank in town raised its rates.",
    "Hello world!",
    "Sentence embeddings from decoder-only language models.",
    "Numbers 0123456789, punctuation .,;:!?",
    "A cat sat.",
    "Context: Compress the context in one word.",
]


def full_forward(bb, cell, texts, batch_size):
    return windows.cell_method(cell, bb.facts.n_layers).encode(bb, texts, batch_size=batch_size)


def cells_for(L):
    return [Cell(1, 1, 1.0), Cell(1, 2, 16.0), Cell(L - 1, 3, 0.0), Cell(2, 2, 3.0, True), Cell(0, L, 1.0)]


@pytest.mark.parametrize("batch_size", [3, 16])
def test_suffix_equals_full_forward_bit_for_bit(tiny, batch_size):
    L = tiny.facts.n_layers
    cells = cells_for(L)
    runner = SuffixRunner(tiny, TEXTS, {c.start for c in cells}, batch_size=batch_size)
    for cell in cells:
        assert np.array_equal(runner.embed(cell), full_forward(tiny, cell, TEXTS, batch_size)), cell
    from analysis.methods import get_method

    ref = get_method("kv_embedding", layers="none").encode(tiny, TEXTS, batch_size=batch_size)
    assert np.array_equal(runner.prompt_only(), ref)
    # and a cell really differs from the prompt-only forward (the comparison above could not pass by accident)
    assert np.abs(runner.embed(cells[0]) - ref).max() > 1e-3


@pytest.mark.parametrize("arch", ["mistral", "gemma3_text", "qwen2"])
def test_sliding_window_layers(arch):
    """Per-layer masks and per-layer-type rotary embeddings: a window of 4 tokens bites on these texts."""
    bb = tiny_backbone(arch, n_layers=6, sliding_window=4,
                       **({"use_sliding_window": True, "max_window_layers": 2} if arch == "qwen2" else {}))
    if arch != "mistral":
        assert len(set(bb.model.config.layer_types)) == 2, bb.model.config.layer_types  # both kinds present
    cells = [Cell(s, 2, 2.0) for s in range(6)]
    runner = SuffixRunner(bb, TEXTS, range(6), batch_size=4)
    for cell in cells:
        assert np.array_equal(runner.embed(cell), full_forward(bb, cell, TEXTS, 4)), cell
    # the window matters: the same model without it gives other embeddings
    wide = tiny_backbone(arch, n_layers=6, sliding_window=4096)
    assert np.abs(SuffixRunner(wide, TEXTS, [0]).prompt_only() - runner.prompt_only()).max() > 1e-4


def test_spilled_states_give_the_same_result(tiny_llama, tmp_path):
    cells = cells_for(tiny_llama.facts.n_layers)
    in_memory = SuffixRunner(tiny_llama, TEXTS, {c.start for c in cells}, batch_size=3)
    spilled = SuffixRunner(tiny_llama, TEXTS, {c.start for c in cells}, batch_size=3, memory_mb=0,
                           spill_dir=tmp_path)
    spilled.prepare()
    assert spilled.spilled == 3 * len({c.start for c in cells}) and in_memory.spilled == 0
    assert any(tmp_path.rglob("*.npy"))
    for cell in cells:
        assert np.array_equal(spilled.embed(cell), in_memory.embed(cell))
    spilled.close()
    assert not any(tmp_path.rglob("*.npy"))  # spilled files are removed


def test_unprepared_start_and_bad_start(tiny_llama):
    from analysis.core.errors import UserError

    runner = SuffixRunner(tiny_llama, TEXTS, [1])
    with pytest.raises(ValueError, match="not prepared"):
        runner.embed(Cell(2, 1, 1.0))
    with pytest.raises(UserError):
        SuffixRunner(tiny_llama, TEXTS, [tiny_llama.facts.n_layers])


def test_cost_floor():
    assert cost([Cell(0, 1, 1.0)], 30) == 2.0
    assert cost([Cell(15, 1, 1.0), Cell(29, 4, 1.0)], 30) == pytest.approx(1 + 0.5 + 1 / 30)


PAIRS = Pairs("tiny pairs", TEXTS[:6], TEXTS[1:7], np.array([0.0, 1.0, 2.5, 4.0, 3.0, 5.0]))


def test_score_local_equals_the_old_loop(tiny_llama):
    cells = windows.grid(4, [1, 2], [1, 2], [0.0, 5.0])
    seen = []
    rows = score_local(tiny_llama, PAIRS, cells, on_cell=seen.append, on_prefix=lambda r, s: seen.append(r))
    old = [windows.spearman_of(tiny_llama, windows.cell_method(c, 4), PAIRS) for c in cells]  # a full encode each
    assert [r.score for r in rows] == old
    from analysis.methods import get_method

    assert seen[0] == windows.spearman_of(tiny_llama, get_method("kv_embedding", layers="none"), PAIRS)
    assert len(seen) == 1 + len(cells)


# ---- the command and its executors -----------------------------------------------------------------------------
TINY = functools.partial(tiny_backbone, "llama")


def test_cached_sweep_resumes_and_matches(tiny_llama, tmp_path):
    from cache import Store
    from cache.sweep import cached_sweep

    store = Store(tmp_path)
    cells = windows.grid(4, [1, 2, 3], [1, 2], [1.0])
    first = cached_sweep(store, tiny_llama, PAIRS, cells[:3])
    assert first.computed == 3 and first.prompt_only is not None
    events = []
    again = cached_sweep(store, tiny_llama, PAIRS, cells, progress=lambda *a: events.append(a))
    assert again.computed == len(cells) - 3 and again.cached == 3
    assert [again.scores[c] for c in cells[:3]] == [first.scores[c] for c in cells[:3]]
    assert [d for d, _, _ in events] == list(range(1, len(cells) + 1)) and {t for _, t, _ in events} == {len(cells)}
    assert all(m == f"{c.label()}: rho={again.scores[c]:.4f} (cached)" for (_, _, m), c in zip(events[:3], cells))
    assert events[-1][2].startswith(f"{cells[-1].label()}: rho=") and "left)" in events[-1][2]  # the time left
    fresh = cached_sweep(None, tiny_llama, PAIRS, cells)
    assert fresh.scores == again.scores
    # the same entries the Layer explorer page and the old script read: one score per method config
    m = windows.cell_method(cells[-1], 4)
    from cache.keys import STS_SCORE, make_key, sts_score_parts

    entry = store.get(make_key(sts_score_parts(tiny_llama, PAIRS, m)), STS_SCORE)
    assert float(entry.arrays["spearman"][0]) == again.scores[cells[-1]]


def test_ray_executor_matches_local(tiny_llama, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-cluster.txt)")
    from cache import Store
    from cache.sweep import cached_sweep

    cells = windows.grid(4, [0, 1, 2, 3], [1, 2], [1.0, 4.0])
    local = cached_sweep(None, tiny_llama, PAIRS, cells)
    ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False, log_to_driver=False)
    try:
        store = Store(tmp_path)
        remote = cached_sweep(store, tiny_llama, PAIRS, cells, executor="ray", model=TINY)
    finally:
        ray.shutdown()
    assert remote.computed == len(cells)
    assert remote.scores == local.scores
    assert remote.prompt_only == local.prompt_only
    # the driver wrote the cache: a local run now finds every cell
    assert cached_sweep(store, tiny_llama, PAIRS, cells).computed == 0


STS_ROWS = [(f"{s:.1f}", a, b) for s, a, b in zip(PAIRS.scores, PAIRS.left, PAIRS.right)]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """A tiny random Llama saved as a Hugging Face folder, so the command loads it by path."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    bb = tiny_backbone("llama")
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture
def sts_file(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("".join(f"g\tf\ty\t{i}\t{s}\t{a}\t{b}\n" for i, (s, a, b) in enumerate(STS_ROWS)),
                    encoding="utf-8")
    return str(path)


def sweep_cmd(capsys, *argv):
    from cli import main

    code = main(["sweep", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_sweep_command_resumes_from_the_cache(tiny_folder, sts_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    argv = ["--model", tiny_folder, "--data", sts_file, "--starts", "1-2", "--widths", "1,2", "--biases", "0,3",
            "--rerotate", "both"]
    code, first, err = sweep_cmd(capsys, *argv)
    assert code == 0, err
    assert len(first["rows"]) == 2 * 2 * 2 * 2 and first["computed"] >= 16
    assert set(first["references"]) == {"prompt only", "PromptEOL"}
    assert first["seconds"] >= 0 and first["id_window"]["rank_among_cells"] >= 1
    assert "/17]" in err or "/16]" in err  # per-cell progress lines (the ID window's cell may be one more)
    code, again, err = sweep_cmd(capsys, *argv)
    assert code == 0 and again["computed"] == 0 and "cached" in err
    assert again["rows"] == first["rows"] and again["references"] == first["references"]
    code, fresh, _ = sweep_cmd(capsys, *argv, "--no-cache")
    assert fresh["rows"] == first["rows"] and fresh["computed"] == first["computed"]


@pytest.mark.parametrize("argv, message", [
    (["--starts", "5-2"], "runs backwards"), (["--widths", "0"], "Widths"), (["--rerotate", "maybe"], "rerotate"),
    (["--executor", "spark"], "executor"), (["--starts", "1,x"], "not a number"), (["--biases", "a"], "biases"),
])
def test_sweep_command_bad_input(argv, message, tiny_folder, sts_file, capsys):
    code, _, err = sweep_cmd(capsys, "--model", tiny_folder, "--data", sts_file, *argv)
    assert code == 2
    assert message.lower() in err.lower() and "Traceback" not in err


@pytest.mark.real
def test_real_model_suffix_matches_full_forward(real):
    texts = TEXTS[:5]
    cells = [Cell(9, 4, 1.0), Cell(25, 4, 16.0), Cell(29, 1, 3.0, True)]
    runner = SuffixRunner(real, texts, {c.start for c in cells})
    for cell in cells:
        full = windows.cell_method(cell, 30).encode(real, texts)
        assert np.abs(runner.embed(cell) - full).max() < 1e-5, cell


def test_sweep_work_budget_counts_only_cells_still_to_do(tiny_llama, tmp_path):
    """texts x remaining cost is bounded per request; cached cells are free, so a finished sweep still opens."""
    from analysis.core import budgets
    from analysis.sweep import runner
    from analysis.core.errors import UserError
    from cache import Store
    from cache.sweep import cached_sweep

    store = Store(tmp_path)
    cells = windows.grid(4, [1, 2], [1], [1.0])
    n_texts = len(runner.scorer(PAIRS).sides["document"])
    need = round(runner.cost(cells, 4) * n_texts)
    with budgets.override(sweep_text_forwards=need - 1), pytest.raises(UserError, match="--no-budgets"):
        cached_sweep(store, tiny_llama, PAIRS, cells)
    with budgets.override(sweep_text_forwards=need):
        done = cached_sweep(store, tiny_llama, PAIRS, cells)
    with budgets.override(sweep_text_forwards=0):
        assert cached_sweep(store, tiny_llama, PAIRS, cells).scores == done.scores
