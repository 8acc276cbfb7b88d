"""The Ray executor of layer sweeps and of benchmark grids: work sent as tasks to actors that load a model once each.

A sweep (`score_ray`): cells grouped by start, every actor runs the prompt-only pass once. A benchmark grid
(`score_grid_ray`, `python -m analysis bench --executor ray`): models x methods x tasks, each model's cells spread over
its actors, each cell scored as `analysis.eval.tasks.score_method` scores it (every distinct text once, in the cache's
order, so the numbers are those a local run with a fresh cache computes).

Ray is optional (`pip install -r requirements-cluster.txt`) and imported only here, only when asked. Results
come back to the driver, which stores them (`cache.sweep`, `cache.compute.put_bench_cell`), so a partly finished
distributed run resumes locally and the other way round. Every worker must be able to import this project and load
the same model (the driver checks the identity each worker reports against its own before storing anything).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import socket
import time
from contextlib import contextmanager
from dataclasses import asdict
from typing import Callable

import torch

from analysis.core.errors import UserError
from analysis.core.paths import REPO
from analysis.eval.tasks import score_method, score_record
from analysis.models.backbone import load_backbone
from analysis.sweep.runner import CellResult, runners
from analysis.sweep.windows import Cell

OBJECT_STORE_MB = 100  # results are a few floats per cell; keep Ray's shared memory small on a shared machine
# A cluster that does not answer within this is refused in one sentence. Ray itself retries for minutes (three
# rounds of ~40 s against a silent port, each with C++ log lines on stderr), so the driver asks first.
CONNECT_SECONDS = 5.0
_ADDRESS = re.compile(r"(?:ray://)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(?P<port>[0-9]{1,5})", re.ASCII)
# What every HTTP/2 client sends first (RFC 9113, 3.4), then an empty SETTINGS frame; a gRPC server, as Ray's GCS
# and Ray Client server are, answers with a SETTINGS frame of its own (frame type 4, the fourth byte of a frame).
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def import_ray():
    try:
        import ray  # lazy: optional dependency (ray)
    except ImportError:
        raise UserError("The ray executor needs Ray, which is not installed: pip install -r requirements-cluster.txt "
                        "(or use --executor local).") from None
    return ray


def check_address(address: str | None) -> str | None:
    """The `--address` of a running cluster, checked before any work: "auto" (the cluster running on this machine),
    host:port (Ray's own address, port 6379 by default) or ray://host:port (Ray Client, which needs the `ray[client]`
    extra), answering as a gRPC server within CONNECT_SECONDS. None stays None (a local cluster is started). Else
    one UserError."""
    if address is None:
        return None
    if address.strip() == "auto":
        address = _running_cluster()
        if address is None:  # this Ray cannot say where "auto" points before ray.init does
            return "auto"
    match = _ADDRESS.fullmatch(address.strip())
    if match is None or not 0 < int(match["port"]) < 65536:
        raise UserError(f"--address {address!r:.80} is not auto, host:port or ray://host:port.")
    if address.strip().startswith("ray://") and importlib.util.find_spec("grpc") is None:
        raise UserError("A ray:// address needs Ray Client, which is not installed: pip install 'ray[client]==2.60.0' "
                        "(or give the cluster's own address, host:6379).")
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS) as conn:
            conn.settimeout(CONNECT_SECONDS)
            conn.sendall(_HTTP2_PREFACE)
            answer = conn.recv(9)
    except OSError as err:
        why = f"no answer within {CONNECT_SECONDS:g} s" if isinstance(err, TimeoutError) else \
            (err.strerror or type(err).__name__).lower()
        raise UserError(f"No Ray cluster answers at {address.strip()} ({why}).") from None
    if len(answer) < 4 or answer[3] != 4:
        raise UserError(f"{address.strip()} answers, but not as a Ray cluster (no gRPC server there).")
    return address.strip()


def _running_cluster() -> str | None:
    """The address `auto` stands for (RAY_ADDRESS, else the cluster `ray start` last started on this machine), found
    the way Ray finds it; resolved here so that no cluster is one sentence before any work, not after it."""
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die  # lazy: optional dependency (ray)
    except ImportError:  # a Ray without this helper: "auto" is left to ray.init, whose failure is caught there
        return None
    try:
        return canonicalize_bootstrap_address_or_die("auto")
    except (ConnectionError, ValueError):
        raise UserError("--address auto found no running Ray cluster on this machine: start one with `ray start "
                        "--head`, or give its address (host:6379).") from None


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def worker_backbone(model, threads: int = 1):
    """What a Ray worker runs on: `model` loaded once (a factory, as tests pass tiny models, or a name for
    `load_backbone`), torch on `threads` threads (one actor per CPU)."""
    torch.set_num_threads(threads)
    if callable(model):
        return model()
    return load_backbone(model)


class SweepWorker:
    """One per Ray worker: loads the model once, runs the prompt-only pass of each side once, then scores start
    groups (on pairs or a retrieval task: `runner.scorer`)."""

    def __init__(self, model, data, starts, base, batch_size, memory_mb, threads=1):
        self.backbone = worker_backbone(model, threads)
        self.scorer, self.sides = runners(self.backbone, data, starts, base=base, batch_size=batch_size,
                                          memory_mb=memory_mb)

    def run(self, cells: list[dict]) -> dict:
        fresh = any(r._groups is None for r in self.sides.values())
        for r in self.sides.values():
            r.prepare()
        out = {"identity": self.backbone.identity, "results": []}
        if fresh:  # this worker's prompt-only pass: report its reference score once
            out["prompt_only"] = float(self.scorer.score({k: r.prompt_only() for k, r in self.sides.items()}))
            out["prefix_seconds"] = sum(r.prefix_seconds for r in self.sides.values())
        for c in cells:
            began = time.perf_counter()
            value = float(self.scorer.score({k: r.embed(Cell(**c)) for k, r in self.sides.items()}))
            out["results"].append((c, value, time.perf_counter() - began))
        return out


@contextmanager
def cluster(address: str | None):
    """Ray, joined at `address` (or a local cluster started here with the cores available, stopped at the end; or
    the one this process already joined)."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address:
            check_address(address)  # again: the cluster may have gone since the command line checked it
            try:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            except ConnectionError as err:  # e.g. "auto" with no cluster running
                first = str(err).strip().splitlines()[0] if str(err).strip() else "no cluster"
                raise UserError(f"Could not join the Ray cluster at {address}: {first.rstrip('.')}.") from None
        else:
            ray.init(num_cpus=available_cpus(), object_store_memory=OBJECT_STORE_MB * 2**20, include_dashboard=False,
                     log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _same_model(out: dict, identity: str) -> None:
    if out["identity"] != identity:
        raise UserError(f"A Ray worker loaded {out['identity']}, not the driver's {identity}: every node needs the "
                        "same model and project version.")


def _workers(ray, n_jobs: int, workers: int | None) -> int:
    return workers or max(1, min(int(ray.cluster_resources().get("CPU", 1)), n_jobs))


def score_ray(model, identity: str, data, cells: list[Cell], *, base: dict | None, batch_size: int,
              memory_mb: float, address: str | None = None, workers: int | None = None,
              on_prefix: Callable[[float, float], None] | None = None,
              on_cell: Callable | None = None) -> None:
    """Score `cells` on `data` (pairs or a retrieval task) on Ray actors; calls on_prefix once and on_cell(CellResult)
    per cell on the driver.

    Args:
        model: what each worker loads: a model name for `load_backbone`, or a picklable factory.
        identity: the driver's model identity; a worker that loaded other weights is an error.
        address: a running Ray cluster ("auto", "ray://host:10001", "host:6379"); None = the one this process
            already joined, else a local one started here with the cores available.
        workers: actors to start (default: one per CPU the cluster offers, at most one per start).
    """
    actors = []
    with cluster(address) as ray:
        try:
            from ray.util import ActorPool  # lazy: optional dependency (ray)

            groups: dict[int, list[dict]] = {}
            for c in cells:
                groups.setdefault(c.start, []).append(asdict(c))
            order = sorted(groups)  # low starts first: the longest tasks start early
            Worker = ray.remote(num_cpus=1)(SweepWorker)
            actors = [Worker.remote(model, data, order, base, batch_size, memory_mb)
                      for _ in range(_workers(ray, len(order), workers))]
            reported = False
            for out in ActorPool(actors).map_unordered(lambda a, g: a.run.remote(g), [groups[s] for s in order]):
                _same_model(out, identity)
                if "prompt_only" in out and not reported and on_prefix is not None:
                    on_prefix(out["prompt_only"], out["prefix_seconds"])
                    reported = True
                for c, value, seconds in out["results"]:
                    if on_cell is not None:
                        on_cell(CellResult(Cell(**c), value, seconds))
        finally:
            for a in actors:
                ray.kill(a)


class BenchWorker:
    """One per Ray worker of a benchmark grid: loads one model once, then scores (method, task) cells."""

    def __init__(self, model, batch_size: int, threads: int = 1):
        self.backbone = worker_backbone(model, threads)
        self.batch_size = batch_size

    def run(self, job: tuple) -> dict:
        index, method, task, n_boot, seed = job
        began = time.perf_counter()
        score = score_method(task, self.backbone, method, n_boot=n_boot, seed=seed, batch_size=self.batch_size)
        arrays, meta = score_record(score)
        return {"identity": self.backbone.identity, "index": index, "arrays": arrays,
                "meta": {**meta, "encode_seconds": score.seconds, "seconds": time.perf_counter() - began}}


def score_grid_ray(jobs: list, *, batch_size: int = 16, address: str | None = None, workers: int | None = None,
                   on_cell: Callable[[int, dict, dict], None] | None = None) -> None:
    """Score benchmark cells on Ray actors, model by model; on_cell(index, arrays, meta) on the driver per cell
    (`analysis.eval.tasks.score_record`'s form, meta with "encode_seconds").

    Args:
        jobs: (index, model, identity, method, task, n_boot, seed) per cell; `model` is what the workers load (a
            name for `load_backbone`, or a picklable factory), `identity` the driver's for it, `method` ready to run
            (a resolved `layers=auto` window travels with it), `task` an `analysis.eval.tasks.Task`.
        address, workers: as `score_ray`'s (default: one actor per CPU, at most one per cell of the model).
    """
    by_model: dict = {}
    for index, model, identity, method, task, n_boot, seed in jobs:
        by_model.setdefault((model, identity), []).append((index, method, task, n_boot, seed))
    with cluster(address) as ray:
        from ray.util import ActorPool  # lazy: optional dependency (ray)

        Worker = ray.remote(num_cpus=1)(BenchWorker)
        for (model, identity), cells in by_model.items():
            actors = [Worker.remote(model, batch_size) for _ in range(_workers(ray, len(cells), workers))]
            try:
                for out in ActorPool(actors).map_unordered(lambda a, job: a.run.remote(job), cells):
                    _same_model(out, identity)
                    if on_cell is not None:
                        on_cell(out["index"], out["arrays"], out["meta"])
            finally:
                for a in actors:
                    ray.kill(a)
