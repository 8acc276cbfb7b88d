"""Explaining a similarity through the `Compute` door (`analysis.compute`): a pair's explanation
(`attribution.explain_pair`), its deletion and insertion curves (`faithfulness.pair_curves`) and one text's logit lens
(`logit_lens.decode`), each kept by `compute.remember` as JSON under the model, the method with its parameters, the
exact texts and the settings, with the code version of the modules that compute it. The Explain view, its lesson
and the `explain` command call these, so each reads what another computed; `Direct()` computes and keeps nothing,
`cache.Cached(store)` keeps them on disk (a repeat is read back in milliseconds).

    ex, hit = explanation(Cached(default_store()), backbone, get_method("prompteol"), a, b, Settings(steps=32))
    c, _ = curves(compute, backbone, method, a, b)          # c.deletion["attribution"], c.gains, ...
    lens, _ = logit_lens(compute, backbone, method, a)        # lens.tokens[-1]: what A's embedding decodes to

Each returns (value, hit): hit when nothing was computed. A miss checks the budgets before any work (`explain_pair`);
a hit passed them when it was computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from analysis.inspect import attribution as A
from analysis.inspect import faithfulness as F
from analysis.inspect import logit_lens as LL
from analysis.inspect.explain_settings import DEFAULT, FRACTIONS, RANDOMS, Settings

Progress = Callable[[int, int], None]


def _kept(compute, parts: dict, modules: tuple, make: Callable[[], dict]) -> tuple[dict, bool]:
    """(`make()`'s JSON, hit) through `compute.remember`: hit when `make` did not run."""
    ran = []

    def run() -> dict:
        ran.append(True)
        return make()

    return compute.remember(parts, run, modules=modules), not ran


def _ready(compute, backbone, method):
    """`method` with KV-Embedding's `layers=auto` window resolved through the door (the cache's, when there is one)
    before an explanation records its forward passes: left to the method, the window's own passes ran inside them
    and were recorded as the text's."""
    if not getattr(method, "needs_window", lambda b: False)(backbone):
        return method
    selection, _ = compute.window(backbone)
    return method.with_window(backbone, selection.layers)


def _parts(kind: str, backbone, method, texts: dict) -> dict:
    return {"explain": kind, "model": backbone.identity, "method": method.name, "params": method.params, **texts}


def in_float32(backbone):
    """The model the attribution runs on: float32 always. Its path integral sums many small gradient terms, which
    bfloat16's 8-bit mantissa would leave with a completeness gap of its own; an auto backbone is float32 already,
    a model loaded in another dtype only is one sentence (`Backbone.in_dtype`)."""
    return backbone.in_dtype("float32")


def explanation(compute, backbone, method, text_a: str, text_b: str, settings: Settings = DEFAULT,
                progress: Progress | None = None) -> tuple[A.Explanation, bool]:
    """(`explain_pair(backbone, method, text_a, text_b, **settings)`, hit) in float32 (`in_float32`);
    `progress(done, total)` over path nodes while computing."""
    backbone = in_float32(backbone)
    parts = {**_parts("pair", backbone, method, {"a": text_a, "b": text_b}), "settings": asdict(settings)}
    value, hit = _kept(compute, parts, (type(method).__module__, A.__name__), lambda: A.explain_pair(
        backbone, _ready(compute, backbone, method), text_a, text_b, **asdict(settings), progress=progress).to_json())
    return A.Explanation.from_json(value), hit


def curves(compute, backbone, method, text_a: str, text_b: str, settings: Settings = DEFAULT, *,
           fractions=FRACTIONS, randoms: int = RANDOMS, seed: int = 0,
           progress: Progress | None = None) -> tuple[F.Curves, bool]:
    """(the deletion and insertion curves of the pair's explanation under `settings` (itself through `explanation`,
    so computed once), hit), in float32 (`in_float32`)."""
    backbone = in_float32(backbone)
    fractions = [float(f) for f in fractions]
    parts = {**_parts("curves", backbone, method, {"a": text_a, "b": text_b}), "settings": asdict(settings),
             "fractions": fractions, "randoms": int(randoms), "seed": int(seed)}

    def make() -> dict:
        ex, _ = explanation(compute, backbone, method, text_a, text_b, settings, progress)
        return F.pair_curves(backbone, _ready(compute, backbone, method), ex, fractions=fractions, randoms=randoms,
                             seed=seed, through_generation=settings.through_generation).to_json()

    value, hit = _kept(compute, parts, (type(method).__module__, A.__name__, F.__name__), make)
    return F.Curves.from_json(value), hit


def logit_lens(compute, backbone, method, text: str, top: int = LL.TOP) -> tuple[LL.Lens, bool]:
    """(`logit_lens.decode(backbone, method, text, top=top)`, hit)."""
    parts = {**_parts("logit_lens", backbone, method, {"text": text}), "top": int(top)}
    value, hit = _kept(compute, parts, (type(method).__module__, LL.__name__),
                       lambda: LL.decode(backbone, _ready(compute, backbone, method), text, top=top).to_json())
    return LL.Lens.from_json(value), hit
