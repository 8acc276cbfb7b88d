"""`bench` and `compare` take every task family (issue 34): retrieval, classification, clustering and long documents
on a tiny model with data made here, paired comparisons over each family's units, and absent data as one sentence
with how to get it (exit 2), before any model loads."""

import json

import numpy as np
import pytest

from analysis.models.tiny import tiny_backbone
from tests.conftest import run_cli

WORDS = ["river", "bank", "fox", "dog", "ferry", "clock", "bread", "stone", "rain", "lamp", "road", "field"]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _saved(tmp_path_factory, seed: int):
    """A tiny random Llama (weights from `seed`) with a 600-token limit, saved as a folder: long documents of 256 and
    512 tokens fit."""
    folder = tmp_path_factory.mktemp(f"tiny-long-{seed}")
    bb = tiny_backbone("llama", seed=seed, max_length=600)
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    return _saved(tmp_path_factory, 0)


@pytest.fixture(scope="module")
def long_other(tmp_path_factory):
    return _saved(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def beir_folder(tmp_path_factory):
    """12 queries, each with one relevant document among 40."""
    root = tmp_path_factory.mktemp("beir")
    rng = np.random.default_rng(0)
    docs = {f"d{i}": " ".join(rng.choice(WORDS, 6)) for i in range(40)}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                               for k, v in docs.items()))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": docs[f"d{i}"].split()[0] + " ?"})
                                                + "\n" for i in range(12)))
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n"
                                                                                    for i in range(12)))
    return root


@pytest.fixture(scope="module")
def labelled_file(tmp_path_factory):
    """120 texts in 4 labels, each label's texts sharing two words."""
    rng = np.random.default_rng(1)
    rows = ["text,label"]
    for i in range(120):
        label = i % 4
        rows.append(f"{WORDS[2 * label]} {WORDS[2 * label + 1]} {' '.join(rng.choice(WORDS, 3))},intent{label}")
    path = tmp_path_factory.mktemp("labelled") / "intents.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_bench_scores_every_family(cache_dir, tiny_model_folder, long_model, beir_folder, labelled_file, capsys):
    data = [f"beir:{beir_folder}", f"classification:{labelled_file}", f"clustering:{labelled_file}"]
    code, rows, err = run_cli(capsys, "bench", "--model", long_model, "--methods", "last,kv_embedding", "--param",
                              "kv_embedding.layers=1,2", "--data", ",".join(data + ["longdoc:passkey"]),
                              "--n-boot", "20", "--format", "json")
    assert code == 0, err
    families = {(r["method"], r["family"]): r for r in rows}
    assert set(families) == {(m, f) for m in ("last", "kv_embedding")
                             for f in ("retrieval", "classification", "clustering", "longdoc")}
    metrics = {r["family"]: r["metric"] for r in rows}
    assert metrics == {"retrieval": "nDCG@10", "classification": "accuracy", "clustering": "V-measure",
                       "longdoc": "nDCG@1"}
    assert all(0 <= r["score"] <= 1 and r["ci_low"] <= r["score"] <= r["ci_high"] for r in rows)
    long = families["last", "longdoc"]
    assert long["n"] == 100 and "Passkey" in long["data"]  # 50 per length, lengths 256 and 512
    code, again, _ = run_cli(capsys, "bench", "--model", long_model, "--methods", "last", "--data", data[0],
                             "--n-boot", "20", "--format", "json")
    assert again[0]["score"] == families["last", "retrieval"]["score"]  # the cell came from the cache


def test_compare_pairs_each_familys_units(cache_dir, long_model, beir_folder, labelled_file, capsys):
    for data, unit, n in [(f"beir:{beir_folder}", "queries", 12), (f"clustering:{labelled_file}", "experiments", 10),
                          ("longdoc:passkey", "(length, query) items", 100)]:
        code, res, err = run_cli(capsys, "compare", "--methods", "last,mean,twin=mean", "--model", long_model,
                                 "--data", data, "--n-boot", "50")
        assert code == 0, err
        assert res["unit"] == unit and res["n"] == n and f"over {unit}" in res["bootstrap"]
        assert [m["method"] for m in res["methods"]] == ["last", "mean", "twin"] and len(res["differences"]) == 3
        twin = next(d for d in res["differences"] if (d["a"], d["b"]) == ("mean", "twin"))
        assert twin["difference"] == 0 and twin["ci"] == [0, 0] and twin["p"] == 1
        other = next(d for d in res["differences"] if (d["a"], d["b"]) == ("last", "mean"))
        assert other["ci"][0] <= other["difference"] <= other["ci"][1]


def test_compare_on_too_few_units_is_one_sentence(cache_dir, tiny_model_folder, beir_folder, capsys):
    code, _, err = run_cli(capsys, "compare", "--methods", "last,mean", "--model", tiny_model_folder, "--data",
                           f"beir:{beir_folder}", "--sample", "5")
    assert code == 2 and err.count("\n") == 1 and "at least 10 units" in err


@pytest.mark.parametrize("data, name", [("scifact-test", "scifact"), ("clustering:banking77-test", "banking77"),
                                        ("nano:scifact-test", "scifact")])
def test_absent_data_is_one_sentence_with_how_to_get_it(data, name, cache_dir, capsys):
    from analysis.data.datasets import get

    if get(data.rpartition(":")[2]).present():
        pytest.skip(f"{data} is on this machine")
    for command in ("bench", "compare"):
        methods = "last" if command == "bench" else "last,mean"
        code, _, err = run_cli(capsys, command, "--methods", methods, "--data", data, "--model", "no-such/model")
        assert code == 2 and err.count("\n") == 1, err
        assert "is not on this machine" in err and f"data fetch {name}" in err  # before the model is looked for


def test_a_grid_on_ray_gives_the_local_rows(tmp_path, monkeypatch, long_other, long_model, beir_folder, labelled_file,
                                           capsys):
    """Models x methods x tasks on a local Ray cluster: the rows a local run gives, stored in the same cache (a
    second run computes nothing), KV-Embedding's layers=auto window resolved once by the driver."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-cluster.txt)")
    argv = ["bench", "--models", f"{long_model},{long_other}", "--methods", "last,kv_embedding", "--data",
            f"beir:{beir_folder},clustering:{labelled_file},longdoc:needle", "--n-boot", "20", "--format", "json"]
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "local"))
    code, local, err = run_cli(capsys, *argv)
    assert code == 0, err
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "ray"))
    code, remote, err = run_cli(capsys, *argv, "--executor", "ray")
    assert code == 0, err
    assert "computed on Ray" in err and len(remote) == 2 * 2 * 3
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("seconds", "x_last")} for r in rows]  # noqa: E731
    assert strip(remote) == strip(local)
    code, again, err = run_cli(capsys, *argv, "--executor", "ray")
    assert code == 0 and "computed on Ray" not in err and strip(again) == strip(local)


@pytest.mark.parametrize("argv, message", [
    (["--executor", "dask"], "--executor must be local or ray"),
    (["--address", "127.0.0.1:1"], "only applies to --executor ray"),
    (["--executor", "ray", "--address", "not an address"], "host:port"),
])
def test_bench_executor_flags_are_one_sentence_before_any_work(argv, message, cache_dir, capsys):
    if "ray" in argv:
        pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-cluster.txt)")
    code, _, err = run_cli(capsys, "bench", "--methods", "last", "--data", "demo", "--model", "no-such/model", *argv)
    assert code == 2 and err.count("\n") == 1 and message in err, err
