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


def code_version(modules=None) -> str:
    """`__version__` plus a digest of the source of `modules` (dotted names) and every project module they import;
    None: the whole package. Cache keys name the modules that compute each result (`cache.keys`), so an edit
    invalidates only what that code computed; a trained artefact's manifest records the whole package's."""
    from analysis.core.versions import source_digest

    return f"{__version__}+{source_digest(modules)}"


from analysis.core.errors import TruncationWarning, UserError  # noqa: E402

__all__ = ["__version__", "code_version", "UserError", "TruncationWarning", "load_backbone", "get_method",
           "list_methods"]


def __getattr__(name):  # lazy: importing analysis.data.corpora should not pay for torch
    if name == "load_backbone":
        from analysis.models.backbone import load_backbone

        return load_backbone
    if name in ("get_method", "list_methods"):
        from analysis import methods

        return getattr(methods, name)
    raise AttributeError(name)
