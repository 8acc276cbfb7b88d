"""The claims board as a published record: `python -m analysis measure claims --model M` writes
`docs/results/claims_<model>.json`, one per model, with the board's wall time and every verdict; the Claims page,
the model report and Compare models read it when the cache holds no newer board for the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.claims.context import Settings, short_name
from analysis.experiments.machinery import (
    heldout_sts,  # by module: tests replace report_pairs
)
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Table
from analysis.experiments.machinery.render import table_markdown
from analysis.weights.artefacts import shipped_dir

ID = "claims"
TITLE = "Does the paper hold on this model? The claims board"
HELP = ("The five papers' headline claims, each in its paper's words with its location and the paper's own number, "
        "tested on one model in the paper's direction with its verdict rule fixed before measuring (holds here, "
        "reversed here, not resolved, cannot run here, not measured with the run it needs), the deviations that bear "
        "on each, read from every record measured on this model (the closest to the paper judged, the others "
        "beside): one record per model, claims_<model>.json.")


@dataclass(frozen=True)
class Config(Settings):
    model: str = param("default", "the model: a built-in name (default, gemma3-270m) or a folder (a record names a "
                                   "folder by its last part only)", path=True)
    budget_minutes: float = param(0.0, "time for the whole board, clock-enforced claim by claim (0 = no limit)",
                                   min=0.0)


def settings_of(config) -> Settings:
    return Settings(**{f.name: getattr(config, f.name) for f in fields(Settings)})


def board_tables(board: dict) -> list[Table]:
    claims = board["claims"]
    rows = tuple((board["papers"][c["paper"]]["title"], c["id"], c["says"], c.get("quote") or None,
                  c.get("where") or None, c.get("paper_number") or None, c["verdict"]["word"],
                  c["verdict"]["number"] or None, c["verdict"]["detail"], c["source"] or None,
                  " ".join(c.get("beside") or []) or None, c.get("differs") or None,
                  "; ".join(d["topic"] for d in c["deviations"]) or None) for c in claims)
    counts = tuple((word, n) for word, n in board["counts"].items())
    coverage = tuple((p["title"], (p.get("coverage") or {}).get("line")) for p in board["papers"].values())
    return [Table("board", f"The claims on {board['model']['title']}: each verdict by its rule fixed before measuring",
                  ("paper", "claim", "tested here", "the paper's words", "where in the paper", "the paper's number",
                   "verdict", "number here [95% interval]", "what it rests on", "read from", "beside it",
                   "how this setting differs", "deviations beside it"), rows,
                  "Deviations: the topics of the methods' and trained systems' declared differences from the paper "
                  "that bear on the claim (the Claims page and `python -m analysis claims` show them in full)."),
            Table("counts", "Verdicts", ("verdict", "claims"), counts),
            Table("coverage", "Each paper's headline claims: how many are tested here, which not and why",
                  ("paper", "coverage"), coverage)]


def findings(board: dict) -> list[str]:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.experiments.claims.board import summary

    out = [f"{board['model']['title']}: {summary(board)} of {len(board['claims'])} claims."]
    for word in ("holds here", "reversed here"):
        ids = [c["id"] for c in board["claims"] if c["verdict"]["word"] == word]
        if ids:
            out.append(f"{word[0].upper()}{word[1:]}: {', '.join(ids)}.")
    return out


def measure(config: Config, compute, progress) -> Measured:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.experiments.claims.board import prepare, run
    backbone = compute.backbone(config.model)
    plan = prepare(backbone, compute, settings_of(config))
    board = run(plan, budget_seconds=config.budget_minutes * 60 or None, progress=progress)
    weights = {system: shipped_dir(system, backbone.facts) for system in ("gircse", "causal2vec", "compression")
               if (shipped_dir(system, backbone.facts) / "weights.safetensors").is_file()}
    _, sample = heldout_sts.report_pairs(config.sts_sample, config.seed)
    return Measured(
        data=(f"STS-B dev report part for the STS claims and, concatenated k = {','.join(config.long_k)} pairs at a "
              f"time ({config.long_n} items per length), for the long-input claims; {config.retrieval} "
              f"({config.retrieval_queries} queries, {config.retrieval_distractors} distractors) for retrieval; "
              "Banking77's report part for classification and clustering; the records in docs/results where they "
              "were measured on this model"),
        sample=sample, models=[model_entry(backbone, weights)], tables=board_tables(board),
        findings=findings(board), extra={"board": board}, variant=short_name(backbone.facts),
        title=f"Does the paper hold on {board['model']['title']}? The claims board")


def headline(records: list) -> str:
    """The README's first table: per model, how many of the papers' claims hold, are reversed, unresolved or cannot
    run here (one claims record per model)."""
    boards = [r for r in records if r.has_table("counts")]
    if not boards:
        return ""
    words = [w for w, _ in boards[0].table("counts").rows]
    rows = tuple((r.extra["board"]["model"]["title"], *(dict(r.table("counts").rows).get(w) for w in words),
                  f"`{r.command}`") for r in boards)
    return table_markdown(Table("claims", "Does the paper hold here? The five papers' claims per model",
                                ("model", *words, "command"), rows)) + "\n\n"


def record_source(rec) -> str:
    """How a report names the published record a board comes from (and how `results` finds it again)."""
    return f"the published record docs/results/{rec.id}.json ({rec.date}, `{rec.command}`)"


def report_section(board: dict | None, where: str) -> dict:
    """The model report's Claims section of `board` ({source, created, counts, rows [{paper, id, says, word,
    number}]}); rows empty and source None when the model has no board yet."""
    if board is None:
        return {"source": None, "created": None, "counts": {}, "rows": []}
    return {"source": where, "created": board["created"], "counts": board["counts"],
            "rows": [{"paper": board["papers"][c["paper"]]["title"], "id": c["id"], "says": c["says"],
                      "word": c["verdict"]["word"], "number": c["verdict"]["number"]} for c in board["claims"]]}


# ---- a published model report kept in step with the record it cites ---------------------------------------------
# A report (docs/reports/<model>.json and its HTML) copies the model's board from this record. When the board is
# measured again the copy is stale: `python -m analysis results` rewrites the report's Claims section from the record
# (and its HTML), and `results --check` fails until it has. A report whose board came from a cache cites nothing.
CITED = re.compile(r"the published record docs/results/([A-Za-z0-9_]+)\.json")


def refreshed(report: dict, records: dict) -> tuple[dict | None, str | None]:
    """(`report` with its Claims section read again from the record it cites, or None when it is current; a reason
    when the citation cannot be renewed: the record is gone, or it measured other weights)."""
    section = report.get("claims") or {}
    found = CITED.search(section.get("source") or "")
    if found is None:
        return None, None
    rec = records.get(found.group(1))
    if rec is None:
        return None, f"cites docs/results/{found.group(1)}.json, which no longer exists: rebuild the report"
    board = rec.extra.get("board") or {}
    if board.get("model", {}).get("identity") != report.get("model", {}).get("identity"):
        return None, f"cites docs/results/{rec.id}.json, now measured on other weights: rebuild the report"
    current = report_section(board, record_source(rec))
    if current == section:
        return None, None
    return {**report, "claims": current}, None
