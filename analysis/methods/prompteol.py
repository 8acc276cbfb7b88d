"""PromptEOL (Jiang et al., 2023, "Scaling Sentence Embeddings with Large Language Models"): ask the model
to summarise the sentence in one word and read the state that would predict that word.

Queries and documents: embedded alike (a retrieval query is read as any other text;
`EmbeddingMethod.as_role` returns the method itself).
"""

from dataclasses import dataclass

from analysis.core.deviations import Deviation
from analysis.core.params import param
from analysis.methods.base import EmbeddingMethod, PromptParams


TEMPLATE = 'This sentence : "{text}" means in one word:"'

DEVIATIONS = (
    Deviation("in-context example", paper="reaches its best training-free scores with a demonstration in the prompt "
              "(PromptEOL with in-context learning: an example sentence and its one word before the text; its "
              "reference README evaluates the candidate demonstrations on the STS-B development set)",
              here="uses the bare PromptEOL prompt, no demonstration",
              why="the demonstration was searched per backbone on STS-B; none was searched for these models",
              restore="template=<the prompt with a demonstration before the text>"),
)


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
