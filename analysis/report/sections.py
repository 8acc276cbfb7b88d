"""The measured sections of a model report, each a plain dict of numbers (what report.json holds).

Every function reuses the one implementation of its measurement: STS scores and the paired bootstrap
(`analysis.eval.sts`), interleaved timing (`analysis.core.timing`), the sweep summary (`analysis.sweep.windows`),
the window rules (`analysis.inspect.intrinsic_dim`) and prefix-mass summaries (`analysis.inspect.attention`).
Embeddings, sweep cells and the soft-token curve come from callables, so the application can serve them from
its cache (the library never imports it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import asdict

import numpy as np
import psutil

from analysis.core.errors import UserError
from analysis.core.timing import interleaved_medians
from analysis.eval.sample_size import MIN_COMPARE_PAIRS
from analysis.eval.tasks import score_task
from analysis.sweep import windows

NOT_DIFFERENT_P = 0.05  # two-sided level of the paired test: "not significantly different from the best"
# Methods that do not use the model the report is about (MiniLM alone): a reference row, compared with the best
# decoder method on the same resamples but never the best itself, so the report answers "which decoder method" and
# says whether a small encoder beats them all.
REFERENCE_METHODS = ("sentence_encoder",)


def quality(pairs, methods: dict, encode, *, n_boot: int, seed: int, trained: set,
            progress=None, stop=None) -> dict:
    """Every method's Spearman with its interval, and its paired difference to the best (same resampled pairs),
    and `not_measured` {label: why}: the methods left out (its `methods` are empty when none was measured). The best
    is the best method on the model; a reference method (`REFERENCE_METHODS`: MiniLM alone) is a row marked
    `reference`, compared with that best like every other row, and named in `reference` (None when not measured).

    `encode(method, texts) -> analysis.compute.Encoded`; `progress(label)` before each method;
    `stop(label) -> reason or None` before each method: a reason ends the table there, the methods measured so far
    kept. A method that fails is left out with its error, and the others go on. The paired test runs only when
    there is one to run (`n_boot` > 0 and at least `MIN_COMPARE_PAIRS` pairs); without it, no interval and no p."""
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import compare_cosines, score_pairs, spearman

    cosines, runs, missing = {}, {}, {}
    for label, method in methods.items():
        why = stop(label) if stop is not None else None
        if why:
            missing.update({k: why for k in methods if k not in cosines and k not in missing})
            break
        if progress is not None:
            progress(label)
        info = {}

        def embed(texts, method=method, info=info):
            encoded = encode(method, texts)
            info.update(cached=encoded.cached, seconds=encoded.seconds)
            return encoded.vectors

        try:
            cosines[label] = score_pairs(pairs, embed, n_boot=0).cosines  # intervals below, on shared resamples
        except Exception as err:  # noqa: BLE001 -- one method's failure must not lose the others' results
            missing[label] = failure(err)
            continue
        runs[label] = {"name": method.name, "params": asdict(method.params), "trained": label in trained,
                       "cached": bool(info.get("cached")), "seconds": round(float(info.get("seconds", 0.0)), 3)}
    references = {k for k, m in methods.items() if m.name in REFERENCE_METHODS}
    if not set(cosines) - references:  # nothing measured on the model itself
        return {"best": None, "methods": [], "not_measured": missing, "reference": None}
    gold = np.asarray(pairs.scores, dtype=np.float64)
    rho = {k: spearman(c, gold) for k, c in cosines.items()}
    best = max((k for k in rho if k not in references), key=lambda k: -np.inf if np.isnan(rho[k]) else rho[k])
    skip = why_untested(n_boot, len(pairs))
    boot = 0 if skip else n_boot
    table = compare_cosines(cosines, gold, n_boot=boot, seed=seed, versus=best)
    versus = {d["b"]: d for d in table["differences"]}
    rows = []
    for row in table["methods"]:
        d = versus.get(row["method"])
        rows.append({"label": row["method"], **runs[row["method"]], "spearman": row["spearman"],
                     "ci": list(row["ci"]), "difference_to_best": None if d is None else -d["difference"],
                     "difference_ci": None if d is None or not boot else [-d["ci"][1], -d["ci"][0]],
                     "p": None if d is None or not boot else d["p"], "reference": row["method"] in references})
    return {"best": best, "methods": rows, "n_pairs": table["n_pairs"], "n_boot": n_boot, "seed": seed,
            "bootstrap": f"no paired test ({skip}): no intervals and no p-values" if skip else table["bootstrap"],
            "not_measured": missing, "reference": next((r["label"] for r in rows if r["reference"]), None)}


def why_untested(n_boot: int, n_pairs: int) -> str | None:
    """Why no paired test is run on `n_pairs` pairs with `n_boot` replicates, as a clause (None: one is run)."""
    if n_boot <= 0:
        return "--n-boot 0"
    if n_pairs < MIN_COMPARE_PAIRS:
        return f"{n_pairs} pairs, fewer than the {MIN_COMPARE_PAIRS} a paired comparison needs"
    return None


def tasks(tasks: list, methods: dict, encode, *, n_boot: int, seed: int, stop=None) -> tuple[list[dict], dict]:
    """Every method on each probe or retrieval task (`eval.tasks.score_task`: accuracy or nDCG@10 with its
    interval), its texts embedded through `encode` like the STS sample's, a retrieval task's queries as the method
    embeds queries (`as_role`): (rows, {"task: label": why not}). `stop(task, label)` as in `quality`."""
    rows, missing, stopped = [], {}, None
    for task in tasks:
        for label, method in methods.items():
            name = f"{task.name}: {label}"
            stopped = stopped or (stop(task, label) if stop is not None else None)
            if stopped:
                missing[name] = stopped
                continue
            try:
                s = score_task(task, lambda texts, role, method=method: encode(method.as_role(role), texts).vectors,
                               n_boot=n_boot, seed=seed)
            except Exception as err:  # noqa: BLE001 -- as in `quality`
                missing[name] = failure(err)
                continue
            rows.append({"task": task.name, "metric": s.metric, "label": label, "value": s.value,
                         "ci": [s.lo, s.hi], "n": s.n})
    return rows, missing


def failure(err: Exception) -> str:
    """A failed method's reason, one line: a UserError's own sentence, else the exception's type and first line."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = text if isinstance(err, UserError) else f"{type(err).__name__}: {text}".rstrip(": ")
    return f"failed: {text[:300]}"


class Stopped(Exception):
    """The run was asked to stop, or its budget ran out (the message says which); the report keeps what is
    finished."""


def stop_if(should_stop) -> None:
    """Raise `Stopped` when `should_stop()` gives a reason (a sentence) or True."""
    why = should_stop() if should_stop is not None else None
    if why:
        raise Stopped(why if isinstance(why, str) else "the run was asked to stop")


def peak_memory_mb(fn, device: str = "cpu") -> float:
    """Peak memory above the starting level while `fn()` runs, in MB: the CUDA allocator's peak on a GPU, else
    the process's resident memory sampled every 5 ms by a thread (a CPU allocator keeps no peak of its own). On
    glibc, freed memory is first handed back to the system (`malloc_trim`), or memory a previous call freed would
    hide this call's working set; elsewhere the figure is a lower bound."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    if str(device).startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    _trim()
    proc, peak, done = psutil.Process(), [0], threading.Event()
    base = proc.memory_info().rss

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            done.wait(0.005)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        fn()
    finally:
        done.set()
        watcher.join()
    return max(peak[0] - base, 0) / 2**20


def _trim() -> None:
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to hand back this way
        pass


def cost(backbone, methods: dict, texts: list[str], *, repeats: int, batch_size: int = 16,
         should_stop=None) -> tuple[dict, dict]:
    """Each method's time on `texts` as a ratio to the plain forward (`last`) timed in the same rounds
    (`interleaved_medians`: load changes hit every configuration alike), and its peak memory: (the section,
    {label: why it is not in it}). A method that fails its warm-up pass is left out with its error; a stop
    (`should_stop()` between rounds) raises `Stopped`, since timings of part of the rounds compare nothing."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    plain = "plain forward"
    configs = {plain: get_method("last"), **methods}
    run = {label: (lambda m=m: m.encode(backbone, texts, batch_size=batch_size)) for label, m in configs.items()}
    missing = {}
    for label, fn in list(run.items()):  # warm-up: lazy initialisation (merged adapters, MiniLM) is not the cost
        stop_if(should_stop)
        try:
            fn()
        except Exception as err:  # noqa: BLE001 -- one method's failure must not lose the others' timings
            if label == plain:
                raise
            missing[label] = failure(err)
            del run[label]
    medians = interleaved_medians(run, repeats, after_round=lambda _: stop_if(should_stop))
    rows = []
    for label, fn in run.items():
        stop_if(should_stop)
        rows.append({"label": label, "seconds": medians[label], "ratio": medians[label] / medians[plain],
                     "peak_mb": round(peak_memory_mb(fn, backbone.facts.device), 1)})
    return {"baseline": plain, "texts": len(texts), "repeats": repeats, "rows": rows}, missing


def rule_windows(ids, n_layers: int) -> dict:
    """The window each of the intrinsic-dimension rules would pick from this trajectory (the one that applies is
    the selection's `rule`): the global minimum (a clear U-shape) and the lowest estimate after the first 20% of
    the depth (several minima, or flat)."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.intrinsic_dim import EXCLUDE_FRACTION, WIDTH_FRACTION

    L = n_layers
    y = np.array([np.nan if v is None else float(v) for v in ids], dtype=np.float64)[1:L]  # hidden states 1..L-1
    if not np.isfinite(y).any():
        return {}
    width, exclude = int(np.floor(WIDTH_FRACTION * L)), int(np.floor(EXCLUDE_FRACTION * L))
    late = np.where(np.arange(1, L) >= max(1, exclude), y, np.nan)
    out = {}
    for rule, values in (("u-shape", y), ("several-minima / flat", late)):
        if np.isfinite(values).any():
            start = 1 + int(np.nanargmin(values))
            out[rule] = {"start": start, "end": min(L - 1, start + width)}
    return out


def layer_map(cells: list, scores: dict, n_layers: int, selection, id_cell, prompt_only) -> dict:
    """The coarse KV-Embedding map, its best cell and where the ID window ranks in it (`windows.summary`)."""
    rows = [{**asdict(c), "layers": list(c.layers(n_layers)), "spearman": scores[c]} for c in cells if c in scores]
    id_score = scores.get(id_cell) if id_cell is not None else None
    summary = windows.summary(rows, n_layers, selection.layers or None, id_score, {"prompt only": prompt_only})
    if summary.get("id_window") and id_cell is not None:
        summary["id_window"]["cell"] = asdict(id_cell)
    return {"cells": rows, "grid": {"starts": sorted({c.start for c in cells}),
                                    "widths": sorted({c.width for c in cells}),
                                    "biases": sorted({c.bias for c in cells})},
            "prompt_only": prompt_only, "best": summary["best"], "id_window": summary.get("id_window")}


def prefix_mass(backbone, kv_method, texts: list[str]) -> dict:
    """Attention mass on KV-Embedding's re-routed prefix per decoder layer: the mean over the texts, heads and
    query positions of `kv.prefix_mass` (zero outside the re-routed set)."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.attention import prefix_mass_summary

    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods.kv_embedding import PREFIX_MASS

    _, trace = kv_method.encode(backbone, texts, trace=True)
    per_layer = np.mean([prefix_mass_summary(m)[0].mean(axis=1) for m in trace[PREFIX_MASS]], axis=0)  # (L,)
    return {"texts": len(texts), "layers": sorted(kv_method.decoder_layers(backbone)),
            "mass": [float(v) for v in per_layer]}


def soft_curve(arrays: dict) -> dict:
    """The soft-token K curve (`inspect.generation.scaling_curve`'s arrays) as numbers."""
    return {"ks": [int(k) for k in arrays["ks"]], "spearman": [float(v) for v in arrays["spearman"]],
            "ci": [[float(a), float(b)] for a, b in np.asarray(arrays["ci"]).reshape(-1, 2)]}
