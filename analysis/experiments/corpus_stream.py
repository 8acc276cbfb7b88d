"""Peak memory of retrieval over a corpus past the budgets, streamed from disk against read whole: the record
docs/BUDGETS.md's corpus paragraph is rendered from, so "a 100,000-document folder in bounded memory" is a number
anyone can measure again.

Each mode runs in a process of its own (`scripts/bench_corpus_stream.py`, run by `machinery.scripts`): a peak
resident set is only a process's own. The default is the memory at full scale in minutes, not hours: 100,000
generated documents of ~1,000 characters, a tiny random Llama reading 16 tokens of each.

    python -m analysis measure corpus_stream                                       # 100,000 documents, both modes
    python -m analysis measure corpus_stream --model default --documents 2000 --chars 400   # the forward passes too
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery.records import Model, Sample, Table
from analysis.experiments.machinery.render import table_markdown
from analysis.experiments.machinery.scripts import measured_by, run_script

ID = "corpus_stream"
TITLE = "Peak memory of retrieval over a corpus past the budgets: streamed from disk against read whole"
HELP = ("A generated BEIR folder (100,000 documents by default) scored as `bench --data beir:FOLDER --no-budgets` "
        "does, each mode in its own process: peak resident memory above the loaded model, the vectors' own size, "
        "seconds and nDCG@10 (equal in both modes).")
BLOCK = "corpus-stream"  # the docs/BUDGETS.md block this record fills
MODES = ("streamed", "whole")
TINY = "tiny:llama:L1:seed0"  # the script's random tiny Llama (one layer, 16 tokens read per document)
DIGITS = {"peak": 0, "model loaded": 0, "above the model": 0, "vectors alone": 1, "seconds": 0, "nDCG@10": 4}


@dataclass(frozen=True)
class Config:
    documents: int = param(100_000, "generated documents", min=10, limit=1_000_000)
    chars: int = param(1000, "characters per generated document", min=20, limit=100_000)
    model: str = param("tiny", "'tiny' (a random tiny Llama reading 16 tokens of each document), 'default' or a "
                               "built-in model")
    modes: str = param("streamed,whole", "comma-separated: streamed, whole", choices=("streamed", "whole",
                                                                                      "streamed,whole"))


def measure(config: Config, compute, progress) -> Measured:
    progress(0, 1, f"scoring {config.documents:,} generated documents ({config.modes})")
    out = run_script("bench_corpus_stream.py", ["--documents", str(config.documents), "--chars", str(config.chars),
                                                "--model", config.model, "--modes", config.modes])
    progress(1, 1, "done")
    rows = tuple((mode, m["documents"], m["peak_rss_mib"], m["model_rss_mib"], m["above_model_mib"],
                  m["vectors_mib"], m["seconds"], m["nDCG@10"]) for mode, m in out["modes"].items())
    models = [Model(name="tiny", identity=TINY) if config.model == "tiny" else Model(name=config.model, identity=None)]
    return Measured(data=f"a generated BEIR folder: {config.documents:,} documents of about {config.chars:,} "
                         f"characters ({out['corpus_bytes'] / 2**20:,.0f} MiB of corpus.jsonl), 20 queries",
                    sample=Sample(n=config.documents, how="generated (seed 0)"), models=models,
                    tables=[Table("modes", "Peak resident memory of one retrieval cell, per mode (MiB)",
                                  ("mode", "documents", "peak", "model loaded", "above the model", "vectors alone",
                                   "seconds", "nDCG@10"), rows, digits=DIGITS)],
                    findings=findings(out["modes"]), extra=out)


def findings(modes: dict) -> list[str]:
    said = []
    if "streamed" in modes:
        s = modes["streamed"]
        said.append(f"Streamed, {s['documents']:,} documents peaked {s['above_model_mib']:,.0f} MiB above the loaded "
                    f"model, of which the vectors alone are {s['vectors_mib']:,.0f} MiB.")
    if set(MODES) <= set(modes):
        s, w = modes["streamed"], modes["whole"]
        same = "the same" if s["nDCG@10"] == w["nDCG@10"] else "a different"
        said.append(f"Read whole, the same corpus peaked {w['above_model_mib']:,.0f} MiB above the model "
                    f"({w['above_model_mib'] / max(s['above_model_mib'], 1e-9):.1f}x), with {same} nDCG@10.")
    return said


def block(records: list) -> str:
    """docs/BUDGETS.md's numbers: the latest full-scale record's table and findings, with its command and load."""
    if not records:
        return "(not measured yet: `python -m analysis measure corpus_stream`)"
    rec = max(records, key=lambda r: (r.config.get("documents", 0), r.date))
    table = table_markdown(dataclasses.replace(rec.table("modes"), title="", notes="", digits=DIGITS))
    return f"{measured_by(rec)}: {' '.join(rec.findings)}\n\n" + table
