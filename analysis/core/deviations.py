"""Where this implementation differs from its paper, declared beside the code that differs.

Each method module and each trained system lists its differences in `DEVIATIONS`, a tuple of `Deviation`s: what
the paper does, what this code does, why, and whether a setting restores the paper's choice. The method's help,
its page and the claims board render the same list, so a verdict of "does not reproduce" is read next to what was
not the paper's test. Nothing in the code or the docs calls a setting "the paper's" unless it is.

    DEVIATIONS = (
        Deviation("learning rate", paper="trains at 1e-5 with 10% warm-up for one epoch",
                  here="trains at 2e-4 with 5 warm-up steps for 320 steps",
                  why="one epoch of the paper's data is days on this CPU; 320 steps at 1e-5 barely move the LoRA",
                  restore="--lr 1e-5 --steps N"),
    )
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deviation:
    topic: str  # what it is about, in two or three words ("prompt", "learning rate", "mean readout")
    paper: str  # what the paper does, as a verb phrase ("uses ...", "averages ...")
    here: str  # what this code does by default, the same way
    why: str  # the reason (scale, this machine, a bug in the reference code, ...)
    restore: str = ""  # the setting that restores the paper's choice ("" = none does)
    source: str = "paper"  # what `paper` describes: "paper", or "source" for a system that follows a write-up

    def sentence(self) -> str:
        """One line for help texts: "prompt: the paper uses ...; this repository uses ... (why). The paper's choice:
        `prompt=paper`."."""
        back = f" The {self.source}'s choice: `{self.restore}`." if self.restore else " No setting restores it."
        return f"{self.topic}: the {self.source} {self.paper}; this repository {self.here} ({self.why}).{back}"

    def as_json(self) -> dict:
        return {"topic": self.topic, "paper": self.paper, "here": self.here, "why": self.why,
                "restore": self.restore or None, "source": self.source}
