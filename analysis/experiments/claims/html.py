"""A claims board as one standalone HTML file (the shared writer, `analysis.core.standalone`): opens anywhere,
offline. One board: the verdicts per paper as a figure and a table, each paper's coverage line, then each paper's
claims with the paper's own words, location and number beside ours (the verdict chip, its number and interval, what
it rests on, other runs beside it), what makes this setting differ, the deviations, how it was tested and where the
app shows the evidence. Two boards (two models): the claims side by side, the paper's number beside both.

    text = render([board])             # `analysis.experiments.claims.board.run`'s dict
    text = render([board_a, board_b])  # two models side by side
"""

from __future__ import annotations

import plotly.graph_objects as go

from analysis.core.standalone import Document, e, heading, paragraphs, section
from analysis.experiments.machinery import verdicts

COLORS = {verdicts.HOLDS: "#c9ecd2", verdicts.REVERSED: "#ffd0cc", verdicts.UNRESOLVED: "#fff0b3",
          verdicts.CANNOT: "#e4e6ea", verdicts.NOT_MEASURED: "#dbe8ff"}
BAR = {verdicts.HOLDS: "#2e9d57", verdicts.REVERSED: "#d1453b", verdicts.UNRESOLVED: "#e0b12a",
       verdicts.CANNOT: "#9aa0a8", verdicts.NOT_MEASURED: "#5b8def"}


def chip(verdict: dict) -> str:
    """The verdict word as a coloured chip (escaped)."""
    word = verdict["word"]
    return f'<span class="chip" style="background:{COLORS.get(word, "#eee")}">{e(word)}</span>'


def _table(head: list[str], rows: list[list[str]]) -> str:
    """A table whose cells are already HTML (each made from escaped text)."""
    th = "".join(f'<th style="text-align:left">{e(h)}</th>' for h in head)
    body = "".join("<tr>" + "".join(f'<td style="text-align:left">{c}</td>' for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _counts_figure(board: dict):
    papers = list(board["papers"])
    fig = go.Figure()
    for word in verdicts.WORDS:
        counts = [sum(c["paper"] == p and c["verdict"]["word"] == word for c in board["claims"]) for p in papers]
        if any(counts):
            fig.add_bar(name=word, y=[board["papers"][p]["title"] for p in papers], x=counts, orientation="h",
                        marker_color=BAR[word])
    fig.update_layout(barmode="stack", height=300, xaxis_title="claims", margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=-0.25), yaxis=dict(autorange="reversed"))
    return fig


def _deviations(claim: dict) -> str:
    found = claim.get("deviations") or []
    if not found:
        return "none declared"
    items = "".join(f"<li>{e(d['sentence'])}</li>" for d in found)
    return f"<details><summary>{len(found)} declared</summary><ul>{items}</ul></details>"


def _evidence(claim: dict) -> str:
    return "<br>".join(f"{e(x['label'])} (<code>{e(x['address'])}</code>)" for x in claim["evidence"])


def _verdict_cell(claim: dict) -> str:
    v = claim["verdict"]
    number = f"<br><b>{e(v['number'])}</b>" if v["number"] else ""
    source = f'<br><span class="note">{e(claim["source"])}</span>' if claim["source"] else ""
    beside = "".join(f'<br><span class="note">Beside: {e(b)}</span>' for b in claim.get("beside") or [])
    return f"{chip(v)}{number}<br>{e(v['detail'])}{source}{beside}"


def _paper_cell(claim: dict) -> str:
    """The paper's own words, where they stand and its own number."""
    own = f'<br><i>{e(claim["own"])}</i>' if claim.get("own") else ""
    return (f"&ldquo;{e(claim.get('quote', ''))}&rdquo;<br><span class=\"note\">{e(claim['where'])}</span><br>"
            f"<b>{e(claim.get('paper_number', ''))}</b>{own}")


def _claim_cell(claim: dict) -> str:
    differs = f'<br><span class="note">Differs here: {e(claim["differs"])}</span>' if claim.get("differs") else ""
    return f"<b>{e(claim['says'])}</b><br><code>{e(claim['id'])}</code>{differs}"


def _method_cell(claim: dict) -> str:
    return f"{e(claim['test'])}<br><i>Rule, fixed before measuring:</i> {e(claim['rule'])}"


def _header(board: dict) -> str:
    m, plan = board["model"], board["plan"]
    state = "complete" if board["complete"] else ("interrupted" if board["interrupted"] else "incomplete")
    budget = board["budget_seconds"]
    return paragraphs(
        f"Model: **{m['title']}** (`{m['identity']}`, {m['n_layers']} layers). Created {board['created']}. "
        f"Estimated {plan['estimate_seconds'] / 60:.1f} min on an empty cache, spent {board['spent_seconds'] / 60:.1f} "
        f"min{'' if budget is None else f' of a {budget / 60:g}-min budget'}; the board is {state}.\n\n"
        "Each claim is tested on this model with a rule fixed before measuring: *holds here* (the interval excludes "
        "zero, or the bar, in the claimed direction), *reversed here* (it excludes it the other way), *not resolved* "
        "(it covers it: the verdict says how many more items would resolve it), *cannot run here* (what it needs), "
        "*not measured* (the run stopped first: run it again, it resumes from the cache). Where this repository's "
        "recipe, data or scale differs from the paper's, the declared deviations stand beside the verdict: a claim "
        "that does not hold here is a finding about this model and this setting, not a verdict on the paper.")


def _one(board: dict) -> Document:
    doc = Document(f"Does the paper hold on {board['model']['title']}?")
    doc.add(_header(board))
    summary = [[e(p["title"]), *(str(sum(c["paper"] == key and c["verdict"]["word"] == w for c in board["claims"]))
                                 for w in verdicts.WORDS), e((p.get("coverage") or {}).get("line", ""))]
               for key, p in board["papers"].items()]
    doc.add(section(heading("The verdicts per paper"), doc.figure(_counts_figure(board)),
                    _table(["paper", *verdicts.WORDS, "coverage of its headline claims"], summary), anchor="summary"))
    for key, paper in board["papers"].items():
        rows = [[_claim_cell(c), _paper_cell(c), _verdict_cell(c), _method_cell(c), _deviations(c), _evidence(c)]
                for c in board["claims"] if c["paper"] == key]
        doc.add(section(heading(paper["title"]), paragraphs(paper["cite"]), _coverage(paper),
                        _table(["claim", "the paper", "here", "how it is tested", "deviations", "evidence in the app"],
                               rows),
                        anchor=key))
    return doc


def _coverage(paper: dict) -> str:
    line = (paper.get("coverage") or {}).get("line")
    return f'<p class="note"><b>Coverage:</b> {e(line)}</p>' if line else ""


def _side_by_side(boards: list[dict]) -> Document:
    titles = [b["model"]["title"] for b in boards]
    doc = Document(f"Does the paper hold? {' and '.join(titles)}")
    doc.add(paragraphs("The same claims, each judged on each model by the same rule fixed before measuring."))
    rows_of = [{c["id"]: c for c in b["claims"]} for b in boards]
    for key, paper in boards[0]["papers"].items():
        rows = [[_claim_cell(c), _paper_cell(c), *(_verdict_cell(r[c["id"]]) if c["id"] in r else "" for r in rows_of)]
                for c in boards[0]["claims"] if c["paper"] == key]
        doc.add(section(heading(paper["title"]), _coverage(paper), _table(["claim", "the paper", *titles], rows),
                        anchor=key))
    return doc


def render(boards: list[dict], *, shared_plotly: bool = False) -> str:
    """The HTML; with `shared_plotly` it loads plotly.js from `plotly.gz.js` beside it (`standalone.save` writes
    it) instead of embedding it."""
    doc = _one(boards[0]) if len(boards) == 1 else _side_by_side(boards)
    return doc.html(shared_plotly=shared_plotly)
