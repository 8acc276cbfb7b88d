"""Explain

Why are two texts similar? Each token's and each token pair's share of their similarity under a method (integrated
Jacobians, the completeness gap shown), the deletion curve that tests it, and what each embedding decodes to.
"""

import dataclasses

import streamlit as st

import ui
from analysis.core import budgets
from analysis.inspect.explain_settings import BASELINES, STEPS, Settings
from analysis.methods import list_methods
from ui import explain as X

DEFAULT_A = "A black dog jumping off a wood porch."  # a paraphrase the last token and PromptEOL judge apart
DEFAULT_B = "A black dog is jumping off a wooden porch"
DIRECTIONS = {2: "token pairs in the plane of the two changes (exact)", 1: "tokens only (fastest)",
              8: "token pairs, full space (estimated with 8 directions)"}


def from_address() -> dict:
    """?a=...&b=...&method=...&method2=... (method2=none: one method) opens that pair and those methods: the widgets'
    defaults, so a session that has chosen already keeps its choice."""
    q = st.query_params
    names = {m.name for m in list_methods()}
    second = q.get("method2", "last")
    return {"a": q.get("a", DEFAULT_A), "b": q.get("b", DEFAULT_B),
            "method": q["method"] if q.get("method") in names else "prompteol",
            "method2": second if second in names else "last", "second": second != "none"}


def to_address(a: str, b: str, methods) -> None:
    """The address names what is shown, so it can be shared (and a lesson can link to it)."""
    st.query_params.update({"a": a, "b": b, "method": methods[0].name,
                            "method2": methods[1].name if len(methods) > 1 else "none"})


def settings() -> Settings:
    with st.expander("Settings: path, baseline, token pairs"):
        c1, c2, c3 = st.columns(3)
        steps = int(c1.number_input("Path nodes per text (at most)", 3, budgets.limit("explain_steps"), STEPS,
                                    key="explain_steps", help="The adaptive rule puts nodes where the path turns "
                                    "and stops once the parts add up; more nodes, a smaller completeness gap."))
        baseline = c2.selectbox("Baseline", BASELINES, key="explain_baseline",
                                format_func={"mean": "average token vector", "pad": "padding token"}.get,
                                help="What every input vector starts from (the first position keeps its own: the "
                                     "attention sink). The parts add up to the similarity beyond it.")
        directions = c3.selectbox("Token pairs", list(DIRECTIONS), format_func=DIRECTIONS.get, key="explain_dirs",
                                  help="The plane holds the similarity and is exact; the full space needs the "
                                       "embedding's width in backward passes, so it is estimated.")
        through = st.checkbox("Soft tokens: differentiate through the generation", key="explain_through",
                              help="By default the generated soft-token inputs are held as inputs of their own, so "
                                   "they get shares beside the words; through the generation, their effect is "
                                   "credited to the words that caused it instead.")
    return Settings(steps=steps, baseline_kind=baseline, directions=directions, through_generation=through)


def column(method, a: str, b: str, chosen: Settings) -> None:
    """One method's explanation: scores, tokens, token pairs, curves, decoded tokens."""
    st.subheader(method.title)
    # the choice only matters to soft tokens: another method shares its entry whatever the box says
    chosen = dataclasses.replace(chosen, through_generation=chosen.through_generation and method.name == "soft_tokens")
    ex, _ = X.explained(method, a, b, chosen)
    st.markdown(X.sentence(ex))
    if warning := X.gap_warning(ex):
        st.warning(warning)
    top = X.scale(ex)
    for name, side in (("A", ex.a), ("B", ex.b)):
        st.markdown(f"**{name}**")
        st.html(X.token_strip(side, top))
    if ex.pairs is not None:
        fig, frame = X.pair_heatmap(ex, method.title)
        ui.show_figure(fig, frame, f"pairs_{method.name}")
    c = X.curves(method, a, b, chosen)
    fig, frame = X.curves_figure(c, method.title)
    ui.show_figure(fig, frame, f"curves_{method.name}")
    for name, text in (("A", a), ("B", b)):
        lens = X.lens(method, text)
        if lens.applies == "no":
            st.info(f"**What {name}'s embedding says.** {ui.md(lens.reason)}")
            continue
        st.markdown(f"**What {name}'s embedding says:** " + ui.md(", ".join(X.shown_token(t) for t in lens.tokens[-1]))
                    + (f" *({ui.md(lens.reason)})*" if lens.reason else ""))
        with st.expander(f"{name}, layer by layer (the final norm and the LM head on each layer's readout)"):
            ui.show_table(X.lens_table(lens), index=False)
    with st.expander("What is attributed"):
        st.markdown("\n".join(f"- {ui.md(n)}" for n in ex.notes))


with ui.user_errors():
    st.title("Explain")
    st.caption("Why does a method call two texts similar? Every token of A and of B gets its share of the "
               "similarity beyond a baseline (the interaction: the cosine once what each text shares with the "
               "baseline is taken out), and each pair of tokens its share of that, by integrated Jacobians along a "
               "straight path from the baseline; the shares add up to the interaction up to the completeness gap "
               "shown. Red: the token makes the texts more alike; blue: less. The deletion curve removes the words "
               "in the order of their shares and re-scores, against random and attention order: a faithful "
               "attribution drops faster. The method's own tokens (its prompt, placeholders, contextual or soft "
               "tokens) are shown apart from the words.")
    asked = from_address()
    a = st.text_area("Text A", asked["a"], key="explain_a", height=70).strip()
    b = st.text_area("Text B", asked["b"], key="explain_b", height=70).strip()
    ui.check_sizes([a, b], "the texts")
    if not a or not b:
        st.info("Enter two texts.")
        st.stop()
    left, right = st.columns(2)
    with left:
        methods = ui.method_picker("explain1", default=(asked["method"],), multi=False)
    with right:
        if st.checkbox("Side by side with a second method", value=asked["second"], key="explain_second"):
            methods += ui.method_picker("explain2", default=(asked["method2"],), multi=False)
    chosen = settings()
    to_address(a, b, methods)
    for col, method in zip(st.columns(len(methods)), methods):
        with col:
            column(method, a, b, chosen)
