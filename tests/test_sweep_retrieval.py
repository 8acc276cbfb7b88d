"""KV-Embedding windows scored on a retrieval task (issue 34): the query side runs the paper's Query prompt at the cost
floor exactly as a full forward does, a cell's nDCG@10 is the benchmark's, the cache resumes, Ray agrees with the
local executor, and the Layer explorer scores a window on a nano retrieval task (skipped without SciFact)."""

import functools
from pathlib import Path

import numpy as np
import pytest

from analysis.data.files import Beir
from analysis.eval.tasks import Task, score_task
from analysis.methods import get_method
from analysis.models.tiny import tiny_backbone
from analysis.sweep import windows
from analysis.sweep.runner import SuffixRunner, score_local, scorer

WORDS = ["river", "bank", "fox", "dog", "ferry", "clock", "bread", "stone", "rain", "lamp"]


def _task(n_docs: int = 24, n_queries: int = 8) -> Task:
    rng = np.random.default_rng(3)
    docs = {f"d{i}": "The " + " ".join(rng.choice(WORDS, 5)) + "." for i in range(n_docs)}
    queries = {f"q{i}": f"Where is the {docs[f'd{i}'].split()[2]}?" for i in range(n_queries)}
    qrels = {f"q{i}": {f"d{i}": 1, f"d{(i + 5) % n_docs}": 2} for i in range(n_queries)}
    return Task("tiny retrieval", "retrieval", Beir("tiny", docs, queries, qrels))


TASK = _task()
CELLS = windows.grid(4, [1, 2], [1, 2], [1.0])


def test_a_query_side_runner_equals_a_full_forward_of_queries(tiny_llama):
    queries = scorer(TASK).sides["query"]
    runner = SuffixRunner(tiny_llama, queries, {c.start for c in CELLS}, batch_size=3, role="query")
    for cell in CELLS:
        full = windows.cell_method(cell, 4).encode(tiny_llama, queries, batch_size=3, role="query")
        assert np.array_equal(runner.embed(cell), full), cell
    ref = get_method("kv_embedding", layers="none").encode(tiny_llama, queries, batch_size=3, role="query")
    assert np.array_equal(runner.prompt_only(), ref)
    as_documents = get_method("kv_embedding", layers="none").encode(tiny_llama, queries, batch_size=3)
    assert np.abs(ref - as_documents).max() > 1e-3  # the Query prompt, really


def test_a_cells_ndcg_is_the_benchmarks(tiny_llama):
    rows = score_local(tiny_llama, TASK, CELLS, batch_size=4)
    for r in rows:
        method = windows.cell_method(r.cell, 4)
        want = score_task(TASK, lambda texts, role, m=method: m.encode(tiny_llama, texts, role=role), n_boot=0)
        assert r.score == pytest.approx(want.value, abs=1e-12) and want.metric == "nDCG@10"
    assert len({r.score for r in rows}) > 1  # the cells differ: the comparison could not pass by accident


def test_cached_retrieval_sweep_resumes_under_its_own_keys(tiny_llama, tmp_path):
    from cache import Store
    from cache.keys import STS_SCORE, cell_score_parts, make_key
    from cache.sweep import cached_sweep

    store = Store(tmp_path)
    first = cached_sweep(store, tiny_llama, TASK, CELLS[:2])
    events = []
    again = cached_sweep(store, tiny_llama, TASK, CELLS, progress=lambda *a: events.append(a))
    assert again.cached == 2 and again.computed == len(CELLS) - 2 and again.prompt_only == first.prompt_only
    assert events[0][2].startswith(f"{CELLS[0].label()}: nDCG@10=") and events[0][2].endswith("(cached)")
    entry = store.get(make_key(cell_score_parts(tiny_llama, TASK, windows.cell_method(CELLS[-1], 4))), STS_SCORE)
    assert float(entry.arrays["spearman"][0]) == again.scores[CELLS[-1]]
    other = _task(n_docs=25)  # another corpus: other entries
    assert cached_sweep(store, tiny_llama, other, CELLS[:1]).computed == 1


def test_a_sweep_refuses_a_family_it_cannot_score(tiny_llama):
    from analysis.core.errors import UserError
    from analysis.data.corpora import Texts

    with pytest.raises(UserError, match="STS pairs or a retrieval task, not clustering"):
        score_local(tiny_llama, Task("c", "clustering", Texts("c", ["a", "b"], ["x", "y"])), CELLS)


def test_ray_scores_retrieval_cells_as_the_local_executor(tiny_llama, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-cluster.txt)")
    from cache import Store
    from cache.sweep import cached_sweep

    local = cached_sweep(None, tiny_llama, TASK, CELLS)
    ray.init(num_cpus=2, object_store_memory=80 * 2**20, include_dashboard=False, log_to_driver=False)
    try:
        remote = cached_sweep(Store(tmp_path), tiny_llama, TASK, CELLS, executor="ray",
                              model=functools.partial(tiny_backbone, "llama"))
    finally:
        ray.shutdown()
    assert remote.scores == local.scores and remote.prompt_only == local.prompt_only


def test_layer_explorer_scores_a_window_on_nano_retrieval(tiny_folder, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from analysis.data.datasets import get
    from apptools import errors, figure

    if not get("scifact-select").present():
        pytest.skip("SciFact not found at ../shared/data/scifact (development data, not shipped)")
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    page = str(Path(__file__).resolve().parent.parent / "pages" / "5_layer_explorer.py")
    at = AppTest.from_file(page, default_timeout=600)
    at.session_state["embedscope_model"] = str(tiny_folder)
    at.session_state["explorer_target"] = "retrieval"
    at.session_state["explorer_distractors"] = 50
    at.session_state["explorer_running"] = True  # as after pressing Run: the ID trajectory, then the sweep
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert at.selectbox(key="explorer_retrieval").value.startswith("SciFact") and \
        "selection" in at.selectbox(key="explorer_retrieval").value
    spec = figure(at)
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    assert "nDCG@10 by window start" in titles
    text = " ".join(m.value for m in at.markdown)
    assert "**Best cell**" in text and "nDCG@10 =" in text and "**PromptEOL**: nDCG@10 =" in text
