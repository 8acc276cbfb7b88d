"""Hierarchical Token Prepending (Ding et al., 2025, "Hierarchical Token Prepending: Enhancing Information Flow in
Decoder-based LLM Embeddings").

Token Prepending squeezes a whole document into one placeholder, and last-token readout squeezes it into one
position. HTP removes both bottlenecks: the text is cut into blocks (K sentences, or every N tokens), a *local*
summary token goes in front of every block and a run of M *global* summary tokens (M = number of blocks) goes
at the very start of the text. At the input of every decoder layer in [start, exit), each local token takes the
state of its block's final token and each global token then takes the state of its local token, so every
position can read a summary of every block, including the blocks after it. The embedding is the mean over the
real text tokens (placeholders excluded) at an early-exit layer; last token is an option.

        [G1 G2 G3] [L1] block 1 ... [L2] block 2 ... [L3] block 3 ...
          ^  ^  ^    ^-- final token of block 1 (L2 <- end of block 2, ...)
          '--'--'--- G_k <- L_k  (= end of block k)

Wiring, placeholder embeddings and the trace capture are shared with Token Prepending (see
`analysis.methods.token_prepending`): a pre-hook per rewired decoder layer does one gather over a precomputed
per-position source index. "Global takes its local's state" happens within the same layer input, where the local
token already holds its block's final state, so the composed source (global -> end of block) is one gather.
The two placeholder kinds get two different random input vectors (the reference adds `<PST>` and `<B-PST>`).

Ablations: `summary="local"` (sentence-level TP, no global tokens), `"global"` (no local tokens: the global
tokens read the block ends directly, the reference's `omit_pst`), `"none"` (no placeholders).

Differences from the reference code, on purpose: summaries copy the block's final text token (the reference's
parser copies the token after it, which `layout="reference"` reproduces); sentences come from pysbd (the reference uses spaCy), the text is
not edited (the reference appends a '.' to sentences without one), and the placeholders are inserted as
positions rather than as vocabulary tokens (see token_prepending for the embedding choice).

Queries and documents: embedded alike (a retrieval query is read as any other text;
`EmbeddingMethod.as_role` returns the method itself).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.params import param
from analysis.methods._rewiring import (EXIT_HELP, GLOBAL, LAYOUTS, LOCAL, Placed, RewiringMethod,
                                        insert_placeholders, parse_depth)
from analysis.core.deviations import Deviation
from analysis.core.partition import PARTITIONS, token_blocks

DEVIATIONS = (
    Deviation("summary source", paper="copies, for each block's summary tokens, the token after the block's last "
              "text token (its reference parser's indexing)", here="copies the block's final text token "
              "(layout=clean)", why="the block's own final token is the one that has read the block; the reference's "
              "is a lone space between sentences on SmolLM2", restore="layout=reference"),
    Deviation("sentence splitter", paper="splits sentences with spaCy (en_core_web_sm) in its reference code, which "
              "also appends '.' to a sentence that ends without '.', '!', '?' or a quote",
              here="splits with pysbd and leaves the text as it is",
              why="pysbd is pure Python with no model to download; an embedding of a text should embed that text",
              restore=""),
    Deviation("placeholder vectors", paper="adds <PST> and <B-PST> to the vocabulary and resizes the embedding "
              "matrix with no initialisation of its own (its reference code: transformers' resize_token_embeddings, "
              "whose default starts new rows at about the mean input embedding)",
              here="draws two input vectors from the model's own embedding statistics at inserted positions",
              why="a frozen model here does not grow its vocabulary", restore=""),
    Deviation("exit layer", paper="rewires decoder layers 1-6 and exits at 7 of Mistral-7B-Instruct-v0.3's 32 (its "
              "reference code's config, the value Token Prepending's reference uses on Llama-2-7B)",
              here="takes the same share of the depth, exit=7/32", why="no exit layer was tuned for these models",
              restore="exit=7"),
    Deviation("retrieval queries", paper="gives retrieval queries an instruction, '<s> Retrieve relevant document. "
              "Text:{text} </s>', and embeds documents bare between BOS and EOS, '<s> {text} </s>' (its reference "
              "code's config for HTP with mean pooling)",
              here="embeds queries and documents alike, as the text with no instruction",
              why="HTP here has one template for every text, and the abstract says nothing of query instructions; "
                  "the reference's query instruction was found in its config by the check of November 2026",
              restore=""),
)

SUMMARIES = ("both", "local", "global", "none")


@dataclass(frozen=True)
class HTPParams:
    partition: str = param("sentences", "Blocks of K sentences (the reference code's sentence blocks; pysbd splitter "
                           "here), of N tokens (the reference code's every-k-tokens option), or matched: every "
                           "floor(tokens / sentences) tokens, the paper's Fig. 8 fixed-interval baseline with as many "
                           "blocks as sentences (for the claim that sentence blocks beat it).", choices=PARTITIONS)
    k: int = param(1, "Sentences per block; the reference code puts one summary token before each sentence.", min=1,
                   max=1000)
    n_tokens: int = param(32, "Tokens per block when partition = tokens (about one sentence; no value was taken from "
                          "the paper or its code).", min=1, max=100000)
    summary: str = param("both", "Which summary tokens: both (HTP), local only (sentence-level TP), global only, "
                         "or none (the plain forward at the readout layer).", choices=SUMMARIES)
    start: int = param(1, "First decoder layer whose input is rewired (the reference code's setting, as TP's).",
                       min=0, max=512)
    exit: str = param("7/32", EXIT_HELP + " HTP uses TP's setting.", parse=parse_depth)
    layer: int = param(-2, "Hidden state read out (early exit): -2 = second-to-last decoder layer's output, no final "
                       "norm, as in the reference code's configuration (Mistral-7B-Instruct-v0.3).", kind="layer")
    pooling: str = param("mean", "Readout: mean over the text tokens, placeholders excluded (the paper: mean avoids "
                         "last-token over-squashing), or last token.", choices=("mean", "last"))
    template: str = param("{text}", "Prompt around the text (needs {text} once); the reference code embeds documents "
                          "bare (queries get an instruction: DEVIATIONS). "
                          "A template that starts with the text gets the tokenizer's BOS (else EOS) token in front "
                          "when the tokenizer adds none itself: position 0 must not be a placeholder.",
                          kind="template", copies=(1, 1))
    seed: int = param(0, "Seed of the two random placeholder embeddings (local and global); the reference code "
                      "leaves its new rows to transformers' resize (DEVIATIONS).",
                      min=0, max=2**31 - 1)
    layout: str = param("clean", "Which token a summary copies. clean: its block's final text token. reference: the "
                        "token after it, as the reference code's parser does (a lone-space token between sentences "
                        "on SmolLM2; clipped to the final token).", choices=LAYOUTS)


class HTP(RewiringMethod):
    name = "htp"
    bench_reference = "mean"  # benchmark: against mean pooling of the same texts (no placeholders, no hooks)
    title = "Hierarchical Token Prepending (HTP)"
    summary = "Local summary token per block + global summary tokens at the start; mean readout, early exit."
    Params = HTPParams
    pooling = "mean"
    labels = {LOCAL: "<PST>", GLOBAL: "<B-PST>"}

    def blocks(self, text_end, text: str) -> np.ndarray:
        """(n,) block number of each text token (see analysis.core.partition.token_blocks)."""
        p = self.params
        size = p.k if p.partition == "sentences" else p.n_tokens
        return token_blocks(text_end, text, p.partition, size)

    def has_placeholders(self) -> bool:
        return self.params.summary != "none"

    def layout(self, backbone, text: str) -> Placed:
        summary = self.params.summary
        per_block = {"both": 2, "local": 1, "global": 1, "none": 0}[summary]

        def reserve(text_end, kept):  # placeholders this (possibly cut) text will need
            return per_block * (int(self.blocks(text_end, kept)[-1]) + 1) if per_block and len(text_end) else 0

        enc, text_end, kept = self._tokenize(backbone, text, reserve)
        text_tokens = enc.segments == 1
        # blocks of the text kept (a cut text's search also tries longer ones after it, so not the last one reserved)
        block = self.blocks(text_end[text_tokens], kept) if per_block else np.zeros(int(text_tokens.sum()), np.int64)
        tpos = np.flatnonzero(text_tokens)  # (n,) positions of the text tokens
        change = np.flatnonzero(np.diff(block)) + 1  # (M-1,) index (into tpos) where a new block starts
        firsts = tpos[np.r_[0, change]]  # (M,) first token of each block
        lasts = tpos[np.r_[change - 1, len(tpos) - 1]]  # (M,) final token of each block
        if self.params.layout == "reference":  # the reference parser's off-by-one: the token after each block
            lasts = np.minimum(lasts + 1, len(enc) - 1)
        M = len(firsts)
        before, kinds, sources = [], [], []
        if summary in ("both", "global"):  # M global tokens at the very start of the text
            before.append(np.full(M, tpos[0])), kinds.append(np.full(M, GLOBAL)), sources.append(lasts)
        if summary in ("both", "local"):  # one local token in front of each block (after the globals)
            before.append(firsts), kinds.append(np.full(M, LOCAL)), sources.append(lasts)
        if not before:
            return Placed(enc.ids, enc.segments, enc.truncated, np.zeros(len(enc), np.int8), np.arange(len(enc)))
        return insert_placeholders(enc, np.concatenate(before), np.concatenate(kinds), np.concatenate(sources),
                                   self._placeholder_id(backbone))
