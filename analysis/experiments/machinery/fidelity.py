"""Every declared difference from the papers, looked up by what declares it, for the claims board and the pages.

A method's differences are its module's `DEVIATIONS` (`analysis.methods.deviations`), a trained system's its
trainer's (`analysis.training.systems.deviations`); both are `analysis.core.deviations.Deviation`s. A claim names
the ones that bear on it as "method:<name>" or "system:<name>"; a bare name gives both (Causal2Vec is a method and a
trained system).

    of("method:kv_embedding")    # (Deviation, ...)
    of("causal2vec")             # the method's, then its trainer's
    as_json(of("system:gircse")) # [{"topic", "paper", "here", "why", "restore"}, ...] for a record
"""

from __future__ import annotations

from analysis.core.errors import UserError
from analysis.training.systems import SYSTEMS
from analysis.training.systems import deviations as system_deviations

KINDS = ("method", "system")


def of(source: str) -> tuple:
    """The deviations `source` declares: "method:<name>", "system:<name>", or a bare name (a method's and a trained
    system's of that name, in that order). One sentence when nothing has that name."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import _discover
    from analysis.methods import deviations as method_deviations
    kind, sep, name = source.partition(":")
    if not sep:
        kind, name = "", source
    if kind not in ("", *KINDS):
        raise UserError(f"A deviation source is method:<name>, system:<name> or a name, not {source!r:.60}.")
    found, out = False, []
    if kind in ("", "method") and name in _discover():
        found = True
        out += method_deviations(name)
    if kind in ("", "system") and name in SYSTEMS:
        found = True
        out += system_deviations(name)
    if not found:
        raise UserError(f"No {kind or 'method or trained system'} named {name!r:.60} declares deviations.")
    return tuple(out)


def as_json(deviations) -> list[dict]:
    """The deviations as a record stores them."""
    return [d.as_json() for d in deviations]
