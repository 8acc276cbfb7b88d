"""Token Prepending (Fu et al., 2024, ACL 2025, "Token Prepending: A Training-Free Approach for Eliciting Better
Sentence Embeddings from LLMs").

Under causal attention the text's early tokens never see its end. TP puts one placeholder token in front of the
text and, at the input of every decoder layer in [start, exit), overwrites the placeholder's state with the
state of the final token (which has read everything) from the previous layer's output. From then on every text
token can attend to a running summary of the whole sentence. The embedding is read out at an early-exit layer:
the PromptEOL last token (the paper's recipe) or the mean of the text tokens.

How it is wired here (no modeling code copied):
* The layout is built at tokenisation time: a placeholder position is inserted in front of the text's first
  token, with a fixed random input embedding (see below). Each position carries `source`, the position whose
  state it takes at a rewired layer (itself for ordinary tokens), and `kind` (0 token, 1 placeholder).
* Rewiring is a forward PRE-hook on each decoder layer in [start, exit) that replaces the incoming
  hidden_states by `hidden.gather(1, source)`: one vectorised gather per layer, padding-safe (pads map to
  themselves), out of place (captured states and autograd stay intact). `intervention` installs the hooks with
  `analysis.core.forward.hooks`, so they are removed on exit, also after an exception.
* Because the source is read from the layer's *input*, "the final token's state from the previous layer's
  output" is exactly what arrives. Hidden state l in a trace is the output of decoder layer l-1, before the
  rewiring of layer l's input.

Placeholder embedding: the paper adds a `<PST>` token to the vocabulary with a random embedding. A frozen model
cannot grow its vocabulary here, so the placeholder's input vector is drawn once from a Gaussian with the
per-dimension mean and spread of the model's own input embeddings, with an exposed `seed`. (Hugging Face's
`resize_token_embeddings` does something else: it initialises new rows at the mean embedding with a tiny
covariance, so its new tokens are all nearly the mean vector.) The TP reference used a standard normal vector; under RMSNorm only
its direction matters, and from layer `start` on it is overwritten anyway. Its input id is the pad id (never
looked up: the embedding row is replaced); traces label it `<PST>`.

Placement (`layout`): the reference prompt is `This sentence : <PST> "{text}" ...`, with <PST> a vocabulary token,
so the tokenizer splits the prompt at it: the text before it ends with a lone-space token on byte-level BPE
tokenizers (SmolLM2), and the placeholder sits before the opening quote. `layout="reference"` rebuilds exactly that
(the prompt up to the opening quote tokenized on its own, the placeholder, then ' "{text}" ...').
`layout="clean"` (default) inserts the placeholder immediately before the text's first token, so the prompt's own
tokenisation is exactly PromptEOL's with one position added (no lone-space token; the placeholder one token to the
right). On SmolLM2 the two layouts' embeddings have cosine 0.94-0.97.

Sliding-window layers (Gemma 3, Mistral): placeholders are ordinary positions, so in a sliding layer only the
tokens within `sliding_window` positions after a placeholder read it, exactly as for any token; nothing is
widened. TP's single placeholder reaches the rest of a text longer than the window only through the global
layers (Gemma 3 270M: every sixth; window 512, so it matters only for long documents). HTP's local placeholders
sit in front of their own block, so blocks shorter than the window always see their summaries; its global
placeholders at the start are, like TP's, out of a sliding layer's reach for tokens further than the window.

Trace capture (`encode(..., trace=True)`): `placeholders` (T,) int8 per text, 0 token, 1 local/TP placeholder,
2 HTP global placeholder.

Queries and documents: embedded alike (a retrieval query is read as any other text;
`EmbeddingMethod.as_role` returns the method itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.partition import tokenize_with_offsets
from analysis.core.tokens import PLACEHOLDER
from analysis.methods._rewiring import (EXIT_HELP, LAYOUTS, LOCAL, Placed, RewiringMethod, insert_placeholders,
                                        parse_depth)
from analysis.core.deviations import Deviation
from analysis.core.params import param

DEVIATIONS = (
    Deviation("placeholder position", paper="puts its <PST> token before the opening quote of "
              "'This sentence : <PST> \"{text}\" ...' (its reference code's prompts), which splits the prompt's "
              "tokens there (a lone-space token before it on byte-level BPE tokenizers)",
              here="inserts the placeholder immediately before the text's first token, so the prompt is tokenized "
                   "exactly as PromptEOL's (layout=clean)",
              why="a clean comparison with PromptEOL: the same tokens plus one position; the two give cosines of "
              "0.94-0.97 on SmolLM2", restore="layout=reference"),
    Deviation("placeholder vector", paper="adds <PST> to the vocabulary with a random embedding (a standard-normal "
              "row in its reference code)",
              here="draws the placeholder's input vector once from the per-dimension mean and spread of the model's "
                   "own input embeddings (seeded) at an inserted position",
              why="a frozen model here does not grow its vocabulary, and from layer `start` on the state is "
                  "overwritten anyway", restore=""),
    Deviation("exit layer", paper="rewires decoder layers 1-6 and exits at 7 of Llama-2-7B's 32, set per backbone "
              "(its reference code's config: 7 for its Llama-2 configurations, 3 for Llama-3-8B, 6 for Qwen2-7B and "
              "Gemma-2-9B)",
              here="takes the same share of the depth, exit=7/32 (7 of SmolLM2's 30, 4 of Gemma 3 270M's 18)",
              why="no exit layer was tuned for these models; a share carries the Llama-2-7B setting to any depth",
              restore="exit=7"),
    Deviation("readout layer", paper="reads its Llama-2-7B PromptEOL embedding at hidden state 27 of 32 (the 27th "
              "decoder layer's output), and at the second-to-last layer's output (-2) in its other configurations, "
              "which use the Pretended-CoT prompt (its reference code's config; the paper's text was not checked)",
              here="reads the second-to-last decoder layer's output (layer=-2, no final norm) on every model, with "
                   "the PromptEOL prompt",
              why="no readout layer was tuned for these models; -2 is the reference's setting on most of its "
                  "backbones, and HTP's reference reads -2 too; `layer=` takes any other layer",
              restore=""),
)


@dataclass(frozen=True)
class TokenPrependingParams:
    template: str = param(
        'This sentence : "{text}" means in one word:"',
        "PromptEOL's prompt (the reference code's Llama-2-7B configuration; its other configurations use the "
        "Pretended-CoT prompt); the placeholder goes in front of the text. Needs {text} once.",
        kind="template", copies=(1, 1),
    )
    start: int = param(
        1,
        "First decoder layer whose input is rewired. The reference code starts at 1: layer 0 sees the plain "
        "embeddings, where the final token has not read anything yet.",
        min=0, max=512,
    )
    exit: str = param("7/32", EXIT_HELP, parse=parse_depth)
    layer: int = param(
        -2,
        "Hidden state read out (early exit). -2 = output of the second-to-last decoder layer, no final norm: the "
        "reference code's setting for most of its backbones, though its Llama-2-7B PromptEOL configuration reads "
        "hidden state 27 of 32 (DEVIATIONS). The pass stops there.", kind="layer",
    )
    pooling: str = param("last", "Readout: the PromptEOL last token (the reference code) or the mean over the text "
                         "tokens (placeholder excluded).", choices=("last", "mean"))
    seed: int = param(0, "Seed of the placeholder's random input embedding (the reference code's <PST> is a random "
                      "standard-normal row).",
                      min=0, max=2**31 - 1)
    placeholder: bool = param(True, "Insert the placeholder. Off (with start = exit) is plain PromptEOL at the "
                              "readout layer: the ablation.")
    layout: str = param("clean", "Where the placeholder goes. clean: immediately before the text, the prompt tokenized "
                        "exactly as PromptEOL's. reference: as the reference code's prompt `This sentence : <PST> "
                        "\"{text}\"`, before the opening quote, with the lone-space token its tokenizer produces "
                        "before <PST> on byte-level BPE tokenizers such as SmolLM2's.", choices=LAYOUTS)


class TokenPrepending(RewiringMethod):
    name = "token_prepending"
    bench_reference = "prompteol"  # benchmark: against the same prompt without the placeholder and the hooks
    title = "Token Prepending (TP)"
    summary = "One placeholder before the text takes the final token's state in early layers; early exit."
    Params = TokenPrependingParams
    pooling = "last"
    labels = {LOCAL: "<PST>"}

    def has_placeholders(self) -> bool:
        return bool(self.params.placeholder)

    def layout(self, backbone, text: str) -> Placed:
        n_ph = int(self.params.placeholder)
        if n_ph and self.params.layout == "reference":
            return self._reference_layout(backbone, text)
        enc, _, _ = self._tokenize(backbone, text, lambda text_end, kept: n_ph)
        if not n_ph:
            return Placed(enc.ids, enc.segments, enc.truncated, np.zeros(len(enc), np.int8), np.arange(len(enc)))
        first_text = int(np.flatnonzero(enc.segments == 1)[0])
        # Source: the prompt's final token (the PromptEOL position), as in the reference's hidden[:, -1].
        return insert_placeholders(enc, [first_text], [LOCAL], [len(enc) - 1], self._placeholder_id(backbone))

    def _reference_layout(self, backbone, text: str) -> Placed:
        """The reference's tokenisation: the prompt up to the opening quote before {text} tokenized on its own (a
        vocabulary <PST> splits it there), the placeholder, then ' ' + the rest of the prompt with the text."""
        tok = backbone.tokenizer
        template = self.prompt_template(tok)
        prefix, rest = template.split(PLACEHOLDER, 1)
        q = len(prefix.rstrip()) - 1 if prefix.rstrip()[-1:] in ('"', "'") else len(prefix)
        head = tok(prefix[:q], add_special_tokens=True)["input_ids"]  # BOS (if the tokenizer adds one) + prefix
        lead, trail = _special_counts(tok)
        head = head[: len(head) - trail] if trail else head
        tail, _, _ = tokenize_with_offsets(tok, " " + prefix[q:].lstrip() + PLACEHOLDER + rest, text,
                                           backbone.facts.max_length - len(head) - 1 + lead)
        ids = np.concatenate([np.asarray(head, np.int64), [self._placeholder_id(backbone)], tail.ids[lead:]])
        segments = np.concatenate([np.zeros(len(head) + 1, np.int8), tail.segments[lead:]])
        T, ph = len(ids), len(head)
        kind, source = np.zeros(T, np.int8), np.arange(T, dtype=np.int64)
        kind[ph], source[ph] = LOCAL, T - 1  # the prompt's final token, as the reference's hidden[:, -1]
        return Placed(ids.astype(np.int64), segments, tail.truncated, kind, source)


def _special_counts(tokenizer) -> tuple[int, int]:
    """How many special tokens the tokenizer adds in front of and behind a text."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    for lead in range(len(with_special) - len(bare) + 1):
        if with_special[lead: lead + len(bare)] == bare:
            return lead, len(with_special) - len(bare) - lead
    return 0, 0
