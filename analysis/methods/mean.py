"""Mean readout: masked average over the text's tokens (special tokens and padding excluded). Every
position contributes, so early tokens are not squashed, but early tokens never saw later context.

Queries and documents: embedded alike (a retrieval query is read as any other text;
`EmbeddingMethod.as_role` returns the method itself).
"""

from analysis.methods.base import EmbeddingMethod, ReadoutParams

DEVIATIONS = ()  # a baseline readout: no paper's recipe to differ from (`analysis.core.deviations`)


class MeanPooling(EmbeddingMethod):
    name = "mean"
    title = "Mean pooling"
    summary = "Average of the text tokens' states; no prompt."
    Params = ReadoutParams
    pooling = "mean"
