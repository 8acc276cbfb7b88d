"""PromptEOL (Jiang et al., 2023, "Scaling Sentence Embeddings with Large Language Models"): ask the model
to summarise the sentence in one word and read the state that would predict that word."""

from dataclasses import dataclass

from analysis.methods.base import EmbeddingMethod, PromptParams, param


TEMPLATE = 'This sentence : "{text}" means in one word:"'


@dataclass(frozen=True)
class PromptEOLParams(PromptParams):
    template: str = param(TEMPLATE, "The paper's prompt; the closing quote makes the next token the one-word summary.",
                          kind="template")


class PromptEOL(EmbeddingMethod):
    name = "prompteol"
    title = "PromptEOL"
    summary = "One-word summary prompt, last-token readout."
    Params = PromptEOLParams
    pooling = "last"
