"""embedscope: Streamlit entry point. It only routes: the shared sidebar, then the page chosen from pages/."""

import streamlit as st

import ui

st.set_page_config(page_title="embedscope", page_icon="🔬", layout="wide")
ui.sidebar()
st.navigation(ui.pages()).run()
