"""Claims

Does the paper hold on my model? The five papers' headline claims, each tested on the model chosen in the sidebar
by a rule fixed before measuring: the verdict with its number and interval, the deviations from the paper beside
it, and a link to the view that shows the evidence. Run it for any model you load: an estimate first, then
progress, every result cached, so a stopped board resumes.
"""

import json

import streamlit as st

import ui
from analysis.core.finite import finite
from analysis.experiments.claims.board import CLAIMS, prepare, run, summary
from analysis.experiments.claims.context import Settings
from analysis.experiments.claims.html import render
from cache.claims import save_board
from cache.cached import Cached
from ui import claims


def run_for(backbone, expanded: bool) -> None:
    """Settings, the estimate (a short timed probe, on request), then the run with its progress bar."""
    with st.expander("Run for this model", expanded=expanded):
        c1, c2, c3 = st.columns(3)
        budget = c1.number_input("Budget (minutes)", 1.0, 24 * 60.0, 10.0, step=5.0, key="claims_budget")
        sts = c2.select_slider("Held-out STS-B pairs", [100, 200, 500, 1200], 500, key="claims_sts")
        per_length = c3.select_slider("Long items per length", [20, 50, 100, 200], 100, key="claims_long_n")
        chosen = st.multiselect("Claims (none chosen: all of them)", [c.id for c in CLAIMS], key="claims_only")
        settings = Settings(sts_sample=0 if sts == 1200 else int(sts), long_n=int(per_length))
        key = (backbone.identity, repr(settings), tuple(chosen))
        timed = f"claims_rate|{backbone.identity}"  # the probe once per model and session, not per rerun
        if st.button("Estimate the time", key="claims_estimate"):
            with st.spinner("A short timed probe, then each claim's work (generating the long documents too)…",
                            show_time=True):
                plan = prepare(backbone, Cached(ui.store()), settings, rate=st.session_state.get(timed),
                               claims=[c for c in CLAIMS if not chosen or c.id in chosen])
            st.session_state[timed] = plan.ctx.rate
            st.session_state["claims_plan"] = (key, plan)
        found = st.session_state.get("claims_plan")
        if found is None or found[0] != key:
            st.caption("The estimate comes first: press *Estimate the time*.")
            return
        plan = found[1]
        estimate = plan.as_dict()
        st.info(ui.md(f"Estimate: {estimate['estimate_seconds'] / 60:.1f} min on an empty cache for "
                      f"{estimate['to_measure']} claims ({estimate['refused']} cannot run here); the budget is "
                      f"{budget:g} min. The cheapest claims run first; what the budget does not reach is marked not "
                      "measured, and running again resumes from the cache."))
        if st.button("Run the board", key="claims_run", type="primary"):
            bar, progress = ui.progress_bar("Claims:")
            board = run(plan, budget_seconds=float(budget) * 60, progress=progress)
            bar.empty()
            save_board(ui.store(), board)
            st.session_state.pop("claims_plan", None)  # its measurements are done: a new run plans again
            st.session_state["claims_board"] = board
            st.rerun()


with ui.user_errors():
    st.title("Claims")
    st.caption("Each claim in its paper's words, with where it stands and the paper's own number beside ours, tested "
               "on this model in the paper's direction with a rule fixed before measuring: holds here "
               "(the paired interval excludes zero in the claimed direction), reversed here (the other way), not "
               "resolved (it covers zero: how many more items would resolve it), cannot run here (what it needs), "
               "not measured (the run it needs, with its command). "
               "Where this repository's recipe, data or scale differs from the paper, the declared deviations sit "
               "beside the verdict: a claim that does not hold at 135M is a finding about this setting, not a "
               "verdict on the paper.")
    backbone = ui.get_backbone()
    board, where = claims.stored(backbone)
    fresh = st.session_state.get("claims_board")
    if fresh is not None and fresh["model"]["identity"] == backbone.identity:
        board, where = fresh, "run in this session"
    run_for(backbone, expanded=board is None)
    if board is None:
        st.info("No claims board for this model yet: run it above, or `python -m analysis claims --model NAME "
                "--out board.html` on the command line (the page reads the board it stores).")
        st.stop()
    st.caption(ui.md(f"Shown: {where}. {summary(board)}."))
    d1, d2 = st.columns(2)
    name = f"claims-{board['model']['name']}"
    d1.download_button("Download the board (HTML, opens offline)", render([board]).encode("utf-8"),
                       file_name=f"{name}.html", mime="text/html", key="claims_html", on_click="ignore")
    d2.download_button("Download the JSON", json.dumps(finite(board), indent=1), file_name=f"{name}.json",
                       mime="application/json", key="claims_json", on_click="ignore")
    claims.show(board)
