"""Drive every page with the largest inputs the budgets allow and report peak server memory and time per page.

Not a test: it takes minutes and measures this machine. Each page runs in a fresh process (AppTest, the real
default model, an empty temporary cache whose models/ links to the converted model), so one page's peak cannot
hide in another's. "Above the model" is the process's peak resident memory minus its resident memory right after
the model was loaded; the budgets in analysis/core/budgets.py aim to keep it under about 2 GiB.

    python scripts/stress_pages.py                                     # every page, a Markdown table at the end
    python scripts/stress_pages.py --pages attention,sensitivity       # some pages
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from analysis.core import budgets
from analysis.core.paths import cache_root
from ui.model import _load

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 3600

# The largest inputs per page. Where a limit only costs time (grid cells, probes, replicates), the note says what
# was used; every memory-relevant size is at its budget.
LINES = "\n".join(f"Sentence number {i} says something short about topic {i % 17}." for i in range(5000))


def _words(n: int) -> str:
    return " ".join(["The river bank flooded after the storm."] * (n // 7))


def _scenario(name: str):
    """(page file, session state, extra actions, note) for one page."""
    b = budgets.APP
    if name == "home":
        return "pages/1_home.py", {}, [], "model facts"
    if name == "embed":
        return "pages/2_embed_compare.py", {
            "embed_source": "paste", "embed_paste": LINES, f"embed_limit_{b.texts}": b.texts,
            "embed_methods": ["mean"]}, [], f"{b.texts:,} texts (neighbours over all, heatmap of {b.matrix_texts})"
    if name == "embed_long":
        return "pages/2_embed_compare.py", {
            "embed_source": "paste", "embed_paste": "\n".join(["x " * (b.chars_per_text // 2 - 1)] * 2),
            "embed_methods": ["prompteol"]}, [], f"2 texts of {b.chars_per_text:,} characters (8,192 tokens)"
    if name == "intrinsic_dimension":
        return "pages/3_intrinsic_dimension.py", {
            "id_source": "paste", "id_paste": LINES, f"id_limit_{b.texts}": b.texts, "id_boot": 20,
            "id_methods": ["mean"]}, [("button", "id_compute")], f"{b.texts:,} texts, 20 bootstrap resamples"
    if name == "attention":
        return "pages/4_attention.py", {
            "attn_text": _words(440), "attn_kv_kv_embedding_layers": "9-12",
            "attn_words_methods": ["prompteol", "kv_embedding"], "attn_words_kv_embedding_layers": "9-12"}, [], \
            f"one text at the {b.attention_tokens}-token attention budget (prompt included), 2 methods"
    if name == "layer_explorer":
        return "pages/5_layer_explorer.py", {
            "explorer_source": "set", "explorer_set": "STS-B dev", "explorer_limit_1500": 1000, "explorer_step": 7,
            "explorer_running": True}, [], \
            "STS-B dev 1,000 pairs (1,9xx texts), 5 window starts (hidden states kept per start; cells cost time)"
    if name == "sensitivity":
        return "pages/6_sensitivity.py", {
            "sens_text": _words(440), "sens_methods": ["mean"], "sens_probes": 16}, [], \
            f"one text near the {b.sensitivity_tokens}-token budget, 16 probes (probes run in chunks: time, not memory)"
    if name == "geometry":
        return "pages/7_geometry.py", {
            "geometry_methods": ["mean"], "geometry_view": "maps", "geometry_maps_source": "paste",
            "geometry_maps_paste": LINES, f"geometry_maps_limit_{b.texts}": b.texts,
            "geometry_map_kind": "umap"}, [], f"UMAP of {b.map_points:,} texts"
    if name == "geometry_plane":
        return "pages/7_geometry.py", {
            "geometry_methods": ["mean"], "geometry_view": "plane", "geometry_source": "set",
            "geometry_set": "STS-B dev", "geometry_boot": 1000}, [], "STS-B dev (2,910 texts), 1,000 replicates"
    if name == "benchmark":
        return "pages/8_benchmark.py", {
            "bench_methods": ["mean"], "bench_sets": ["STS-B dev (STS)", "Topics (probe)"],
            "bench_stsb_limit": 1500, "bench_boot": b.bootstrap}, [], \
            f"STS-B dev 1,500 pairs + topics probe, {b.bootstrap:,} replicates"
    if name == "soft_tokens":
        return "pages/9_soft_tokens.py", {
            "soft_text": "word " * (b.chars_per_text // 5 - 1), "soft_k": 20}, [], \
            f"a {b.chars_per_text:,}-character text (8,192 tokens), K = 20, two instructions"
    raise SystemExit(f"unknown page scenario {name!r}")


SCENARIOS = ["home", "embed", "embed_long", "intrinsic_dimension", "attention", "layer_explorer", "sensitivity",
             "geometry", "geometry_plane", "benchmark", "soft_tokens"]


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(name: str) -> dict:
    """Run one page scenario in this process and measure it."""
    _load("default")  # the model, shared by every session of a server (st.cache_resource)
    base = _rss_mib()
    page, state, actions, note = _scenario(name)
    at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    start = time.perf_counter()
    at.run()
    for kind, key in actions:
        getattr(at, kind)(key=key).click()
        at.run()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    problems = [e.value for e in at.exception] + [e.value for e in at.error]
    return {"page": name, "note": note, "seconds": round(seconds, 1), "model_mib": round(base),
            "peak_mib": round(peak), "above_model_mib": round(peak - base), "charts": len(at.get("plotly_chart")),
            "problems": [p[:200] for p in problems]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=",".join(SCENARIOS), help=f"comma-separated, from {SCENARIOS}")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="stress-cache-") as root:
        (Path(root) / "models").symlink_to(cache_root() / "models", target_is_directory=True)
        env = {**os.environ, "EMBEDSCOPE_CACHE": root}
        for name in args.pages.split(","):
            proc = subprocess.run([sys.executable, __file__, "--child", name], env=env, capture_output=True,
                                  text=True, timeout=TIMEOUT + 60)
            lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
            row = json.loads(lines[-1]) if lines else {"page": name, "problems": [proc.stderr[-500:]]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    print("\n| page | largest input | time (s) | peak above the model (MiB) | peak RSS (MiB) | problems |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['page']} | {r.get('note', '')} | {r.get('seconds', '')} | {r.get('above_model_mib', '')} | "
              f"{r.get('peak_mib', '')} | {'; '.join(r.get('problems') or []) or 'none'} |")


if __name__ == "__main__":
    main()
