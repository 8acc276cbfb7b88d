"""What a claim is measured with: one model, the experiments' compute, the board's settings, and the measurements several
claims share, each made once per board (memoised here) and stored through the `Compute` door (so a board run again computes
nothing it finished).

    ctx = Context(backbone, compute, Settings(sts_sample=500))
    ctx.sts_difference(ctx.kv(), ctx.kv(layers="none"))   # paired Spearman difference on held-out STS-B
    ctx.long_items(8)                                     # the pairs concatenated 8 at a time (`long_sts`)
    ctx.record("gircse")                                  # (record, note) when it was measured on this model

Measurements on long inputs (`long_sts`), on the task families (`tasks`: retrieval, classification, clustering)
and timings with their rounds (`timing`) live in their own modules, as functions of a `Context`.

Every measurement has a unit of work (`Unit`) with its estimated seconds, from a short timed probe (`calibrate`):
the board adds the units a claim still needs before starting it, so a unit two claims share counts once.
"""

from __future__ import annotations

import json
import re
import time
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePath

import numpy as np

from analysis.core.errors import TruncationWarning, UserError
from analysis.core.params import param
from analysis.data.corpora import lee_documents, polarity
from analysis.eval.stats import (
    paired_difference,
    resample_indices,
    spearman_replicates,
)
from analysis.experiments.claims import CannotRun, Unit
from analysis.experiments.claims.long_sts import concatenated
from analysis.experiments.machinery import heldout_sts  # by module: tests replace report_pairs
from analysis.experiments.machinery.heldout_sts import texts_of
from analysis.experiments.machinery.records import read
from analysis.experiments.machinery.verdicts import non_inferior, paired
from analysis.models.backbone import builtin

STS_HOW = "held-out STS-B (the dev report part no trainer or setting was selected on)"


@dataclass(frozen=True)
class Settings:
    """What every claim is measured on; the same settings give the same numbers (and the same cache entries)."""

    sts_sample: int = param(500, "pairs of the STS-B dev report part, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of the samples and of the bootstrap", min=0)
    n_boot: int = param(1000, "bootstrap resamples of every interval", min=0, limit=10_000)
    long_k: tuple = param(("1", "8", "32"), "long inputs: STS-B pairs concatenated k at a time (HTP's Fig. 1 "
                                            "construction), shortest first; k = 1 is plain STS")
    long_n: int = param(100, "long items per length (each k pairs of one gold-score bin, seeded)", min=10,
                         limit=2000)
    retrieval: str = param("scifact-report", "the retrieval set (a registry id or beir:FOLDER)")
    retrieval_queries: int = param(100, "its queries, seeded (0 = all): the task_families record's sub-corpus", min=0)
    retrieval_distractors: int = param(150, "abstracts judged for none of them, seeded, beside every one judged",
                                        min=0)
    labelled: str = param("banking77-report", "the labelled set of the classification and clustering claims: "
                          "banking77-report (the task_families record's sample, vectors shared) or a FILE with text "
                          "and label columns")
    timing_texts: int = param(64, "texts timed for the cost claims", min=2, limit=2000)
    repeats: int = param(5, "interleaved timing rounds: a ratio per round, their spread is the ratio's interval",
                          min=1, limit=20)
    compression_n: int = param(200, "held-out questions when a compression claim is measured, not read", min=10,
                                limit=10_000)


def check(settings: Settings) -> Settings:
    """`settings` once what `options.check` cannot see holds: two or more lengths, whole numbers of pairs."""
    lengths = settings.long_k
    if len(lengths) < 2 or not all(str(x).isdigit() and 0 < int(x) <= 256 for x in lengths):
        shown = ",".join(map(str, lengths))
        raise UserError(f"--long-k must be two or more whole numbers of pairs per item (1 to 256), not {shown!r:.60}.")
    return settings


def relative_cost(method) -> float:
    """How long one text takes with `method` next to a plain forward of it (`analysis.report.plan`'s table): for the
    estimate only."""
    from analysis.report.plan import RELATIVE_COST  # lazy: keeps torch off the pages' and the command line's start

    if method.name == "soft_tokens":
        return 1.0 + 0.6 * method.params.k  # the prompt, then K cached one-position steps (K = 5: the table's 4.0)
    if method.name == "sentence_encoder":
        return 0.2  # MiniLM: a sixth of SmolLM2's parameters, six layers
    return RELATIVE_COST.get(method.name, 2.0)


def configured(name: str, **params):
    """A method as configured, before KV-Embedding's window is resolved: what a claim's estimate names it by
    (resolving the window is work of its own, `Context.window_unit`)."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    return get_method(name, **params)


def method_key(method) -> tuple:
    """What identifies a configured method's results (its parameters say 'auto' for a window resolved later)."""
    return (method.name, repr(method.params), getattr(method, "role", "document"))


def short_name(facts) -> str:
    """A model's name as records and file names say it: a built-in model's short name, else its folder's."""
    entry = builtin(facts.name)
    return entry.short if entry is not None else PurePath(facts.name).name or facts.name


class Context:
    def __init__(self, backbone, compute, settings: Settings, *, records_folder=None):
        self.backbone, self.compute, self.settings = backbone, compute, settings
        self.records_folder = records_folder
        self.memo: dict = {}
        self.rate = None  # (seconds per text of `short` tokens, of `long` tokens, short, long): `calibrate`

    # ---- the estimate ------------------------------------------------------------------------------------------
    def calibrate(self) -> None:
        """Time `last` on sixteen short sentences and on two documents of about a thousand tokens (the median of three
        passes after a warm-up): seconds per text at two lengths, the estimate's scale (`seconds`)."""
        from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

        try:
            short = self.texts()[:16]
        except CannotRun:  # no STS-B here: other short sentences time the same
            short = polarity().texts[:16]
        docs = lee_documents().texts
        long = [" ".join(docs[i: i + 8]) for i in (0, 8)]  # about 1,000 tokens each
        method, points = get_method("last"), []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncationWarning)  # a model that reads less times what it reads
            for texts in (short, long):
                method.encode(self.backbone, texts[:1])
                passes = []
                for _ in range(3):
                    began = time.perf_counter()
                    method.encode(self.backbone, texts)
                    passes.append(time.perf_counter() - began)
                points.append((float(np.median(passes)) / len(texts), float(np.mean(self.tokens(texts)))))
        (s_short, t_short), (s_long, t_long) = points
        self.rate = (s_short, s_long, t_short, t_long)

    def seconds(self, tokens, factor: float = 1.0) -> float:
        """Estimated seconds of a plain forward of texts of these token counts, times `factor`: the probe's two
        points joined by a line (a text's fixed cost, then its tokens'), never below the short texts' cost."""
        s_short, s_long, t_short, t_long = self.rate or (0.01, 0.1, 10.0, 1000.0)
        slope = max((s_long - s_short) / max(t_long - t_short, 1.0), 0.0)
        t = np.asarray(list(tokens), dtype=float)
        return float(factor * np.sum(np.maximum(s_short, s_short + slope * (t - t_short))))

    def tokens(self, texts: list[str]) -> list[int]:
        ids = self.backbone.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return [min(len(x), self.backbone.facts.max_length) for x in ids]

    # ---- methods -----------------------------------------------------------------------------------------------
    def method(self, name: str, **params):
        """A method at its defaults (and `params`), KV-Embedding's `layers=auto` resolved to this model's window."""
        return self.ready(configured(name, **params))

    def kv(self, **params):
        return self.method("kv_embedding", **params)

    def ready(self, method):
        needs = getattr(method, "needs_window", None)
        return method.with_window(self.backbone, self.window().layers) if needs and needs(self.backbone) else method

    def window(self):
        """KV-Embedding's intrinsic-dimension window on this model (through the `Compute` door: computed once, stored)."""
        if "window" not in self.memo:
            try:
                self.memo["window"] = self.compute.window(self.backbone)[0]
            except UserError as err:
                raise CannotRun(f"KV-Embedding's layers=auto window cannot be chosen on this model: "
                                f"{str(err).rstrip('.')}") from None
        if not self.memo["window"].layers:
            raise CannotRun(f"KV-Embedding's intrinsic-dimension rule picks no window on this model "
                            f"({self.memo['window'].reason})")
        return self.memo["window"]

    def window_unit(self) -> Unit:
        # lazy: keeps torch off the pages' and the command line's start
        from analysis.report.plan import ID_TEXT_FORWARDS

        if self.known_window() is not None:
            return Unit(("window",), 0.0)
        per_text = self.seconds(self.tokens(self.texts())) / max(len(self.texts()), 1)
        return Unit(("window",), ID_TEXT_FORWARDS * per_text)

    def known_window(self):
        """The window when it costs nothing to know (found before, or stored), else None: planning never
        computes it."""
        if "window" not in self.memo:
            found = self.compute.window(self.backbone, compute=False)
            if found is None:
                return None
            self.memo["window"] = found[0]
        return self.memo["window"]

    def unit(self, key: tuple, seconds: float, method, texts: list[str], role: str = "document") -> Unit:
        """A unit of embedding `texts` with `method`: free when the `Compute` door already holds every vector (a board run
        again, or work an experiment or a page did), so a budget counts only what is left to compute."""
        needs = getattr(method, "needs_window", None)
        if needs and needs(self.backbone):
            window = self.known_window()
            if window is None or not window.layers:
                return Unit(key, seconds)
            method = method.with_window(self.backbone, window.layers)
        stored = self.compute.is_stored(self.backbone, method.as_role(role), list(texts))
        return Unit(key, 0.0 if stored else seconds)

    def two_sided_unit(self, key: tuple, seconds: float, method, beir) -> Unit:
        """A retrieval unit (queries embedded as queries, documents as documents): free only when both sides are
        stored."""
        sides = [self.unit(key, seconds, method, list(beir.queries.values()), "query"),
                 self.unit(key, seconds, method, list(beir.corpus.values()))]
        return Unit(key, max(u.seconds for u in sides))

    # ---- held-out STS-B ----------------------------------------------------------------------------------------
    @cached_property
    def pairs(self):
        try:
            return heldout_sts.report_pairs(self.settings.sts_sample, self.settings.seed)[0]
        except UserError as err:
            raise CannotRun(f"needs STS-B dev in the data folder ({str(err).rstrip('.')})") from None

    def texts(self) -> list[str]:
        return texts_of(self.pairs)

    def sts_unit(self, method, pairs=None) -> Unit:
        """Embedding the sentences of `pairs` (the held-out pairs by default, or long items) with `method`."""
        from analysis.eval.sts import pair_index  # lazy: keeps scipy off the pages' and the command line's start

        pairs = self.pairs if pairs is None else pairs
        if ("tokens", pairs.name) not in self.memo:
            self.memo["tokens", pairs.name] = self.tokens(pair_index(pairs)[0])
        return self.unit(("sts", pairs.name, method_key(method)),
                         self.seconds(self.memo["tokens", pairs.name], relative_cost(method)), method,
                         pair_index(pairs)[0])

    def cosines(self, method, pairs=None) -> np.ndarray:
        """(n_pairs,) cosine of each pair's two embeddings, through the `Compute` door."""
        # lazy: keeps scipy off the pages' and the command line's start
        from analysis.eval.sts import pair_cosines, pair_index

        pairs = self.pairs if pairs is None else pairs
        key = ("sts", pairs.name, method_key(method))
        if key not in self.memo:
            texts, left, right = pair_index(pairs)
            emb = self.compute.encode(self.backbone, self.ready(method), texts).vectors
            self.memo[key] = pair_cosines(emb, left, right)
        return self.memo[key]

    def spearman(self, method, pairs=None) -> float:
        from analysis.eval.sts import spearman  # lazy: keeps scipy off the pages' and the command line's start

        pairs = self.pairs if pairs is None else pairs
        return float(spearman(self.cosines(method, pairs), pairs.scores))

    def combination(self, terms):
        """`stats.Paired` of sum(coef * Spearman(method on pairs)) over `terms` [(coef, method, pairs)]: the same
        items (the same gold scores: a set of pairs, or a copy of it with noise appended) resampled once for all
        their terms (a paired bootstrap), different items independently (a length's items are not another's)."""
        total, reps, sets = 0.0, 0.0, {}
        for coef, method, pairs in terms:
            items = np.asarray(pairs.scores).tobytes()  # the same items (a noisy copy of them too) pair
            if items not in sets:
                sets[items] = resample_indices(len(pairs.scores), self.settings.n_boot, self.settings.seed + len(sets))
            sims = self.cosines(method, pairs)[None, :]
            reps = reps + coef * spearman_replicates(sims, np.asarray(pairs.scores), sets[items])[0]
            total += coef * self.spearman(method, pairs)
        return paired_difference(reps, np.zeros_like(reps), total)

    def sts_difference(self, a, b, pairs=None):
        """Spearman of A minus B with the paired bootstrap (the same resampled pairs for both): `stats.Paired`."""
        pairs = self.pairs if pairs is None else pairs
        return self.combination([(1.0, a, pairs), (-1.0, b, pairs)])

    def sts_paired(self, a, b, direction: int = 1, pairs=None):
        """The `verdicts.paired` verdict of Spearman A - B on the pairs (claimed > 0, or < 0)."""
        pairs = self.pairs if pairs is None else pairs
        d = self.sts_difference(a, b, pairs)
        return paired(d.difference, d.ci, len(pairs.scores), direction=direction, unit="pairs")

    def sts_non_inferior(self, a, b, margin: float, pairs=None):
        """The `verdicts.non_inferior` verdict of Spearman A - B: A not worse than B by more than `margin`."""
        pairs = self.pairs if pairs is None else pairs
        d = self.sts_difference(a, b, pairs)
        return non_inferior(d.difference, d.ci, len(pairs.scores), margin=margin, unit="pairs")

    # ---- long inputs, task families, timings (their own modules) --------------------------------------------------
    def long_items(self, k: int):
        """The held-out pairs concatenated k at a time (`long_sts.concatenated`), memoised: one set per length."""
        if ("long", k) not in self.memo:
            self.memo["long", k] = concatenated(self.pairs, k, self.settings.long_n, self.settings.seed)
        return self.memo["long", k]

    def long_lengths(self) -> tuple[int, ...]:
        return tuple(sorted(int(x) for x in self.settings.long_k))

    # ---- records -----------------------------------------------------------------------------------------------
    def record(self, record_id: str):
        """(record, note) of published record `record_id` when it was measured on this model, else None. A record
        names its model by identity; one migrated from the first protocol may carry the identity only among its raw
        numbers, or not at all (then its model's name must match, and the note says so)."""
        rec = read(record_id, self.records_folder)
        if rec is None:
            return None
        facts, identity = self.backbone.facts, self.backbone.identity
        where = f"read from docs/results/{record_id}.json ({rec.date})"
        if any(m.identity == identity for m in rec.models):
            return rec, where
        if identity in json.dumps(rec.extra):
            return rec, where
        if any(m.identity is None and m.name == short_name(facts) for m in rec.models):
            return rec, f"{where}; it names the model {short_name(facts)} but did not record its weights' identity"
        return None


# ---- numbers as records show them -------------------------------------------------------------------------------
def recorded_difference(cell: str) -> tuple[float, tuple[float, float]]:
    """"+0.012 [-0.003, +0.027]" (`cells.difference`, a paired difference with its interval) -> (0.012, (-0.003,
    0.027))."""
    numbers = [float(x) for x in re.findall(r"[+-]?\d+(?:\.\d+)?", str(cell).replace("−", "-"))]
    if len(numbers) != 3:
        raise ValueError(f"not a paired difference with its interval: {cell!r}")
    return numbers[0], (numbers[1], numbers[2])


def recorded_rate(cell: str, n: int) -> int:
    """"99.5 [97.2, 99.9]" (`cells.rate`, an exact-match rate in percent) on `n` items -> the items matched (199)."""
    return round(float(str(cell).split()[0]) * n / 100)
