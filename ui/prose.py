"""The pages' sentences that state measured numbers, built from the published records (`ui.recorded`), so no page
types a measurement by hand; each function is one paragraph, and `CITES` pins the records its words were written
against (`results --check` holds them to it)."""

from __future__ import annotations

from analysis.data import personas
from ui.recorded import MISSING, Cited

CITES = {"compression_people": "2b4675aafa6a"}
cited = Cited(CITES)
OTHER_KEYS = tuple(k for k in personas.KEYS if k != "name")


def _hits(score: dict | None) -> str:
    """"h of n" of a raw score ({"exact_match", "n"}) from a record's `extra`, or MISSING."""
    if not isinstance(score, dict) or not isinstance(score.get("n"), int):
        return MISSING
    return f"{round(score.get('exact_match', 0) * score['n'])} of {score['n']}"


def single_person_gap() -> str:
    """Why Experiment B's single-person row is below the shipping check (Context compression page): its name
    questions, split by whether single-person training used the asked first name (compression_people's record)."""
    people = cited("compression_people")
    others = [people.number(table, row, key) for table, row in (("experiment_b", "single person"),
                                                                 ("single_check", "single-person run"))
              for key in OTHER_KEYS]
    floor = MISSING if None in others or not others else \
        f"{'' if min(others) >= 100 else 'at least '}{min(others):g}%"  # "100%", or the lowest other key
    split = people.extra("raw", "experiment_b", "single person", "name_by_first_name") or {}
    seen, every = len(personas.FIRST_NAMES), len(personas.PEOPLE_FIRST_NAMES)
    return (f"Why the single-person weights score {people.percent('experiment_b', 'single person', 'all')} in "
            f"Experiment B's table and {people.percent('single_check', 'single-person run', 'all')} in the shipping "
            f"check: the name question alone (every other key is {floor} in both). Experiment B's items take "
            f"their first names from the {every} of the several-people items, {every - seen} of which single-person "
            f"training never saw; the shipping check asks about the {seen} it saw (only the full names are new). "
            "Given a first name it never saw, the single-person run writes one it knows before the right surname: "
            f"the single-person weights answer {_hits(split.get('seen in training'))} of Experiment B's name "
            f"questions whose first name training used, and {_hits(split.get('unseen'))} of those whose first name "
            "it never saw.")
