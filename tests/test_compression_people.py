"""Context compression with several people per context (the source's Experiments B and B2): the multi-person
items and their splits, the name tokens before each pool, the `ids` field of user items, the attention split by
person, the training options (--people, --names, --layout, --pools-mode, --warm-from) end to end on a tiny model,
and the report script's tables. Tiny random models and a stand-in encoder only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.compression.system import CompressionSystem, person_attention, person_masses
from analysis.core.errors import UserError
from analysis.data import personas as P
from analysis.models.tiny import tiny_backbone
from test_compression import fake_encoder


@pytest.fixture(scope="module")
def long_llama():
    """A tiny Llama with room for a few people's pools and their name tokens (512 positions)."""
    return tiny_backbone("llama", max_length=512)


@pytest.fixture(scope="module")
def system(long_llama):
    return CompressionSystem(long_llama, encoder=fake_encoder)


def test_multi_person_items_never_share_a_person_or_person_key_with_training():
    people, asked = {}, {}
    for split in P.SPLITS:
        items = [*P.generate_people(split, 150, people=5), *P.generate_people(split, 60, people=12,
                                                                              layout="interleaved", names=True)]
        names = {n for it in items for n in it.ids}
        assert all(P.name_split(*n.split(" ", 1)) == split for n in names)  # every person of every item
        people[split] = names
        asked[split] = {(it.identifier, it.key) for it in items}
    for a, b in (("train", "heldout"), ("train", "validation"), ("validation", "heldout")):
        assert not people[a] & people[b] and not asked[a] & asked[b]
    assert min(len(v) for v in asked.values()) > 150


def test_multi_person_items_name_exactly_one_person_and_are_seeded():
    items = P.generate_people("heldout", 60, people=5)
    assert items == P.generate_people("heldout", 60, people=5)
    assert items[:10] == P.generate_people("heldout", 10, people=5)  # item i does not depend on n
    inter = P.generate_people("heldout", 60, people=5, layout="interleaved")
    assert [it.context for it in inter] != [it.context for it in items]
    targets = []
    for i, (it, other) in enumerate(zip(items, inter)):
        assert len(it.ids) == len(it.context) == 25 and it.key == P.KEYS[i % len(P.KEYS)]
        who = list(dict.fromkeys(it.ids))
        firsts = [n.split()[0] for n in who]
        assert len(who) == 5 and len(set(firsts)) == 5  # distinct full names and first names
        assert [f for f in firsts if f in it.question.replace("'s", " ").replace("?", " ").split()] == \
            [it.identifier.split()[0]]  # the question names the asked person and no one else
        assert it.ids == tuple(n for n in who for _ in range(5))  # grouped: each person's five sentences together
        mine = [s for s, n in zip(it.context, it.ids) if n == it.identifier]
        assert any(it.answer in s for s in mine)
        # the other layout: the same people, question and sentences, each person's own order kept
        assert (other.question, other.answer, sorted(other.context)) == (it.question, it.answer, sorted(it.context))
        for n in who:
            assert [s for s, m in zip(other.context, other.ids) if m == n] == \
                [s for s, m in zip(it.context, it.ids) if m == n]
        targets.append(who.index(it.identifier))
    assert len(set(targets)) == 5  # the asked person is drawn among all five
    named = P.generate_people("heldout", 20, people=3, names=True)
    assert {it.key for it in named} == set(P.KEYS) - {"name"}
    assert json.loads(json.dumps(named[0].to_json()))["ids"] == list(named[0].ids)
    assert "ids" not in P.generate("heldout", 1)[0].to_json()  # single-person lines unchanged
    with pytest.raises(ValueError, match="distinct first names"):
        P.generate_people("heldout", 1, people=P.max_people("heldout") + 1)


def test_extra_first_names_cannot_be_confused_with_other_words():
    names = P.PEOPLE_FIRST_NAMES
    assert len(set(names)) == len(names) and P.max_people("heldout") >= 200
    words = set(P.SURNAMES + P.PROFESSIONS + P.CITIES + P.COUNTRIES + P.OOD_FIRST + P.OOD_LAST)
    words |= {w for e in P.EMPLOYERS for w in e.split()} | {v for vs in P.OOD_VALUES.values() for v in vs}
    assert not words & set(names)
    assert not [(a, b) for a in names for b in names if a != b and b.startswith(a)]


def test_each_pool_is_preceded_by_the_name_of_the_person_its_sentence_is_about(system):
    tok = system._tok
    item = P.generate_people("heldout", 1, people=2, layout="interleaved")[0]
    row = system.row(item, "sentence", ids=True, with_answer=False)
    pools = [i for i, p in enumerate(row.pool) if p >= 0]
    starts = [1] + [i + 1 for i in pools[:-1]]
    for p, (s, e) in enumerate(zip(starts, pools)):
        assert row.ids[s:e] == tok(f" [{item.ids[p]}]") and row.pool[e] == p
    assert row.context_positions == pools[-1]  # the name tokens count as context positions
    para = system.row(item, "paragraph", ids=True, with_answer=False)
    first, second = list(dict.fromkeys(item.ids))
    assert para.ids[1:para.pool.index(0)] == tok(f" [{first}]") + tok(f" [{second}]")
    plain = system.row(item, "sentence", with_answer=False)
    assert sum(p >= 0 for p in plain.pool) == 10 and plain.context_positions == 10  # without --ids: pools only
    # an item without per-sentence ids keeps its single identifier before every pool
    single = P.generate("heldout", 1)[0]
    row = system.row(single, "sentence", ids=True, with_answer=False)
    name = tok(f" [{single.identifier}]")
    assert row.ids[1:1 + len(name)] == name and row.ids.count(system.pad_id) >= len(single.context)
    assert len(row.ids) == len(system.row(single, "sentence", with_answer=False).ids) + len(name) * len(single.context)


@pytest.mark.parametrize("ids, fragment", [([1, 2], "list of 2 strings"), (["A"], "list of 2 strings"),
                                           ("A B", "list of 2 strings")])
def test_ids_of_a_user_item_are_checked_in_one_sentence(ids, fragment):
    from analysis.compression.system import check_item

    with pytest.raises(UserError, match=fragment) as err:
        check_item({"context": ["A is here.", "B is there."], "question": "Q?", "answer": "a", "ids": ids}, "x: ")
    assert "\n" not in str(err.value)


def test_context_budget_counts_the_name_tokens(tiny_llama):
    sys_ = CompressionSystem(tiny_llama, encoder=fake_encoder)  # 128 positions
    item = {"context": [f"Person {i} is here." for i in range(12)], "question": "Who?", "answer": "x",
            "ids": [f"Somebody Longname{i}" for i in range(12)]}
    sys_.check_contexts([item], "sentence")  # 12 pools fit
    with pytest.raises(UserError, match="positions with sentence pools"):
        sys_.check_contexts([item], "sentence", ids=True)


def test_person_attention_splits_pool_mass_by_person():
    attention = np.array([[0.5, 0.1, 0.2, 0.0, 0.3, 0.4],  # (L=2, T=6); pools at positions 1, 2, 4, 5
                          [0.9, 0.0, 0.0, 0.1, 0.0, 0.0]])
    item = {"ids": ["Ann Lee", "Bo Kim", "Ann Lee", "Cy Orr"], "id": "Ann Lee"}
    out = person_attention(item, attention, [1, 2, 4, 5])
    assert np.allclose(out["asked"], [0.4, 0.0]) and np.allclose(out["others"], [0.6, 0.0])
    assert np.isclose(out["share"][0], 0.4) and np.isnan(out["share"][1])  # no mass on pools: no share
    with pytest.raises(UserError, match="one person per pool"):
        person_attention(item, attention, [1, 2])
    people, mass = person_masses(item, attention, [1, 2, 4, 5])  # the same mass, one row per person
    assert people == ["Ann Lee", "Bo Kim", "Cy Orr"]
    assert np.allclose(mass, [[0.4, 0.0], [0.2, 0.0], [0.4, 0.0]])
    assert np.allclose(mass[0], out["asked"]) and np.allclose(mass[1:].sum(0), out["others"])


def test_pool_attention_of_a_multi_person_item_splits_into_its_people(system):
    item = P.generate_people("heldout", 1, people=3)[0]
    attention, pools = system.pool_attention(item, "sentence", ids=True)
    out = person_attention(item, attention, pools)
    total = attention[:, pools].sum(1)
    assert np.allclose(out["asked"] + out["others"], total) and (out["asked"] > 0).all()


def test_mix_keeps_the_shipped_recipe_and_separates_names():
    from analysis.training.compression import MIX, mix

    assert mix() == MIX
    for pools_mode in ("sentence", "paragraph"):
        for names in (False, True):
            m = mix(pools_mode, names, people=5)
            assert abs(sum(m.values()) - 1) < 1e-9 and m["text"] == MIX["text"]
            assert all(k == "text" or k.endswith("+ids") == names for k in m)
    assert mix("paragraph") == {"paragraph": 1 - MIX["text"], "text": MIX["text"]}


def test_multi_person_batches_ask_one_of_several_distinct_people(system):
    import random

    from analysis.training.compression import make_batches, mix

    rng = random.Random(0)
    personas = [(p, P.persona_sentences(p, rng)) for p in (P.random_people(rng, "train", 1)[0] for _ in range(30))]
    batches = make_batches(system, personas, 3, 0, single_steps=1, people=3, names=True, modes=mix(names=True))
    first = next(batches)
    assert ((first.pool >= 0).sum(1) == 1).all()  # the curriculum: the asked fact's sentence as one pool ...
    assert ((first.pool[:, 1] < 0) & (first.mask[:, 1] == 1)).all()  # ... after its person's name tokens
    later = [next(batches) for _ in range(4)]
    assert any(((b.pool >= 0).sum(1) == 15).all() for b in later)  # three people, five sentences each


@pytest.fixture(scope="module")
def tiny_weights(tiny_folder, tmp_path_factory):
    """Untrained compression weights for the tiny model folder (the seeded adapter + LoRA at initialisation)."""
    from analysis.compression.system import METHOD, encoder_name
    from analysis.models.backbone import load_backbone
    from analysis.weights.artefacts import save_artefact

    bb = load_backbone(str(tiny_folder))
    folder = tmp_path_factory.mktemp("cc_tiny_weights")
    save_artefact(folder, CompressionSystem(bb, encoder=fake_encoder).tensors(),
                  {"method": METHOD, "model_identity": bb.identity, "encoder": encoder_name()})
    return folder


@pytest.fixture
def no_minilm(monkeypatch):
    """compress-qa with the stand-in encoder: MiniLM is never loaded by these tests."""
    from analysis.compression import system

    monkeypatch.setattr(system, "encode_sentences", fake_encoder)
    monkeypatch.setattr(system, "encoder_token_count", lambda s: len(s.split()))


def test_compress_qa_reads_multi_person_items_with_ids(tmp_path, capsys, tiny_folder, tiny_weights, no_minilm):
    from conftest import run_cli

    items = [{"context": ["Ann cooks.", "Bo flies.", "Ann sings."], "question": "What does Bo do?", "answer": "flies",
              "key": "profession", "id": "Bo", "ids": ["Ann", "Bo", "Ann"]},
             {"context": ["Cy swims.", "Di runs."], "question": "What does Di do?", "answer": "runs",
              "key": "profession", "id": "Di", "ids": ["Cy", "Di"]}]
    data = tmp_path / "people.jsonl"
    data.write_text("".join(json.dumps(it) + "\n" for it in items))
    common = ["compress-qa", "--data", data, "--model", tiny_folder, "--weights", tiny_weights, "--no-cache"]
    code, plain, err = run_cli(capsys, *common)
    assert code == 0, err
    code, named, err = run_cli(capsys, *common, "--ids")
    assert code == 0, err
    assert plain["n"] == named["n"] == 2 and named["pools"] == "sentence+ids" and named["people"] is None
    # the name tokens are context positions: " [Ann]" etc. before each of the five pools
    assert named["compression"] < plain["compression"]
    data.write_text(json.dumps({**items[1], "ids": ["Cy"]}) + "\n")
    code, _, err = run_cli(capsys, *common)
    assert code == 2 and "'ids' must be a list of 2 strings" in err and err.count("\n") == 1


def test_compress_qa_generates_multi_person_held_out_items(capsys, tiny_folder, tiny_weights, no_minilm):
    from conftest import run_cli

    code, out, err = run_cli(capsys, "compress-qa", "--people", 2, "--layout", "interleaved", "--n", 5, "--model",
                             tiny_folder, "--weights", tiny_weights, "--no-cache")
    assert code == 0, err
    assert out["people"] == 2 and out["layout"] == "interleaved" and out["n"] == 5
    assert set(out["per_key"]) == set(P.KEYS)


@pytest.mark.parametrize("argv, fragment", [
    (["--people", "0", "--layout", "grouped"], "1 or more"),
    (["--people", "2", "--distractors", "20"], "leave out --distractors"),
    (["--people", "300"], "--people"),  # more sentences than a context may hold, before any item is generated
    (["--people", "2", "--data", "x.jsonl"], "only apply to --data personas"),
])
def test_compress_qa_bad_people_options_are_one_sentence(capsys, argv, fragment):
    from conftest import run_cli

    code, _, err = run_cli(capsys, "compress-qa", *argv)
    assert code == 2 and fragment in err and err.count("\n") == 1


def test_training_people_come_from_the_train_split_with_enough_first_names():
    from analysis.training.compression import Config, training_personas, validation_items

    people = training_personas(Config(people=5, personas=200))
    assert all(P.name_split(p.first, p.last) == "train" for p, _ in people)
    assert all(len(sentences) == 5 for _, sentences in people)  # fact sentences only
    val = validation_items(Config(people=5, names=True, layout="interleaved", val=10))
    assert all(len(set(it.ids)) == 5 and it.key != "name" for it in val)  # the task trained: 5 people, names
    with pytest.raises(UserError, match="raise --personas"):
        training_personas(Config(people=50, personas=20))


def _train(bb, out, **options):
    """A 2-step compression run through the one runner, with the stand-in encoder; (summary, manifest)."""
    from analysis.training.compression import Config
    from analysis.training.systems import run

    config = Config(out=str(out), steps=2, batch_size=2, eval_every=1, personas=12, val=4, threads=1, **options)
    summary = run("compression", config, backbone=bb, encoder=fake_encoder)
    return summary, json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize("options", [dict(people=2), dict(people=2, names=True, layout="interleaved",
                                                             checkpointing=True),
                                     dict(pools_mode="paragraph"), dict(people=2, warm_start="none")])
def test_each_training_mode_runs_end_to_end(long_llama, tmp_path, options):
    from analysis.training.compression import mix

    summary, manifest = _train(long_llama, tmp_path / "r", **options)
    assert summary["steps_done"] == 2 and manifest["partial"] is False
    assert manifest["data"]["mix"] == mix(options.get("pools_mode", "sentence"), options.get("names", False),
                                         options.get("people", 1))
    assert all(manifest["hyperparameters"][k] == v for k, v in options.items())
    assert "sentence+ids" in summary["results"]["validation"]
    assert str(tmp_path) not in manifest["command"]


def test_warm_from_starts_where_the_previous_run_ended_and_refuses_other_weights(long_llama, tmp_path):
    import shutil

    from analysis.weights.artefacts import load_artefact

    _train(long_llama, tmp_path / "people1")
    summary, second = _train(long_llama, tmp_path / "people2", people=2, warm_from=str(tmp_path / "people1"))
    assert second["warm_start"]["kind"] == "from" and second["warm_start"]["run"] == "people1"
    assert "--warm-from people1" in second["command"] and str(tmp_path) not in json.dumps(second["hyperparameters"])
    # step 0 of the second run scores the first run's best weights (on the second run's own validation rows)
    from analysis.compression.system import CompressionSystem as CS
    from analysis.training.compression import Config, teacher_forced, validation_items

    warm = CS.from_artefact(long_llama, tmp_path / "people1")
    warm._encode = fake_encoder
    val = validation_items(Config(people=2, val=4))
    assert np.isclose(teacher_forced(warm, val, "sentence")["loss"], second["curves"]["validation"][0]["val_loss"])
    tensors, _ = load_artefact(tmp_path / "people2", method="compression")
    assert summary["best_step"] >= 0 and tensors
    other = tmp_path / "other-model"
    shutil.copytree(tmp_path / "people1", other)
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "model_identity": "some/other-model"}))
    with pytest.raises(UserError, match="was trained for the model") as err:
        _train(long_llama, tmp_path / "x", people=2, warm_from=str(other))
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="--pool-scale"):
        _train(long_llama, tmp_path / "y", people=2, pool_scale=2.0, warm_from=str(tmp_path / "people1"))


def compute_for(store=None):
    """The experiments' door around a tiny system: answers computed here, or through a cache store."""
    from analysis.compute.direct import Direct
    from cache.cached import Cached

    return Direct() if store is None else Cached(store)


def test_experiment_b_and_the_scaling_study_on_a_tiny_system(system, tmp_path):
    """The cross-person experiment's tables on an untrained tiny system and 3 items per row (mechanics only)."""
    from analysis.experiments import compression_people as exp
    from analysis.experiments.machinery import render

    config = exp.Config(n=3, attention_n=2, attention_max_people=2)
    compute = compute_for()
    table, raw = exp.experiment_b(compute, [("single person", system, 1, False), ("two people, names", system, 2, True)],
                                  config)
    assert table.column("condition") == ["single person", "two people, names"]
    assert all(len(r) == len(table.columns) for r in table.rows)
    assert table.rows[1][table.columns.index("name")] is None  # no name questions when names are shown
    assert raw["single person"]["attention"]["asked_share"] == 1.0  # one person: every pool is theirs
    assert 0.0 <= raw["two people, names"]["attention"]["asked_share"] <= 1.0
    assert len(raw["single person"]["attention"]["per_layer"]) == system.backbone.facts.n_layers
    small = exp.Config(n=2, attention_n=1, attention_max_people=2)
    scaled, curve, _ = exp.scaling(compute, {2: system, 3: system}, small)
    assert scaled.column("people") == [2, 3] and scaled.rows[1][-3] is None  # no attention beyond 2 people
    assert list(curve.xs) == [2, 3] and curve.lines["chance"] == [0.5, 1 / 3]
    with_base, curve, _ = exp.scaling(compute, {2: system, 3: system}, exp.Config(n=2, attention_n=0), base=system,
                                      trained={2: {"steps_done": 34, "best_step": 0, "hyperparameters": {"people": 2}},
                                               3: {"steps_done": 34, "best_step": 0, "hyperparameters": {"people": 2}}})
    assert with_base.rows[1][-1] == "0: the 2-person run"  # a run reused for a larger N is not trained on it
    assert with_base.columns[-2:] == ("all, read by the five-person run", "steps trained at N (best)")
    assert with_base.rows[0][-2] == with_base.rows[0][2]  # the same run reads the same items alike
    assert with_base.rows[0][-1] == "0: its start; best step 0 of 34"  # best step 0: the weights it was warmed from
    assert "the five-person run, untrained on N" in curve.lines
    check, checked = exp.single_person_check(compute, system, system, 5)
    assert check.column("run") == ["single-person run", "five-person run, names",
                                   "five-person run, names, + name tokens"]
    assert check.rows[1][check.columns.index("minus single-person run (paired, points)")] == "+0.0 [+0.0, +0.0]"
    assert checked["five-person run, names"]["paired_vs_single"]["p"] == 1.0
    ran = {"single-person run": {"exact_match": 0.99, "exact_match_ci": (0.97, 1.0)},
           "five-person run, names": {"exact_match": 0.9, "exact_match_ci": (0.85, 0.94),
                                      "paired_vs_single": {"difference": -0.09, "ci": [-0.13, -0.05]}}}
    assert "0.909 of it, below the shipping bar" in " ".join(exp.findings({"single_check": ran}))
    from cache import Store

    cached = compute_for(Store(tmp_path / "store"))  # through the cache: items with ids key their own entries
    got = [exp.read(cached, system, P.generate_people("heldout", 2, people=2, names=True), ids)
           for ids in (True, True, False)]
    assert got[0] == got[1] and got[0]["compression"] != got[2]["compression"]
    assert exp.test_size(50, 200) == 200 and exp.test_size(100, 200) == 100 and exp.test_size(1000, 200) == 25
    assert "| single person | 1 | no |" in render.table_markdown(table)


def test_a_run_whose_rows_do_not_fit_the_model_is_refused_before_training(long_llama, tmp_path):
    with pytest.raises(UserError, match="positions with text pools") as err:
        _train(long_llama, tmp_path / "r", people=4)  # four people's full text: more than 512 positions
    assert "\n" not in str(err.value) and not (tmp_path / "r" / "manifest.json").exists()


def test_checkpointing_gives_the_same_gradients(long_llama):
    """--checkpointing recomputes layers in the backward pass: the same loss and gradients, less memory."""
    import torch

    from analysis.training.compression import answer_loss

    item = P.generate_people("train", 2, people=2)
    grads = []
    for checkpointing in (False, True):
        sys_ = CompressionSystem(long_llama, encoder=fake_encoder)
        if checkpointing:
            sys_.causal.activation_checkpointing_enable()
        sys_.causal.train(checkpointing)
        params = sys_.trainable()
        calls = []
        hook = sys_.causal.model.layers[0].mlp.act_fn.register_forward_hook(lambda *a: calls.append(1))
        loss = answer_loss(sys_, sys_.collate([sys_.row(it, "sentence", ids=True) for it in item]))[0]
        grads.append([g.clone() for g in torch.autograd.grad(loss, params)])
        hook.remove()
        assert len(calls) == (2 if checkpointing else 1)  # the layer ran again in the backward pass
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*grads)) and any(g.abs().sum() > 0 for g in grads[1])


def test_the_compression_tables_from_scores():
    """The compression experiment's tables: the held-out table, the dilution curve, the OOD probes and the
    cross-person rows, from made-up scores; every row has one cell per column."""
    from analysis.experiments import compression as exp
    from analysis.experiments.machinery import render

    rate = {"exact_match": 0.5, "exact_match_ci": [0.25, 0.75]}
    res = {**rate, "per_key": {k: rate for k in P.KEYS}, "compression": 9.3, "n": 10}
    no_name = {**res, "per_key": {k: rate for k in P.KEYS[1:]}}
    config = exp.Config(n=10, scaling_n=4, scaling_modes=("sentence", "paragraph"), ood=3, cross_person=10)
    curve = {(size, mode): {"exact_match": 1.0} for size in (5, 10) for mode in ("sentence", "paragraph")}
    ood = {(kind, mode): res for kind in P.OOD_KINDS for mode in ("sentence", "text", "none")}
    tables = exp.tables(config, {"sentence": res, "none": {**res, "compression": None}}, curve, ood,
                        {False: res, True: no_name})
    assert [t.name for t in tables] == ["heldout", "dilution", "ood", "cross_person"]
    assert [len(t.rows) for t in tables] == [2, 2, len(P.OOD_KINDS), 2]
    assert all(len(row) == len(t.columns) for t in tables for row in t.rows)
    md = "\n".join(render.table_markdown(t) for t in tables)
    assert "| sentence | 50.0 [25.0, 75.0] |" in md and "| five people, names | 50.0 [25.0, 75.0] | – |" in md
    assert "| 5 | 100.0 | 100.0 |" in md


def test_the_training_recipe_record_compares_curves_step_for_step():
    """compression_training's validation curves and findings from manifests and scores (no model)."""
    from analysis.experiments import compression_training as exp

    manifests = {"value warm start": {"curves": {"validation": [{"step": 0, "exact": 0.0}, {"step": 100, "exact": 0.33},
                                                                {"step": 200, "exact": 0.9}]}},
                 "random init": {"curves": {"validation": [{"step": 0, "exact": 0.0}, {"step": 50, "exact": 0.0},
                                                           {"step": 100, "exact": 0.05}, {"step": 150, "exact": 0.1}]}}}
    curves = exp.validation_curves(manifests)
    assert curves["random init"] == {0: 0.0, 50: 0.0, 100: 0.05, 150: 0.1}

    def r(em):
        return {"exact_match": em, "exact_match_ci": (em / 2, (1 + em) / 2)}

    raw = {"value warm start, sentence": {"heldout": r(0.995), "unseen_values": r(0.0)},
           "random init, sentence": {"heldout": r(0.2), "unseen_values": r(0.02)}}
    said = exp.findings(raw, curves)
    assert said[0].startswith("At step 100 on validation, random init scores 5.0% against the value warm start's 33.0%")
    assert "Unseen values: random init 2.0% [1.0, 51.0]" in said[1]


def test_experiment_b_at_two_lengths_is_a_paired_difference_on_the_same_items():
    """The budget table and its finding from per-item scores (no model): the longer run minus the shorter."""
    from analysis.compression.system import score
    from analysis.experiments import compression_people as exp

    def run(hits):
        res = score([{"exact": h, "first_token_ok": h, "context_tokens": 5, "context_positions": 1} for h in hits],
                    ["city"] * len(hits))
        return res | {"exact": hits}

    b = {"five people": run([1, 0, 0, 0] * 25), exp.LONGER: run([1, 1, 1, 0] * 25),
         "five people, names": run([1, 1, 1, 1] * 25)}
    table, raw = exp.budget(b, {"steps_done": 120, "best_step": 60}, {"steps_done": 2000, "best_step": 1900})
    assert table.column("run") == ["five people", exp.LONGER] and table.column("steps trained") == [120, 2000]
    assert abs(raw["difference"] - 0.5) < 1e-9 and raw["ci"][0] > 0
    assert table.rows[1][table.columns.index("minus the shorter run (paired, points)")].startswith("+50.0 [")
    said = " ".join(exp.findings({"experiment_b": b, "budget": raw}))
    assert "Trained 2,000 steps (best step 1,900) instead of 120" in said and "budget artefact, in part" in said
    same = exp.budget(b | {exp.LONGER: b["five people"]}, {"steps_done": 120, "best_step": 60},
                      {"steps_done": 2000, "best_step": 100})[1]
    assert "not a budget artefact" in " ".join(exp.findings({"experiment_b": b, "budget": same}))
