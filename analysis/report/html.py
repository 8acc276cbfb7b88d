"""A model report as one standalone HTML file: tables with every number, interactive plotly figures, offline.

Written by the one standalone writer (`analysis.core.standalone`: plotly.js gzip'd once, unpacked in the browser;
about 2 MB, or about 0.1 MB with `shared_plotly`, which loads the blob from `plotly.gz.js` beside several reports).
The tables need no JavaScript. A missing or incomplete section is a box that says why.

    text = render(report)      # the dict `analysis.report.build.build` returns
    save(report, "r.html")     # r.html and r.json, each written atomically
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.core import standalone
from analysis.core.finite import finite
from analysis.core.standalone import Document, e
from analysis.report.clock import RESUME
from analysis.report.recommend import against_best

TITLES = {"recommendation": "Recommendation", "quality": "Quality: STS Spearman per method",
          "cost": "Cost: time as a ratio to the plain forward, and peak memory",
          "layers": "Layers: intrinsic dimension and the KV-Embedding layer map",
          "mechanism": "Mechanism: where the re-routed prefix is read, and the soft tokens' K curve",
          "families": "Quality per task family: retrieval, classification, clustering, long documents",
          "claims": "Claims: does each paper hold on this model?"}
ORDER = ("recommendation", "quality", "families", "cost", "layers", "mechanism", "claims")
OPTIONAL = ("families", "claims")  # left out when absent: older reports, no task families, no claims board read
def render(report: dict, *, shared_plotly: bool = False) -> str:
    """The report's HTML; with `shared_plotly` it loads plotly.js from `plotly.gz.js` beside it (`save` writes
    it) instead of embedding it."""
    doc = Document(f"Which method, which layers, at what cost: {report['model']['title']}")
    doc.add(_header(report))
    for name in ORDER:
        if name in OPTIONAL and report.get(name) is None and name not in report["missing"]:
            continue
        parts = [f"<h2>{TITLES[name]}</h2>"]
        if name in report["missing"]:
            state = "Missing" if report.get(name) is None else "Incomplete"
            parts.append(standalone.missing(state, f"{report['missing'][name]}."))
        if report.get(name) is not None:
            parts.append(SECTION_HTML[name](report[name], report, doc))
        doc.add(standalone.section(*parts, anchor=name))
    return doc.html(shared_plotly=shared_plotly)


def _header(r: dict) -> str:
    m, d, plan = r["model"], r["data"], r["plan"]
    state = ("complete" if r["complete"] else "INCOMPLETE" + (" (interrupted)" if r["interrupted"] else "") + ": "
             + "; ".join(f"{k} {'missing' if r.get(k) is None else 'incomplete'} ({v})"
                         for k, v in r["missing"].items()) + f". To fill the gaps: {RESUME}")
    spent = sum(r["spent_seconds"].values())
    return (f"<p>{e(m['identity'])}: {m['n_layers']} layers, {m['n_params'] / 1e6:.0f} M parameters, "
            f"{e(m['dtype'])} on {e(m['device'])}. Data: {e(d['name'])}, {d['n_pairs']} pairs "
            f"({d['n_texts']} texts){e(_sample(d))}. Created {e(r['created'])}.</p>"
            f"<p>Budget {r['settings']['budget_minutes']:g} min; estimated "
            f"{plan['estimate_total_seconds'] / 60:.1f} min, spent {spent / 60:.1f} min "
            f"({', '.join(f'{k} {v:.0f} s' for k, v in r['spent_seconds'].items())}). Report: {e(state)}.</p>")


def _sample(d: dict) -> str:
    s = d.get("sample")
    return f", {s['how']} (seed {s['seed']}) of {s['of']}" if isinstance(s, dict) and "how" in s else ""


def _recommendation(rec: dict, r: dict, doc: Document) -> str:
    items = "".join(f"<li>{e(x)}</li>" for x in rec["reasons"])
    trust = {True: "yes", False: "no", None: "unknown"}[rec["id_rule"]["trusted"]]
    tested = any(x["p"] is not None and math.isfinite(x["p"]) for x in (r["quality"] or {}).get("methods", []))
    tied = (f'Not significantly different from the best: {e(", ".join(rec["not_different"]) or "none")}' if tested
            else "No difference to the best was tested")
    return (f'<p class="best">Best: {e(rec["best"] or "unknown")}. Best per unit of cost: '
            f'{e(rec["best_per_cost"] or "unknown")}. ID rule to be trusted here: {trust}. {tied}.</p>'
            f"<ul>{items}</ul>")


def quality_figure(q: dict) -> go.Figure:
    """Spearman per method, best first, with its 95% interval: the report's answer to "which method" at a glance (the
    report's HTML and the Report page's first figure)."""
    rows = sorted(q["methods"], key=lambda x: -_num(x["spearman"]))
    fig = go.Figure(go.Bar(x=[x["label"] + (" (reference: MiniLM alone)" if x.get("reference") else "") for x in rows],
                           y=[x["spearman"] for x in rows],
                           marker_color=["#9aa0a8" if x.get("reference") else "#1f77b4" for x in rows],
                           error_y=dict(type="data", symmetric=False,
                                        array=[_num(x["ci"][1]) - _num(x["spearman"]) for x in rows],
                                        arrayminus=[_num(x["spearman"]) - _num(x["ci"][0]) for x in rows])))
    fig.update_layout(height=360, yaxis_title="Spearman", margin=dict(l=10, r=10, t=20, b=10))
    return fig


def _quality(q: dict, r: dict, doc: Document) -> str:
    rows = sorted(q["methods"], key=lambda x: -_num(x["spearman"]))
    table = standalone.table(["method", "Spearman", "95% interval", "minus the best", "paired 95% interval", "p",
                              "trained", "from cache"],
                             [[x["label"] + (" (reference: MiniLM alone, no decoder)" if x.get("reference") else ""),
                               _f(x["spearman"]), _ci(x["ci"]), _f(x["difference_to_best"]),
                               _ci(x["difference_ci"]), _f(x["p"], 3), "yes" if x["trained"] else "",
                               "yes" if x["cached"] else ""] for x in rows])
    return (table + _figure("fig_quality", quality_figure(q), doc) +
            f'<p class="note">{q["n_pairs"]} pairs; {e(q["bootstrap"])}. Differences are each method minus the '
            f"best ({e(q['best'])}).</p>" + _tasks(q.get("tasks") or []))


def _tasks(rows: list) -> str:
    """Probe and retrieval tasks: one column per task, each cell the value and its 95% interval."""
    if not rows:
        return ""
    name = lambda r: f"{r['task']} ({r['metric']}, n = {r['n']})"  # noqa: E731 - the column of a row
    columns = list(dict.fromkeys(name(r) for r in rows))
    cells: dict = {}
    for r in rows:
        cells.setdefault(r["label"], {})[name(r)] = f"{_f(r['value'])} {_ci(r['ci'])}"
    return ("<h3>Other tasks</h3>" + standalone.table(["method", *columns],
                                                      [[label, *(row.get(c, "") for c in columns)]
                                                       for label, row in cells.items()]))


def _families(s: dict, r: dict, doc: Document) -> str:
    """Each task family's sample: every method's score, its paired difference to the family's best, and a bar per
    method per family (`report.families`)."""
    out = [f'<p class="note">{e(k)}: not measured ({e(v)}).</p>' for k, v in (s.get("skipped") or {}).items()]
    fig = go.Figure()
    labels = list(dict.fromkeys(x["label"] for t in s["tasks"] for x in t["rows"]))
    for label in labels:
        cells = [(f"{t['family']}: {t['metric']}", x) for t in s["tasks"] for x in t["rows"] if x["label"] == label]
        fig.add_trace(go.Bar(name=label, x=[c for c, _ in cells], y=[x["value"] for _, x in cells],
                             error_y=dict(type="data", symmetric=False,
                                          array=[_num(x["ci"][1]) - _num(x["value"]) for _, x in cells],
                                          arrayminus=[_num(x["value"]) - _num(x["ci"][0]) for _, x in cells])))
    for t in s["tasks"]:
        rows = sorted(t["rows"], key=lambda x: -_num(x["value"]))
        out.append(f"<h3>{e(t['family'])}: {e(t['task'])} ({e(t['metric'])}, {t['n']} {e(t['unit'])})</h3>" +
                   standalone.table(
                       ["method", t["metric"], "95% interval", "minus the best", "paired 95% interval", "p"],
                       [[x["label"] + (" (reference: MiniLM alone, no decoder)" if x["reference"] else ""),
                         _f(x["value"]), _ci(x["ci"]), _f(x["difference_to_best"]), _ci(x["difference_ci"]),
                         _f(x["p"], 3)] for x in rows]) +
                   f'<p class="note">Best: {e(t["best"])}; {e(t["bootstrap"])}.</p>')
    if s["tasks"]:
        fig.update_layout(barmode="group", height=380, yaxis_title="score (each family's main metric)",
                          margin=dict(l=10, r=10, t=20, b=10))
        out.insert(0, _figure("fig_families", fig, doc))
    return "".join(out)


def _cost(c: dict, r: dict, doc: Document) -> str:
    table = standalone.table(["method", "seconds", "x plain forward", "peak memory (MB)"],
                             [[x["label"], _f(x["seconds"], 3), _f(x["ratio"], 2), _f(x["peak_mb"], 1)]
                              for x in c["rows"]])
    rho = {x["label"]: x["spearman"] for x in (r["quality"] or {"methods": []})["methods"]}
    pts = [x for x in c["rows"] if x["label"] in rho]
    fig = go.Figure(go.Scatter(x=[x["ratio"] for x in pts], y=[rho[x["label"]] for x in pts], mode="markers+text",
                               text=[x["label"] for x in pts], textposition="top center"))
    fig.update_layout(height=360, xaxis_title="time / plain forward", yaxis_title="Spearman",
                      margin=dict(l=10, r=10, t=20, b=10))
    return (table + _figure("fig_cost", fig, doc) +
            f'<p class="note">Median of {c["repeats"]} interleaved rounds on {c["texts"]} texts, every method and '
            f'the plain forward ({e(c["baseline"])}: the `last` method) in the same rounds, so `last`\'s own ratio '
            "shows the timing's noise; peak memory above the level before the call.</p>")


def _layers(s: dict, r: dict, doc: Document) -> str:
    L = r["model"]["n_layers"]
    sel = s["selection"]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=("intrinsic dimension per hidden state", "layer map: Spearman by window start"))
    fig.add_trace(go.Scatter(x=list(range(L + 1)), y=[None if v is None else v for v in s["id_trajectory"]],
                             mode="lines+markers", name="ID", line=dict(color="black")), 1, 1)
    if sel["layers"]:
        fig.add_vrect(x0=sel["start"] - 0.5, x1=sel["end"] + 0.5, fillcolor="green", opacity=0.15, line_width=0)
    parts = [f"<p>Rule <b>{e(sel['rule'])}</b>: {e(sel['reason'])}. Window: decoder layers "
             f"{sel['start']}-{sel['end']}.</p>",
             standalone.table(["rule", "window (decoder layers)"],
                              [[k, f"{v['start']}-{v['end']}"] for k, v in s["rule_windows"].items()])]
    m = s["map"]
    if m is not None:
        groups: dict = {}
        for c in m["cells"]:
            groups.setdefault(f"width {c['width']}, bias {c['bias']:g}", []).append(c)
        for name, cells in groups.items():
            fig.add_trace(go.Scatter(x=[c["start"] for c in cells], y=[c["spearman"] for c in cells],
                                     mode="lines+markers", name=name), 2, 1)
        w = m["id_window"]
        if w and w.get("spearman") is not None:
            fig.add_trace(go.Scatter(x=[w["layers"][0]], y=[w["spearman"]], mode="markers", name="ID window",
                                     marker=dict(symbol="star", size=14, color="green")), 2, 1)
        b = m["best"]
        parts.append(f"<p>Map: {len(m['cells'])} cells (starts {m['grid']['starts']}, widths {m['grid']['widths']}, "
                     f"biases {m['grid']['biases']}), prompt only {_f(m['prompt_only'])}. Best cell: start "
                     f"{b['start']}, width {b['width']}, bias {b['bias']:g}: {_f(b['spearman'])}."
                     + (f" ID window: {_f(w['spearman'])}, rank {w['rank_among_cells']} of {len(m['cells'])}, "
                        f"{against_best(w['gap_to_best'])}." if w and w.get("spearman") is not None else "")
                     + f" Cells computed in this run: {s['computed']}, from the cache: {s['cached']}.</p>")
        parts.append(standalone.table(["start", "width", "bias", "Spearman"],
                                      [[c["start"], c["width"], f"{c['bias']:g}", _f(c["spearman"])]
                                       for c in m["cells"]]))
    fig.update_xaxes(title_text="hidden state = first decoder layer re-routed", row=2, col=1)
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=40, b=10))
    return _figure("fig_layers", fig, doc) + "".join(parts)


def _mechanism(s: dict, r: dict, doc: Document) -> str:
    out = []
    pm = s["prefix_mass"]
    if pm is not None:
        fig = go.Figure(go.Bar(x=list(range(len(pm["mass"]))), y=pm["mass"]))
        fig.update_layout(height=300, xaxis_title="decoder layer", yaxis_title="attention mass on the prefix",
                          margin=dict(l=10, r=10, t=20, b=10))
        out.append(_figure("fig_prefix", fig, doc) +
                   f'<p class="note">KV-Embedding, mean over {pm["texts"]} texts, all heads and query positions; '
                   f"re-routed decoder layers {pm['layers']} (zero elsewhere). Per layer: "
                   f"{', '.join(f'{v:.3f}' for v in pm['mass'])}.</p>")
    st = s["soft_tokens"]
    if st is None and not r["plan"]["soft_curve"]:
        out.append('<p class="note">Soft tokens\' K curve: no trained adapter for this model.</p>')
    elif st is not None:
        fig = go.Figure(go.Scatter(x=st["ks"], y=st["spearman"], mode="lines+markers",
                                   error_y=dict(type="data", symmetric=False,
                                                array=[hi - v for v, (_, hi) in zip(st["spearman"], st["ci"])],
                                                arrayminus=[v - lo for v, (lo, _) in zip(st["spearman"], st["ci"])])))
        fig.update_layout(height=300, xaxis_title="generated soft tokens K", yaxis_title="Spearman",
                          margin=dict(l=10, r=10, t=20, b=10))
        out.append(_figure("fig_soft", fig, doc) +
                   standalone.table(["K", "Spearman", "95% interval"],
                                    [[k, _f(v), _ci(ci)] for k, v, ci in zip(st["ks"], st["spearman"], st["ci"])]))
    return "".join(out)


def _claims(c: dict, r: dict, doc: Document) -> str:
    """The model's claims board as its verdicts (the Claims page and `python -m analysis claims` show each in full)."""
    if not c["rows"]:
        return (f'<p class="note">No claims board for this model yet: <code>python -m analysis claims --model '
                f'{e(r["model"]["name"])} --out board.html</code>, or the Claims page.</p>')
    counts = ", ".join(f"{n} {e(w)}" for w, n in c["counts"].items() if n)
    return (f"<p>{counts} ({e(c['source'])}).</p>" +
            standalone.table(["paper", "claim", "the paper says", "verdict here", "number [95% interval]"],
                             [[x["paper"], x["id"], x["says"], x["word"], x["number"]] for x in c["rows"]]))


SECTION_HTML = {"recommendation": _recommendation, "quality": _quality, "cost": _cost, "layers": _layers,
                "mechanism": _mechanism, "claims": _claims, "families": _families}


def _figure(name: str, fig, doc: Document) -> str:
    """A place for `fig` in the document, its element named `name` (a stable anchor)."""
    return doc.figure(fig, name)



def _num(v) -> float:
    return math.nan if v is None else float(v)


def _f(v, digits: int = 3) -> str:
    return "" if v is None or not math.isfinite(float(v)) else f"{float(v):.{digits}f}"


def _ci(ci) -> str:
    return "" if ci is None or not all(math.isfinite(_num(x)) for x in ci) else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def dumps(report: dict) -> str:
    """The report as strict JSON (NaN and infinities become null)."""
    return json.dumps(finite(report), indent=1, allow_nan=False)


def save(report: dict, out, *, shared_plotly: bool = False) -> tuple[Path, Path]:
    """Write `out` (the HTML) and the JSON beside it (same name, .json), each atomically (`standalone.save`); with
    `shared_plotly`, plotly.gz.js beside them too."""
    out = Path(out)
    data = out.with_suffix(".json")
    standalone.save(render(report, shared_plotly=shared_plotly), out, shared_plotly=shared_plotly,
                    extra={data: dumps(report)})
    return out, data
