"""What a claim is measured with: one model, the experiments' compute, the board's settings, and the measurements several
claims share, each made once per board (memoised here) and stored through the `Compute` door (so a board run again computes
nothing it finished).

    ctx = Context(backbone, compute, Settings(sts_sample=500))
    ctx.sts_difference(ctx.kv(), ctx.kv(layers="none"))   # paired Spearman difference on held-out STS-B
    ctx.longdoc_hits(ctx.method("htp"), 4096)             # per-query nDCG@1 of one document length
    ctx.record("gircse")                                  # (record, note) when it was measured on this model

Every measurement has a unit of work (`Unit`) with its estimated seconds, from a short timed probe (`calibrate`):
the board adds the units a claim still needs before starting it, so a unit two claims share counts once.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from analysis.core.errors import TruncationWarning, UserError
from analysis.core.params import param
from analysis.experiments.claims import CannotRun, Unit

STS_HOW = "held-out STS-B (the dev report part no trainer or setting was selected on)"


@dataclass(frozen=True)
class Settings:
    """What every claim is measured on; the same settings give the same numbers (and the same cache entries)."""

    sts_sample: int = param(500, "pairs of the STS-B dev report part, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of the samples and of the bootstrap", min=0)
    n_boot: int = param(1000, "bootstrap resamples of every interval", min=0, limit=10_000)
    longdoc: str = param("passkey", "the long-document task (LongEmbed-style, generated here)",
                          choices=("passkey", "needle", "scifact"))
    longdoc_n: int = param(20, "documents (and queries) per length: 20 shares them with the longdoc record", min=2,
                            limit=1000)
    longdoc_lengths: tuple = param(("256", "4096"), "document lengths compared, shortest and longest (a model that "
                                                    "reads fewer tokens is compared at its longest)")
    retrieval: str = param("scifact-report", "the retrieval set (a registry id or beir:FOLDER)")
    retrieval_queries: int = param(100, "its queries, seeded (0 = all): the task_families record's sub-corpus", min=0)
    retrieval_distractors: int = param(150, "abstracts judged for none of them, seeded, beside every one judged",
                                        min=0)
    timing_texts: int = param(64, "texts timed for the cost claims", min=2, limit=2000)
    repeats: int = param(3, "interleaved timing rounds (medians kept)", min=1, limit=20)
    compression_n: int = param(200, "held-out questions when a compression claim is measured, not read", min=10,
                                limit=10_000)


def check(settings: Settings) -> Settings:
    """`settings` once what `options.check` cannot see holds: the lengths are whole numbers of tokens."""
    lengths = settings.longdoc_lengths
    if not lengths or not all(str(x).isdigit() and int(x) > 0 for x in lengths):
        shown = ",".join(map(str, lengths))
        raise UserError(f"--longdoc-lengths must be positive whole numbers of tokens, not {shown!r:.60}.")
    return settings


def relative_cost(method) -> float:
    """How long one text takes with `method` next to a plain forward of it (`analysis.report.plan`'s table): for the
    estimate only."""
    from analysis.report.plan import RELATIVE_COST

    if method.name == "soft_tokens":
        return 1.0 + 0.6 * method.params.k  # the prompt, then K cached one-position steps (K = 5: the table's 4.0)
    if method.name == "sentence_encoder":
        return 0.2  # MiniLM: a sixth of SmolLM2's parameters, six layers
    return RELATIVE_COST.get(method.name, 2.0)


def configured(name: str, **params):
    """A method as configured, before KV-Embedding's window is resolved: what a claim's estimate names it by
    (resolving the window is work of its own, `Context.window_unit`)."""
    from analysis.methods import get_method

    return get_method(name, **params)


def method_key(method) -> tuple:
    """What identifies a configured method's results (its parameters say 'auto' for a window resolved later)."""
    return (method.name, repr(method.params), getattr(method, "role", "document"))


def short_name(facts) -> str:
    """A model's name as records and file names say it: a built-in model's short name, else its folder's."""
    from pathlib import PurePath

    from analysis.models.backbone import builtin

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
        from analysis.data.corpora import lee_documents, polarity
        from analysis.methods import get_method

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
        from analysis.experiments.machinery.heldout_sts import report_pairs

        try:
            return report_pairs(self.settings.sts_sample, self.settings.seed)[0]
        except UserError as err:
            raise CannotRun(f"needs STS-B dev in the data folder ({str(err).rstrip('.')})") from None

    def texts(self) -> list[str]:
        from analysis.experiments.machinery.heldout_sts import texts_of

        return texts_of(self.pairs)

    def sts_unit(self, method) -> Unit:
        if "sts_tokens" not in self.memo:
            self.memo["sts_tokens"] = self.tokens(self.texts())
        from analysis.eval.sts import pair_index

        return self.unit(("sts", method_key(method)), self.seconds(self.memo["sts_tokens"], relative_cost(method)),
                         method, pair_index(self.pairs)[0])

    def cosines(self, method) -> np.ndarray:
        """(n_pairs,) cosine of each pair's two embeddings, through the `Compute` door."""
        from analysis.eval.sts import pair_cosines, pair_index

        key = ("sts", method_key(method))
        if key not in self.memo:
            texts, left, right = pair_index(self.pairs)
            emb = self.compute.encode(self.backbone, self.ready(method), texts).vectors
            self.memo[key] = pair_cosines(emb, left, right)
        return self.memo[key]

    def spearman(self, method) -> float:
        from analysis.eval.sts import spearman

        return float(spearman(self.cosines(method), self.pairs.scores))

    def sts_difference(self, a, b):
        """Spearman of A minus B with the paired bootstrap (the same resampled pairs for both): `stats.Paired`."""
        from analysis.eval.stats import paired_difference, resample_indices, spearman_replicates

        gold = np.asarray(self.pairs.scores)
        ca, cb = self.cosines(a), self.cosines(b)
        reps = spearman_replicates(np.stack([ca, cb]), gold, resample_indices(len(gold), self.settings.n_boot,
                                                                              self.settings.seed))
        return paired_difference(reps[0], reps[1], self.spearman(a) - self.spearman(b))

    def sts_paired(self, a, b, direction: int = 1):
        """The `verdicts.paired` verdict of Spearman A - B on the pairs (claimed > 0, or < 0)."""
        from analysis.experiments.machinery.verdicts import paired

        d = self.sts_difference(a, b)
        return paired(d.difference, d.ci, len(self.pairs), direction=direction, unit="pairs")

    # ---- long documents ----------------------------------------------------------------------------------------
    def longdocs(self):
        """The long-document set at the compared lengths. It is generated at every length the model reads and then
        cut, so its documents are the Benchmark page's (the same seed and count): their vectors are shared."""
        if "longdocs" not in self.memo:
            from dataclasses import replace

            from analysis.data.longdoc import generate

            s, facts = self.settings, self.backbone.facts
            try:
                docs = generate(s.longdoc, self.backbone.tokenizer, max_length=facts.max_length, n=s.longdoc_n,
                                seed=s.seed)
            except UserError as err:
                raise CannotRun(f"needs a model that reads long documents ({str(err).rstrip('.')})") from None
            wanted = sorted(int(x) for x in s.longdoc_lengths)
            have = sorted(docs.sets)
            kept = sorted({max([n for n in have if n <= w] or have[:1]) for w in wanted})
            self.memo["longdocs"] = replace(docs, sets={n: docs.sets[n] for n in kept},
                                            tokens={n: docs.tokens[n] for n in kept})
        return self.memo["longdocs"]

    def lengths(self) -> tuple[int, int]:
        """(shortest, longest) compared length; a claim about 4,096 tokens is read at the longest this model has."""
        have = sorted(self.longdocs().sets)
        if len(have) < 2:
            raise CannotRun(f"needs two document lengths the model reads; it has only {have[0]} of "
                            f"{', '.join(self.settings.longdoc_lengths)}")
        return have[0], have[-1]

    def longdoc_unit(self, method, length: int) -> Unit:
        docs = self.longdocs()
        beir = docs.sets[length]
        return self.two_sided_unit(("longdoc", method_key(method), length),
                                   self.seconds(docs.tokens[length], relative_cost(method)), method, beir)

    def longdoc_hits(self, method, length: int) -> np.ndarray:
        """(n_queries,) nDCG@1 of each query among the documents of one length (LongEmbed's metric), queries
        embedded as queries and documents as documents (a method may embed the two sides differently)."""
        from analysis.eval.retrieval import cosines, per_query

        key = ("longdoc", method_key(method), length)
        if key not in self.memo:
            beir = self.longdocs().sets[length]
            qids, doc_ids = list(beir.queries), list(beir.corpus)
            ready = self.ready(method)
            q = self.compute.encode(self.backbone, ready.as_role("query"), [beir.queries[x] for x in qids]).vectors
            d = self.compute.encode(self.backbone, ready, [beir.corpus[x] for x in doc_ids]).vectors
            self.memo[key] = per_query(cosines(q, d), doc_ids, [beir.qrels[x] for x in qids], ("nDCG@1",))["nDCG@1"]
        return self.memo[key]

    def paired_items(self, a, b, *, unit: str, direction: int = 1):
        """The `verdicts.paired` verdict of mean(a) - mean(b), two per-item score vectors of the same items."""
        from analysis.eval.stats import paired_mean_difference
        from analysis.experiments.machinery.verdicts import paired

        d = paired_mean_difference(a, b, self.settings.n_boot, self.settings.seed)
        return paired(d.difference, d.ci, len(a), direction=direction, unit=unit)

    # ---- retrieval ---------------------------------------------------------------------------------------------
    def retrieval_task(self):
        if "retrieval" not in self.memo:
            from analysis.eval.tasks import load_task, nano_task

            try:
                task = load_task(self.settings.retrieval)
            except UserError as err:
                raise CannotRun(f"needs the retrieval set {self.settings.retrieval} ({str(err).rstrip('.')})") \
                    from None
            if task.kind != "retrieval":
                raise CannotRun(f"needs a retrieval set; {self.settings.retrieval} is scored as {task.kind}")
            s = self.settings  # the sub-corpus the task_families record scores (its vectors are in the cache)
            self.memo["retrieval"] = nano_task(task, s.retrieval_queries or len(task.data.queries),
                                               s.retrieval_distractors, s.seed)
        return self.memo["retrieval"]

    def retrieval_unit(self, method) -> Unit:
        data = self.retrieval_task().data
        if "retrieval_tokens" not in self.memo:
            self.memo["retrieval_tokens"] = self.tokens([*data.corpus.values(), *data.queries.values()])
        return self.two_sided_unit(("retrieval", method_key(method)),
                                   self.seconds(self.memo["retrieval_tokens"], relative_cost(method)), method, data)

    def retrieval_score(self, method):
        """`eval.score.Score` (nDCG@10 per query) of `method` on the retrieval set."""
        from analysis.eval.tasks import score_task

        key = ("retrieval", method_key(method))
        if key not in self.memo:
            ready = self.ready(method)

            def embed(texts, role):
                return self.compute.encode(self.backbone, ready.as_role(role), texts).vectors

            self.memo[key] = score_task(self.retrieval_task(), embed, n_boot=self.settings.n_boot,
                                        seed=self.settings.seed)
        return self.memo[key]

    # ---- cost --------------------------------------------------------------------------------------------------
    def timing_unit(self, name: str, methods: dict, texts: list[str]) -> Unit:
        work = 1.0 + sum(relative_cost(m) for m in methods.values())  # the plain forward, then each method
        return Unit(("timing", name), (self.settings.repeats + 1) * self.seconds(self.tokens(texts), work))

    def timed(self, name: str, methods: dict, texts: list[str]) -> dict:
        """{label: (median seconds, ratio to the plain forward)} of `methods` on `texts`, interleaved rounds in one
        run (`eval.cost.ratios`); kept by the compute, since a timing cannot be recomputed from stored vectors."""
        from analysis.eval.cost import ratios

        ready = {label: self.ready(m) for label, m in methods.items()}

        def measure():  # `ratios` runs each configuration once first: weights load or merge outside the timing
            return ratios(self.backbone, {k: (lambda m=m: m.encode(self.backbone, texts, batch_size=16))
                                          for k, m in ready.items()}, texts, repeats=self.settings.repeats)

        parts = {"timing": name, "model": self.backbone.identity, "repeats": self.settings.repeats,
                 "methods": {k: list(method_key(m)) for k, m in ready.items()}, "texts": texts}
        modules = ("analysis.eval.cost", *sorted({type(m).__module__ for m in ready.values()}))
        return {k: tuple(v) for k, v in self.compute.remember(parts, measure, modules=modules).items()}

    # ---- records -----------------------------------------------------------------------------------------------
    def record(self, record_id: str):
        """(record, note) of published record `record_id` when it was measured on this model, else None. A record
        names its model by identity; one migrated from the first protocol may carry the identity only among its raw
        numbers, or not at all (then its model's name must match, and the note says so)."""
        from analysis.experiments.machinery.records import read

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
    import re

    numbers = [float(x) for x in re.findall(r"[+-]?\d+(?:\.\d+)?", str(cell).replace("−", "-"))]
    if len(numbers) != 3:
        raise ValueError(f"not a paired difference with its interval: {cell!r}")
    return numbers[0], (numbers[1], numbers[2])


def recorded_rate(cell: str, n: int) -> int:
    """"99.5 [97.2, 99.9]" (`cells.rate`, an exact-match rate in percent) on `n` items -> the items matched (199)."""
    return round(float(str(cell).split()[0]) * n / 100)


def project_bar(verdict):
    """A cost verdict (`verdicts.ratio`) whose bar is this project's, not a multiple the paper states: it says so
    instead of "claimed" (the word, the numbers and the rule stay the same)."""
    from analysis.experiments.machinery.verdicts import Verdict

    return Verdict(verdict.word, verdict.number.replace("(claimed about", "(this project's bar, about"),
                   verdict.detail.replace("the claim plus", "this project's bar plus"))
