"""The training runs behind a record, as one table from their manifests: each run's command (recorded by the
trainer without machine paths), steps, best step, training minutes and throughput."""

from __future__ import annotations

from analysis.experiments.machinery.records import Table


def runs_table(manifests: dict[str, dict]) -> Table:
    """{label: a run's manifest} -> the "runs" table."""
    rows = tuple((label, f"`{m['command']}`" if m.get("command") else None, m.get("steps_done"), m.get("best_step"),
                  round(m["wall_seconds"] / 60, 1) if m.get("wall_seconds") else None,
                  round(m["examples_per_second"], 2) if m.get("examples_per_second") else None)
                 for label, m in manifests.items())
    return Table("runs", "Training runs behind these numbers",
                 ("run", "command", "steps", "best step", "training min", "examples/s"), rows,
                 "Trained one at a time on this 2-core CPU; wall time includes validation.",
                 digits={"training min": 1, "examples/s": 2})


def steps_at(manifest: dict | None, people: int) -> str | None:
    """"34 (best 30)": the steps a compression run trained at `people` per context; a run trained for another N
    reads this N untrained ("0: the 50-person run"), and so does a run whose best step is 0: its weights are those it
    started from ("0: its start; best step 0 of 34", a copy of the run it was warmed from), which runs trained since
    step 0 stopped being selectable (`analysis.training.systems`) never are."""
    if not manifest:
        return None
    trained_for = (manifest.get("hyperparameters") or {}).get("people")
    if trained_for is not None and trained_for != people:
        return f"0: the {trained_for}-person run"
    if manifest.get("best_step") == 0:
        return f"0: its start; best step 0 of {manifest.get('steps_done')}"
    return f"{manifest.get('steps_done')} (best {manifest.get('best_step')})"
