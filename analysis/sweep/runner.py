"""Layer sweeps at the cost floor: the prompt-only forward once, then only decoder layers s..L-1 per cell.

A KV-Embedding cell whose re-routing window starts at decoder layer s computes decoder layers 0..s-1 exactly
as the prompt-only forward does (re-routing changes nothing before its first layer). So a sweep runs the
prompt-only forward of its text set once, keeps the hidden states entering every start layer the grid needs,
and per cell runs only decoder layers s..L-1; cells that share a start share its stored states. The cost floor
of a grid is therefore one prompt-only forward plus sum over cells of (L - s) / L prompt-only forwards.

How it stays generic (no modeling code copied): during the prompt-only forward a pre-hook on every decoder
layer records the arguments the model itself passes to that layer (its causal or sliding-window mask, the
rotary position embeddings of its layer type, position ids ...), and the hidden states entering each start
layer. A cell then calls the model's own decoder layers s..L-1 with those recorded arguments plus the
`kv_reroute` configuration, under the same attention function as the method, then the model's final norm, and
reads out exactly as `KVEmbedding.encode` does, with the same batches. The result equals a full forward per
cell bit for bit on the tiny models (tests/test_sweep.py).

    runner = SuffixRunner(backbone, texts, starts=[1, 5, 9])
    emb = runner.embed(Cell(5, 4, 1.0))                 # == windows.cell_method(cell, L).encode(backbone, texts)
    ref = runner.prompt_only()                          # the prompt-only embeddings (a free by-product)

`score_local` scores a list of cells with a local runner (`analysis.sweep.ray_executor` on Ray actors), calling back
once per cell so the caller can store each result as it arrives. What a cell is scored on (`scorer`): labelled pairs
(Spearman of cosine similarity with the gold scores) or a retrieval task (nDCG@10 per judged query, averaged; a nano
task is what the Layer explorer offers). A retrieval task has two sides, embedded as KV-Embedding embeds them (its
queries with the Query prompt): one runner per side, each with its own prompt-only pass, the same cells on both.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from analysis.core.errors import UserError
from analysis.core.forward import _first_tensor, attention_backend, hooks
from analysis.core.paths import cache_root, writable_folder
from analysis.core.tokens import Batch, batches_by_length, check_texts
from analysis.core.vectors import l2_normalize
from analysis.eval.retrieval import cosines, judged_queries, per_query
from analysis.methods import get_method
from analysis.methods.kv_embedding import KWARG
from analysis.sweep.windows import Cell, cell_method

MEMORY_MB = 512  # stored prefix states above this spill to disk: a shared 24 GiB machine, 30 starts x ~30 MB


@dataclass
class _Group:
    """One padded batch of the text set and what the prompt-only forward left for its cells."""

    rows: list[int]  # text indices in this batch (input order of the text set)
    batch: Batch
    calls: dict[int, tuple[tuple, dict]] = field(default_factory=dict)  # decoder layer -> (extra args, kwargs)
    states: dict[int, torch.Tensor | Path] = field(default_factory=dict)  # start -> (B, T, d) input of layer start


class SuffixRunner:
    """Embeds a text set with many KV-Embedding cells at the cost floor (see the module docstring).

    Args:
        backbone: a loaded `Backbone`.
        texts: the text set (every cell embeds all of it).
        starts: the decoder layers cells will start at (states are kept for these only).
        base: KV-Embedding parameters shared by every cell (prompt, template, pooling, n); the page's defaults
            when empty.
        batch_size: texts per forward pass, as `encode(batch_size=...)` (the same batches, so the same numbers).
        memory_mb: stored states beyond this are written to a temporary folder under `spill_dir` and read back
            per start.
        spill_dir: where spilled states go (default: the project cache folder).
        role: the side the texts are ("query": KV-Embedding's query prompt; `EmbeddingMethod.as_role`).
    """

    def __init__(self, backbone, texts: list[str], starts, *, base: dict | None = None, batch_size: int = 16,
                 memory_mb: float = MEMORY_MB, spill_dir: str | Path | None = None, role: str = "document"):
        self.backbone, self.texts = backbone, check_texts(texts)
        self.L = backbone.facts.n_layers
        self.starts = sorted({int(s) for s in starts})
        if self.starts and not 0 <= self.starts[0] <= self.starts[-1] < self.L:
            raise UserError(f"Start layers must be decoder layers 0..{self.L - 1}.")
        self.base = dict(base or {})
        self.batch_size, self.memory_bytes = batch_size, memory_mb * 2**20
        self.spill_dir = spill_dir
        # the prompt-only forward; only its prompt depends on the side (re-routing and readout do not)
        self._reference = get_method("kv_embedding", layers="none", **self.base).as_role(role)
        if self._reference.params.layer != -1:
            raise UserError("A layer sweep reads the final hidden state (layer=-1): every cell runs to the end.")
        self._groups: list[_Group] | None = None
        self._prompt_only: np.ndarray | None = None
        self._spill: tempfile.TemporaryDirectory | None = None
        self.prefix_seconds = 0.0

    # ---- the prompt-only forward, once --------------------------------------------------------------------
    def prepare(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Run the prompt-only forward over the text set, recording per batch every decoder layer's call and
        the states at the starts. Idempotent."""
        if self._groups is not None:
            return
        began = time.perf_counter()
        bb, method = self.backbone, self._reference
        items = method.prepare(bb, self.texts)
        blocks, decoder = bb.decoder.layers, bb.decoder
        first = self.starts[0] if self.starts else self.L
        wanted = set(self.starts)
        groups, out, kept = [], np.zeros((len(self.texts), bb.facts.hidden_size), dtype=np.float32), 0

        def record(group, l):
            def hook(module, args, kwargs):
                h = args[0] if args else kwargs["hidden_states"]
                kw = {k: v for k, v in kwargs.items() if k not in (KWARG, "hidden_states")}
                group.calls[l] = (tuple(args[1:]), kw)
                if l in wanted:
                    group.states[l] = h
            return hook

        with torch.inference_mode(), bb.lock, attention_backend(bb, method.backend()):
            for rows in batches_by_length([len(e) for e in items], self.batch_size):
                batch = method.collate(bb, [items[i] for i in rows], "right")
                group = _Group(rows, batch)
                final = {}
                regs = [lambda l=l: blocks[l].register_forward_pre_hook(record(group, l), with_kwargs=True)
                        for l in range(first, self.L)]
                regs.append(lambda: decoder.norm.register_forward_hook(
                    lambda m, a, o: final.__setitem__("h", o)))
                with hooks(*regs):
                    decoder(**batch.model_inputs(), use_cache=False, **{KWARG: method.reroute(bb, batch)})
                out[rows] = method.readout(final["h"], batch).float().numpy()
                for s in list(group.states):  # keep within the memory budget; spill the rest
                    size = group.states[s].numel() * group.states[s].element_size()
                    if kept + size > self.memory_bytes:
                        group.states[s] = self._write(group.states[s], s, len(groups))
                    else:
                        kept += size
                groups.append(group)
                if progress is not None:
                    progress(sum(len(g.rows) for g in groups), len(self.texts))
        self._groups, self._prompt_only = groups, l2_normalize(out)  # as `encode` normalises: the same numbers
        self.prefix_seconds = time.perf_counter() - began

    def _write(self, h: torch.Tensor, start: int, index: int) -> Path:
        if self._spill is None:
            if self.spill_dir is not None:
                root = Path(self.spill_dir)
                root.mkdir(parents=True, exist_ok=True)
            else:  # a read-only cache folder spills into a temporary one, with the cache's one warning
                root = writable_folder(_default_spill_root())
            self._spill = tempfile.TemporaryDirectory(prefix="sweep-spill-", dir=root)  # removed with the runner
        path = Path(self._spill.name) / f"s{start}-b{index}.npy"
        np.save(path, h.float().numpy(), allow_pickle=False)
        return path

    @property
    def spilled(self) -> int:
        """How many (batch, start) state tensors live on disk rather than in memory."""
        return sum(isinstance(v, Path) for g in self._groups or [] for v in g.states.values())

    def close(self) -> None:
        """Drop the stored states and remove spilled files (also done when the runner is garbage-collected)."""
        self._groups = None
        if self._spill is not None:
            self._spill.cleanup()
            self._spill = None

    def prompt_only(self) -> np.ndarray:
        """(n, d) L2-normalised prompt-only embeddings, as `kv_embedding(layers="none").encode` gives them."""
        self.prepare()
        return self._prompt_only

    # ---- one cell: decoder layers s..L-1 ------------------------------------------------------------------
    def embed(self, cell: Cell) -> np.ndarray:
        """(n, d) L2-normalised embeddings of the text set under `cell`, equal to a full forward."""
        if cell.start not in self.starts:
            raise ValueError(f"start {cell.start} was not prepared (starts: {self.starts})")
        self.prepare()
        bb, method = self.backbone, cell_method(cell, self.L, **self.base)
        blocks = bb.decoder.layers
        out = np.zeros((len(self.texts), bb.facts.hidden_size), dtype=np.float32)
        with torch.inference_mode(), bb.lock, attention_backend(bb, method.backend()):
            for group in self._groups:
                cfg = method.reroute(bb, group.batch)
                h = group.states[cell.start]
                if isinstance(h, Path):
                    h = torch.from_numpy(np.load(h, allow_pickle=False))  # (B, T, d)
                for l in range(cell.start, self.L):
                    args, kwargs = group.calls[l]
                    h = _first_tensor(blocks[l](h, *args, **kwargs, **{KWARG: cfg}))  # (B, T, d)
                h = bb.decoder.norm(h)
                out[group.rows] = method.readout(h, group.batch).float().numpy()
        return l2_normalize(out)


def _default_spill_root() -> Path:
    """<cache>/.scratch: a hidden folder, so clearing the cache (which skips hidden folders) never deletes the
    states of a sweep that is running; the runner removes its own folder when it closes."""
    return cache_root() / ".scratch"


# ---- scoring cells ----------------------------------------------------------------------------------------
def cost(cells, n_layers: int, prefix: bool = True) -> float:
    """A grid's cost floor in prompt-only forwards: 1 (the prompt-only pass) + sum over cells of (L - s) / L."""
    return float(prefix) + sum((n_layers - c.start) / n_layers for c in cells)


def text_passes(cells, n_layers: int, data) -> int:
    """A grid's work on pairs or a retrieval task, in prompt-only passes of one text: its cost floor x the texts of
    every side (what the `sweep_text_forwards` budget bounds)."""
    return round(cost(cells, n_layers) * sum(len(t) for t in scorer(data).sides.values()))


@dataclass
class CellResult:
    cell: Cell
    score: float  # the scorer's metric: Spearman on pairs, nDCG@10 on a retrieval task
    seconds: float  # the cell's own compute time (its share of the prefix pass not included)


@dataclass
class Scorer:
    """What cells are scored on: the texts of each side, and the score of one set of embeddings."""

    sides: dict[str, list[str]]  # role -> the texts embedded as that side
    score: Callable[[dict], float]  # {role: (n, d) embeddings} -> the cell's score
    metric: str


def scorer(data) -> Scorer:
    """The `Scorer` of labelled pairs (`Pairs`: Spearman, every sentence once, as `sts_spearman`) or of a retrieval
    task (`analysis.eval.tasks.Task` of kind retrieval: queries as queries, the corpus as documents, nDCG@10 averaged
    over judged queries as `analysis.eval.retrieval` scores it)."""
    if getattr(data, "kind", None) == "retrieval":
        beir = data.data
        qids, doc_ids = judged_queries(beir), list(beir.corpus)
        if not qids:
            raise UserError(f"{data.name} has no judged query, so there is nothing to retrieve.")
        qrels = [beir.qrels[q] for q in qids]

        def ndcg(emb: dict) -> float:
            return float(per_query(cosines(emb["query"], emb["document"]), doc_ids, qrels, ("nDCG@10",))
                         ["nDCG@10"].mean())

        return Scorer({"query": [beir.queries[q] for q in qids], "document": [beir.corpus[d] for d in doc_ids]},
                      ndcg, "nDCG@10")
    if getattr(data, "kind", None) == "sts":
        data = data.data
    elif hasattr(data, "kind"):
        raise UserError(f"A layer sweep scores STS pairs or a retrieval task, not {data.kind} ({data.name}).")
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import check_pairs, pair_cosines, pair_index, spearman

    check_pairs(data)
    texts, left, right = pair_index(data)
    gold = np.asarray(data.scores, dtype=np.float64)  # (n_pairs,)
    return Scorer({"document": texts}, lambda emb: spearman(pair_cosines(emb["document"], left, right), gold),
                  "Spearman")


def runners(backbone, data, starts, **options) -> tuple[Scorer, dict]:
    """(the scorer, {role: SuffixRunner}): one runner per side of `data`, each preparing the same starts."""
    score = scorer(data)
    return score, {role: SuffixRunner(backbone, texts, starts, role=role, **options)
                   for role, texts in score.sides.items()}


@dataclass
class SweepRun:
    """What a sweep of layer-map cells gives back, computed here or read from the store."""

    scores: dict = field(default_factory=dict)  # Cell -> Spearman
    prompt_only: float | None = None
    computed: int = 0  # cells computed by this call
    cached: int = 0  # cells found in the store
    seconds: float = 0.0  # wall time of this call
    prefix_seconds: float | None = None  # the prompt-only pass (None: not run)
    floor: float = 0.0  # cost floor of the computed part, in prompt-only forwards



def score_local(backbone, data, cells: list[Cell], *, base: dict | None = None, batch_size: int = 16,
                memory_mb: float = MEMORY_MB, spill_dir=None, prompt_only: bool = True,
                on_prefix: Callable[[float, float], None] | None = None,
                on_cell: Callable[[CellResult], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> list[CellResult]:
    """Score `cells` on `data` (pairs or a retrieval task, `scorer`) in this process, start by start.

    Args:
        on_prefix: called once after the prompt-only pass(es) as on_prefix(prompt-only score, seconds).
        on_cell: called after each cell (store it there: a stopped sweep keeps every finished cell).
        should_stop: checked before each cell.
        prompt_only: run the prompt-only pass even when `cells` is empty (for the reference alone).
    """
    if not cells and not prompt_only:
        scorer(data)  # bad data still fails in one sentence
        return []
    score, sides = runners(backbone, data, {c.start for c in cells}, base=base, batch_size=batch_size,
                           memory_mb=memory_mb, spill_dir=spill_dir)
    try:
        for r in sides.values():
            r.prepare()
        if on_prefix is not None:
            on_prefix(score.score({k: r.prompt_only() for k, r in sides.items()}),
                      sum(r.prefix_seconds for r in sides.values()))
        results = []
        for cell in sorted(cells, key=lambda c: c.start):  # start-major: a spilled start is read once
            if should_stop is not None and should_stop():
                break
            began = time.perf_counter()
            value = score.score({k: r.embed(cell) for k, r in sides.items()})
            results.append(CellResult(cell, value, time.perf_counter() - began))
            if on_cell is not None:
                on_cell(results[-1])
        return results
    finally:
        for r in sides.values():
            r.close()
