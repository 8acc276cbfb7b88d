"""Last-token readout: the final real token's state, the only position that has seen the whole text
under causal attention.

Queries and documents: embedded alike (a retrieval query is read as any other text;
`EmbeddingMethod.as_role` returns the method itself).
"""

from analysis.methods.base import EmbeddingMethod, ReadoutParams

DEVIATIONS = ()  # a baseline readout: no paper's recipe to differ from (`analysis.core.deviations`)


class LastToken(EmbeddingMethod):
    name = "last"
    title = "Last token"
    summary = "State of the final (non-pad) token; no prompt."
    Params = ReadoutParams
    pooling = "last"
