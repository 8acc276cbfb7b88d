"""PromptEOL (Jiang et al., 2023, "Scaling Sentence Embeddings with Large Language Models"): ask the model
to summarise the sentence in one word and read the state that would predict that word."""

from dataclasses import dataclass

from analysis.methods.base import EmbeddingMethod, param


@dataclass(frozen=True)
class PromptEOLParams:
    template: str = param(
        'This sentence : "{text}" means in one word:"',
        "The paper's prompt; the closing quote makes the next token the one-word summary.",
        kind="template",
    )
    layer: int = param(-1, "Hidden state read out; the paper uses the final layer.", kind="layer")


class PromptEOL(EmbeddingMethod):
    name = "prompteol"
    title = "PromptEOL"
    summary = "One-word summary prompt, last-token readout."
    Params = PromptEOLParams
    pooling = "last"
