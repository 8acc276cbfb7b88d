"""The sidebar's handle on a built-in model (`ui.model.LazyBackbone`): identity and facts without loading, every
other attribute from the model loaded once, on first use."""

import threading
from types import SimpleNamespace

import pytest

from analysis.models.tiny import tiny_backbone
from ui.model import LazyBackbone


def test_identity_and_facts_come_without_a_load_and_the_rest_from_one_load():
    real, loads = tiny_backbone("llama"), []
    described = SimpleNamespace(identity=real.identity, facts=real.facts, folder="")  # what `describe` gives
    handle = LazyBackbone(described, lambda: loads.append(1) or real)
    assert (handle.identity, handle.facts) == (real.identity, real.facts) and not handle.is_loaded and not loads
    threads = [threading.Thread(target=lambda: handle.model) for _ in range(4)]  # pages' workers ask at once
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert handle.model is real.model and handle.tokenizer is real.tokenizer and handle.lock is real.lock
    assert loads == [1] and handle.is_loaded


def test_private_and_missing_names_are_not_loaded_for():
    real = tiny_backbone("llama")
    handle = LazyBackbone(SimpleNamespace(identity=real.identity, facts=real.facts, folder=""),
                          lambda: pytest.fail("loaded"))
    with pytest.raises(AttributeError):
        handle._private  # noqa: B018 -- copy and pickle probe such names: they must not load the model
