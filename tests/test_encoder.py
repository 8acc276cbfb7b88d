"""Encoder: sentence-transformers-style encode, and MTEB v2's EncoderProtocol checked against the installed mteb."""

import numpy as np
import pytest

from analysis import get_method
from analysis.eval.mteb_encoder import Encoder
from analysis.core.errors import UserError
from analysis.methods import list_methods
from tests.conftest import tiny_method

TEXTS = ["A cat sat on the mat.", "Dogs bark at night.", "The market fell sharply today."]


@pytest.fixture(scope="module")
def enc(tiny_llama):
    return Encoder(tiny_llama, get_method("mean"), batch_size=2)


def test_encode_matches_the_method_and_accepts_every_input_form(enc, tiny_llama):
    want = get_method("mean").encode(tiny_llama, TEXTS)
    got = enc.encode(TEXTS)
    assert got.shape == (3, tiny_llama.facts.hidden_size) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(enc.encode(TEXTS[0]), want[0], atol=1e-6)  # one string -> (d,)
    # MTEB hands over a DataLoader of {"text": [...]} batches
    batches = [{"text": TEXTS[:2]}, {"text": TEXTS[2:]}]
    np.testing.assert_allclose(enc.encode(batches, task_metadata=None, hf_split="test", hf_subset="default"),
                               want, atol=1e-6)
    raw = enc.encode(TEXTS, normalize_embeddings=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    assert enc.encode(TEXTS, convert_to_tensor=True).shape == (3, tiny_llama.facts.hidden_size)
    with pytest.raises(UserError):
        enc.encode([3.5])


def test_torch_dataloader_batches(enc):
    from torch.utils.data import DataLoader

    from datasets import Dataset

    loader = DataLoader(Dataset.from_dict({"text": TEXTS}), batch_size=2)
    np.testing.assert_allclose(enc.encode(loader, task_metadata=None, hf_split="test", hf_subset="default"),
                               enc.encode(TEXTS), atol=1e-6)


def test_similarity_is_cosine(enc):
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    b = np.array([[3.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(enc.similarity(a, b), [[1, 1 / np.sqrt(2)], [0, 1 / np.sqrt(2)]], atol=1e-6)
    np.testing.assert_allclose(enc.similarity_pairwise(a, b), [1, 1 / np.sqrt(2)], atol=1e-6)


def test_satisfies_the_installed_mteb_encoder_protocol(enc):
    from mteb.models import EncoderProtocol, ModelMeta

    assert isinstance(enc, EncoderProtocol)
    assert not isinstance(object(), EncoderProtocol)  # the check can fail
    meta = enc.mteb_model_meta
    assert isinstance(meta, ModelMeta)
    assert meta.name == enc.name and meta.embed_dim == 64 and meta.similarity_fn_name == "cosine"
    other = Encoder(enc.backbone, get_method("prompteol"))
    assert other.name != enc.name and other.params_digest != enc.params_digest


def test_every_registered_method_is_an_encoder(tiny_llama):
    from mteb.models import EncoderProtocol

    for info in list_methods():
        e = Encoder(tiny_llama, tiny_method(info.name))
        assert isinstance(e, EncoderProtocol), info.name
        assert e.encode(TEXTS[:2]).shape == (2, e.get_sentence_embedding_dimension()), info.name


def test_mteb_evaluate_runs_offline_on_a_mock_sts_task(enc):
    import mteb
    from mteb.mocks.mock_tasks.sts import MockSTSTask

    result = mteb.evaluate(enc, MockSTSTask(), cache=None)
    assert result.model_name == enc.name
    scores = result.task_results[0].scores["test"][0]
    assert np.isfinite(scores["cosine_spearman"])
