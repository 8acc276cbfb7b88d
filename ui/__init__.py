"""Shared Streamlit widgets for embedscope's pages: the model, the inputs, cached computations, figures.

Pages stay short by going through this package (the only Streamlit code outside `app.py` and `pages/`):

    import ui
    with ui.user_errors():
        texts = ui.text_input("my_page")
        methods = ui.method_picker("my_page", default=("prompteol", "mean"))
        for m in methods:
            emb = ui.encode(m, texts)          # through the cache, progress bar, truncation warnings
        ui.show_figure(fig, frame, "my_figure")  # chart (PNG from its toolbar) + CSV download
        st.caption(ui.md(texts.name)); fig.update_layout(title=ui.label(texts.name))  # user text shown as text
"""

from ui import deviations
from ui.compute import encode, encode_with_info, progress_bar, ready, shown, user_errors
from ui.figures import show_figure, show_table
from ui.inputs import (MAX_CHARS, MAX_PAIRS, MAX_TEXTS, check_sizes, choice, method_picker, pairs_input, text_input,
                       upload_bytes)
from ui.model import LAYER_CONVENTION, facts_table, get_backbone, model_name, sidebar, store
from ui.nav import page_files, pages
from ui.text import label, md

__all__ = [
    "get_backbone", "store", "sidebar", "model_name", "facts_table", "LAYER_CONVENTION",
    "method_picker", "choice", "text_input", "pairs_input", "MAX_TEXTS", "MAX_CHARS", "MAX_PAIRS",
    "encode", "encode_with_info", "shown", "progress_bar", "ready", "user_errors",
    "show_figure", "show_table", "md", "label", "check_sizes", "upload_bytes",
    "pages", "page_files", "deviations",
]
