"""Context compression, one person per context: facts read back from one MiniLM vector per sentence.

The held-out table (exact match per fact key with 95% Wilson intervals, for every way of giving the context:
per-sentence pools, pools with name tokens, one paragraph pool, the full text, no context), the dilution curve
(exact match as content-free distractor sentences pad each context), optionally the out-of-distribution probes
(`--ood N`) and five-person items read by the same weights (`--cross-person N`: the baseline of the cross-person
experiment). Answers come through the `Compute` door (the cache: the page and `compress-qa` read the same entries).
`--vocabulary source` draws every held-out item from the source's vocabulary sizes, for weights trained with them
(`train compression --vocabulary source`); the values probe (`--ood`) then asks whether values outside a list of 200
cities, 200 employers, 180 professions and 120 countries are read as well as those inside it. Its record is its own,
`compression_source_vocabulary`, beside the small vocabulary's `compression`.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.params import param
from analysis.data import personas
from analysis.experiments import Measured
from analysis.experiments.machinery import cells
from analysis.experiments.machinery.provenance import model_entry, shown_weights, weights_folder
from analysis.experiments.machinery.records import Sample, Table
from analysis.weights.artefacts import read_manifest

ID = "compression"
TITLE = "Context compression: facts read back from one vector per sentence"
HELP = ("The context-compression system on held-out personas: exact match per fact key for every way of giving the "
        "context, the dilution curve, the out-of-distribution probes and five-person items read by the same weights.")


@dataclass(frozen=True)
class Config:
    weights: str = param("shipped", "the weights: shipped, shipped/<place>, a run name or a folder")
    n: int = param(200, "held-out questions for the table (0 = no table)", min=0, limit=10_000)
    scaling_n: int = param(50, "questions per point of the dilution curve", min=0, limit=10_000)
    sizes: tuple = param(("5", "10", "20", "50", "100"), "pools per context for the dilution curve")
    scaling_modes: tuple = param(("sentence", "sentence+ids", "paragraph"), "modes of the dilution curve")
    ood: int = param(0, "items of each out-of-distribution probe (0 = none)", min=0, limit=10_000)
    cross_person: int = param(0, "five-person held-out items read by the same weights (0 = none)", min=0,
                               limit=10_000)
    vocabulary: str = param("small", "the persona vocabulary of the held-out items: small, or source (the source's "
                             "sizes, for weights trained with --vocabulary source)", choices=("small", "source"))


def read(compute, system, items, mode: str, ids: bool = False) -> dict:
    """`score` of `system`'s answers to `items` (with their keys when the items have them)."""
    return scored(compute.compress_predict(system, items, mode, ids), items)


def scored(preds: list[dict], items) -> dict:
    from analysis.compression.system import score  # lazy: keeps torch off the pages' and the command line's start

    return score(preds, [it.key for it in items] if all(getattr(it, "key", None) for it in items) else None)


def heldout_scores(answer, n: int, vocabulary: str = "small") -> dict:
    """{mode: score} of `n` held-out questions (keys cycled) for every way of giving the context (`TABLE_MODES`);
    `answer(items, mode, label)` returns the predictions (the experiment's compute, or the page's cache with a
    progress bar)."""
    from analysis.compression.system import TABLE_MODES  # lazy: keeps torch off the pages' and the command line's start
    items = personas.generate("heldout", n, vocabulary=vocabulary)
    return {mode: scored(answer(items, mode, f"table: {mode}"), items) for mode in TABLE_MODES}


def dilution_scores(answer, sizes, n: int, modes, vocabulary: str = "small") -> dict:
    """{(pools, mode): score} as content-free distractor sentences pad each of `n` held-out contexts to `pools`."""
    out = {}
    for size in sizes:
        items = personas.generate_scaled("heldout", n, total_sentences=size, vocabulary=vocabulary)
        for mode in modes:
            out[size, mode] = scored(answer(items, mode, f"dilution: {size} pools, {mode}"), items)
    return out


def measure(config: Config, compute, progress) -> Measured:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import TABLE_MODES, CompressionSystem, split_mode
    backbone = compute.backbone("default")
    folder = weights_folder(ID, backbone.facts, config.weights)
    system = CompressionSystem.from_artefact(backbone, folder)
    steps = (len(TABLE_MODES) if config.n else 0) + len(config.sizes) * len(config.scaling_modes) \
        + 3 * len(personas.OOD_KINDS) * bool(config.ood) + 2 * bool(config.cross_person)
    done = 0

    def tick(message):
        nonlocal done
        progress(done, steps, message)
        done += 1

    def answer(items, mode, label):
        tick(label)
        m, ids = split_mode(mode)
        return compute.compress_predict(system, items, m, ids)

    v = config.vocabulary
    table = heldout_scores(answer, config.n, v) if config.n else {}
    curve = dilution_scores(answer, [int(x) for x in config.sizes], config.scaling_n, config.scaling_modes, v)
    ood = {}
    for kind in personas.OOD_KINDS if config.ood else ():
        items = personas.generate_ood(kind, config.ood, vocabulary=v)
        for mode in ("sentence", "text", "none"):
            tick(f"out of distribution: {kind}, {mode}")
            ood[kind, mode] = read(compute, system, items, mode)
    cross = {}
    for names in (False, True) if config.cross_person else ():
        tick(f"five people{', names' if names else ''}")
        items = personas.generate_people("heldout", config.cross_person, people=5, names=names, vocabulary=v)
        cross[names] = read(compute, system, items, "sentence", names)
    return Measured(data="analysis.data.personas held-out split: names (people) no training or selection saw; "
                         "generated, never sorted by genre",
                    sample=Sample(n=config.n, how="the held-out generator, keys cycled (every fact key equally often)",
                                  seed=0),
                    models=[model_entry(backbone, {shown_weights(config.weights): folder})],
                    tables=tables(config, table, curve, ood, cross), findings=findings(table, cross),
                    extra={"trained_by": _people_trained(folder)},
                    variant="source-vocabulary" if v == "source" else "",
                    title=f"{TITLE}, at the source's vocabulary sizes" if v == "source" else "")


def tables(config: Config, table: dict, curve: dict, ood: dict, cross: dict) -> list[Table]:
    """The record's tables from the scores: {mode: score}, {(pools, mode): score}, {(probe, mode): score},
    {names: score} (`compression.system.score`'s dicts)."""
    out = []
    if table:
        out.append(Table(
            "heldout", f"Held-out questions ({config.n}): exact match (%) [95% Wilson interval] per way of giving the "
                       "context, overall and per fact key",
            ("mode", "all", *personas.KEYS, "context tokens per position", "n"),
            tuple((mode, cells.rate(r), *(cells.rate(r["per_key"][k]) for k in personas.KEYS),
                   None if r["compression"] is None else round(r["compression"], 2), r["n"])
                  for mode, r in table.items()),
            "sentence: one MiniLM pool per sentence (the system); +ids: the person's name as literal tokens before "
            "each pool; paragraph: one pool for the whole context; text: the full context as tokens; none: no context. "
            "Context tokens per position: the compression ratio.", digits={"context tokens per position": 2}))
    if curve:
        sizes = list(dict.fromkeys(size for size, _ in curve))
        modes = list(dict.fromkeys(mode for _, mode in curve))
        out.append(Table(
            "dilution", f"Dilution: exact match (%) as distractor sentences pad each context ({config.scaling_n} "
                        "held-out questions per point)", ("pools", *modes),
            tuple((size, *(round(100 * curve[size, mode]["exact_match"], 1) for mode in modes)) for size in sizes),
            "One person per context, padded with content-free distractor sentences: the source calls this a benign "
            "setting (pools are chosen by content type only).", digits={m: 1 for m in modes}))
    if ood:
        out.append(Table("ood", f"Out of distribution ({config.ood} items per probe): exact match (%) [95% Wilson "
                                "interval]", ("probe", "pools", "full text", "no context"),
                         tuple((kind, *(cells.rate(ood.get((kind, mode))) for mode in ("sentence", "text", "none")))
                               for kind in dict.fromkeys(k for k, _ in ood))))
    if cross:
        out.append(Table(
            "cross_person", f"Cross-person selection read by the same weights ({config.cross_person} held-out items of "
                            "five people each)", ("condition", "all", *personas.KEYS, "n"),
            tuple((f"five people{', names' if names else ''}", cells.rate(r),
                   *(cells.rate(r["per_key"][k]) if k in r["per_key"] else None for k in personas.KEYS), r["n"])
                  for names, r in cross.items()),
            "Five people's fact sentences per context (grouped), the question names one of them. With names, each pool "
            "is preceded by its person's name as literal tokens and name questions are left out (they would be "
            "copied). Chance of picking the right person's pool: 1/5."))
    return out


def _people_trained(folder) -> dict:
    m = read_manifest(folder)
    return {"command": m.get("command"), "people": (m.get("hyperparameters") or {}).get("people", 1),
            "names": bool((m.get("hyperparameters") or {}).get("names"))}


def findings(table: dict, cross: dict) -> list[str]:
    out = []
    if "sentence" in table and "paragraph" in table:
        out.append(f"One pool per sentence answers {cells.rate(table['sentence'], '%')} of held-out questions; one "
                   f"pool for the whole paragraph {cells.rate(table['paragraph'], '%')}; the full text "
                   f"{cells.rate(table['text'], '%')}, no context {cells.rate(table['none'], '%')}.")
    if "sentence" in table and cross:
        out.append("On five-person held-out items the same weights answer "
                   + " and ".join(f"{100 * r['exact_match']:.1f}% {'with' if names else 'without'} names"
                                  for names, r in cross.items())
                   + f", against {100 * table['sentence']['exact_match']:.1f}% on single-person items.")
    return out
