"""Trained weights a method asks for that this repository does not ship for the model: what runs instead, said
wherever the method's results are shown, or a refusal (issue #48: nothing silent).

GIRCSE's soft tokens default to `adapter=shipped`, and only some models have a shipped adapter; elsewhere the frozen
model generates the soft tokens. That default stays usable (pages, `bench --methods all` over several models, tests on
tiny models run it), but its results are never passed off as GIRCSE's: every table, report row and command output
names it with `label` ("soft_tokens (frozen: no adapter shipped for gemma3-270m)"), and the command line and the
method pickers say `warning`, the command that trains the missing adapter included. Causal2Vec's shipped bridge has no
stand-in (the frozen decoder has no contextual token, and an untrained bridge is another system), so it is refused in
one sentence before any work (`refusal`), as the Causal-EOS baseline is (`analysis.weights.adapters`).

    s = stand_in(get_method("soft_tokens"), gemma)   # StandIn, or None where the method runs as asked
    label(get_method("soft_tokens"), gemma)          # "soft_tokens (frozen: no adapter shipped for gemma3-270m)"
    refusal(get_method("causal2vec"), gemma)         # "causal2vec: no bridge is shipped for gemma3-270m: ..."

These read the shipped folders beside the methods rather than inside them: a cache key carries the code version of
a method's module and of everything it imports (`cache.keys`), and what a table calls a result must not change the
result's key.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.models.backbone import builtin
from analysis.weights.adapters import SHIPPED, adapter_spec, shipped_folder
from analysis.weights.artefacts import MANIFEST, shipped_dir

# The frozen model's soft tokens asked for by name (adapter=none) beside the methods at their defaults (the model report,
# the long-document records): named so, since a table saying "soft_tokens" reads as GIRCSE.
FROZEN_SOFT_TOKENS = "soft_tokens (frozen)"


@dataclass(frozen=True)
class StandIn:
    """What runs in place of the trained weights a parameter asks for."""

    param: str  # the parameter whose request is not honoured ("adapter")
    label: str  # for tables, after the method's name: "frozen: no adapter shipped for gemma3-270m"
    warning: str  # one sentence for a reader, with the command that trains what is missing


def command_name(facts) -> str:
    """How a command names the model: a built-in model's short name ("gemma3-270m"), else the name it was loaded by."""
    entry = builtin(facts.name)
    return entry.short if entry is not None else facts.name


def frozen_label(models) -> str:
    """The words after "soft_tokens" for the frozen model's soft tokens standing in for GIRCSE on `models` (names)."""
    return f"frozen: no adapter shipped for {', '.join(models)}"


def stand_in(method, backbone) -> StandIn | None:
    """What runs in place of what `method`'s parameters ask for on `backbone`, or None when it runs as asked."""
    if method.name != "soft_tokens" or adapter_spec(method.params.adapter).split("@", 1)[0] != SHIPPED:
        return None
    if shipped_folder(backbone.facts) is not None:
        return None
    name = command_name(backbone.facts)
    return StandIn("adapter", frozen_label([name]),
                   f"soft_tokens ran the frozen model: no GIRCSE adapter is shipped for {name}, so these are not "
                   f"GIRCSE's embeddings (train one with `python -m analysis train gircse --model {name} --ship`; "
                   "adapter=none asks for the frozen model by name).")


def label(method, backbone, name: str | None = None) -> str:
    """`name` (default: the method's) as a table shows it on `backbone`: with what stands in, if anything does."""
    found = stand_in(method, backbone)
    name = name or method.name
    return f"{name} ({found.label})" if found is not None else name


def refusal(method, backbone) -> str:
    """One sentence when `method` asks for trained weights `backbone` has none of and nothing may stand in for them
    (Causal2Vec's shipped bridge), else ""."""
    if method.name != "causal2vec" or method.params.bridge.strip() != "shipped" or method.params.readout == "direct":
        return ""
    if (shipped_dir("causal2vec", backbone.facts) / MANIFEST).is_file():
        return ""
    name = command_name(backbone.facts)
    return (f"causal2vec: no bridge is shipped for {name}: train one with `python -m analysis train causal2vec "
            f"--model {name} --ship`, or choose bridge=untrained (its seeded initialisation).")
