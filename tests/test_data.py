"""Tests for analysis.data: bundled corpora, STS/text readers, shared STS-B lookup, demo corpus."""

import re
from pathlib import Path

import numpy as np
import pytest

from analysis import data
from analysis.data import Pairs, Texts
from analysis.errors import UserError

STSB_SKIP = "STS-B not found at ../shared/data/stsbenchmark (development data, not shipped)"


# ---------------------------------------------------------------------------------------------
# gensim test data


def test_lee_pairs_cover_upper_triangle_with_file_values():
    pairs = data.lee_pairs()
    docs = data.lee_documents()
    assert len(docs) == 50 and docs.labels is None
    assert all(docs.texts)
    assert len(pairs) == 50 * 49 // 2 == 1225
    assert pairs.scores.dtype == np.float64
    # first pair is (doc 0, doc 1); its score is matrix[0][1] read straight from the file
    sim_file = data._gensim_test_file("similarities0-1.txt")
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
    assert any("£" in doc for doc in data.lee_documents().texts)


def test_polarity_counts_match_the_file():
    raw = data._gensim_test_file("pang_lee_polarity.cor").read_bytes().decode("cp1252")
    lines = [line for line in raw.split("\n") if line.strip()]
    expected_pos = sum(line.startswith("__label__pos ") for line in lines)
    expected_neg = sum(line.startswith("__label__neg ") for line in lines)
    pol = data.polarity()
    assert len(pol) == len(lines) == 200
    assert pol.labels.count("pos") == expected_pos == 100
    assert pol.labels.count("neg") == expected_neg == 100
    assert not any(t.startswith("__label__") for t in pol.texts)


def test_loaders_are_cached():
    assert data.lee_pairs() is data.lee_pairs()
    assert data.polarity() is data.polarity()
    with pytest.raises(ValueError):
        data.lee_pairs().scores[0] = 1.0  # read-only: a shared cached object


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
    pairs = data.read_sts(_write(tmp_path, "sts.csv", STS_LINES))
    assert len(pairs) == 3
    assert pairs.name == "sts.csv"
    assert pairs.left[0] == 'He said "hello there.'  # unbalanced quote kept, next field not swallowed
    assert pairs.right[0] == "He said hello."
    assert pairs.left[1] == 'It\'s a "quoted" word.'
    assert pairs.right[2] == 'A man plays "a flute".'
    np.testing.assert_array_equal(pairs.scores, [4.0, 0.5, 2.25])
    assert pairs.genres == ["main-news", "main-forums", "main-captions"]


def test_read_sts_limit_and_bytes():
    pairs = data.read_sts(STS_LINES.encode(), name="upload", limit=2)
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
        data.read_sts(path)
    message = str(info.value)
    assert "broken.tsv" in message and "line 5" in message and fragment in message


def test_read_sts_csv_with_header(tmp_path):
    content = 'sentence1,sentence2,score\n"A cat, asleep.",A cat sleeps.,0.9\nDogs bark.,"He said ""no"".",0.1\n'
    pairs = data.read_sts(_write(tmp_path, "mine.csv", content))
    assert pairs.left == ["A cat, asleep.", "Dogs bark."]
    assert pairs.right == ["A cat sleeps.", 'He said "no".']
    assert pairs.scores.tolist() == [0.9, 0.1]
    assert pairs.genres is None
    with pytest.raises(UserError, match=r"line 2"):
        data.read_sts(b"sentence1,sentence2,score\nA,B,high\n", name="scores.csv")


def test_unique_texts_dedups_in_order():
    pairs = Pairs("p", ["a", "b", "a"], ["c", "a", "d"], np.array([1, 2, 3]))
    assert pairs.unique_texts() == ["a", "b", "c", "d"]
    assert pairs.scores.dtype == np.float64


# ---------------------------------------------------------------------------------------------
# read_texts


def test_read_texts_txt_skips_blank_lines(tmp_path):
    texts = data.read_texts(_write(tmp_path, "notes.txt", "first line\n\n  second line  \r\nthird\n"))
    assert texts.texts == ["first line", "second line", "third"]
    assert texts.labels is None and texts.name == "notes.txt"
    assert data.read_texts(tmp_path / "notes.txt", limit=2).texts == ["first line", "second line"]


def test_read_texts_csv_text_and_label_columns(tmp_path):
    content = 'id,Text,Label\n1,"Hello, world",greeting\n2,Good night,farewell\n3,,empty\n'
    texts = data.read_texts(_write(tmp_path, "data.csv", content))
    assert texts.texts == ["Hello, world", "Good night"]
    assert texts.labels == ["greeting", "farewell"]


def test_read_texts_csv_first_column_without_text_header(tmp_path):
    texts = data.read_texts(_write(tmp_path, "s.csv", "sentence\nOne.\nTwo.\n"))
    assert texts.texts == ["One.", "Two."] and texts.labels is None
    with pytest.raises(UserError, match="no text column"):
        data.read_texts(_write(tmp_path, "l.csv", "label\npos\n"))


def test_read_texts_tsv_bytes_keeps_quotes():
    raw = 'text\tlabel\n"Hi," she said\ta\n"unbalanced start\tb\nPlain\tc\n'.encode()
    texts = data.read_texts(raw, filename="upload.tsv")
    assert texts.texts == ['"Hi," she said', '"unbalanced start', "Plain"]
    assert texts.labels == ["a", "b", "c"]
    assert texts.name == "upload.tsv"
    assert texts.head(1) == Texts("upload.tsv", ['"Hi," she said'], ["a"])


def test_read_texts_bytes_txt_and_bom():
    texts = data.read_texts("\ufeffÜber alles\nzwei\n".encode(), filename="u.txt")
    assert texts.texts == ["Über alles", "zwei"]


def test_read_texts_csv_row_with_too_many_fields(tmp_path):
    with pytest.raises(UserError, match=r"bad\.csv, line 3"):
        data.read_texts(_write(tmp_path, "bad.csv", "text\nok\nnot, quoted\n"))


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file_is_a_user_error(tmp_path, content):
    with pytest.raises(UserError, match=r"empty\.txt is empty"):
        data.read_texts(_write(tmp_path, "empty.txt", content))
    with pytest.raises(UserError, match="is empty"):
        data.read_sts(content.encode(), name="empty.tsv")


def test_non_utf8_bytes_is_a_user_error():
    raw = "line one\ncaf\u00e9 au lait\n".encode("latin-1")
    with pytest.raises(UserError, match=r"latin\.txt is not UTF-8 text \(line 2\)"):
        data.read_texts(raw, filename="latin.txt")
    with pytest.raises(UserError, match="not UTF-8"):
        data.read_sts(raw, name="latin.tsv")


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="File not found"):
        data.read_texts(tmp_path / "nope.txt")


# ---------------------------------------------------------------------------------------------
# shared STS-B


def test_shared_stsb_none_when_env_points_to_missing_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_SHARED_DATA", str(tmp_path / "does-not-exist"))
    assert data.shared_stsb("dev") is None
    assert data.shared_stsb("train") is None
    assert "STS-B dev" not in data.similarity_sets()
    assert "STS-B dev sentences" not in data.text_sets()


def test_shared_stsb_env_folder(tmp_path, monkeypatch):
    (tmp_path / "stsbenchmark").mkdir()
    _write(tmp_path / "stsbenchmark", "sts-dev.csv", STS_LINES)
    monkeypatch.setenv("EMBEDSCOPE_SHARED_DATA", str(tmp_path))
    assert data.shared_stsb("dev") == tmp_path / "stsbenchmark" / "sts-dev.csv"
    assert data.shared_stsb("train") is None
    sets = data.similarity_sets()
    assert len(sets["STS-B dev"]()) == 3 and "STS-B train" not in sets
    sentences = data.text_sets()["STS-B dev sentences"]()
    assert len(sentences) == 6 and sentences.labels[0] == "main-news"


def test_real_stsb_dev(monkeypatch):
    monkeypatch.delenv("EMBEDSCOPE_SHARED_DATA", raising=False)
    path = data.shared_stsb("dev")
    if path is None:
        pytest.skip(STSB_SKIP)
    pairs = data.read_sts(path)
    assert len(pairs) == 1500
    assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5
    assert set(pairs.genres) == {"main-captions", "main-forums", "main-news"}
    assert all(pairs.left) and all(pairs.right)
    assert len(data.read_sts(path, limit=10)) == 10


# ---------------------------------------------------------------------------------------------
# Demo corpus and menus


def test_demo_texts_non_empty_unique_and_labelled():
    everything = data.demo_texts("all")
    assert 100 <= len(everything) <= 140
    assert all(t.strip() == t and t for t in everything.texts)
    assert len(set(everything.texts)) == len(everything)
    assert len(everything.labels) == len(everything)
    topics = data.demo_texts("topics")
    counts = {label: topics.labels.count(label) for label in set(topics.labels)}
    assert len(counts) >= 4 and min(counts.values()) >= 5
    with pytest.raises(UserError):
        data.demo_texts("nonsense")


def test_demo_ambiguous_word_comes_before_its_cue():
    amb = data.demo_texts("ambiguous")
    senses: dict[str, set[str]] = {}
    for text, label in zip(amb.texts, amb.labels):
        word, sense = label.split(":")
        senses.setdefault(word, set()).add(sense)
        words = re.findall(r"[a-z]+", text.lower())
        assert word in words[:3], f"{word!r} should come early in {text!r}"
        assert len(words) >= 6  # room for a later word to resolve the sense
    assert len(senses) >= 6 and all(len(s) == 2 for s in senses.values())


def test_demo_pairs_balanced_with_hard_negatives():
    pairs = data.demo_pairs()
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
    sims = data.similarity_sets()
    assert list(sims) == ["Lee corpus (human ratings)", "Demo paraphrase pairs"]
    assert len(sims["Lee corpus (human ratings)"]()) == 1225
    texts = data.text_sets()
    assert list(texts) == ["Demo sentences", "Demo: ambiguous words", "Polarity sentences", "Lee corpus documents"]
    assert texts["Demo: ambiguous words"]() is data.demo_texts("ambiguous")
