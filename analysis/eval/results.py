"""The results document: every table in docs/RESULTS.md (and the README's headline) comes from a results record, a
JSON file under docs/results/ written by the command that measured it, never typed by hand.

A record says what was measured and how, so a reader can judge and regenerate it:

    {"id": "causal2vec", "title": "...", "command": "python scripts/causal2vec_results.py ...",
     "data": "STS-B dev, report part (1,200 pairs, never seen by selection)", "sample": {...}, "seed": 0,
     "date": "2026-11-24", "wall_seconds": 812.3, "load": [1.9, 2.1, 2.0], "machine": "2 cores, torch 2.13 CPU",
     "tables": [{"title": "...", "columns": [...], "rows": [[...], ...], "notes": "..."}],
     "findings": ["one sentence per conclusion the numbers support"]}

    write_record(folder, record)          # what a measuring command calls at its end
    render(records) -> markdown           # docs/RESULTS.md, in the order of ORDER
    readme(text, records) -> markdown     # the README with its generated blocks (headline, compression) filled
    read_record("gircse")                 # one record for a reader such as a page (None when absent)

A record may carry more than its tables under its own keys (e.g. GIRCSE's "curves", which the Soft tokens page
draws); the renderer shows only the keys above.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import REPO

ORDER = ("methods_models", "causal2vec", "gircse", "layer_map", "compression", "compression_people",
         "compression_training")  # sections of docs/RESULTS.md
TITLES = {"methods_models": "methods x models", "causal2vec": "Causal2Vec", "gircse": "GIRCSE",
          "layer_map": "the layer map", "compression": "context compression",
          "compression_people": "context compression across people",
          "compression_training": "context compression's training recipe"}
ARCHIVE = "docs/RESULTS-old-protocol.md"  # what was measured before this protocol, kept as measured
RECORDS = REPO / "docs" / "results"  # in a checkout; an installed wheel has no docs/, so readers get None


def machine() -> dict:
    """What the numbers were measured on, and how busy it was (a measurement under load is slower, not wrong)."""
    import torch

    return {"cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "python": platform.python_version(), "load": [round(x, 2) for x in os.getloadavg()]}


def write_record(folder, record: dict) -> Path:
    """Write `record` as <folder>/<id>.json (with the date and machine when absent), atomically."""
    for key in ("id", "title", "command", "data", "tables"):
        if key not in record:
            raise ValueError(f"a results record needs '{key}'")
    record = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), **record}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['id']}.json"
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def shown_folder(spec: str) -> str:
    """A weights folder as a record's command shows it: "shipped" as given, a folder inside the repository relative
    to it (a shipped ablation), else the folder's name (runs live in one machine's cache; records carry no machine
    paths)."""
    if spec == "shipped":
        return spec
    path = Path(spec).expanduser().resolve()
    return path.relative_to(REPO).as_posix() if REPO in path.parents else path.name


def runs_table(runs: dict[str, dict]) -> dict:
    """The training runs behind a record as one table: {label: a run's manifest} -> each run's command (no machine
    paths: the trainer records it so), steps, best step, training minutes and throughput."""
    rows = [[label, f"`{m['command']}`" if m.get("command") else None, m.get("steps_done"), m.get("best_step"),
             round(m["wall_seconds"] / 60, 1) if m.get("wall_seconds") else None,
             round(m["examples_per_second"], 2) if m.get("examples_per_second") else None] for label, m in runs.items()]
    return {"title": "Training runs behind these numbers", "columns": ["run", "command", "steps", "best step",
                                                                       "training min", "examples/s"], "rows": rows,
            "notes": "Trained one at a time on this 2-core CPU (torch threads 2); wall time includes validation."}


def read_records(folder) -> dict[str, dict]:
    """{id: record} of every record in `folder`."""
    out = {}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except ValueError as err:
            raise UserError(f"{path} is not a results record ({err}).") from err
        out[rec.get("id", path.stem)] = rec
    return out


def read_record(record_id: str, folder=None) -> dict | None:
    """The record `record_id` in `folder` (default RECORDS), or None when there is none or it is unreadable: a
    reader (a page) then says so instead of failing."""
    path = Path(folder or RECORDS) / f"{record_id}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def table_markdown(table: dict) -> str:
    """One table as GitHub markdown, numbers as given (the measuring command rounds)."""
    cols = table["columns"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table["rows"]]
    out = (f"**{table['title']}**\n\n" if table.get("title") else "") + "\n".join(lines)
    return out + (f"\n\n{table['notes']}" if table.get("notes") else "")


def record_markdown(rec: dict) -> str:
    m = rec.get("machine", {})
    how = [f"Command: `{rec['command']}`", f"Data: {rec['data']}"]
    if rec.get("sample"):
        how.append(f"Sample: {_sample_text(rec['sample'])}")
    how.append(f"Measured {rec.get('date', '?')} in {rec.get('wall_seconds', 0) / 60:.1f} min on {m.get('cores', '?')} "
               f"cores (torch {m.get('torch', '?')}, {m.get('threads', '?')} thread(s), load average "
               f"{'/'.join(str(x) for x in m.get('load', []))})")
    parts = [f"## {rec['title']}", "\n".join(f"- {h}" for h in how)]
    parts += [table_markdown(t) for t in rec["tables"]]
    if rec.get("findings"):
        parts.append("What it shows:\n\n" + "\n".join(f"- {f}" for f in rec["findings"]))
    return "\n\n".join(parts)


def render(records: dict[str, dict]) -> str:
    """docs/RESULTS.md: a short preamble, then each record in ORDER (others after, by id)."""
    ids = [i for i in ORDER if i in records] + sorted(set(records) - set(ORDER))
    head = ("# Results\n\nGenerated by `python -m analysis results` from the records in `docs/results/`; each "
            "section names the command that measured it. Intervals are 95% bootstrap intervals over pairs; a "
            "difference between two methods is the paired bootstrap (the same resampled pairs for both). No number "
            "here comes from \"the first N\" rows of a sorted file.\n")
    missing = [TITLES[i] for i in ORDER if i not in records]
    if missing:
        head += (f"\nNot yet measured under this protocol: {', '.join(missing)}. Their earlier tables, some on the "
                 f"first N pairs of STS-B dev (captions only), are kept as measured in [{ARCHIVE}]"
                 f"(RESULTS-old-protocol.md) and say so there.\n")
    return head + "\n" + "\n\n".join(record_markdown(records[i]) for i in ids) + "\n"


def headline(records: dict[str, dict]) -> str:
    """The README's short table: each record's first table's first rows, with a link to the full section."""
    rec = records.get("methods_models")
    if rec is None:
        return "(no results recorded yet: see docs/RESULTS.md)"
    table = dict(rec["tables"][0], rows=rec["tables"][0]["rows"][:12])
    return (table_markdown(table) + f"\n\n{rec['data']}; `{rec['command']}`, {rec.get('date', '?')}. Every table, "
            "with its command and sample: [docs/RESULTS.md](docs/RESULTS.md).")


def compression_block(records: dict[str, dict]) -> str:
    """The README's context-compression results: cross-person selection (Experiments B/B2, the N-people scaling,
    the single-person check) and what the training recipe contributes, each with its command."""
    parts = []
    for rid, keep in (("compression_people", None), ("compression_training", slice(1, None))):
        rec = records.get(rid)
        if rec is None:
            continue
        tables = rec["tables"][keep] if keep else rec["tables"]
        parts += [table_markdown(t) for t in tables]
        parts += ["\n".join(f"- {f}" for f in rec.get("findings", []))] if rec.get("findings") else []
        parts.append(f"`{rec['command']}`, {rec.get('date', '?')}, {rec.get('wall_seconds', 0) / 60:.1f} min.")
    return "\n\n".join(parts) if parts else "(not measured yet: see docs/RESULTS.md)"


BLOCKS = {"headline": headline, "compression": compression_block}  # the README's generated blocks


def markers(name: str) -> tuple[str, str]:
    """The comment lines around the README's generated block `name`."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def replace_block(text: str, block: str, name: str = "headline") -> str:
    """`text` with the part between block `name`'s markers replaced by `block`."""
    start, end = markers(name)
    if start not in text or end not in text:
        raise UserError(f"the README has no {start} ... {end} block to fill.")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{block}\n{end}{after}"


def readme(text: str, records: dict[str, dict]) -> str:
    """The README `text` with every generated block (`BLOCKS`) filled from `records`."""
    for name, make in BLOCKS.items():
        text = replace_block(text, make(records), name)
    return text


def _sample_text(sample: dict) -> str:
    of = f" of {sample['of']}" if "of" in sample else ""  # a generated set has no whole to be a part of
    bits = [f"{sample.get('n', '?')}{of}", sample.get("how", "")]
    if "seed" in sample:
        bits.append(f"seed {sample['seed']}")
    if sample.get("genres"):
        bits.append("genres " + ", ".join(f"{g} {n}" for g, n in sample["genres"].items()))
    return "; ".join(b for b in bits if b)


def _cell(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return f"[{v[0]:.3f}, {v[1]:.3f}]"
    return str(v).replace("|", "\\|")
