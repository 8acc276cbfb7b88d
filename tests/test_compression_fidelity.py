"""Context compression at the source's settings: Experiment C (the paragraph asked back from its pools, content
words weighted 3 in the loss; token F1 and exact match), and persona vocabularies at the source's sizes with the
unseen-values probe kept unseen. Tiny random models and a stand-in encoder for the mechanics."""

from __future__ import annotations

import json
import re

import pytest
import torch

from analysis.compression.system import (RECONSTRUCT_QUESTION, CompressionSystem,
                                         reconstruction_item, reconstruction_scores, token_f1)
from analysis.core.errors import UserError
from analysis.data import personas as P
from analysis.data import source_vocabulary as source
from analysis.models.tiny import tiny_backbone
from test_compression import fake_encoder


@pytest.fixture(scope="module")
def long_llama():
    return tiny_backbone("llama", max_length=512)


@pytest.fixture(scope="module")
def system(long_llama):
    return CompressionSystem(long_llama, encoder=fake_encoder)


# ---- vocabularies ---------------------------------------------------------------------------------------------------
def test_the_source_vocabularies_have_the_sources_sizes():
    v = P.VOCABULARIES["source"]
    assert (len(v.first), len(v.surnames), len(v.professions), len(v.employers), len(v.cities), len(v.countries)) == \
        (250, 210, 180, 200, 200, 120)
    small = P.VOCABULARIES["small"]
    assert set(small.people_first) <= set(v.first) and set(small.cities) <= set(v.cities)  # the small lists extended
    assert all(len(set(x)) == len(x) for x in (v.first, v.surnames, v.professions, v.employers, v.cities,
                                                v.countries))


def test_no_source_word_collides_with_another_word_a_template_or_the_probes():
    v = P.VOCABULARIES["source"]
    words = [*v.first, *v.surnames, *v.professions, *v.employers, *v.cities, *v.countries]
    probes = {*P.OOD_FIRST, *P.OOD_LAST, *(w for ws in P.OOD_VALUES.values() for w in ws)}
    assert not probes & set(words)  # the unseen-values probe stays unseen by a model trained on the source's lists
    texts = [re.sub(r"\{\w+\}", "", t) for group in (P.TEMPLATES, P.OOD_TEMPLATES, P.QUESTIONS, P.PEOPLE_QUESTIONS)
             for ts in group.values() for t in ts] + [*P._D_SUBJECTS, *P._D_PREDICATES, *P._D_TIMES]
    values = [*v.surnames, *v.professions, *v.employers, *v.cities, *v.countries, *v.first]
    for w in values:
        assert not any(w in t for t in texts), w  # a fact sentence is found by its value
        assert [x for x in values if w in x] == [w], w  # no word inside another
    assert set(source.EXTRA_CITIES).isdisjoint(P.CITIES)


def test_the_small_vocabulary_keeps_every_item_as_it_was():
    assert P.generate("heldout", 3)[0].context[0] == "This is Freya Azikiwe."  # the items of before
    bigger = P.generate("heldout", 200, vocabulary="source")
    assert len({it.answer for it in bigger if it.key == "city"}) > 20  # values beyond the small list's 20
    names = {n for it in P.generate_people("heldout", 40, people=5, vocabulary="source") for n in it.ids}
    assert all(P.name_split(*n.split(" ", 1)) == "heldout" for n in names)
    ood = P.generate_ood("values", 10, vocabulary="source")
    v = P.VOCABULARIES["source"]
    assert all(it.answer not in (*v.professions, *v.employers, *v.cities, *v.countries) for it in ood
               if it.key != "name")
    with pytest.raises(ValueError, match="vocabulary"):
        P.generate("heldout", 1, vocabulary="huge")


# ---- Experiment C ---------------------------------------------------------------------------------------------------
def test_content_words_weigh_three_times_in_a_reconstruction_row(system):
    item = P.QA(("Maria lives in the city of Lyon.",), "q", "a", "city")
    asked = reconstruction_item(item)
    assert asked["question"] == RECONSTRUCT_QUESTION and asked["answer"] == "Maria lives in the city of Lyon."
    row = system.row(asked, "sentence", content_weight=3.0)
    tok = system.backbone.tokenizer
    labelled = [(tok.decode([lab]), w) for lab, w in zip(row.labels, row.weights) if lab != -100]
    assert labelled[-1] == (tok.eos_token, 1.0)  # the closing eos weighs 1
    words, weights = [], []  # each word's tokens (a new word starts with a space) and their weights
    for piece, w in labelled[:-1]:
        if not piece.strip():  # a lone space (the tiny tokenizer splits words finely) belongs to no word
            assert w == 1.0
            words.append("")
            weights.append(set())
            continue
        if piece.startswith(" ") or not words or piece == ".":
            words.append(piece.strip())
            weights.append({w})
        else:
            words[-1] += piece
            weights[-1].add(w)
    assert {w: ws for w, ws in zip(words, weights) if w} == {"Maria": {3.0}, "lives": {3.0}, "in": {1.0}, "the": {1.0}, "city": {3.0},
                                         "of": {1.0}, "Lyon": {3.0}, ".": {1.0}}
    plain = system.row(item, "sentence")
    assert plain.weights is None and system.collate([plain]).weights is None  # questions weigh every token 1


def test_the_weighted_loss_is_the_plain_one_at_equal_weights():
    from analysis.training.losses import answer_cross_entropy, weighted_answer_cross_entropy

    torch.manual_seed(0)
    logits, labels = torch.randn(2, 5, 7), torch.tensor([[-100, 1, 2, -100, 3], [4, -100, 5, 6, -100]])
    ones = torch.ones(2, 5)
    assert torch.allclose(weighted_answer_cross_entropy(logits, labels, ones), answer_cross_entropy(logits, labels))
    heavy = ones.clone()
    heavy[0, 1] = 3.0  # known answer: one token counted three times
    ce = torch.nn.functional.cross_entropy(logits[labels != -100], labels[labels != -100], reduction="none")
    want = (ce.sum() + 2 * ce[0]) / (len(ce) + 2)
    assert torch.allclose(weighted_answer_cross_entropy(logits, labels, heavy), want)


def test_token_f1_and_exact_match_known_answers():
    assert token_f1("Maria lives in Lyon.", "maria lives in lyon") == 1.0
    assert token_f1("a b c", "a b d") == pytest.approx(2 / 3)
    assert token_f1("", "a") == 0.0 and token_f1("x", "y") == 0.0
    items = P.generate("heldout", 2)
    texts = [" ".join(it.context) for it in items]
    scores = reconstruction_scores(items, [texts[0], "nothing like it"])
    assert scores["exact_match"] == 0.5 and scores["token_f1_per_item"][0] == 1.0 and scores["n"] == 2


def test_a_run_with_reconstruction_trains_and_records_it(long_llama, tmp_path):
    from analysis.training.compression import Config
    from analysis.training.systems import run

    config = Config(out=str(tmp_path / "c"), steps=4, batch_size=2, eval_every=2, personas=12, val=4, threads=1,
                    curriculum=0.0, reconstruct=0.5, vocabulary="source")
    summary = run("compression", config, backbone=long_llama, encoder=fake_encoder)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    rec = summary["results"]["reconstruction"]
    assert set(rec) == {"token_f1", "exact_match", "exact_match_ci", "n"} and rec["n"] == 4
    assert manifest["hyperparameters"]["reconstruct"] == 0.5 and "--reconstruct 0.5" in manifest["command"]
    assert "--vocabulary source" in manifest["command"]


def test_reconstruction_batches_come_only_when_asked(system):
    from analysis.training.compression import make_batches

    personas = [(p, P.paragraph(p, __import__("random").Random(i), 1)) for i, p in
                enumerate(P.random_persona(__import__("random").Random(i), "train") for i in range(6))]
    plain = [next(b) for b in [make_batches(system, personas, 2, seed=0)] for _ in range(6)]
    assert all(b.weights is None for b in plain)
    again = make_batches(system, personas, 2, seed=0)
    assert all(torch.equal(a.ids, next(again).ids) for a in plain)  # reconstruct=0: the batches of before
    mixed = make_batches(system, personas, 2, seed=0, reconstruct=0.5)
    assert any(next(mixed).weights is not None for _ in range(10))


def test_reconstruction_needs_one_person(long_llama, tmp_path):
    from analysis.training.compression import Config, setup

    with pytest.raises(UserError, match="--people 1"):
        setup(Config(people=2, reconstruct=0.5, personas=12, val=4), long_llama, encoder=fake_encoder)


def test_the_reconstruction_experiment_on_a_tiny_run(long_llama, tmp_path, monkeypatch):
    """Experiment C's record on a tiny run: token F1 with its interval and exact match for pools and no context, the
    questions, examples beside their paragraphs; weights trained without --reconstruct are refused in one sentence."""
    from analysis.compression import system as module
    from analysis.experiments import run as measure
    from analysis.experiments.compression_reconstruction import Config
    from analysis.compute.direct import Direct
    from analysis.training.compression import Config as TrainConfig
    from analysis.training.systems import run

    monkeypatch.setattr(module, "encode_sentences", fake_encoder)
    for name, share in (("c", 0.5), ("plain", 0.0)):
        run("compression", TrainConfig(out=str(tmp_path / name), steps=2, batch_size=2, eval_every=1, personas=12,
                                       val=4, threads=1, curriculum=0.0, reconstruct=share),
            backbone=long_llama, encoder=fake_encoder)
    compute = Direct(backbones=lambda name: long_llama)
    record = measure("compression_reconstruction", Config(weights=str(tmp_path / "c"), n=4, examples=2, n_boot=20),
                     compute=compute)
    table = record.table("reconstruction")
    assert table.column("context") == ["per-sentence pools", "no context (the floor)"]
    assert all(0.0 <= f1 <= 1.0 for f1 in table.column("token F1"))
    assert len(record.table("examples").rows) == 2 and record.table("questions").rows[0][0] == "all"
    assert "--weights" in record.command and record.findings[0].startswith("From one pool per sentence")
    with pytest.raises(UserError, match="without --reconstruct"):
        measure("compression_reconstruction", Config(weights=str(tmp_path / "plain"), n=2), compute=compute)
    with pytest.raises(UserError, match="--weights names"):
        measure("compression_reconstruction", Config(), compute=compute)


def test_experiment_b_splits_the_single_person_name_questions_by_first_name(system):
    """The 85% / 99.5% gap explained in the record itself: B's single-person name questions split by whether the
    asked first name is one single-person training used (known answers from hand-made predictions)."""
    from analysis.experiments import compression_people as exp
    from analysis.compute.direct import Direct

    items = P.generate_people("heldout", 10, people=1)
    seen = {it.identifier for it in items if it.key == "name" and it.identifier.split(" ")[0] in P.FIRST_NAMES}
    right = lambda system, items, mode, ids: [{"answer": "x", "exact": it.identifier in seen,  # noqa: E731
                                               "first_token_ok": True, "context_tokens": 5, "context_positions": 5}
                                              for it in items]
    compute = Direct()
    compute.compress_predict = right
    res = exp.read(compute, system, items, False, by_first_name=True)
    split = res["name_by_first_name"]
    assert split["seen in training"]["n"] == len(seen) and split["unseen"]["exact_match"] == 0.0
    assert split["seen in training"]["n"] + split["unseen"]["n"] == sum(it.key == "name" for it in items)
    said = exp.findings({"experiment_b": {"single person": res}})
    assert said and said[0].startswith("Experiment B's single-person row is below the shipping check's")


def test_the_compression_record_at_the_sources_vocabulary_is_its_own(long_llama, tmp_path, monkeypatch):
    """measure compression --vocabulary source reads held-out items and the values probe from the source's lists and
    writes its own record (compression_source_vocabulary), never over the small vocabulary's."""
    from analysis.compression import system as module
    from analysis.experiments import run as measure
    from analysis.experiments.compression import Config
    from analysis.compute.direct import Direct
    from analysis.training.compression import Config as TrainConfig
    from analysis.training.systems import run

    monkeypatch.setattr(module, "encode_sentences", fake_encoder)
    run("compression", TrainConfig(out=str(tmp_path / "v"), steps=1, batch_size=2, eval_every=1, personas=12, val=2,
                                   threads=1, curriculum=0.0, vocabulary="source"),
        backbone=long_llama, encoder=fake_encoder)
    compute = Direct(backbones=lambda name: long_llama)
    record = measure("compression", Config(weights=str(tmp_path / "v"), n=5, scaling_n=2, sizes=("5",), ood=2,
                                           vocabulary="source"), compute=compute)
    assert record.id == "compression_source_vocabulary" and "--vocabulary source" in record.command
    assert {t.name for t in record.tables} >= {"ood"}
