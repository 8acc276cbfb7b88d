"""Hand-checkable cases for Spearman/STS, the classification probe, nDCG@10 and the BEIR reader, and the tasks
interface on them (`analysis.eval.tasks`; the other families: tests/test_task_families.py)."""

import json
import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from analysis import get_method
from analysis.data.corpora import Pairs, Texts
from analysis.core.errors import UserError
from analysis.data.files import load_beir
from analysis.eval.probe import classification_probe
from analysis.eval.retrieval import per_query
from analysis.eval.sts import pair_index, score_cosines, spearman
from analysis.eval.tasks import Task, load_task, run_task, select_task
from cache.keys import task_digest


def test_spearman_on_hand_computed_cases():
    # ranks of a = 1 2 3 4 5, of b = 2 1 4 3 5: d^2 = 1+1+1+1+0 = 4, rho = 1 - 6*4/(5*24) = 0.8
    assert spearman([1, 2, 3, 4, 5], [20, 10, 40, 30, 50]) == pytest.approx(0.8)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone, not linear
    # with ties: a ranks 1 2.5 2.5 4, b ranks 1 2 3 4 -> Pearson of the ranks = 0.9486832980505138
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / np.sqrt(10))
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=200), rng.normal(size=200)
    assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
    assert np.isnan(spearman([1.0, 1.0, 1.0], [1, 2, 3]))  # constant similarities have no ranking


def test_sts_uses_cosine_of_pairs_and_brackets_the_estimate():
    # 2-D embeddings at angles 0..80 degrees from the x axis: cosine to the x axis falls with the angle.
    angles = np.radians(np.arange(0, 90, 10))
    pairs = Pairs("p", ["x"] * 9, [f"a{i}" for i in range(9)], -angles)
    vectors = {"x": [1.0, 0.0], **{f"a{i}": 5 * np.array([np.cos(a), np.sin(a)]) for i, a in enumerate(angles)}}
    s = run_task(Task("p", "sts", pairs), lambda texts: np.array([vectors[t] for t in texts]), n_boot=0)
    assert s.value == pytest.approx(1.0) and s.n == 9 and s.kind == "sts"  # scale does not matter (cosine)
    rng = np.random.default_rng(1)
    gold = rng.normal(size=300)
    sims = np.cos(gold + rng.normal(scale=0.7, size=300))
    r = score_cosines(sims, -np.abs(gold), n_boot=500)
    assert r.ci[0] < r.spearman < r.ci[1]
    assert score_cosines(sims, -np.abs(gold), n_boot=500).ci == r.ci  # seeded


def test_pair_index_looks_every_pair_up():
    pairs = Pairs("p", ["a", "b", "a"], ["c", "a", "d"], np.array([1.0, 2.0, 3.0]))
    texts, left, right = pair_index(pairs)
    assert texts == ["a", "b", "c", "d"]
    assert [texts[i] for i in left] == pairs.left and [texts[i] for i in right] == pairs.right


def test_probe_separable_and_random_labels():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(100, 10))
    labels = np.where(x[:, 3] > 0, "pos", "neg")
    p = classification_probe(x, labels, n_boot=200)
    assert p.accuracy > 0.9 and p.n == 100 and p.n_classes == 2 and p.folds == 5
    assert p.ci[0] <= p.accuracy <= p.ci[1] + 1e-9
    noise = classification_probe(rng.normal(size=(100, 10)), labels, n_boot=0)
    assert abs(noise.accuracy - 0.5) < 0.2
    with pytest.raises(UserError, match="at least 2 different labels"):
        classification_probe(x, ["a"] * 100)
    with pytest.raises(UserError, match="only 2 text"):
        classification_probe(x[:12], ["a"] * 10 + ["b"] * 2)


def _sims(rows: dict[str, dict[str, float]], docs: list[str]) -> np.ndarray:
    """A similarity matrix from {query: {doc: score}}; documents a query does not score rank last."""
    return np.array([[row.get(d, -1.0) for d in docs] for row in rows.values()])


def test_ndcg_at_10_hand_computed():
    docs = ["d1", "d2", "d3", "d4", "d5", "d6", "d7"]
    qrels = [{"d1": 1, "d2": 1}, {"d5": 2, "d6": 1}]
    run = {
        # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3)
        "q1": {"d3": 0.9, "d1": 0.8, "d4": 0.7, "d2": 0.6},
        # perfect order: 1.0
        "q2": {"d5": 0.9, "d6": 0.5, "d7": 0.1},
    }
    q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert q1 == pytest.approx(0.650921, abs=1e-6)
    per = per_query(_sims(run, docs), docs, qrels)
    assert per["nDCG@10"] == pytest.approx([q1, 1.0])
    assert per["MRR@10"] == pytest.approx([0.5, 1.0]) and per["recall@100"] == pytest.approx([1.0, 1.0])
    # graded gains: swapping q2's documents gives (1 + 2/log2(3)) / (2 + 1/log2(3))
    swapped = per_query(_sims({"q2": {"d6": 0.9, "d5": 0.5}}, docs), docs, qrels[1:])
    assert swapped["nDCG@10"][0] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # a relevant document at rank 11 does not count
    far = [f"x{i:02d}" for i in range(10)] + ["d1"]
    scores = {"q1": {**{d: 1.0 - i / 100 for i, d in enumerate(far[:10])}, "d1": 0.001}}
    assert per_query(_sims(scores, far), far, [{"d1": 1}])["nDCG@10"][0] == 0.0


def _write_beir(root, corpus, queries, qrels_lines):
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels_lines) + "\n")


TOY_CORPUS = [{"_id": "d1", "title": "Cats", "text": "Cats purr and sleep a lot."},
              {"_id": "d2", "title": "", "text": "The stock market fell sharply today."},
              {"_id": "d3", "title": "Rain", "text": "It will rain all weekend."}]
TOY_QUERIES = [{"_id": "q1", "text": "Do cats sleep?"}, {"_id": "q2", "text": "market news"},
               {"_id": "q3", "text": "unjudged query"}]


def test_load_beir_and_its_errors(tmp_path):
    good = tmp_path / "good"
    _write_beir(good, TOY_CORPUS, TOY_QUERIES, ["q1\td1\t1", "q2\td2\t1", "q2\td3\t0"])
    b = load_beir(good)
    assert b.corpus["d1"] == "Cats Cats purr and sleep a lot." and b.corpus["d2"].startswith("The stock")
    assert list(b.queries) == ["q1", "q2"]  # q3 has no judgement
    assert b.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1, "d3": 0}}
    with pytest.raises(UserError, match="not found"):
        load_beir(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="missing corpus.jsonl, queries.jsonl, qrels/test.tsv"):
        load_beir(tmp_path / "empty")
    bad = tmp_path / "bad"
    _write_beir(bad, TOY_CORPUS, TOY_QUERIES, ["q1\td7\t1"])
    with pytest.raises(UserError, match="document 'd7' is not in corpus.jsonl"):
        load_beir(bad)
    broken = tmp_path / "broken"
    _write_beir(broken, TOY_CORPUS, TOY_QUERIES, ["q1\td1\t1"])
    (broken / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{not json\n')
    with pytest.raises(UserError, match="corpus.jsonl, line 2: not valid JSON"):
        load_beir(broken)


def test_retrieval_task_end_to_end_with_a_perfect_embedder(tmp_path):
    _write_beir(tmp_path / "toy", TOY_CORPUS, TOY_QUERIES, ["q1\td1\t1", "q2\td2\t1"])
    task = load_task(f"beir:{tmp_path / 'toy'}")
    assert task.kind == "retrieval"
    # An embedder that puts every text on the axis of its topic retrieves perfectly.
    topics = ["cat", "market", "rain"]
    emb = lambda texts: np.array([[float(t.lower().count(k) > 0) for k in topics] for t in texts]) + 1e-3  # noqa: E731
    score = run_task(task, emb, n_boot=50)
    assert (score.metric, score.value, score.n) == ("nDCG@10", pytest.approx(1.0), 2)


def test_builtin_tasks_and_errors():
    assert load_task("lee").kind == "sts" and len(select_task(load_task("lee"), limit=30)[0].data) == 30
    assert load_task("polarity").kind == "probe" and len(load_task("polarity").data) == 200
    with pytest.raises(UserError, match="Unknown data set"):
        load_task("no-such-set")
    t1, t2 = load_task("demo"), select_task(load_task("demo"), limit=5)[0]
    assert task_digest(t1) != task_digest(t2) and task_digest(t1) == task_digest(load_task("demo"))


def test_run_task_on_a_tiny_model(tiny_llama):
    method = get_method("mean")
    embed = lambda texts: method.encode(tiny_llama, texts)  # noqa: E731
    s = run_task(load_task("demo"), embed, n_boot=100)
    assert s.metric == "Spearman" and s.n == 20 and -1 <= s.value <= 1 and s.lo <= s.hi
    texts = Texts("t", [f"sentence number {i} about {'cats' if i % 2 else 'stocks'}" for i in range(20)],
                  ["a" if i % 2 else "b" for i in range(20)])
    p = run_task(Task("t", "probe", texts), embed, n_boot=100)
    assert p.metric == "accuracy" and p.n == 20 and p.value > 0.8  # the label word is in the text


@pytest.mark.real
def test_bench_command_json_and_csv(real, capsys):
    import csv
    import io
    import json

    from cli import main

    args = ["bench", "--methods", "last,mean", "--data", "demo,topics", "--n-boot", "50"]
    assert main(args + ["--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["method"], r["data"], r["metric"]) for r in rows] == [
        ("last", "Demo pairs", "Spearman"), ("last", "Topics", "accuracy"),
        ("mean", "Demo pairs", "Spearman"), ("mean", "Topics", "accuracy")]
    assert all(r["ci_low"] <= r["score"] <= r["ci_high"] for r in rows)
    assert main(args) == 0  # CSV, now from the cache
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [float(r["score"]) for r in table] == [r["score"] for r in rows]
    assert main(["bench", "--methods", "mean", "--param", "prompteol.layer=3"]) == 2
    assert "not among the chosen methods" in capsys.readouterr().err
