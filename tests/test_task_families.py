"""The task families beyond STS (issue 34): MTEB's own evaluators and ours agree on the same embeddings (retrieval,
classification, clustering), pytrec_eval and our ranking agree on ties, long documents are generated to length, the
paired comparison pairs only like with like, and the fixed SciFact/Banking77 cuts (skipped without ../shared/data)."""

import json

import numpy as np
import pytest

from analysis.core.errors import UserError
from analysis.data import longdoc
from analysis.data.corpora import Texts
from analysis.data.files import Beir
from analysis.eval import classification, clustering, retrieval
from analysis.eval.score import compare
from analysis.eval.tasks import Task, load_task, nano_task, score_from_record, score_record, score_task, select_task


def _lookup(table: dict[str, np.ndarray]):
    """embed(texts, role) from a fixed table: the same vectors whoever asks."""
    return lambda texts, role: np.stack([table[t] for t in texts])


def _mteb():
    return pytest.importorskip("mteb", reason="mteb is not installed: the comparison with its evaluators is skipped")


class _Lookup:
    """An MTEB encoder that returns the table's vectors (MTEB's EncoderProtocol, structurally)."""

    def __init__(self, table):
        from mteb.models import ModelMeta

        self.table = table
        self.mteb_model_meta = ModelMeta.create_empty(overwrites={"name": "test/lookup", "revision": "1",
                                                                  "similarity_fn_name": "cosine"})

    def encode(self, inputs, **kwargs):
        return np.stack([self.table[t] for batch in inputs for t in batch["text"]])

    def similarity(self, a, b):
        return retrieval.cosines(a, b)

    def similarity_pairwise(self, a, b):
        return np.einsum("nd,nd->n", a, b)


def _metadata(kind: str, main: str):
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.mocks.mock_tasks.classification import general_args

    return TaskMetadata(type=kind, name=f"Embedscope{kind}", main_score=main, **general_args)


def _labelled(n: int, n_labels: int, seed: int, dim: int = 16):
    rng = np.random.default_rng(seed)
    texts = [f"text {i}" for i in range(n)]
    labels = [f"label {i % n_labels}" for i in range(n)]
    table = {t: (rng.normal(size=dim) + 2 * np.eye(dim)[i % n_labels]).astype(np.float32) for i, t in enumerate(texts)}
    return texts, labels, table


# ---- MTEB's evaluators and ours, same embeddings ---------------------------------------------------------------
def test_retrieval_agrees_with_mteb():
    _mteb()
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    rng = np.random.default_rng(0)
    docs = {f"d{i}": f"document {i}" for i in range(150)}
    queries = {f"q{i}": f"query {i}" for i in range(40)}
    qrels = {q: {f"d{(3 * i + j) % 150}": int(rng.integers(0, 3)) for j in range(5)} for i, q in enumerate(queries)}
    for i, q in enumerate(queries):
        qrels[q][f"d{i}"] = 1  # every query has a relevant document; grades 0-2 elsewhere
    qrels["q39"] = {"d1": 0}  # judged, but nothing relevant: MTEB keeps it (0 everywhere), so do we
    qrels.pop("q38")  # not judged at all: MTEB drops it, so do we
    table = {t: rng.normal(size=16).astype(np.float32) for t in [*docs.values(), *queries.values()]}

    class Task(AbsTaskRetrieval):
        metadata = _metadata("Retrieval", "ndcg_at_10")

        def load_data(self, **kwargs):
            self.dataset = {"default": {"test": RetrievalSplitData(
                queries=Dataset.from_list([{"id": k, "text": v} for k, v in queries.items()]),
                corpus=Dataset.from_list([{"id": k, "text": v, "title": ""} for k, v in docs.items()]),
                relevant_docs=qrels, top_ranked=None)}}
            self.data_loaded = True

    theirs = Task().evaluate(_Lookup(table), "test", encode_kwargs={"show_progress_bar": False})["default"]
    ours = retrieval.score_retrieval(Beir("b", docs, queries, qrels), _lookup(table), n_boot=0)
    assert ours.n == 39 and ours.metric == "nDCG@10" and ours.items[-1] == 0
    assert round(ours.value, 5) == pytest.approx(theirs["ndcg_at_10"], abs=1e-12)  # MTEB rounds to 5 decimals
    assert round(ours.metrics["recall@100"], 5) == pytest.approx(theirs["recall_at_100"], abs=1e-12)
    assert ours.metrics["MRR@10"] == pytest.approx(theirs["mrr_at_10"], abs=1e-6)


def test_retrieval_per_query_equals_pytrec_eval_with_ties_and_grades():
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec_eval is not installed")
    rng = np.random.default_rng(3)
    docs = [f"d{i:02d}" for i in range(60)]
    sims = np.round(rng.normal(size=(12, 60)), 1)  # one decimal: many exact ties, broken by id descending
    qrels = [{docs[j]: int(rng.integers(0, 4)) for j in rng.choice(60, 8, replace=False)} for _ in range(12)]
    for q in qrels:
        q[docs[0]] = 2
    ours = retrieval.per_query(sims, docs, qrels, ("nDCG@10", "recall@100", "nDCG@1"))
    run = {f"q{i}": {d: float(s) for d, s in zip(docs, row)} for i, row in enumerate(sims)}
    truth = pytrec_eval.RelevanceEvaluator({f"q{i}": q for i, q in enumerate(qrels)},
                                           {"ndcg_cut.1,10", "recall.100"}).evaluate(run)
    for i in range(12):
        assert ours["nDCG@10"][i] == pytest.approx(truth[f"q{i}"]["ndcg_cut_10"], abs=1e-12)
        assert ours["nDCG@1"][i] == pytest.approx(truth[f"q{i}"]["ndcg_cut_1"], abs=1e-12)
        assert ours["recall@100"][i] == pytest.approx(truth[f"q{i}"]["recall_100"], abs=1e-12)
    with pytest.raises(ValueError, match="unknown retrieval metric"):
        retrieval.per_query(sims, docs, qrels, ("MAP@10",))


def test_classification_agrees_with_mteb():
    _mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.classification import AbsTaskClassification

    texts, labels, table = _labelled(300, 7, seed=1)

    class Task(AbsTaskClassification):
        metadata = _metadata("Classification", "accuracy")

        def load_data(self, **kwargs):
            self.dataset = DatasetDict({"train": Dataset.from_dict({"text": texts[:200], "label": labels[:200]}),
                                        "test": Dataset.from_dict({"text": texts[200:], "label": labels[200:]})})
            self.data_loaded = True

    theirs = Task().evaluate(_Lookup(table), "test", encode_kwargs={"show_progress_bar": False})["default"]
    split = classification.given(Texts("train", texts[:200], labels[:200]), Texts("test", texts[200:], labels[200:]),
                                 "toy")
    ours = classification.score_classification(split, _lookup(table), n_boot=200)
    assert ours.value == pytest.approx(theirs["accuracy"], abs=1e-6)
    assert ours.metrics["macro-F1"] == pytest.approx(theirs["f1"], abs=1e-6)
    assert [s["accuracy"] for s in theirs["scores_per_experiment"]] == pytest.approx(
        ours.detail["accuracy_per_experiment"], abs=1e-12)
    assert ours.items.shape == (100,) and ours.items.mean() == pytest.approx(ours.value)  # per text, over experiments
    assert ours.lo <= ours.value <= ours.hi and ours.unit == "texts"


def test_clustering_agrees_with_mteb():
    _mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.clustering import AbsTaskClustering
    from threadpoolctl import threadpool_limits

    texts, labels, table = _labelled(300, 6, seed=2)

    class Task(AbsTaskClustering):
        metadata = _metadata("Clustering", "v_measure")
        max_fraction_of_documents_to_embed = None
        max_document_to_embed = 150
        max_documents_per_cluster = 400

        def load_data(self, **kwargs):
            self.dataset = DatasetDict({"test": Dataset.from_dict({"sentences": texts, "labels": labels})})
            self.data_loaded = True

    with threadpool_limits(1, user_api="openmp"):  # fast on a busy machine; the clusters are the same
        theirs = Task().evaluate(_Lookup(table), "test", encode_kwargs={"show_progress_bar": False})["default"]
    ours = clustering.score_clustering(Texts("toy", texts, labels), _lookup(table), n_boot=100, max_documents=150,
                                       cluster_size=400)
    assert ours.value == pytest.approx(theirs["v_measure"], abs=1e-6)
    assert ours.detail["v_measure_per_experiment"] == pytest.approx(theirs["v_measures"]["Level 0"], abs=1e-12)
    assert ours.n == 10 and ours.unit == "experiments"


def test_undersampling_is_mtebs_repeated_shuffle():
    """Experiment e takes the first 2 of each label in the (e + 1)-th in-place shuffle by RandomState(42)."""
    labels = ["a", "b", "a", "b", "a", "b", "c", "c"]
    got = classification.undersample(labels, n_experiments=2, per_label=2)
    order = list(range(8))
    for picked in got:
        np.random.RandomState(42).shuffle(order)
        want, counts = [], {}
        for i in order:
            if counts.get(labels[i], 0) < 2:
                want.append(i)
                counts[labels[i]] = counts.get(labels[i], 0) + 1
        assert picked == want
    assert got[0] != got[1] and all(len(p) == 6 for p in got)


# ---- the interface: score_task, records, paired comparisons ----------------------------------------------------------
def _topic_beir() -> tuple[Beir, dict]:
    topics = ["cat", "market", "rain", "boat"]
    docs = {f"d{t}{i}": f"{t} note {i}" for t in topics for i in range(5)}
    queries = {f"q{t}": f"about the {t}" for t in topics}
    qrels = {f"q{t}": {f"d{t}0": 1} for t in topics}
    return Beir("topics", docs, queries, qrels), topics


def test_queries_and_documents_are_embedded_with_their_role():
    beir, topics = _topic_beir()
    roles = []

    def embed(texts, role):  # queries get a fifth axis that only each topic's first note shares
        roles.append((role, len(texts)))
        topic = np.array([[float(k in t) for k in topics] for t in texts])  # (n, 4)
        fifth = np.ones(len(texts)) if role == "query" else np.array([float(t.endswith(" 0")) for t in texts])
        return np.column_stack([topic, fifth])  # as documents, queries would rank the other notes first

    s = score_task(Task("t", "retrieval", beir), embed, n_boot=50)
    assert roles == [("query", 4), ("document", 20)]
    assert s.value == pytest.approx(1.0) and s.metrics["MRR@10"] == 1.0 and s.ids == tuple(beir.queries)


def test_compare_pairs_the_same_units_only():
    beir, topics = _topic_beir()
    good = score_task(Task("t", "retrieval", beir), lambda texts, role: np.array(
        [[float(k in t) for k in topics] + [float(t.endswith(" 0"))] for t in texts]) + 1e-3, n_boot=50)
    rng = np.random.default_rng(0)
    bad = score_task(Task("t", "retrieval", beir), lambda texts, role: rng.normal(size=(len(texts), 5)), n_boot=50)
    d = compare(good, bad, n_boot=200)
    assert d.difference == pytest.approx(good.value - bad.value) and d.ci[0] <= d.difference <= d.ci[1]
    same = compare(good, good, n_boot=200)
    assert same.difference == 0 and same.p == 1
    other = score_task(select_task(Task("t", "retrieval", beir), sample=2)[0], lambda texts, role: rng.normal(
        size=(len(texts), 5)), n_boot=0)
    with pytest.raises(UserError, match="not scored on the same queries"):
        compare(good, other)
    texts, labels, table = _labelled(60, 3, seed=4)
    clusters = clustering.score_clustering(Texts("c", texts, labels), _lookup(table), n_boot=0, cluster_size=100)
    with pytest.raises(UserError, match="one task family"):
        compare(good, clusters)


def test_a_stored_score_compares_like_a_fresh_one():
    texts, labels, table = _labelled(90, 3, seed=5)
    task = Task("c", "classification", classification.held_out(Texts("toy", texts, labels)))
    fresh = score_task(task, _lookup(table), n_boot=100)
    arrays, meta = score_record(fresh)
    json.dumps(meta)  # a cache entry's meta is JSON
    back = score_from_record(arrays, meta)
    assert (back.value, back.ci, back.ids, back.metrics) == (fresh.value, fresh.ci, fresh.ids, fresh.metrics)
    assert compare(back, fresh, n_boot=50).difference == 0


def test_sts_and_probe_scores_carry_their_units():
    from analysis.data.corpora import demo_pairs, demo_texts

    rng = np.random.default_rng(6)
    embed = lambda texts, role: rng.normal(size=(len(texts), 8))  # noqa: E731
    sts = score_task(Task("demo", "sts", demo_pairs()), embed, n_boot=50)
    assert sts.unit == "pairs" and sts.items.shape == (20,) and sts.gold.shape == (20,)
    assert compare(sts, sts, n_boot=50).p == 1
    probe = score_task(Task("topics", "probe", demo_texts("topics")), embed, n_boot=50)
    assert probe.unit == "texts" and set(np.unique(probe.items)) <= {0.0, 1.0}


def test_labelled_files_load_as_classification_or_clustering(tmp_path):
    rows = "\n".join(f"sentence {i} about {'cats' if i % 2 else 'boats'},{'a' if i % 2 else 'b'}" for i in range(40))
    (tmp_path / "mine.csv").write_text("text,label\n" + rows + "\n")
    task = load_task(f"classification:{tmp_path / 'mine.csv'}")
    assert task.kind == "classification" and (len(task.data.train), len(task.data.test)) == (24, 16)
    assert not set(task.data.train.texts) & set(task.data.test.texts)
    picked, report = select_task(task, sample=8)
    assert len(picked.data.test) == 8 and len(picked.data.train) == 24 and report["how"] == "stratified by label"
    clusters = load_task(f"clustering:{tmp_path / 'mine.csv'}")
    assert clusters.kind == "clustering" and len(clusters.data) == 40
    with pytest.raises(UserError, match="cannot be scored as clustering"):
        load_task("clustering:stsb-dev")
    with pytest.raises(UserError, match="no scores, labels or judgements"):
        load_task("demo-sentences")


def test_nano_keeps_every_positive_and_draws_distractors():
    rng = np.random.default_rng(7)
    docs = {f"d{i}": f"doc {i}" for i in range(500)}
    queries = {f"q{i}": f"query {i}" for i in range(80)}
    qrels = {q: {f"d{j}": 1 for j in rng.choice(500, 2, replace=False)} for q in queries}
    task = nano_task(Task("big", "retrieval", Beir("big", docs, queries, qrels)), n_queries=10, n_distractors=100)
    nano = task.data
    positives = {d for q in nano.queries for d in nano.qrels[q]}
    assert len(nano.queries) == 10 and positives <= set(nano.corpus) and len(nano.corpus) == len(positives) + 100
    assert list(nano.corpus) == [d for d in docs if d in nano.corpus]  # corpus order kept
    assert nano_task(Task("big", "retrieval", Beir("big", docs, queries, qrels)), n_queries=10,
                     n_distractors=100).data == nano  # seeded


# ---- long documents ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tok():
    from analysis.models.tiny import tiny_tokenizer

    return tiny_tokenizer()


def test_long_documents_are_generated_to_length_with_one_answer_each(tok):
    docs = longdoc.generate("passkey", tok, max_length=1024, n=6, seed=0)
    assert sorted(docs.sets) == [256, 512, 1024]  # 2,048 and up pass the model's limit
    for length, beir in docs.sets.items():
        counted = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in beir.corpus.values()]
        assert counted == docs.tokens[length] and all(length - 60 <= c <= length for c in counted)
        names = [q.removeprefix("What is the pass key of ").rstrip("?") for q in beir.queries.values()]
        for (q, judged), name in zip(beir.qrels.items(), names):
            (relevant,) = judged
            holders = [d for d, text in beir.corpus.items() if f"pass key of {name} is" in text]
            assert holders == [relevant]
    again = longdoc.generate("passkey", tok, max_length=1024, n=6, seed=0)
    assert again.content() == docs.content()  # deterministic from the seed
    assert longdoc.generate("passkey", tok, max_length=1024, n=6, seed=1).content() != docs.content()
    needle = longdoc.generate("needle", tok, max_length=512, n=5, seed=0, lengths=(256, 512))
    for beir in needle.sets.values():
        for q, judged in beir.qrels.items():
            town = next(w.rstrip("?") for w in beir.queries[q].split() if w[0].isupper() and w not in ("How", "Who",
                                                                                                         "What", "At",
                                                                                                         "On"))
            assert [d for d, t in beir.corpus.items() if town in t] == list(judged)
    with pytest.raises(UserError, match="shorter than every"):
        longdoc.generate("passkey", tok, max_length=128)


def test_longdoc_scores_ndcg_at_1_per_length(tok):
    docs = longdoc.generate("passkey", tok, max_length=512, n=4, seed=0)
    asked = [q for b in docs.sets.values() for q in b.queries.values()]
    keys = sorted({q.removeprefix("What is the pass key of ").rstrip("?") for q in asked})

    def embed(texts, role):  # finds the person in each text: a perfect retriever
        return np.array([[float(k in t) for k in keys] for t in texts]) + 1e-6

    s = score_task(Task(docs.name, "longdoc", docs), embed, n_boot=50)
    assert s.value == 1.0 and s.n == 8 and set(s.detail["lengths"]) == {"256", "512"}
    assert s.metrics["nDCG@1 at 256"] == 1.0 and s.detail["lengths"]["512"]["n"] == 4
    blind = score_task(Task(docs.name, "longdoc", docs), lambda texts, role: np.ones((len(texts), 3)), n_boot=0)
    assert blind.value == 0.25  # all tied: the highest document id ranks first, right for one query in four


# ---- the fixed cuts of the real sets (development data) ----------------------------------------------------------
def _shared_or_skip():
    from analysis.data import banking77, scifact

    if not (scifact.present("train") and banking77.present("train")):
        pytest.skip("SciFact or Banking77 not in the data folder (../shared/data is development data, not shipped)")


def test_the_fixed_selection_and_report_cuts():
    _shared_or_skip()
    from collections import Counter

    from analysis.data import banking77, scifact

    select, report, train = scifact.part("selection"), scifact.part("report"), scifact.claims("train")
    assert (len(select), len(report), len(train), len(train.corpus)) == (300, 509, 809, 5183)
    assert not set(select.queries) & set(report.queries)
    assert set(select.queries) | set(report.queries) == set(train.queries)
    assert report.corpus is train.corpus and list(report.queries) == [q for q in train.queries if q in report.queries]
    b_select, b_report = banking77.part("selection"), banking77.part("report")
    assert (len(b_select), len(b_report)) == (2000, 8003)
    shares = Counter(banking77.queries("train").labels)
    assert len(shares) == 77 and set(Counter(b_select.labels)) == set(shares)
    assert all(abs(k - 2000 * shares[label] / 10003) < 1 for label, k in Counter(b_select.labels).items())
    task = load_task("banking77-report")
    assert task.kind == "classification" and (len(task.data.train), len(task.data.test)) == (4923, 3080)
    assert load_task("clustering:banking77-report").data.texts == b_report.texts
    nano = load_task("nano:scifact-report").data
    assert len(nano.queries) == 50 and set(nano.queries) <= set(report.queries)
    assert 1000 < len(nano.corpus) <= 1000 + sum(len(nano.qrels[q]) for q in nano.queries)
    assert load_task("scifact-report").kind == "retrieval"
    with pytest.raises(UserError, match="SciFact test claims .* is not on this machine: run `python -m analysis data "
                                        "fetch scifact`"):
        load_task("scifact-test")
