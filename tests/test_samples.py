"""Samples everywhere (issue 22): `samples.select` (seeded, genre-stratified; --limit's single-genre warning),
`tasks.select_task`, and --sample/--limit/--seed on the commands that read pairs or texts, on a tiny model."""


import numpy as np
import pytest

from analysis.core.errors import UserError
from analysis.data.corpora import Pairs, Texts
from analysis.data.samples import caption, select
from analysis.eval.tasks import Task, select_task
from tests.conftest import run_cli

GENRES = ["main-captions/MSRvid"] * 12 + ["main-forums/answers-forums"] * 6 + ["main-news/headlines"] * 6  # sorted


def _sorted_pairs() -> Pairs:
    n = len(GENRES)
    return Pairs("sorted", [f"Left sentence {i}." for i in range(n)], [f"Right sentence {i}." for i in range(n)],
                 np.arange(n) % 5 + 0.5, GENRES)


def test_select_samples_by_genre_and_says_what_it_did():
    pairs = _sorted_pairs()
    chosen, report = select(pairs, sample=8, seed=3)
    assert report.pop("rows") == sorted(report_rows := [pairs.left.index(t) for t in chosen.left]) == report_rows
    assert report == {"how": "stratified by genre", "n": 8, "of": 24, "seed": 3, "warning": None,
                      "genres": {"main-captions/MSRvid": 4, "main-forums/answers-forums": 2, "main-news/headlines": 2}}
    assert select(pairs, sample=8, seed=3)[0].left == chosen.left  # seeded: the same sample again
    assert select(pairs, sample=8, seed=4)[0].left != chosen.left
    head, report = select(pairs, limit=5)
    assert head.left == pairs.left[:5] and report["how"] == "first 5" and report["seed"] is None
    assert report["genres"] == {"main-captions/MSRvid": 5} and "use --sample 5" in report["warning"]
    assert select(pairs, limit=20)[1]["warning"] is None  # the cut reaches a second genre
    assert select(pairs, sample=100)[1]["how"] == "all" and select(pairs)[0] is pairs
    with pytest.raises(UserError, match="not both"):
        select(pairs, sample=5, limit=5)
    with pytest.raises(UserError, match="--sample must be a positive number"):
        select(pairs, sample=0)
    texts = Texts("t", [f"t{i}" for i in range(10)], ["pos"] * 5 + ["neg"] * 5)
    chosen, report = select(texts, sample=4)
    assert report["how"] == "stratified by label" and report["genres"] == {"neg": 2, "pos": 2}
    assert chosen.labels.count("pos") == 2 and "all of genre 'pos'" in select(texts, limit=3)[1]["warning"]
    plain, report = select(Texts("u", [f"u{i}" for i in range(10)]), sample=3, seed=1)
    assert report["how"] == "random" and report["genres"] is None and len(plain) == 3
    assert caption(select(pairs, sample=8, seed=3)[1]) == ("8 of 24, stratified by genre (seed 3): "
                                                           "main-captions/MSRvid 4, main-forums/answers-forums 2, "
                                                           "main-news/headlines 2")


def test_select_task_names_the_sample_so_page_and_command_share_cells():
    task = Task("STS-B dev", "sts", _sorted_pairs())
    same, report = select_task(task)
    assert same is task and report["how"] == "all"
    sampled, _ = select_task(task, sample=8, seed=0)
    assert sampled.name == "STS-B dev (8 stratified by genre, seed 0)" and len(sampled.data) == 8
    assert select_task(task, limit=4)[0].name == "STS-B dev (first 4)"
    from analysis.data.files import Beir

    beir = Beir("b", {"d1": "x", "d2": "y"}, {f"q{i}": f"query {i}" for i in range(6)},
                {f"q{i}": {"d1": 1} for i in range(6)})
    picked, report = select_task(Task("BEIR b", "retrieval", beir), sample=2, seed=0)
    assert len(picked.data.queries) == 2 and set(picked.data.qrels) == set(picked.data.queries)
    assert picked.data.corpus == beir.corpus and report["how"] == "random"


# ---- the commands -------------------------------------------------------------------------------------------------
@pytest.fixture
def sorted_file(tmp_path, monkeypatch):
    """The sorted pairs as an STS-B file, with a private compute cache."""
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    p = _sorted_pairs()
    rows = [f"{g.split('/')[0]}\t{g.split('/')[1]}\t2012\t{i:04d}\t{s:.3f}\t{a}\t{b}\n"
            for i, (g, s, a, b) in enumerate(zip(p.genres, p.scores, p.left, p.right))]
    path = tmp_path / "sts-sorted.csv"
    path.write_text("".join(rows), encoding="utf-8")
    return path




def test_commands_report_the_sample_and_its_genres(tiny_model_folder, sorted_file, capsys):
    common = ["--model", tiny_model_folder, "--data", sorted_file]
    code, res, err = run_cli(capsys, "sts", "--method", "mean", *common, "--sample", "8", "--seed", "2")
    assert code == 0, err
    assert res["sample"] == {"how": "stratified by genre", "n": 8, "of": 24, "seed": 2} and res["n_pairs"] == 8
    assert res["genres"] == {"main-captions/MSRvid": 4, "main-forums/answers-forums": 2, "main-news/headlines": 2}
    code, res, err = run_cli(capsys, "sts", "--method", "mean", *common, "--limit", "6")
    assert code == 0 and res["sample"]["how"] == "first 6" and res["genres"] == {"main-captions/MSRvid": 6}
    assert err.strip().splitlines()[-1].startswith("warning: --limit 6 keeps the first 6 pairs, all of genre")
    code, res, err = run_cli(capsys, "geometry", "--method", "mean", *common, "--sample", "12", "--n-boot", "0")
    assert code == 0, err
    assert res["sample"]["n"] == 12 and sum(res["genres"].values()) == 12
    code, res, err = run_cli(capsys, "id", *common, "--sample", "20", "--bootstrap", "0")
    assert code == 0, err  # texts: the pairs' distinct sentences, labelled by genre
    assert res["n_texts"] == 20 and res["sample"]["how"] == "stratified by label" and res["sample"]["of"] == 48
    code, rows, err = run_cli(capsys, "bench", "--model", tiny_model_folder, "--methods", "mean", "--data",
                           f"sts:{sorted_file}", "--sample", "10", "--n-boot", "10", "--format", "json")
    assert code == 0, err
    assert rows[0]["data"] == "sts-sorted.csv (10 stratified by genre, seed 0)" and rows[0]["n"] == 10
    assert rows[0]["genres"] == {"main-captions/MSRvid": 5, "main-forums/answers-forums": 3, "main-news/headlines": 2}
    code, _, err = run_cli(capsys, "sts", "--method", "mean", *common, "--sample", "5", "--limit", "5")
    assert code == 2 and "not both" in err


def test_select_says_which_rows_it_chose():
    from analysis.data.corpora import Texts

    data = Texts("t", [f"text {i}" for i in range(20)], ["a"] * 10 + ["b"] * 10)
    chosen, report = select(data, sample=6, seed=3)
    assert [data.texts[i] for i in report["rows"]] == chosen.texts and report["genres"] == {"a": 3, "b": 3}
    assert select(data, limit=4)[1]["rows"] == [0, 1, 2, 3] and select(data)[1]["rows"] == list(range(20))
