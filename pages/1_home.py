"""Home

What embedscope is, the loaded model, and where to go from here.
"""

import pandas as pd
import streamlit as st

import ui

with ui.user_errors():
    st.title("embedscope")
    st.markdown(
        "A workbench for studying how **decoder-only language models become text embedders**. Pick a model "
        "(the built-in default is SmolLM2-135M-Instruct, fully offline), pick texts, and compare embedding "
        "methods (last token, mean pooling, PromptEOL, Echo and more) while looking inside the model: "
        "similarities, layers, attention and tokens. Every computation is cached on disk, so coming back is instant."
    )
    st.info("**Teaching?** The [Lessons](lessons) walk through six ideas step by step, each with a live figure, a "
            "\"try it\" control and a presenter mode for the projector; each lesson downloads as one HTML file.")
    backbone = ui.get_backbone()

    left, right = st.columns([3, 2])
    with left:
        st.subheader("Views")
        for path, page in list(zip(ui.page_files(), ui.pages()))[1:]:
            st.page_link(page, label=page.title)
            if summary := ui.nav.page_summary(path):
                st.caption(summary)
        st.subheader("How to read this tool")
        st.markdown(
            "Each view takes texts and one or more **methods** (a prompt template plus a readout: which "
            "token(s) and which layer). A method's embedding of a text is one vector; views compare those "
            "vectors (cosine similarity, neighbours, correlation with human ratings) or open the forward pass "
            "that produced them. Parameters default to the values in the method's paper, and their help text "
            "says why. Numbers come from this small CPU model: when a paper's claim does not reproduce here, the "
            "view shows it as it is."
        )
        st.info(f"**Layer convention.** {ui.LAYER_CONVENTION} The last hidden state "
                f"({backbone.facts.n_layers} here) is taken after the final norm; layer -1 means that one.")
    with right:
        st.subheader("Model")
        facts = ui.facts_table(backbone.facts)
        st.table(pd.DataFrame({"fact": list(facts), "value": list(facts.values())}).set_index("fact"))
        st.caption(f"Cache identity: {ui.md(backbone.identity)}")
