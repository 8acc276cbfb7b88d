"""A model report as one standalone HTML file: tables with every number, interactive plotly figures, offline.

plotly.js (4.8 MB) is embedded once, gzip-compressed and base64-encoded (about 1.9 MB), and unpacked in the
browser with the standard `DecompressionStream`; every figure is drawn from its JSON after that. So a report needs
no network and stays near 2 MB, where `include_plotlyjs=True` would make each one 5 MB. The tables do not need
JavaScript. A missing section is a box that says why it is missing.

Several reports in one folder can share that blob instead (`save(..., shared_plotly=True)`): it goes once into
`plotly.gz.js` beside them, loaded with a plain `<script src>` (which, unlike `fetch`, works from `file://`), and
each report drops to its own figures and tables (about 0.1 MB).

    text = render(report)      # the dict `analysis.report.build.build` returns
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import math
import os
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.report.clock import RESUME

TITLES = {"recommendation": "Recommendation", "quality": "Quality: STS Spearman per method",
          "cost": "Cost: time as a ratio to the plain forward, and peak memory",
          "layers": "Layers: intrinsic dimension and the KV-Embedding layer map",
          "mechanism": "Mechanism: where the re-routed prefix is read, and the soft tokens' K curve",
          "families": "Quality per task family: retrieval, classification, clustering, long documents",
          "claims": "Claims: does each paper hold on this model?"}
ORDER = ("recommendation", "quality", "families", "cost", "layers", "mechanism", "claims")
OPTIONAL = ("families", "claims")  # left out when absent: older reports, no task families, no claims board read
STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.missing{background:#fff4e5;border:1px solid
#f0a040;padding:.6em 1em;margin:.5em 0}.note{color:#555;font-size:.92em}.best{font-weight:bold}"""


@functools.lru_cache(maxsize=1)
def plotly_blob() -> str:
    """plotly.js, gzip-compressed, base64 (computed once per process)."""
    from plotly.offline import get_plotlyjs

    return base64.b64encode(gzip.compress(get_plotlyjs().encode("utf-8"), 9, mtime=0)).decode("ascii")


SHARED_PLOTLY = "plotly.gz.js"
LOADER = """<script>
(async () => {
  const blob = window.PLOTLY_GZ || document.getElementById('plotly-gz').textContent;
  const raw = atob(blob.trim());
  const bytes = Uint8Array.from(raw, c => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  (0, eval)(await new Response(stream).text());
  for (const node of document.querySelectorAll('script.figure')) {
    const spec = JSON.parse(node.textContent);
    Plotly.newPlot(node.dataset.target, spec.data, spec.layout, {responsive: true});
  }
})();
</script>"""


def render(report: dict, *, shared_plotly: bool = False) -> str:
    """The report's HTML; with `shared_plotly` it loads plotly.js from `plotly.gz.js` beside it (`save` writes
    it) instead of embedding it."""
    figures: list[tuple[str, go.Figure]] = []
    body = [_header(report)]
    for section in ORDER:
        if section in OPTIONAL and report.get(section) is None and section not in report["missing"]:
            continue
        body.append(f'<section id="{section}"><h2>{TITLES[section]}</h2>')
        if section in report["missing"]:
            state = "Missing" if report.get(section) is None else "Incomplete"
            body.append(f'<div class="missing"><b>{state}:</b> {_e(report["missing"][section])}.</div>')
        if report.get(section) is not None:
            body.append(SECTION_HTML[section](report[section], report, figures))
        body.append("</section>")
    specs = "".join(f'<script type="application/json" class="figure" data-target="{name}">'
                    f'{fig.to_json().replace("</", "<" + chr(92) + "/")}</script>' for name, fig in figures)
    title = f"embedscope report: {report['model']['title']}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{STYLE}</style></head><body>{''.join(body)}"
            "<noscript>The figures need JavaScript; every number is in the tables.</noscript>"
            f"{_plotly_tag(shared_plotly)}{specs}{LOADER}"
            "</body></html>")


def _plotly_tag(shared: bool) -> str:
    if shared:
        return f'<script src="{SHARED_PLOTLY}"></script>'
    return f'<script id="plotly-gz" type="application/octet-stream">{plotly_blob()}</script>'


def shared_plotly_text() -> str:
    """The content of plotly.gz.js: the same compressed blob, as a script that sets `window.PLOTLY_GZ`."""
    return f'window.PLOTLY_GZ = "{plotly_blob()}";\n'


def _header(r: dict) -> str:
    m, d, plan = r["model"], r["data"], r["plan"]
    state = ("complete" if r["complete"] else "INCOMPLETE" + (" (interrupted)" if r["interrupted"] else "") + ": "
             + "; ".join(f"{k} {'missing' if r.get(k) is None else 'incomplete'} ({v})"
                         for k, v in r["missing"].items()) + f". To fill the gaps: {RESUME}")
    spent = sum(r["spent_seconds"].values())
    return (f"<h1>Which method, which layers, at what cost: {_e(m['title'])}</h1>"
            f"<p>{_e(m['identity'])}: {m['n_layers']} layers, {m['n_params'] / 1e6:.0f} M parameters, "
            f"{_e(m['dtype'])} on {_e(m['device'])}. Data: {_e(d['name'])}, {d['n_pairs']} pairs "
            f"({d['n_texts']} texts){_e(_sample(d))}. Created {_e(r['created'])}.</p>"
            f"<p>Budget {r['settings']['budget_minutes']:g} min; estimated "
            f"{plan['estimate_total_seconds'] / 60:.1f} min, spent {spent / 60:.1f} min "
            f"({', '.join(f'{k} {v:.0f} s' for k, v in r['spent_seconds'].items())}). Report: {_e(state)}.</p>")


def _sample(d: dict) -> str:
    s = d.get("sample")
    return f", {s['how']} (seed {s['seed']}) of {s['of']}" if isinstance(s, dict) and "how" in s else ""


def _recommendation(rec: dict, r: dict, figures) -> str:
    items = "".join(f"<li>{_e(x)}</li>" for x in rec["reasons"])
    trust = {True: "yes", False: "no", None: "unknown"}[rec["id_rule"]["trusted"]]
    tested = any(x["p"] is not None and math.isfinite(x["p"]) for x in (r["quality"] or {}).get("methods", []))
    tied = (f'Not significantly different from the best: {_e(", ".join(rec["not_different"]) or "none")}' if tested
            else "No difference to the best was tested")
    return (f'<p class="best">Best: {_e(rec["best"] or "unknown")}. Best per unit of cost: '
            f'{_e(rec["best_per_cost"] or "unknown")}. ID rule to be trusted here: {trust}. {tied}.</p>'
            f"<ul>{items}</ul>")


def _quality(q: dict, r: dict, figures) -> str:
    rows = sorted(q["methods"], key=lambda x: -_num(x["spearman"]))
    table = _table(["method", "Spearman", "95% interval", "minus the best", "paired 95% interval", "p", "trained",
                    "from cache"],
                   [[x["label"] + (" (reference: MiniLM alone, no decoder)" if x.get("reference") else ""),
                     _f(x["spearman"]), _ci(x["ci"]), _f(x["difference_to_best"]),
                     _ci(x["difference_ci"]), _f(x["p"], 3), "yes" if x["trained"] else "", "yes" if x["cached"]
                     else ""] for x in rows])
    fig = go.Figure(go.Bar(x=[x["label"] for x in rows], y=[x["spearman"] for x in rows],
                           error_y=dict(type="data", symmetric=False,
                                        array=[_num(x["ci"][1]) - _num(x["spearman"]) for x in rows],
                                        arrayminus=[_num(x["spearman"]) - _num(x["ci"][0]) for x in rows])))
    fig.update_layout(height=360, yaxis_title="Spearman", margin=dict(l=10, r=10, t=20, b=10))
    return (table + _figure("fig_quality", fig, figures) +
            f'<p class="note">{q["n_pairs"]} pairs; {_e(q["bootstrap"])}. Differences are each method minus the '
            f"best ({_e(q['best'])}).</p>" + _tasks(q.get("tasks") or []))


def _tasks(rows: list) -> str:
    """Probe and retrieval tasks: one column per task, each cell the value and its 95% interval."""
    if not rows:
        return ""
    name = lambda r: f"{r['task']} ({r['metric']}, n = {r['n']})"  # noqa: E731 - the column of a row
    columns = list(dict.fromkeys(name(r) for r in rows))
    cells: dict = {}
    for r in rows:
        cells.setdefault(r["label"], {})[name(r)] = f"{_f(r['value'])} {_ci(r['ci'])}"
    return ("<h3>Other tasks</h3>" + _table(["method", *columns],
                                            [[label, *(row.get(c, "") for c in columns)]
                                             for label, row in cells.items()]))


def _families(s: dict, r: dict, figures) -> str:
    """Each task family's sample: every method's score, its paired difference to the family's best, and a bar per
    method per family (`report.families`)."""
    out = [f'<p class="note">{_e(k)}: not measured ({_e(v)}).</p>' for k, v in (s.get("skipped") or {}).items()]
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
        out.append(f"<h3>{_e(t['family'])}: {_e(t['task'])} ({_e(t['metric'])}, {t['n']} {_e(t['unit'])})</h3>" +
                   _table(["method", t["metric"], "95% interval", "minus the best", "paired 95% interval", "p"],
                          [[x["label"] + (" (reference: MiniLM alone, no decoder)" if x["reference"] else ""),
                            _f(x["value"]), _ci(x["ci"]), _f(x["difference_to_best"]), _ci(x["difference_ci"]),
                            _f(x["p"], 3)] for x in rows]) +
                   f'<p class="note">Best: {_e(t["best"])}; {_e(t["bootstrap"])}.</p>')
    if s["tasks"]:
        fig.update_layout(barmode="group", height=380, yaxis_title="score (each family's main metric)",
                          margin=dict(l=10, r=10, t=20, b=10))
        out.insert(0, _figure("fig_families", fig, figures))
    return "".join(out)


def _cost(c: dict, r: dict, figures) -> str:
    table = _table(["method", "seconds", "x plain forward", "peak memory (MB)"],
                   [[x["label"], _f(x["seconds"], 3), _f(x["ratio"], 2), _f(x["peak_mb"], 1)] for x in c["rows"]])
    rho = {x["label"]: x["spearman"] for x in (r["quality"] or {"methods": []})["methods"]}
    pts = [x for x in c["rows"] if x["label"] in rho]
    fig = go.Figure(go.Scatter(x=[x["ratio"] for x in pts], y=[rho[x["label"]] for x in pts], mode="markers+text",
                               text=[x["label"] for x in pts], textposition="top center"))
    fig.update_layout(height=360, xaxis_title="time / plain forward", yaxis_title="Spearman",
                      margin=dict(l=10, r=10, t=20, b=10))
    return (table + _figure("fig_cost", fig, figures) +
            f'<p class="note">Median of {c["repeats"]} interleaved rounds on {c["texts"]} texts, every method and '
            f'the plain forward ({_e(c["baseline"])}: the `last` method) in the same rounds, so `last`\'s own ratio '
            "shows the timing's noise; peak memory above the level before the call.</p>")


def _layers(s: dict, r: dict, figures) -> str:
    L = r["model"]["n_layers"]
    sel = s["selection"]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=("intrinsic dimension per hidden state", "layer map: Spearman by window start"))
    fig.add_trace(go.Scatter(x=list(range(L + 1)), y=[None if v is None else v for v in s["id_trajectory"]],
                             mode="lines+markers", name="ID", line=dict(color="black")), 1, 1)
    if sel["layers"]:
        fig.add_vrect(x0=sel["start"] - 0.5, x1=sel["end"] + 0.5, fillcolor="green", opacity=0.15, line_width=0)
    parts = [f"<p>Rule <b>{_e(sel['rule'])}</b>: {_e(sel['reason'])}. Window: decoder layers "
             f"{sel['start']}-{sel['end']}.</p>",
             _table(["rule", "window (decoder layers)"],
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
                        f"{_f(w['gap_to_best'])} below the best." if w and w.get("spearman") is not None else "")
                     + f" Cells computed in this run: {s['computed']}, from the cache: {s['cached']}.</p>")
        parts.append(_table(["start", "width", "bias", "Spearman"],
                            [[c["start"], c["width"], f"{c['bias']:g}", _f(c["spearman"])] for c in m["cells"]]))
    fig.update_xaxes(title_text="hidden state = first decoder layer re-routed", row=2, col=1)
    fig.update_layout(height=560, margin=dict(l=10, r=10, t=40, b=10))
    return _figure("fig_layers", fig, figures) + "".join(parts)


def _mechanism(s: dict, r: dict, figures) -> str:
    out = []
    pm = s["prefix_mass"]
    if pm is not None:
        fig = go.Figure(go.Bar(x=list(range(len(pm["mass"]))), y=pm["mass"]))
        fig.update_layout(height=300, xaxis_title="decoder layer", yaxis_title="attention mass on the prefix",
                          margin=dict(l=10, r=10, t=20, b=10))
        out.append(_figure("fig_prefix", fig, figures) +
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
        out.append(_figure("fig_soft", fig, figures) +
                   _table(["K", "Spearman", "95% interval"],
                          [[k, _f(v), _ci(ci)] for k, v, ci in zip(st["ks"], st["spearman"], st["ci"])]))
    return "".join(out)


def _claims(c: dict, r: dict, figures) -> str:
    """The model's claims board as its verdicts (the Claims page and `python -m analysis claims` show each in full)."""
    if not c["rows"]:
        return (f'<p class="note">No claims board for this model yet: <code>python -m analysis claims --model '
                f'{_e(r["model"]["name"])} --out board.html</code>, or the Claims page.</p>')
    counts = ", ".join(f"{n} {_e(w)}" for w, n in c["counts"].items() if n)
    return (f"<p>{counts} ({_e(c['source'])}).</p>" +
            _table(["paper", "claim", "the paper says", "verdict here", "number [95% interval]"],
                   [[x["paper"], x["id"], x["says"], x["word"], x["number"]] for x in c["rows"]]))


SECTION_HTML = {"recommendation": _recommendation, "quality": _quality, "cost": _cost, "layers": _layers,
                "mechanism": _mechanism, "claims": _claims, "families": _families}


def _figure(name: str, fig, figures) -> str:
    figures.append((name, fig))
    return f'<div id="{name}" class="figure"></div>'


def _table(head, rows) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    tr = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{tr}</tbody></table>"


def _e(value) -> str:
    return html.escape(str(value))


def _num(v) -> float:
    return math.nan if v is None else float(v)


def _f(v, digits: int = 3) -> str:
    return "" if v is None or not math.isfinite(float(v)) else f"{float(v):.{digits}f}"


def _ci(ci) -> str:
    return "" if ci is None or not all(math.isfinite(_num(x)) for x in ci) else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def dumps(report: dict) -> str:
    """The report as strict JSON (NaN and infinities become null)."""
    from analysis.core.finite import finite

    return json.dumps(finite(report), indent=1, allow_nan=False)


def save(report: dict, out, *, shared_plotly: bool = False) -> tuple[Path, Path]:
    """Write `out` (the HTML) and the JSON beside it (same name, .json), each to a temporary file first and then
    renamed into place: an interrupted write never leaves a half-written file under either name. With
    `shared_plotly`, plotly.gz.js is written beside them too (rewritten only when plotly's version changed it)."""
    out = Path(out)
    paths = [out, out.with_suffix(".json")]
    texts = [render(report, shared_plotly=shared_plotly), dumps(report)]
    shared = out.with_name(SHARED_PLOTLY)
    if shared_plotly and not (shared.is_file() and shared.read_text(encoding="utf-8") == shared_plotly_text()):
        paths.append(shared)
        texts.append(shared_plotly_text())
    for path, text in zip(paths, texts):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return paths[0], paths[1]
