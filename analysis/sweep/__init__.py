"""Layer sweeps for KV-Embedding: the grid of cells, the suffix runner at the cost floor, the Ray executor."""
