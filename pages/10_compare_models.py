"""Compare models

Two models side by side on the same texts, one section at a time: their intrinsic-dimension trajectories over
relative depth with the window KV-Embedding's rule picks for each, a methods × models table from the cache, the
papers' claims judged on each, the Layer explorer's maps; or two model reports (the Report page's JSON) side by side.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import cache
import ui
from analysis.sweep import windows
from analysis.models.backbone import BUILTIN, DEFAULT_NAME
from analysis.data import datasets
from analysis.data.corpora import shared_stsb
from analysis.inspect.intrinsic_dim import AUTO_DESCRIPTION
from analysis.methods import get_method, list_methods
from analysis.weights import stand_in
from analysis.data import samples
from analysis.eval.tasks import load_task, select_task
from analysis.experiments.machinery import records, render
from cache.compute import stored_bench_cell, stored_cell_score
from ui import claims
from ui.model import described, load_named, title_of
from ui.reports import compare_uploads

COLORS = ("#1f77b4", "#d62728")


def bench_row(bb, method, task) -> dict:
    """Spearman [interval] and seconds of one cached benchmark cell (what `analysis bench` stores), or blanks."""
    found = stored_bench_cell(ui.store(), bb, method, task, n_boot=1000, seed=0)
    if found is None:
        return {"spearman": None, "ci": "", "seconds": np.nan}
    s, meta = found
    return {"spearman": round(s.value, 3), "ci": f"[{s.lo:.3f}, {s.hi:.3f}]",
            "seconds": float(meta.get("encode_seconds", np.nan))}


def recorded_methods_table(models: dict, fill: str) -> None:
    """The published methods x models record in place of a table with no cached cell (a fresh install), when it
    measured exactly these models: labelled as the record, with its own sample, command and date."""
    rec = records.read("methods_models")
    if rec is None or not {bb.identity for bb in models.values()} <= {m.identity for m in rec.models}:
        st.info(f"No cell of this table is in the cache yet. Fill it from the command line: {fill}.")
        return
    t, per_model, title, columns = rec.table("scores"), ("95% CI", "vs best decoder (paired)", "p"), "", []
    for c in t.columns[1:]:  # each model's title (its Spearman), then its interval, paired difference and p
        title = title if c in per_model else c
        columns.append(f"{title}: {c}" if c in per_model else f"{title}: Spearman")
    frame = pd.DataFrame([[row[0], *(render.cell(v) if isinstance(v, list) else v for v in row[1:])] for row in t.rows],
                         columns=["method", *columns])
    st.caption(f"Nothing for this sample is in the cache yet: the published record instead, on {rec.data}, "
               f"{render.sample_text(rec.sample)}; `{rec.command}`, {rec.date}. To compute the table for the sample "
               f"above: {fill}.")
    st.dataframe(frame, hide_index=True, width="stretch")


def explorer_cells(bb, pairs) -> pd.DataFrame:
    """The Layer explorer page's default grid for this model, with the Spearman of every cached cell."""
    L, rows = bb.facts.n_layers, []
    for c in windows.grid(L, range(1, L, 3), [windows.paper_width(L)], [1.0]):
        rho = stored_cell_score(ui.store(), bb, pairs, windows.cell_method(c, L, prompt="document", pooling="hybrid"))
        if rho is not None:
            rows.append({"start": c.start, "depth": c.start / L, "spearman": rho})
    return pd.DataFrame(rows, columns=["start", "depth", "spearman"])


def id_section(models: dict, chosen: dict) -> None:
    """Intrinsic dimension over relative depth for each model, with the window KV-Embedding's rule picks."""
    kv = get_method("kv_embedding")
    found = {t: cache.auto_window(ui.store(), bb, kv, compute=False) for t, bb in models.items()}
    if any(v is None for v in found.values()) and st.button("Compute missing trajectories", key="cmp_id_run"):
        for t, bb in models.items():
            if found[t] is None:
                with st.spinner(f"{t}: ID trajectory over {AUTO_DESCRIPTION}", show_time=True):
                    found[t] = cache.auto_window(ui.store(), load_named(chosen[t]), kv)
    fig, rows = go.Figure(), []
    for (t, bb), color, corner in zip(models.items(), COLORS, ("top left", "bottom left")):  # labels apart
        if found[t] is None:
            st.info(f"{t}: trajectory not computed yet (button above, or any KV-Embedding run with layers=auto).")
            continue
        sel, ids = found[t]
        L = bb.facts.n_layers
        depth = [k / L for k in range(L + 1)]
        fig.add_trace(go.Scatter(x=depth, y=[np.nan if v is None else v for v in ids], mode="lines+markers",
                                 name=f"{t} ({L} layers)", line=dict(color=color)))
        if sel.layers:
            fig.add_vrect(x0=(sel.start - 0.5) / L, x1=(sel.end + 0.5) / L, fillcolor=color, opacity=0.12,
                          line_width=0, annotation_text=f"{t}: {sel.start}–{sel.end}", annotation_position=corner)
        rows += [{"model": t, "hidden state": k, "relative depth": d, "ID": v}
                 for k, (d, v) in enumerate(zip(depth, ids))]
        st.caption(f"**{t}**: {sel.rule}, decoder layers {sel.start}–{sel.end} of {L}. {sel.reason}.")
    fig.update_xaxes(range=[-0.02, 1.02])  # the depth axis even before any trajectory is drawn
    fig.update_layout(height=420, xaxis_title="relative depth k / L", yaxis_title="intrinsic dimension (TwoNN)",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.2))
    ui.show_figure(fig, pd.DataFrame(rows), "compare_id")
    st.caption(f"Final-token states under KV-Embedding's compression prompt, {AUTO_DESCRIPTION}.")


def methods_section(models: dict, a: str, b: str) -> None:
    """The methods × models table from the cache (or the published record), and its bar chart."""
    if shared_stsb("dev") is None:
        st.info(ui.md(datasets.get("stsb-dev").missing()))
        return
    size = st.select_slider("Pairs: a seeded sample (seed 0), stratified by genre", [200, 500, 1500], value=500,
                            key="cmp_limit")
    task, report = select_task(load_task("stsb-dev"), sample=int(size), seed=0)
    st.caption(ui.md(f"Scored on {samples.caption(report)}."))
    methods = [get_method(m.name) for m in list_methods()]
    methods += [get_method(n, layout="reference") for n in ("token_prepending", "htp", "echo")]
    table = []
    for t, bb in models.items():
        cells = {(m.name, getattr(m.params, "layout", "")): bench_row(bb, m, task) for m in methods}
        base = cells[("last", "")]["seconds"]
        named = {(m.name, getattr(m.params, "layout", "")): stand_in.label(m, bb) for m in methods}  # "(frozen: ...)"
        for (name, layout), r in cells.items():
            table.append({"model": t, "method": named[name, layout] + (f" ({layout})" if layout == "reference" else ""),
                          "Spearman": r["spearman"], "95% CI": r["ci"],
                          "× last": round(r["seconds"] / base, 2) if np.isfinite(r["seconds"] / base) else None})
    frame = pd.DataFrame(table)
    wide = frame.pivot_table(index="method", columns="model", values="Spearman", sort=False)
    fill = (f"`python -m analysis bench --models {a},{b} --methods all --data stsb-dev"
            f"{'' if size == 1500 else f' --sample {size}'}`")
    if not wide.notna().any().any():
        recorded_methods_table(models, fill)
    else:
        st.dataframe(frame.pivot(index="method", columns="model", values=["Spearman", "95% CI", "× last"]),
                     width="stretch")
        st.caption(f"Fill it from the command line: {fill} (cost: encode time over `last`'s on the same texts, as "
                   "recorded when each cell was computed; under load only a rough guide).")
        bar = go.Figure([go.Bar(name=t, x=list(wide.index), y=wide[t], marker_color=c)
                         for t, c in zip(wide.columns, COLORS)])
        bar.update_layout(barmode="group", height=360, yaxis_title="Spearman", margin=dict(l=10, r=10, t=30, b=10))
        ui.show_figure(bar, frame, "compare_methods")


def claims_section(models: dict) -> None:
    """The claims board of each model, one column per model."""
    boards = {t: claims.stored(bb)[0] for t, bb in models.items()}
    found = {t: b for t, b in boards.items() if b is not None}
    if found:
        table = claims.side_by_side(found)
        if len(found) > 1:
            st.caption(f"Per claim, the two models: {claims.agreement_counts(table)}. \"Disagree\": the claim holds "
                       "on one and is reversed on the other; \"differ in certainty\": one is not resolved; \"not "
                       "comparable\": a model could not judge it (cannot run here, not measured).")
        st.dataframe(table, hide_index=True, width="stretch")
    absent = [t for t, b in boards.items() if b is None]
    if absent:
        st.info(f"No claims board yet for {ui.md(', '.join(absent))}: run it on the Claims page with that model in the "
                "sidebar, or `python -m analysis claims --model NAME --out board.html`.")


def maps_section(models: dict) -> None:
    """The Layer explorer's default grid of each model, from the cache."""
    pairs = ui.pairs_input("cmp_explorer", default="Lee corpus (human ratings)")
    maps = {t: explorer_cells(bb, pairs) for t, bb in models.items()}
    grid = make_subplots(rows=1, cols=len(maps), shared_yaxes=True, subplot_titles=list(maps))
    for i, (t, df) in enumerate(maps.items(), start=1):
        grid.add_trace(go.Scatter(x=df["depth"], y=df["spearman"], mode="lines+markers", name=t,
                                  line=dict(color=COLORS[i - 1])), 1, i)
        grid.update_xaxes(title_text="window start / L", range=[0, 1], row=1, col=i)
    grid.update_layout(height=360, yaxis_title="Spearman", margin=dict(l=10, r=10, t=40, b=10))
    ui.show_figure(grid, pd.concat([df.assign(model=t) for t, df in maps.items()]), "compare_explorer")
    st.caption("Cells of the Layer explorer's default grid (windows of ⌊0.1·L⌋+1 decoder layers starting at 1, 4, "
               "7, …, bias 1, document prompt, hybrid pooling) found in the cache; run the Layer explorer page with "
               "each model to fill them. " + ", ".join(f"{t}: {len(df)} cells" for t, df in maps.items()) + ".")


SECTIONS = {"id": "Intrinsic dimension over depth", "methods": "Methods × models",
            "claims": "Claims side by side", "maps": "Layer explorer maps"}


with ui.user_errors():
    st.title("Compare models")
    st.caption("The answer to “which method, which layers” depends on the model. Depth is relative (hidden state "
               "k of a model with L layers at k/L), so models of different depth share one axis. "
               + ui.LAYER_CONVENTION)
    with st.expander("Two model reports side by side (from their JSON files)"):
        compare_uploads("cmp_reports")
    names = [DEFAULT_NAME, *[n for n in BUILTIN if n != "smollm2-135m"]]
    c1, c2 = st.columns(2)
    a = c1.selectbox("Model A", names, index=0, key="cmp_a", format_func=title_of)
    b = c2.selectbox("Model B", names, index=min(1, len(names) - 1), key="cmp_b", format_func=title_of)
    # Every table below reads the cache, which needs a model's identity and depth, not its weights: a built-in
    # model is described from its converted folder (milliseconds) and loaded only to compute what is missing.
    chosen = {title_of(n): n for n in dict.fromkeys([a, b])}
    models = {t: described(n) or load_named(n) for t, n in chosen.items()}

    # One section at a time: the page drew three figures and three tables together, and the browser mounts every
    # chart of a page before it shows the first (#38: its second visit took 3.1 s).
    section = ui.choice("Show", SECTIONS, "cmp_section", format_func=SECTIONS.get,
                        address="section")  # ?section=claims opens one
    st.subheader(SECTIONS[section])
    if section == "id":
        id_section(models, chosen)
    elif section == "methods":
        methods_section(models, a, b)
    elif section == "claims":
        claims_section(models)
    else:
        maps_section(models)
