"""embedscope: Streamlit entry point. It only routes: the page chosen from pages/, framed by the shared sidebar."""

import streamlit as st

import ui

st.set_page_config(page_title="embedscope", page_icon="🔬", layout="wide")
page = st.navigation(ui.pages())  # first: resolve the requested page before anything slow (the model) runs
ui.sidebar()
page.run()
