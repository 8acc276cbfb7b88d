"""Tests for analysis.data.corpora (bundled corpora, shared STS-B lookup, demo corpus), analysis.data.files (STS/text readers)
and the data-set registry analysis.data.datasets."""

import re
from pathlib import Path

import numpy as np
import pytest

from analysis.data import corpora
from analysis.data import datasets
from analysis.data import files
from analysis.data.corpora import Pairs, Texts
from analysis.core.errors import UserError

STSB_SKIP = "STS-B not found at ../shared/data/stsbenchmark (development data, not shipped)"


# ---------------------------------------------------------------------------------------------
# gensim test data


def test_lee_pairs_cover_upper_triangle_with_file_values():
    pairs = corpora.lee_pairs()
    docs = corpora.lee_documents()
    assert len(docs) == 50 and docs.labels is None
    assert all(docs.texts)
    assert len(pairs) == 50 * 49 // 2 == 1225
    assert pairs.scores.dtype == np.float64
    # first pair is (doc 0, doc 1); its score is matrix[0][1] read straight from the file
    sim_file = corpora._gensim_test_file("similarities0-1.txt")
    first_row = sim_file.read_text().split("\n")[0].split("\t")
    assert float(first_row[1]) == 0.3
    assert pairs.left[0] == docs.texts[0] and pairs.right[0] == docs.texts[1]
    assert pairs.scores[0] == 0.3
    # last pair is (48, 49)
    assert pairs.left[-1] == docs.texts[48] and pairs.right[-1] == docs.texts[49]
    assert pairs.scores.min() >= 0 and pairs.scores.max() <= 1
    assert pairs.unique_texts() == docs.texts


def test_lee_documents_decode_pound_sign():
    # lee.cor is cp1252, not UTF-8: the £ must survive decoding
    assert any("£" in doc for doc in corpora.lee_documents().texts)


def test_polarity_counts_match_the_file():
    raw = corpora._gensim_test_file("pang_lee_polarity.cor").read_bytes().decode("cp1252")
    lines = [line for line in raw.split("\n") if line.strip()]
    expected_pos = sum(line.startswith("__label__pos ") for line in lines)
    expected_neg = sum(line.startswith("__label__neg ") for line in lines)
    pol = corpora.polarity()
    assert len(pol) == len(lines) == 200
    assert pol.labels.count("pos") == expected_pos == 100
    assert pol.labels.count("neg") == expected_neg == 100
    assert not any(t.startswith("__label__") for t in pol.texts)


def test_loaders_are_cached():
    assert corpora.lee_pairs() is corpora.lee_pairs()
    assert corpora.polarity() is corpora.polarity()
    with pytest.raises(ValueError):
        corpora.lee_pairs().scores[0] = 1.0  # read-only: a shared cached object


# ---------------------------------------------------------------------------------------------
# read_sts


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


STS_LINES = (
    'main-news\tMSRpar\t2012test\t0001\t4.000\tHe said "hello there.\tHe said hello.\textra\tmore\n'
    "main-forums\tdeft-forum\t2014\t0002\t0.5\tIt's a \"quoted\" word.\tUnrelated sentence.\n"
    "\n"
    'main-captions\tMSRvid\t2012test\t0003\t2.25\tA man plays a guitar.\tA man plays "a flute".\tx\n'
)


def test_read_sts_extra_fields_and_quotes(tmp_path):
    pairs = files.read_sts(_write(tmp_path, "sts.csv", STS_LINES))
    assert len(pairs) == 3
    assert pairs.name == "sts.csv"
    assert pairs.left[0] == 'He said "hello there.'  # unbalanced quote kept, next field not swallowed
    assert pairs.right[0] == "He said hello."
    assert pairs.left[1] == 'It\'s a "quoted" word.'
    assert pairs.right[2] == 'A man plays "a flute".'
    np.testing.assert_array_equal(pairs.scores, [4.0, 0.5, 2.25])
    assert pairs.genres == ["main-news/MSRpar", "main-forums/deft-forum", "main-captions/MSRvid"]


def test_read_sts_limit_and_bytes():
    pairs = files.read_sts(STS_LINES.encode(), name="upload", limit=2)
    assert pairs.name == "upload"
    assert len(pairs) == 2 and pairs.scores.tolist() == [4.0, 0.5]
    assert pairs.head(1).left == [pairs.left[0]] and len(pairs.head(1).scores) == 1


@pytest.mark.parametrize(
    "bad_line, fragment",
    [
        ("main-news\tMSRpar\t2012\t0004\t3.0\tonly six fields\n", "7 tab-separated fields"),
        ("main-news\tMSRpar\t2012\t0004\tfive\tA sentence.\tAnother.\n", "not a number"),
    ],
)
def test_read_sts_malformed_line_names_file_and_line(tmp_path, bad_line, fragment):
    path = _write(tmp_path, "broken.tsv", STS_LINES + bad_line)
    with pytest.raises(UserError) as info:
        files.read_sts(path)
    message = str(info.value)
    assert "broken.tsv" in message and "line 5" in message and fragment in message


def test_read_sts_csv_with_header(tmp_path):
    content = 'sentence1,sentence2,score\n"A cat, asleep.",A cat sleeps.,0.9\nDogs bark.,"He said ""no"".",0.1\n'
    pairs = files.read_sts(_write(tmp_path, "mine.csv", content))
    assert pairs.left == ["A cat, asleep.", "Dogs bark."]
    assert pairs.right == ["A cat sleeps.", 'He said "no".']
    assert pairs.scores.tolist() == [0.9, 0.1]
    assert pairs.genres is None
    with pytest.raises(UserError, match=r"line 2"):
        files.read_sts(b"sentence1,sentence2,score\nA,B,high\n", name="scores.csv")


def test_unique_texts_dedups_in_order():
    pairs = Pairs("p", ["a", "b", "a"], ["c", "a", "d"], np.array([1, 2, 3]))
    assert pairs.unique_texts() == ["a", "b", "c", "d"]
    assert pairs.scores.dtype == np.float64


# ---------------------------------------------------------------------------------------------
# read_texts


def test_read_texts_txt_skips_blank_lines(tmp_path):
    texts = files.read_texts(_write(tmp_path, "notes.txt", "first line\n\n  second line  \r\nthird\n"))
    assert texts.texts == ["first line", "second line", "third"]
    assert texts.labels is None and texts.name == "notes.txt"
    assert files.read_texts(tmp_path / "notes.txt", limit=2).texts == ["first line", "second line"]


def test_read_texts_csv_text_and_label_columns(tmp_path):
    content = 'id,Text,Label\n1,"Hello, world",greeting\n2,Good night,farewell\n3,,empty\n'
    texts = files.read_texts(_write(tmp_path, "data.csv", content))
    assert texts.texts == ["Hello, world", "Good night"]
    assert texts.labels == ["greeting", "farewell"]


def test_read_texts_table_without_text_column_names_the_columns_it_found(tmp_path):
    # no silent fallback to the first column: one sentence naming what is there
    with pytest.raises(UserError, match=r"^s\.csv has no 'text' column \(its columns: 'sentence', 'label'\)"):
        files.read_texts(_write(tmp_path, "s.csv", "sentence,label\nOne.,a\nTwo.,b\n"))
    with pytest.raises(UserError, match=r"its columns: 'label'\)"):
        files.read_texts(_write(tmp_path, "l.tsv", "label\npos\n"))


def test_read_texts_tsv_bytes_keeps_quotes():
    raw = 'text\tlabel\n"Hi," she said\ta\n"unbalanced start\tb\nPlain\tc\n'.encode()
    texts = files.read_texts(raw, filename="upload.tsv")
    assert texts.texts == ['"Hi," she said', '"unbalanced start', "Plain"]
    assert texts.labels == ["a", "b", "c"]
    assert texts.name == "upload.tsv"
    assert texts.head(1) == Texts("upload.tsv", ['"Hi," she said'], ["a"])


def test_read_texts_bytes_txt_and_bom():
    texts = files.read_texts("\ufeffÜber alles\nzwei\n".encode(), filename="u.txt")
    assert texts.texts == ["Über alles", "zwei"]


def test_read_texts_csv_row_with_too_many_fields(tmp_path):
    with pytest.raises(UserError, match=r"bad\.csv, line 3"):
        files.read_texts(_write(tmp_path, "bad.csv", "text\nok\nnot, quoted\n"))


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file_is_a_user_error(tmp_path, content):
    with pytest.raises(UserError, match=r"empty\.txt is empty"):
        files.read_texts(_write(tmp_path, "empty.txt", content))
    with pytest.raises(UserError, match="is empty"):
        files.read_sts(content.encode(), name="empty.tsv")


def test_non_utf8_bytes_is_a_user_error():
    raw = "line one\ncaf\u00e9 au lait\n".encode("latin-1")
    with pytest.raises(UserError, match=r"latin\.txt is not UTF-8 text \(line 2\)"):
        files.read_texts(raw, filename="latin.txt")
    with pytest.raises(UserError, match="not UTF-8"):
        files.read_sts(raw, name="latin.tsv")


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="File not found"):
        files.read_texts(tmp_path / "nope.txt")


# ---------------------------------------------------------------------------------------------
# shared STS-B


def test_shared_stsb_none_when_env_points_to_missing_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_SHARED_DATA", str(tmp_path / "does-not-exist"))
    assert corpora.shared_stsb("dev") is None
    assert corpora.shared_stsb("train") is None
    assert "STS-B dev" not in datasets.pair_menu()
    assert "STS-B dev sentences" not in datasets.text_menu()


def test_shared_stsb_env_folder(tmp_path, monkeypatch):
    (tmp_path / "stsbenchmark").mkdir()
    _write(tmp_path / "stsbenchmark", "sts-dev.csv", STS_LINES)
    monkeypatch.setenv("EMBEDSCOPE_SHARED_DATA", str(tmp_path))
    assert corpora.shared_stsb("dev") == tmp_path / "stsbenchmark" / "sts-dev.csv"
    assert corpora.shared_stsb("train") is None
    sets = datasets.pair_menu()
    assert len(sets["STS-B dev"]()) == 3 and "STS-B train" not in sets
    sentences = datasets.text_menu()["STS-B dev sentences"]()
    assert len(sentences) == 6 and sentences.labels[0] == "main-news/MSRpar"


def test_real_stsb_dev(monkeypatch):
    monkeypatch.delenv("EMBEDSCOPE_SHARED_DATA", raising=False)
    path = corpora.shared_stsb("dev")
    if path is None:
        pytest.skip(STSB_SKIP)
    pairs = files.read_sts(path)
    assert len(pairs) == 1500
    assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5
    assert {g.split("/")[0] for g in pairs.genres} == {"main-captions", "main-forums", "main-news"} and len(set(pairs.genres)) == 6
    assert all(pairs.left) and all(pairs.right)
    assert len(files.read_sts(path, limit=10)) == 10


# ---------------------------------------------------------------------------------------------
# Demo corpus and menus


def test_demo_texts_non_empty_unique_and_labelled():
    everything = corpora.demo_texts("all")
    assert 100 <= len(everything) <= 140
    assert all(t.strip() == t and t for t in everything.texts)
    assert len(set(everything.texts)) == len(everything)
    assert len(everything.labels) == len(everything)
    topics = corpora.demo_texts("topics")
    counts = {label: topics.labels.count(label) for label in set(topics.labels)}
    assert len(counts) >= 4 and min(counts.values()) >= 5
    with pytest.raises(UserError):
        corpora.demo_texts("nonsense")


def test_demo_ambiguous_word_comes_before_its_cue():
    amb = corpora.demo_texts("ambiguous")
    senses: dict[str, set[str]] = {}
    for text, label in zip(amb.texts, amb.labels):
        word, sense = label.split(":")
        senses.setdefault(word, set()).add(sense)
        words = re.findall(r"[a-z]+", text.lower())
        assert word in words[:3], f"{word!r} should come early in {text!r}"
        assert len(words) >= 6  # room for a later word to resolve the sense
    assert len(senses) >= 6 and all(len(s) == 2 for s in senses.values())


def test_demo_pairs_balanced_with_hard_negatives():
    pairs = corpora.demo_pairs()
    assert len(pairs) >= 15
    assert set(pairs.scores.tolist()) == {0.0, 1.0}
    assert 0.4 <= pairs.scores.mean() <= 0.6
    assert len(set(zip(pairs.left, pairs.right))) == len(pairs)
    assert all(a != b for a, b in zip(pairs.left, pairs.right))

    def overlap(a, b):
        wa, wb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
        return len(wa & wb) / len(wa | wb)

    hard = [overlap(a, b) for a, b, s in zip(pairs.left, pairs.right, pairs.scores) if s == 0 and overlap(a, b) > 0.6]
    assert len(hard) >= 3


def test_menus_offer_the_named_sets(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDSCOPE_SHARED_DATA", str(tmp_path))
    sims = datasets.pair_menu()
    assert list(sims) == ["Lee corpus (human ratings)", "Demo paraphrase pairs"]
    assert len(sims["Lee corpus (human ratings)"]()) == 1225
    texts = datasets.text_menu()
    assert list(texts) == ["Demo sentences", "Demo: ambiguous words", "Polarity sentences", "Lee corpus documents"]
    assert texts["Demo: ambiguous words"]() is corpora.demo_texts("ambiguous")
    assert texts["Lee corpus documents"]().texts == corpora.lee_documents().texts


# ---------------------------------------------------------------------------------------------
# Every format as texts, and the registry


def test_stsb_file_and_pair_table_read_as_their_distinct_sentences(tmp_path):
    sts = files.read_texts(_write(tmp_path, "sts-mini.csv", STS_LINES))
    pairs = files.read_sts(tmp_path / "sts-mini.csv")
    assert sts.texts == list(dict.fromkeys(pairs.left + pairs.right))  # distinct, in order of appearance
    assert sts.labels[0] == pairs.genres[0]  # the genre each sentence first appears with
    table = "sentence1,sentence2,score\nA cat.,A dog.,1\nA dog.,A bird.,2\n"
    assert files.read_texts(_write(tmp_path, "pairs.csv", table)).texts == ["A cat.", "A dog.", "A bird."]
    assert files.read_texts(_write(tmp_path, "pairs.csv", table), limit=2).texts == ["A cat.", "A dog."]


@pytest.mark.parametrize("content", [b"\x00\x00\x00\n\x00", b"\x01\x02\x1b\n\x7f\x00\t"])
def test_file_of_only_nul_or_control_characters_is_one_sentence(tmp_path, content):
    for name in ("nul.txt", "nul.csv"):
        with pytest.raises(UserError, match=r"holds no readable text, only NUL bytes or other control characters\.$"):
            files.read_texts(_write(tmp_path, name, content))
    with pytest.raises(UserError, match="no readable text"):
        files.read_sts(content, name="nul.tsv")


def test_texts_made_only_of_control_characters_are_rejected():
    from analysis.core.tokens import check_texts

    assert check_texts(["fine", "a\x00b"]) == ["fine", "a\x00b"]
    with pytest.raises(UserError, match=r"^Text 2 holds only NUL bytes or other control characters"):
        check_texts(["fine", "\x00\x00\x01"])


def test_registry_ids_are_unique_and_every_set_reads_as_texts(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDSCOPE_SHARED_DATA", str(tmp_path))  # no STS-B: its entries are absent
    ids = [d.id for d in datasets.REGISTRY]
    assert len(ids) == len(set(ids)) and {d.kind for d in datasets.REGISTRY} <= set(datasets.KINDS)
    assert "stsb-dev" not in [d.id for d in datasets.available()]
    with pytest.raises(UserError, match="is not on this machine: run `python -m analysis data fetch stsb`"):
        datasets.texts_of("stsb-dev")
    for d in datasets.available():
        texts = datasets.texts_of(d.id, limit=5)
        assert 1 <= len(texts) <= 5 and all(texts.texts)
    assert datasets.texts_of("lee").texts == corpora.lee_documents().texts
    assert len(datasets.pairs_of("lee", 7)) == 7
    with pytest.raises(UserError, match="not a set of similarity pairs"):
        datasets.pairs_of("polarity")
    with pytest.raises(UserError, match="Unknown data set 'nonsense'"):
        datasets.texts_of("nonsense")
