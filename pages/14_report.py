"""Model report

Which method, which layers, at what cost, on the model chosen in the sidebar. A built-in model opens on its
published report (with the command that made it, its date and sample); *Make a new report* runs the same
report as `python -m analysis report` on your choice of pairs, with its cost estimate before it starts, a progress
bar while it runs, resumed from the cache when it was stopped, and its HTML and JSON to download.
"""

import pandas as pd
import streamlit as st
import streamlit.components.v1 as components

import ui
from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.data import datasets
from analysis.eval.tasks import load_task
from analysis.experiments.machinery.records import recorded_report
from analysis.report.build import DEFAULT_TASKS, build, prepare
from analysis.report.families import FAMILIES
from analysis.report.html import dumps, quality_figure, render
from cache.cached import Cached
from ui.reports import key_numbers

REAL_PAIRS = "stsb-dev-report"  # a new report's default: pairs no trainer selected on, never the demo pairs
FALLBACK_PAIRS = "lee"  # human-rated document pairs that ship with the tool, when STS-B is absent
DEFAULT_SIZE = 500  # the published reports' sample


@st.cache_data(show_spinner=False, max_entries=8)
def rendered(identity: str, created: str, _report: dict) -> str:
    """A report's HTML, rendered once per server for the report that (model identity, creation time) names: the
    published one is shown on every visit, and rendering it takes 0.4 s."""
    return render(_report)


def show(report: dict, name: str) -> None:
    """A report: what is missing, its key numbers, the downloads and the report itself."""
    if report["missing"]:
        st.warning(ui.md("Partial report: " + "; ".join(f"{k}: {v}" for k, v in report["missing"].items()) + "."))
    if report["quality"]:  # the answer first, drawn here: the full report below is a 2 MB page in a frame
        st.caption(ui.md(f"STS Spearman per method on {report['quality']['n_pairs']:,} pairs, best first, with 95% "
                         "intervals; every difference, the cost, the layers and the recommendation are in the full "
                         "report below."))
        ui.show_figure(quality_figure(report["quality"]), pd.DataFrame(
            [{"method": m["label"], "spearman": m["spearman"], "ci_low": m["ci"][0], "ci_high": m["ci"][1]}
             for m in report["quality"]["methods"]]), "report_quality")
    st.table({k: str(v) for k, v in key_numbers(report).items()})
    page = rendered(report["model"]["identity"], report["created"], report)
    d1, d2 = st.columns(2)
    d1.download_button("Download the HTML", page, file_name=f"{name}.html", mime="text/html", key="report_html")
    d2.download_button("Download the JSON", dumps(report), file_name=f"{name}.json", mime="application/json",
                       key="report_json")
    components.html(page, height=1600, scrolling=True)


def new_report_pairs():
    """The pairs a new report runs on: STS-B dev's report part when it is in the data folder, else a sentence on
    how to get it and the Lee corpus."""
    real = datasets.get(REAL_PAIRS)
    if real.present():
        return ui.pairs_input("report", default=real.label, size=DEFAULT_SIZE)
    st.info(ui.md(f"{real.missing()} Until then, a report can run on the Lee corpus or a file of yours; the "
                  "demo pairs are too few for a recommendation to mean anything."))
    return ui.pairs_input("report", default=datasets.get(FALLBACK_PAIRS).label, size=DEFAULT_SIZE)


with ui.user_errors():
    st.title("Model report")
    st.caption("Every training-free method (and the trained ones with weights for this model) on the same pairs, "
               "each with its interval and its paired difference to the best; its time as a ratio to the plain "
               "forward measured in the same run; the intrinsic-dimension window against a KV-Embedding layer map "
               "sized to the budget; where the re-routed prefix is read; and a recommendation with its reasons.")
    backbone = ui.get_backbone()
    name = f"report-{backbone.facts.name.rstrip('/').split('/')[-1]}"
    published = recorded_report(backbone.identity)
    views = (["published", "new"] if published is not None else ["new"])
    view = st.radio("Report", views, horizontal=True, key="report_view",
                    format_func={"published": "Published report of this model", "new": "Make a new report"}.get)
    if view == "published":
        data, created = published["data"], published["created"][:10]
        command = published["settings"].get("command") or "bash scripts/reports.sh"  # older reports have none
        st.caption(ui.md(f"Recorded on {created} with `{command}`: {data['name']}, {data['n_pairs']:,} pairs, "
                         f"budget {published['settings']['budget_minutes']:g} min. The numbers are the published "
                         "ones, not recomputed; *Make a new report* runs it again on your choice of pairs."))
        show(published, name)
        st.stop()

    pairs = new_report_pairs()
    c1, c2 = st.columns(2)
    budget = c1.number_input("Budget (minutes)", min_value=0.1, max_value=600.0, value=30.0, step=5.0,
                             key="report_budget")
    n_boot = c2.number_input("Bootstrap resamples", min_value=0, max_value=budgets.limit("bootstrap"), value=1000,
                             step=100, key="report_boot")
    probe = st.checkbox("Also a probe on the 200 built-in polarity sentences (accuracy per method)", value=True,
                        key="report_probe")
    tasks = [load_task(task) for task in DEFAULT_TASKS] if probe else []
    by_family = st.checkbox("Also each task family on a small sample (nano SciFact retrieval, Banking77 "
                            "classification and clustering, 256/512-token passkey documents), method by method as "
                            "the budget allows", value=True, key="report_families")
    timed = f"report_timing|{backbone.identity}"  # one timed forward per model and session, not one per rerun
    try:
        plan = prepare(backbone, pairs, budget_minutes=float(budget), seconds_per_text=st.session_state.get(timed),
                       tasks=tasks, families=FAMILIES if by_family else ())
    except UserError as too_small:  # the estimate, not an error: the user raises the budget or takes fewer pairs
        st.warning(ui.md(str(too_small)))
        st.stop()
    st.session_state[timed] = plan.seconds_per_text
    estimate = plan.as_dict()
    st.info(ui.md(f"Estimate: {estimate['estimate_total_seconds'] / 60:.1f} min of {budget:g} ("
                  + ", ".join(f"{k} {v:.0f} s" for k, v in estimate["estimate_seconds"].items()) + f"); "
                  f"{len(plan.methods)} methods, a layer map of {len(plan.cells)} cells"
                  + "".join(f"; {k} left out: {v}" for k, v in plan.skipped.items())
                  + "".join(f"; {k} not measured: {v}" for k, v in plan.families_skipped.items()) + "."))
    key = ("report", backbone.identity, pairs.name, len(pairs), float(budget), int(n_boot), probe, by_family)
    if st.button("Build the report", key="report_run", type="primary"):
        bar = st.progress(0.0, text="starting")
        report = build(backbone, pairs, plan, compute=Cached(ui.store()), n_boot=int(n_boot),
                       progress=lambda f, m: bar.progress(f, text=ui.md(m)))
        st.session_state["report_result"] = (key, report)
    stored = st.session_state.get("report_result")
    if stored is None or stored[0] != key:
        st.stop()
    show(stored[1], name)
