"""The claims board in the app: finding a model's newest board (the cache's, else its published record), drawing it
(verdict chips with the number and its interval, the deviations beside each claim, a link to the view that shows
the evidence), running it for the model in the sidebar, and two models side by side.

    board, where = stored(backbone)                            # (None, "") when there is none yet
    show(board)                                                # the Claims page's body
    side_by_side({"SmolLM2": board_a, "Gemma 3": board_b})     # Compare models
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from analysis.experiments.claims.board import summary
from analysis.experiments.machinery import verdicts
from cache.claims import stored_board
from ui.figures import show_figure
from ui.inputs import choice
from ui.model import store
from ui.text import md

BADGE = {verdicts.HOLDS: "green", verdicts.REVERSED: "red", verdicts.UNRESOLVED: "orange", verdicts.CANNOT: "gray",
         verdicts.NOT_MEASURED: "blue"}
BAR = {verdicts.HOLDS: "#2e9d57", verdicts.REVERSED: "#d1453b", verdicts.UNRESOLVED: "#e0b12a",
       verdicts.CANNOT: "#9aa0a8", verdicts.NOT_MEASURED: "#5b8def"}


def stored(backbone) -> tuple[dict | None, str]:
    """(board, where it comes from) of the model: the newest in the cache, else its published record
    (`cache.claims.stored_board`)."""
    return stored_board(store(), backbone)


def chip(verdict: dict) -> str:
    """The verdict as a coloured badge (Markdown), its number after it."""
    badge = f":{BADGE.get(verdict['word'], 'gray')}-badge[{verdict['word']}]"
    return badge + (f" **{md(verdict['number'])}**" if verdict["number"] else "")


def counts_figure(board: dict) -> tuple[go.Figure, pd.DataFrame]:
    rows = [{"paper": board["papers"][c["paper"]]["title"], "claim": c["id"], "verdict": c["verdict"]["word"]}
            for c in board["claims"]]
    frame = pd.DataFrame(rows)
    fig = go.Figure()
    papers = list(dict.fromkeys(frame["paper"]))
    for word in verdicts.WORDS:
        counts = [int(((frame["paper"] == p) & (frame["verdict"] == word)).sum()) for p in papers]
        if any(counts):
            fig.add_bar(name=word, y=papers, x=counts, orientation="h", marker_color=BAR[word])
    fig.update_layout(barmode="stack", height=260, xaxis_title="claims", margin=dict(l=10, r=10, t=10, b=10),
                      legend=dict(orientation="h", y=-0.3), yaxis=dict(autorange="reversed"))
    return fig, frame


def evidence_links(claim: dict) -> str:
    """Markdown links to the views that show the claim's evidence, with the query parameters a view reads (the
    Lessons' ?lesson=&step=). Relative to the page's own address, so they hold under any base path; a link opens its
    view even as a fresh session's first request (`ui.nav`)."""
    return "  \n".join(f"[{md(ev['label'])}]({ev['address'].lstrip('/')})" for ev in claim["evidence"])


def deviations(claim: dict) -> None:
    found = claim["deviations"]
    if not found:
        st.caption("No deviation from the paper declared for what this claim uses.")
        return
    with st.expander(f"Deviations beside it ({len(found)})"):
        for d in found:
            setting = (d.get("restore") or "").replace("`", "")  # our own settings, shown as code
            restore = f" Restores it: `{setting}`." if setting else " No setting restores it."
            st.markdown(f"- **{md(d['topic'])}** ({md(d['of'])}): the {md(d.get('source') or 'paper')} "
                        f"{md(d['paper'])}; this repository {md(d['here'])} ({md(d['why'])}).{restore}")


def claim_row(claim: dict) -> None:
    """One claim: the paper's number beside ours on top, the paper's own words and location in its detail."""
    with st.container(border=True):
        left, middle, right = st.columns([2, 3, 2])
        v = claim["verdict"]
        left.markdown("**Here:** " + chip(v))
        left.caption(md(v["detail"]))
        if claim["source"]:
            left.caption(md(claim["source"]))
        for note in claim.get("beside") or []:
            left.caption(md(f"Beside: {note}"))
        middle.markdown(f"**{md(claim['says'])}**")
        middle.markdown(f"**Paper:** {md(claim.get('paper_number', ''))}")
        middle.caption(md(f"{claim['where']} · {claim['id']}"))
        with middle.expander("The paper's words, and how it is tested here"):
            st.markdown(f"> {md(claim.get('quote', ''))}")
            st.caption(md(claim["where"]))
            if claim.get("own"):
                st.markdown(f"*{md(claim['own'])}*")
            st.markdown(f"*Differs here:* {md(claim.get('differs', ''))}")
            st.markdown(md(claim["test"]))
            st.markdown(f"*Rule, fixed before measuring:* {md(claim['rule'])}")
            if claim.get("values"):
                st.markdown("  \n".join(f"{md(str(k))}: **{md(str(x))}**" for k, x in claim["values"].items()))
        with right:
            st.markdown(evidence_links(claim))
            deviations(claim)


def show(board: dict) -> None:
    """The board: the verdicts per paper and every claim in one table, then the claims of the paper chosen, each with
    its test, rule, evidence and deviations. One paper's cards at a time: all thirty at once made the page slow to
    open (issue 38) and long to scroll."""
    st.markdown(f"**{md(board['model']['title'])}**: {md(summary(board))} of {len(board['claims'])} claims.")
    fig, frame = counts_figure(board)
    show_figure(fig, frame, "claims_verdicts")
    st.dataframe(side_by_side({"verdict": board}), hide_index=True, width="stretch")  # every claim at a glance
    present = {c["paper"] for c in board["claims"]}
    papers = {k: p for k, p in board["papers"].items() if k in present}  # a board run on a chosen few opens on one
    absent = [p["title"] for k, p in board["papers"].items() if k not in present]
    if absent:
        st.caption(md(f"None of the claims of {', '.join(absent)} is in this board (it was run on a chosen few)."))
    if not papers:
        return
    key = choice("Claims of", papers, "claims_paper", format_func=lambda k: papers[k]["title"])
    st.subheader(papers[key]["title"])
    st.caption(md(papers[key]["cite"]))
    coverage = (papers[key].get("coverage") or {}).get("line")
    if coverage:
        st.markdown(f"**Coverage:** {md(coverage)}")
    for claim in (c for c in board["claims"] if c["paper"] == key):
        claim_row(claim)


def side_by_side(boards: dict) -> pd.DataFrame:
    """{model title: board} -> one row per claim, each model's verdict and number in its column, and whether the
    models agree on it (`verdicts.agreement`)."""
    first = next(iter(boards.values()))
    rows = []
    for c in first["claims"]:
        row = {"paper": first["papers"][c["paper"]]["title"], "claim": c["id"], "the paper says": c["says"],
               "the paper's number": c.get("paper_number", "")}
        words = []
        for title, board in boards.items():
            found = next((x for x in board["claims"] if x["id"] == c["id"]), None)
            row[title] = "" if found is None else " ".join(filter(None, [found["verdict"]["word"],
                                                                           found["verdict"]["number"]]))
            words.append(None if found is None else found["verdict"]["word"])
        row["models"] = verdicts.agreement(words) if len(boards) > 1 else ""
        rows.append(row)
    return pd.DataFrame(rows)


def agreement_counts(table: pd.DataFrame) -> str:
    """One line over a side-by-side table: how many claims the models agree on, disagree on, and cannot compare."""
    counts = table["models"].value_counts()
    return "; ".join(f"{counts[k]} {k}" for k in ("agree", "disagree", "differ in certainty", "not comparable")
                     if k in counts)
