"""embedscope analysis library: decoder-only LLMs as text embedders, with their internals exposed.

Pure Python (no Streamlit). Typical use::

    from analysis import load_backbone, get_method
    bb = load_backbone()                       # SmolLM2-135M-Instruct, offline
    emb = get_method("prompteol").encode(bb, ["A cat sat.", "A dog ran."])   # (2, 576) float32

Layer convention used everywhere: hidden state 0 is the embedding output; decoder layer l (0-based)
produces hidden state l+1; hidden state L (the last) is the final layer *after* the final norm, as
Hugging Face reports it.
"""

__version__ = "0.1.0"

from analysis.errors import TruncationWarning, UserError  # noqa: E402

__all__ = ["__version__", "UserError", "TruncationWarning", "load_backbone", "get_method", "list_methods"]


def __getattr__(name):  # lazy: importing analysis.data should not pay for torch
    if name == "load_backbone":
        from analysis.backbone import load_backbone

        return load_backbone
    if name in ("get_method", "list_methods"):
        from analysis import methods

        return getattr(methods, name)
    raise AttributeError(name)
