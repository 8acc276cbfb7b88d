"""`Direct`: every `Compute` call computed in this process, nothing stored (tests, `--no-cache`, the library alone)."""

from __future__ import annotations

import time

from analysis.compute import KV_BASE, Encoded
from analysis.core import precision
from analysis.inspect.generation import scaling_curve
from analysis.inspect.intrinsic_dim import auto_trajectory
from analysis.methods import get_method
from analysis.models.backbone import load_backbone
from analysis.sweep import runner


def timed_encode(backbone, method, texts: list[str], batch_size: int = 16) -> Encoded:
    """`method.encode` with its wall time: the one place an embedding is timed for a record."""
    began = time.perf_counter()
    vectors = method.encode(backbone, texts, batch_size=batch_size)
    return Encoded(vectors, time.perf_counter() - began, False)


class Direct:
    """Computes everything, stores nothing. `backbones`: a name -> Backbone loader (tests: tiny random models)."""

    def __init__(self, *, batch_size: int = 16, backbones=load_backbone):
        self.batch_size, self._backbones = batch_size, backbones

    def backbone(self, name: str):
        return self._backbones(name)

    def backbone_in(self, backbone, dtype: str):
        return backbone if backbone.facts.dtype == dtype else self._backbones(backbone.facts.name, dtype=dtype)

    def encode(self, backbone, method, texts):
        backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
        return timed_encode(backbone, method, texts, self.batch_size)

    def is_stored(self, backbone, method, texts):
        return False

    def window(self, backbone, *, compute=True):
        if not compute:
            return None
        backbone, _ = precision.for_method(backbone, "kv_embedding")  # --dtype auto: as `cache.auto_window`
        return auto_trajectory(backbone, get_method("kv_embedding", **KV_BASE).prompt_only())

    def sweep(self, backbone, data, cells, progress=None, should_stop=None):
        backbone, _ = precision.for_method(backbone, "kv_embedding")  # --dtype auto: as `cache.cached_sweep`
        run = runner.SweepRun()

        def on_cell(result):
            run.scores[result.cell] = result.score
            run.computed += 1
            if progress is not None:
                progress(len(run.scores), len(cells), {"cell": result.cell.label(), "cached": False,
                                                       "seconds": result.seconds})

        began = time.perf_counter()
        runner.score_local(backbone, data, cells, base=KV_BASE, batch_size=self.batch_size, on_cell=on_cell,
                           on_prefix=lambda rho, seconds: setattr(run, "prompt_only", rho), should_stop=should_stop)
        run.seconds = time.perf_counter() - began
        return run

    def soft_curve(self, backbone, pairs, ks):
        backbone, _ = precision.for_method(backbone, "soft_tokens")  # --dtype auto: as `cache.soft_scaling`
        return scaling_curve(backbone, pairs, ks, batch_size=self.batch_size)

    def compress_predict(self, system, items, mode, ids=False):
        return system.predict([it if isinstance(it, dict) else it.to_json() for it in items], mode, ids=ids)

    def remember(self, parts, compute, *, modules=()):
        return compute()

    def claims_board(self, backbone):
        return {"source": None, "created": None, "counts": {}, "rows": []}
