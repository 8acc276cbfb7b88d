"""The four training options the papers' variants need (issue 49), on tiny random models, a few steps each:
`train causal2vec --attention bidirectional` (Table 15) and `--contextual-position before` (Table 14), `train gircse
--objective bidirectional-avg` (Table 2's other fair baseline) and `--train-pairs N` (Fig. 3). Each trains, ships to
its own folder (never over the shipped system), and its method reads it back encoding as it was trained; a disabled
option gives today's output exactly; the four claims are "not measured" with their command until their run ships,
and `train all` trains them after their system's other parts. Shipped folders are a temporary stand-in."""

import numpy as np
import pytest
import torch
from test_gircse_shipping import fake_adapter
from toys import TEXTS, toy_genre_pairs, toy_pairs

from analysis.core.errors import UserError
from analysis.core.forward import run
from analysis.core.tokens import encode_texts
from analysis.data.corpora import Pairs
from analysis.experiments.claims import NeedsRun
from analysis.experiments.claims.board import CLAIMS
from analysis.methods import causal2vec as c2v_module
from analysis.methods import get_method
from analysis.methods.causal2vec import CONTEXTUAL, contextual_inputs, readout_at
from analysis.models.tiny import tiny_backbone
from analysis.training.systems import run as train

BY_ID = {c.id: c for c in CLAIMS}


class Ctx:
    """What a claim's judge reads before it measures anything: the model."""

    def __init__(self, backbone):
        self.backbone = backbone

    def record(self, name: str):
        return None  # no published record measured this tiny model

    def sts_unit(self, method):
        return method  # what would be measured (the test stops at the missing run before)


def train_c2v(tmp_path, name: str, encoder, **options):
    from analysis.training.causal2vec import Config

    bb = tiny_backbone("llama")
    pairs = toy_pairs(16)
    dev = Pairs("toy dev", pairs.left * 3, pairs.right * 3, np.tile(pairs.scores, 3))
    config = Config(out=str(tmp_path / name), steps=2, batch_size=8, lora_rank=4, lr=3e-3, eval_every=1,
                    eval_pairs=10, hard_negatives=2, instruction="Query: ", ship=True, **options)
    return bb, train("causal2vec", config, backbone=bb, train_pairs=pairs, dev_pairs=dev, encoder=encoder)


def by_hand(method, bb, text: str) -> np.ndarray:
    """Causal2Vec's embedding of one text as the code before the options computed it: C inserted right before the
    first text token, the causal forward with C in `inputs_embeds`, the concat readout."""
    bridge, runner, enc = method.load(bb)
    tok = bb.tokenizer
    e = encode_texts(tok, f"{method.params.instruction}{{text}}{tok.eos_token}", [text], bb.facts.max_length - 1)[0]
    first = int(np.flatnonzero(e.segments == 1)[0])
    item = c2v_module.C2VEncoded(np.insert(e.ids, first, tok.pad_token_id), np.insert(e.segments, first, CONTEXTUAL),
                                 e.truncated, text=text, c_index=first)
    with torch.inference_mode():
        batch = method.collate(runner, [item], "right")
        embeds = contextual_inputs(runner, batch, bridge(enc.embed([text])))
        hidden = run(runner, batch, [bb.facts.n_layers], inputs_embeds=embeds).hidden[bb.facts.n_layers]
        return readout_at(hidden, batch, "concat")[0].numpy()


# ---- the mask ------------------------------------------------------------------------------------------------------
def test_the_mask_is_removed_in_every_architecture_and_restored_after(tiny):
    """Known answer: under the causal mask a token's states do not depend on the tokens after it (two texts sharing a
    prefix have the same states there); with it removed they do. The model's own backend is back afterwards."""
    from analysis.core.tokens import collate
    from analysis.methods._masks import attention_mask

    method = get_method("last")
    items = method.prepare(tiny, ["the cat sat on the mat", "the cat ran far away"])
    batch = collate(items, tiny.tokenizer.pad_token_id or 0, "right")
    shared = 2  # "the cat": the same first tokens in both rows
    assert (batch.input_ids[0, :shared] == batch.input_ids[1, :shared]).all()
    before = tiny.model.config._attn_implementation
    L = tiny.facts.n_layers
    with torch.no_grad():
        causal = run(tiny, batch, [L]).hidden[L]
        with attention_mask(tiny, "bidirectional"):
            both = run(tiny, batch, [L]).hidden[L]
    torch.testing.assert_close(causal[0, :shared], causal[1, :shared])
    assert (both[0, :shared] - both[1, :shared]).abs().max() > 1e-4
    assert tiny.model.config._attn_implementation == before


# ---- Causal2Vec: --attention bidirectional (Table 15) ---------------------------------------------------------------
def test_causal2vec_bidirectional_trains_ships_apart_and_reads_back_bidirectional(tmp_path, artefacts, hash_encoder):
    bb, summary = train_c2v(tmp_path, "bidir", hash_encoder, attention="bidirectional")
    place = artefacts / "causal2vec" / "tiny-llama" / "ablations" / "bidirectional"
    assert summary["shipped"] == str(place) and not (artefacts / "causal2vec" / "tiny-llama" / "manifest.json").exists()
    from analysis.weights.artefacts import read_manifest

    manifest = read_manifest(place)
    assert manifest["hyperparameters"]["attention"] == "bidirectional" and "--attention bidirectional" in \
        manifest["command"]
    read = get_method("causal2vec", bridge=str(place))  # attention=auto: as the manifest says
    assert read.params.attention == "bidirectional" and read.params.contextual_position == "after"
    as_causal = get_method("causal2vec", bridge=str(place), attention="causal")  # the same weights, causal mask
    a, b = read.encode(bb, TEXTS, normalize=False), as_causal.encode(bb, TEXTS, normalize=False)
    assert np.abs(a - b).max() > 1e-3
    for i, text in enumerate(TEXTS):  # the causal reading is the old code path, bit for bit
        np.testing.assert_array_equal(as_causal.encode(bb, [text], normalize=False)[0], by_hand(as_causal, bb, text))
    with pytest.raises(UserError, match="only under the causal mask"):
        train_c2v(tmp_path, "cut", hash_encoder, attention="bidirectional", train_readout="contextual")


def test_the_trainer_encodes_as_the_method_reads(tiny_llama, hash_encoder):
    """At its start (untrained bridge, LoRA's B at zero) the trainer's forward is the method's, mask and position
    included: what trains is what is read."""
    from analysis.training.causal2vec import Config, Trainee

    for options in ({"attention": "bidirectional"}, {"contextual_position": "before"}, {}):
        config = Config(instruction="Query: ", lora_rank=4, **options)
        trainee = Trainee.build(config, tiny_llama, hash_encoder, "")
        with torch.no_grad():
            trained = trainee.embed(TEXTS).numpy()
        method = get_method("causal2vec", bridge="untrained", instruction="Query: ", **options)
        np.testing.assert_allclose(trained, method.encode(tiny_llama, TEXTS, normalize=False), atol=1e-5)


# ---- Causal2Vec: --contextual-position before (Table 14) ------------------------------------------------------------
def test_causal2vec_contextual_before_trains_ships_apart_and_reads_back_before(tmp_path, artefacts, hash_encoder):
    bb, summary = train_c2v(tmp_path, "before", hash_encoder, contextual_position="before")
    place = artefacts / "causal2vec" / "tiny-llama" / "ablations" / "contextual-before"
    assert summary["shipped"] == str(place)
    read = get_method("causal2vec", bridge=str(place))
    assert read.params.contextual_position == "before" and read.params.attention == "causal"
    tok = bb.tokenizer
    for e in read.prepare(bb, TEXTS):  # [start] [C] [instruction] [text] [EOS]: C never at position 0
        assert e.c_index == 1 and int(e.ids[0]) in tok.all_special_ids and e.segments[1] == CONTEXTUAL
        assert (e.segments[2:] != 1).any() and e.segments[2] == 0  # the instruction follows C
    after = get_method("causal2vec", bridge=str(place), contextual_position="after")
    for e in after.prepare(bb, TEXTS):  # the default layout: C right before the text, after the instruction
        assert e.segments[e.c_index] == CONTEXTUAL and e.segments[e.c_index + 1] == 1 and e.c_index > 0
        assert (e.segments[: e.c_index] == 0).all()
    assert np.abs(read.encode(bb, TEXTS) - after.encode(bb, TEXTS)).max() > 1e-4
    for text in TEXTS:  # the default placement is today's layout and forward, bit for bit
        np.testing.assert_array_equal(after.encode(bb, [text], normalize=False)[0], by_hand(after, bb, text))
    without = get_method("causal2vec", bridge=str(place), instruction="")
    assert [e.c_index for e in without.prepare(bb, TEXTS)] == [e.c_index for e in get_method(
        "causal2vec", bridge=str(place), instruction="", contextual_position="after").prepare(bb, TEXTS)]


def test_causal2vec_variants_each_ship_to_their_own_place():
    from analysis.training.systems import ship_place

    def place(**hp):
        return ship_place("causal2vec", hp)

    assert place() == "" and place(attention="causal", contextual_position="after") == ""  # the system, old manifests
    assert place(attention="bidirectional") == "ablations/bidirectional"
    assert place(contextual_position="before") == "ablations/contextual-before"
    assert place(train_readout="eos") == "ablations/eos-readout" and place(control="concat") == "ablations/concat"
    assert place(train_readout="eos", attention="bidirectional") == "ablations/eos-readout-bidirectional"


# ---- GIRCSE: --objective bidirectional-avg (Table 2) ----------------------------------------------------------------
def train_gircse(tmp_path, name: str, bb, **options):
    from analysis.training.gircse import Config

    config = Config(out=str(tmp_path / name), steps=2, batch_size=4, eval_every=1, k=2, lora_rank=2, lora_alpha=4,
                    lora_layers=2, eval_pairs=10, ship=True, **options)
    return train("gircse", config, backbone=bb, train_pairs=toy_genre_pairs(), dev_pairs=toy_genre_pairs())


def test_gircse_bidirectional_avg_trains_ships_apart_and_reads_back_bidirectional(tmp_path, artefacts, tiny_llama):
    from analysis.training.gircse import Config, SoftTokens, mean_states
    from analysis.weights.adapters import load_adapter

    bb = tiny_llama
    summary = train_gircse(tmp_path, "bidir", bb, objective="bidirectional-avg")
    place = artefacts / "gircse" / "tiny-llama" / "ablations" / "bidirectional-avg"
    assert summary["shipped"] == str(place) and set(summary["results"]["report"]) == {"spearman_k0"}
    named = get_method("soft_tokens", adapter="bidirectional-avg", k=0)
    folder = get_method("soft_tokens", adapter=str(place), k=0)
    assert named.params.attention == folder.params.attention == "bidirectional"
    texts = ["a cat sleeps", "money in the bank", "the fox runs"]
    emb = named.encode(bb, texts, normalize=False)
    np.testing.assert_array_equal(emb, folder.encode(bb, texts, normalize=False))
    merged = load_adapter(bb, str(place))
    method = SoftTokens(k=0, instruction=Config().instruction, adapter="none", attention="bidirectional")
    with torch.no_grad():
        trained = mean_states(merged, method, texts)[:, 0].numpy()  # what the loss trained
    np.testing.assert_allclose(emb, trained, atol=1e-5)
    causal = get_method("soft_tokens", adapter=str(place), k=0, attention="causal", pooling="generated+text")
    assert np.abs(causal.encode(bb, texts, normalize=False) - emb).max() > 1e-3  # the same weights, causal mask
    with pytest.raises(UserError, match="use k=0"):
        get_method("soft_tokens", adapter="bidirectional-avg")  # k=5: nothing is generated bidirectionally


def test_soft_tokens_without_the_option_is_unchanged(tiny_llama):
    """attention=auto on a causal adapter is the causal generation, bit for bit (`generate` called directly)."""
    from analysis.methods.soft_tokens import generate
    from analysis.methods.soft_tokens import readout_at as soft_readout

    texts = ["a cat sleeps", "money in the bank"]
    method = get_method("soft_tokens", adapter="none", k=3)
    assert method.params.attention == "causal" and method.params.pooling == "generated"
    L = tiny_llama.facts.n_layers
    for text in texts:
        with torch.inference_mode():
            batch = method.collate(tiny_llama, method.prepare(tiny_llama, [text]), "right")
            hidden = generate(tiny_llama, batch, [L]).hidden[L]
            want = soft_readout(hidden, batch, 3, "generated")[0].numpy()
        np.testing.assert_array_equal(method.encode(tiny_llama, [text], normalize=False)[0], want)


def test_a_missing_bidirectional_avg_is_refused_with_its_command(tiny_llama, artefacts):
    with pytest.raises(UserError, match="No Bidirectional-Avg baseline is shipped for tiny-llama: train one with "
                                        "`python -m analysis train gircse --objective bidirectional-avg --ship`"):
        get_method("soft_tokens", adapter="bidirectional-avg", k=0).encode(tiny_llama, ["a cat"])


def test_the_experiment_and_the_page_read_a_bidirectional_ablation_without_generating(tiny_llama, artefacts):
    from analysis.experiments.gircse import variants
    from analysis.inspect.generation import adapter_variants

    model_dir = artefacts / "gircse" / "tiny-llama"
    fake_adapter(tiny_llama, model_dir, seed=1)
    bidir = fake_adapter(tiny_llama, model_dir / "ablations" / "bidirectional-avg", seed=2,
                         objective="bidirectional-avg")
    assert variants(tiny_llama)["ablation bidirectional-avg"] == (str(bidir), [0])
    assert str(bidir) not in adapter_variants(tiny_llama).values()  # the page compares generators


# ---- GIRCSE: --train-pairs N (Fig. 3) ------------------------------------------------------------------------------
def sorted_by_source() -> Pairs:
    """20 pairs sorted by source, as STS-B's file is: a's rows 0-9, b's 10-19; 6 positives and 4 others in each."""
    gold = ([5.0] * 6 + [0.5] * 4) * 2
    left = [f"left {i}" for i in range(20)]
    return Pairs("sorted", left, [f"right {i}" for i in range(20)], np.array(gold), ["a"] * 10 + ["b"] * 10)


def test_train_pairs_is_a_seeded_stratified_sample_known_answer():
    """N = 6 of the 12 positives: 3 per source (their shares), each source's rows a seeded permutation's first 3
    (the generator carried from source a to b), and the same half of the others (2 per source), drawn the same way."""
    from analysis.training.gircse import Config, sample_training

    pairs = sorted_by_source()
    chosen, facts = sample_training(pairs, Config(train_pairs=6, seed=3))
    rng = np.random.default_rng(3)
    positives = sorted([*np.arange(0, 6)[rng.permutation(6)[:3]], *np.arange(10, 16)[rng.permutation(6)[:3]]])
    rng = np.random.default_rng(3)
    others = sorted([*np.arange(6, 10)[rng.permutation(4)[:2]], *np.arange(16, 20)[rng.permutation(4)[:2]]])
    want = sorted(positives + others)
    assert chosen.left == [f"left {i}" for i in want] and chosen.genres == [pairs.genres[i] for i in want]
    assert want[:3] != [0, 1, 2]  # a sample, not the first rows
    sample = facts["train_sample"]
    assert (sample["positive_pairs"], sample["of_positive"], sample["other_pairs"], sample["of_other"]) == (6, 12, 4, 8)
    assert sample["seed"] == 3 and len(sample["rows_digest"]) == 16
    again, _ = sample_training(pairs, Config(train_pairs=6, seed=3))
    assert again.left == chosen.left and sample_training(pairs, Config(train_pairs=6, seed=4))[0].left != chosen.left
    assert sample_training(pairs, Config()) == (pairs, {})  # 0: all of them, untouched
    whole, _ = sample_training(pairs, Config(train_pairs=12))
    assert whole.left == pairs.left  # every positive: the whole file, in its order: the run on all of them
    with pytest.raises(UserError, match="more than the 12 positive pairs"):
        sample_training(pairs, Config(train_pairs=13))


def test_train_pairs_trains_on_its_sample_records_it_and_ships_apart(tmp_path, artefacts, tiny_llama):
    from analysis.training.gircse import Config, setup
    from analysis.weights.artefacts import read_manifest

    config = Config(train_pairs=4, batch_size=4, k=2, lora_rank=2, lora_alpha=4, lora_layers=2, eval_pairs=10)
    job = setup(config, tiny_llama, train_pairs=toy_genre_pairs(), dev_pairs=toy_genre_pairs())
    seen = {t for _ in range(6) for t in next(job.batches)[0]}
    assert len(seen) == 4 and job.data["positive_pairs"] == 4  # 4 of the 8 positives, nothing else in the batches
    summary = train_gircse(tmp_path, "small", tiny_llama, train_pairs=4)
    place = artefacts / "gircse" / "tiny-llama" / "ablations" / "icr-pairs4"
    assert summary["shipped"] == str(place) and not (artefacts / "gircse" / "tiny-llama" / "manifest.json").exists()
    manifest = read_manifest(place)
    assert manifest["hyperparameters"]["train_pairs"] == 4 and "--train-pairs 4" in manifest["command"]
    assert manifest["data"]["train_sample"]["positive_pairs"] == 4
    from analysis.training.systems import ship_place

    assert ship_place("gircse", {"objective": "causal-eos", "train_pairs": 350}) == "ablations/causal-eos-pairs350"
    assert ship_place("gircse", {"objective": "causal-eos", "train_pairs": 0}) == "baselines/causal-eos"


# ---- the claims: "not measured" with the command until the run ships, then read ------------------------------------
def test_the_causal2vec_claims_say_what_to_train_then_read_the_variant(tmp_path, artefacts, hash_encoder):
    from analysis.experiments.claims.causal2vec import _variant

    bb, _ = train_c2v(tmp_path, "system", hash_encoder)  # the system, shipped for this model
    ctx = Ctx(bb)
    for claim, flags in (("c2v-causal-vs-bidir", "--attention bidirectional"),
                         ("c2v-ctx-position", "--contextual-position before")):
        for call in (BY_ID[claim].judge, BY_ID[claim].work):
            with pytest.raises(NeedsRun) as err:
                call(ctx)
            assert f"`python -m analysis train causal2vec --model tiny-llama {flags} --ship`" in str(err.value)
            assert " min here" in str(err.value) and "not built" not in str(err.value)
    train_c2v(tmp_path, "bidir", hash_encoder, attention="bidirectional")
    method = _variant(ctx, "c2v-causal-vs-bidir")
    assert method.params.attention == "bidirectional" and "ablations/bidirectional" in method.params.bridge
    with pytest.raises(NeedsRun, match="--contextual-position before"):
        _variant(ctx, "c2v-ctx-position")


def test_the_gircse_claims_say_what_to_train_then_read_the_runs(tiny_llama, artefacts):
    from analysis.experiments.claims.gircse import BIDIR_AVG, SMALL, _method

    model_dir = artefacts / "gircse" / "tiny-llama"
    fake_adapter(tiny_llama, model_dir, seed=1)
    fake_adapter(tiny_llama, model_dir / "baselines" / "causal-eos", seed=2, objective="causal-eos")
    ctx = Ctx(tiny_llama)
    for claim, says in (("gircse-bidir-avg", "--steps 320 --eval-every 40 --hard-negatives 8 --objective "
                                              "bidirectional-avg --ship`"),
                        ("gircse-data-scale", "--steps 80 --eval-every 40 --hard-negatives 8 --train-pairs 350 --ship` "
                                              "and the same with --objective causal-eos")):
        for call in (BY_ID[claim].judge, BY_ID[claim].work):
            with pytest.raises(NeedsRun) as err:
                call(ctx)
            assert "`python -m analysis train gircse --model tiny-llama " + says in str(err.value), str(err.value)
            assert " min here" in str(err.value)
    fake_adapter(tiny_llama, model_dir / "ablations" / "bidirectional-avg", seed=3, objective="bidirectional-avg")
    bidir = _method(ctx, BIDIR_AVG, 0)
    assert bidir.params.attention == "bidirectional" and bidir.params.k == 0
    fake_adapter(tiny_llama, model_dir / "ablations" / "icr-pairs350", seed=4)
    with pytest.raises(NeedsRun, match="--train-pairs 350"):  # the comparison needs both small runs
        _method(ctx, SMALL["Causal-EOS"], 0)
    fake_adapter(tiny_llama, model_dir / "ablations" / "causal-eos-pairs350", seed=5, objective="causal-eos")
    small = _method(ctx, SMALL["Causal-EOS"], 0)
    assert small.params.adapter.startswith(str(model_dir / "ablations" / "causal-eos-pairs350"))


# ---- train all ----------------------------------------------------------------------------------------------------
def test_train_all_trains_the_variants_after_their_systems_other_parts():
    from analysis.training.queue import PARTS
    from analysis.training.systems import ship_place

    labels = [p.label for p in PARTS]
    new = {"causal2vec-bidirectional": "ablations/bidirectional",
           "causal2vec-contextual-before": "ablations/contextual-before",
           "gircse-bidirectional-avg": "ablations/bidirectional-avg", "gircse-pairs350": "ablations/icr-pairs350",
           "gircse-causal-eos-pairs350": "ablations/causal-eos-pairs350"}
    for label, place in new.items():
        part = PARTS[labels.index(label)]
        assert ship_place(part.system, part.settings) == place
        if part.system == "gircse":  # the shipped recipe; the quarter of the data for a quarter of the steps
            assert part.settings["hard_negatives"] == 8 and part.settings["steps"] == (80 if "350" in label else 320)
        later = [p.system for p in PARTS[labels.index(label) + 1:]]
        assert part.system not in later or all(p.label in new for p in PARTS[labels.index(label) + 1:]
                                                if p.system == part.system)
    places = [(p.system, ship_place(p.system, p.settings)) for p in PARTS]
    assert len(set(places)) == len(places)  # no two parts ship over each other
    served = {c for p in PARTS for c in p.claims}
    assert {"c2v-causal-vs-bidir", "c2v-ctx-position", "gircse-bidir-avg", "gircse-data-scale"} <= served
