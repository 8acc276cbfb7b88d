"""layout=reference|clean for TP, HTP and Echo: the three documented differences from the reference code."""

import numpy as np
import pytest

from analysis.methods import get_method
from analysis.methods._rewiring import LOCAL

TEXTS = ["A cat sat on the mat. The dog ran away.", "Hello world!"]


def test_echo_reference_adds_bos_and_pools_the_final_eos(tiny_llama):
    tok = tiny_llama.tokenizer
    clean, ref = (get_method("echo", layout=lay).prepare(tiny_llama, TEXTS[:1])[0] for lay in ("clean", "reference"))
    assert ref.ids[0] == tok.bos_token_id and ref.ids[-1] == tok.eos_token_id and ref.segments[-1] == 2
    assert np.array_equal(ref.ids[1:-1], clean.ids) and len(ref) == len(clean) + 2
    a, b = (get_method("echo", layout=lay).encode(tiny_llama, TEXTS) for lay in ("clean", "reference"))
    assert a.shape == b.shape and np.abs(a - b).max() > 1e-4


def test_tp_reference_puts_the_placeholder_before_the_quote_after_a_lone_space(tiny_llama):
    tok = tiny_llama.tokenizer
    clean = get_method("token_prepending").layout(tiny_llama, TEXTS[1])
    ref = get_method("token_prepending", layout="reference").layout(tiny_llama, TEXTS[1])
    ph_c, ph_r = int(np.flatnonzero(clean.kind == LOCAL)[0]), int(np.flatnonzero(ref.kind == LOCAL)[0])
    assert clean.segments[ph_c + 1] == 1  # clean: right before the text
    assert tok.convert_ids_to_tokens(int(ref.ids[ph_r - 1])) == "Ġ"  # reference: after the lone-space token
    assert tok.decode(ref.ids[ph_r + 1:ph_r + 3]).strip() == '"'  # ... and before ' "'
    assert ref.source[ph_r] == len(ref) - 1 and clean.source[ph_c] == len(clean) - 1
    # the text tokens and the prompt's end are the same in both
    assert np.array_equal(clean.ids[clean.segments == 1], ref.ids[ref.segments == 1])
    assert np.array_equal(get_method("token_prepending", layout="reference").encode(tiny_llama, TEXTS).shape,
                          (2, tiny_llama.facts.hidden_size))


def test_htp_reference_copies_the_token_after_each_block(tiny_llama):
    clean = get_method("htp").layout(tiny_llama, TEXTS[0])
    ref = get_method("htp", layout="reference").layout(tiny_llama, TEXTS[0])
    assert np.array_equal(clean.ids, ref.ids) and np.array_equal(clean.kind, ref.kind)
    ph = np.flatnonzero(clean.kind > 0)
    tokens = np.flatnonzero(clean.kind == 0)  # positions of real (non-placeholder) tokens, in order
    for p in ph:  # reference: the next real token after the block's final one (the final token stays)
        i = np.searchsorted(tokens, clean.source[p])
        assert ref.source[p] == tokens[min(i + 1, len(tokens) - 1)]
    assert (ref.source[ph] != clean.source[ph]).any()


@pytest.mark.real
def test_tp_reference_on_smollm2_has_the_lone_space_token(real):
    ref = get_method("token_prepending", layout="reference").layout(real, "A cat.")
    ph = int(np.flatnonzero(ref.kind == LOCAL)[0])
    assert real.tokenizer.convert_ids_to_tokens(int(ref.ids[ph - 1])) == "Ġ"
