"""Integration on the real default model (SmolLM2-135M-Instruct, 30 layers, d=576). Kept small: a few
texts per test, and one 100-pair STS-B slice when the shared development data is present."""

import time

import numpy as np
import pytest
import torch

from analysis import load_backbone
from analysis.data.files import read_sts
from analysis.core.forward import run
from analysis.methods import get_method
from analysis.eval.sts import sts_spearman
from analysis.core.tokens import collate, encode_texts
from tests.conftest import stsb_dev_or_skip

pytestmark = pytest.mark.real

BASELINES = ["last", "mean", "prompteol", "echo"]
TEXTS = [
    "A man is playing a guitar.",
    "The stock market fell sharply after the announcement of new tariffs.",
    "Cats sleep a lot.",
    "She deposited the cheque at the bank before walking along the river bank.",
]


def test_facts_of_the_default_model(real):
    f = real.facts
    assert (f.architecture, f.n_layers, f.n_heads, f.n_kv_heads, f.hidden_size) == ("llama", 30, 9, 3, 576)
    assert next(real.model.parameters()).dtype == torch.float32
    assert real.identity.startswith("default:")


def test_describe_gives_the_loaded_identity_without_loading(real, tmp_path):
    from analysis.models.describe import describe

    d = describe("default")
    assert (d.identity, d.facts) == (real.identity, real.facts)  # parameters counted from the safetensors header
    assert describe("default", dtype="bfloat16").identity == f"{real.identity}|bfloat16|cpu"  # as load_backbone
    assert describe(str(tmp_path)) is None  # not built in: only a load can tell


def test_the_sidebar_handle_tokenizes_as_the_loaded_model_without_loading_it(real):
    """The Attention and Sensitivity pages only tokenize before their stored figure: the handle's tokenizer, read
    alone from the converted folder, must be the loaded model's in every respect a method uses."""
    from analysis.models.describe import describe
    from ui.model import LazyBackbone

    handle = LazyBackbone(describe("default"), lambda: pytest.fail("loaded the weights"))
    alone = handle.tokenizer
    assert alone is not real.tokenizer and handle.tokenizer is alone  # read once per handle
    assert (alone.pad_token_id, alone.padding_side, len(alone)) == (real.tokenizer.pad_token_id, "right",
                                                                     len(real.tokenizer))
    assert alone(TEXTS, padding=True)["input_ids"] == real.tokenizer(TEXTS, padding=True)["input_ids"]
    assert alone.apply_chat_template([{"role": "user", "content": TEXTS[0]}], tokenize=False) == \
        real.tokenizer.apply_chat_template([{"role": "user", "content": TEXTS[0]}], tokenize=False)


@pytest.mark.parametrize("name", BASELINES)
def test_embeddings_are_unit_float32_rows(real, name):
    emb = get_method(name).encode(real, TEXTS)
    assert emb.shape == (len(TEXTS), 576) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(emb).all()
    assert len({tuple(np.round(e, 4)) for e in emb}) == len(TEXTS)  # four texts, four different vectors


def test_prompteol_puts_paraphrases_closer_than_unrelated_sentences(real):
    triples = [  # (anchor, paraphrase, unrelated)
        ("A man is playing a guitar.", "A guy plays the guitar.", "The stock market fell sharply today."),
        ("The children are playing football in the park.", "Kids play soccer in the park.",
         "He cooked pasta for dinner."),
        ("The cat is sleeping on the sofa.", "A cat naps on the couch.", "The train to Paris was delayed."),
    ]
    emb = get_method("prompteol").encode(real, [s for t in triples for s in t]).reshape(len(triples), 3, -1)
    for k, (a, p, u) in enumerate(emb):
        assert a @ p > a @ u, triples[k]


@pytest.mark.parametrize("name", ["prompteol", "echo"])
def test_batch_equals_one_by_one_on_the_real_model(real, name):
    m = get_method(name)
    batched = m.encode(real, TEXTS, batch_size=4)
    single = np.stack([m.encode(real, [t])[0] for t in TEXTS])
    left = m.encode(real, TEXTS, batch_size=4, padding_side="left")
    np.testing.assert_allclose(batched, single, atol=1e-4)
    np.testing.assert_allclose(batched, left, atol=1e-4)


def test_captured_hidden_states_equal_hf_on_the_real_model(real):
    items = encode_texts(real.tokenizer, "{text}", TEXTS[:2], real.facts.max_length)
    batch = collate(items, real.tokenizer.pad_token_id, "right")
    with torch.inference_mode():
        cap = run(real, batch, "all")
        ref = real.decoder(**batch.model_inputs(), output_hidden_states=True, use_cache=False)
    keep = batch.attention_mask.bool()
    for k in range(real.facts.n_layers + 1):
        torch.testing.assert_close(cap.hidden[k][keep], ref.hidden_states[k][keep], rtol=0, atol=1e-5)


def test_second_load_is_fast_and_identity_is_stable(real):
    seconds = []
    for _ in range(2):  # the CPU is shared: take the better of two loads
        start = time.perf_counter()
        again = load_backbone()
        seconds.append(time.perf_counter() - start)
        assert again.identity == real.identity and again.facts == real.facts
    assert min(seconds) < 2.0, seconds


def test_prompteol_beats_last_token_on_an_stsb_slice(real):
    pairs = read_sts(stsb_dev_or_skip(), limit=100)
    scores = {name: sts_spearman(real, get_method(name), pairs)["spearman"] for name in ("last", "prompteol")}
    assert scores["prompteol"] > scores["last"] + 0.1, scores
