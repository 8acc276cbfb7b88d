"""Every published number has one shape, and this module runs it.

An experiment is one module registered in `EXPERIMENTS` with:

    ID, TITLE, HELP                  # `python -m analysis measure <ID>` and its help
    Config                           # frozen dataclass of `analysis.core.options` fields: its fields are the flags
    measure(config, compute, progress) -> Measured    # tables, series, findings, the sample, the models measured

`run(id, config)` does the rest the same way for all of them: checks the settings before any work, times the
measurement and reads the machine's load, and returns a typed `records.Record` carrying the command derived from
the settings (never typed by hand), the code version of the experiment's module and everything it imports, the
models with their weights' digests, the sample, the date and the machine. `python -m analysis measure <id>`
writes it as `docs/results/<id>.json`; `python -m analysis results` renders `docs/RESULTS.md` and the README's
headline from the records. Stored results come through `compute` (the `analysis.compute.Compute` door): the command
line passes `cache.Cached`, so a measurement run twice computes once and an interrupted one resumes; tests pass
`Direct()`, which computes everything and stores nothing.
Adding a measurement is its module plus one line in `EXPERIMENTS`.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field

from analysis import code_version
from analysis.core.errors import UserError
from analysis.core.options import check
from analysis.experiments.machinery import provenance, records

EXPERIMENTS: dict[str, str] = {  # in the order docs/RESULTS.md shows them
    "claims": "analysis.experiments.claims.record",  # the claims board, one record per model: RESULTS.md opens with it
    "methods_models": "analysis.experiments.methods_models",
    "task_families": "analysis.experiments.task_families",  # one record per model: methods x task families
    "longdoc": "analysis.experiments.longdoc",  # one record per model: nDCG@1 against document length
    "causal2vec": "analysis.experiments.causal2vec",
    "gircse": "analysis.experiments.gircse",
    "layer_map": "analysis.experiments.layer_map",
    "compression": "analysis.experiments.compression",
    "compression_people": "analysis.experiments.compression_people",
    "compression_training": "analysis.experiments.compression_training",
    "compression_probe": "analysis.experiments.compression_probe",
    "compression_reconstruction": "analysis.experiments.compression_reconstruction",
    "dtype": "analysis.experiments.dtype",  # one record per model: bfloat16 against float32, what --dtype auto reads
    "training_precision": "analysis.experiments.training_precision",
    "explain_faithfulness": "analysis.experiments.explain_faithfulness",  # one record per model
    "explain_budget": "analysis.experiments.explain_budget",  # one pair explained against its 15 s (BUDGETS.md)
    "first_figure": "analysis.experiments.first_figure",  # the app in a browser: seconds to each view's figure
    "load_test": "analysis.experiments.load_test",  # many browsers at once on one server (docs/BUDGETS.md)
    "corpus_stream": "analysis.experiments.corpus_stream",  # peak memory of a corpus past the budgets (BUDGETS.md)
}


@dataclass
class Measured:
    """What an experiment's `measure` returns: everything in its record but the provenance `run` adds."""

    data: str  # what was measured on, in words
    sample: object  # records.Sample, or None
    models: list  # [records.Model]
    tables: list  # [records.Table]
    series: list = field(default_factory=list)  # [records.Series]
    findings: list = field(default_factory=list)  # one sentence per conclusion the numbers support
    extra: dict = field(default_factory=dict)  # raw numbers under the experiment's own keys
    variant: str = ""  # a variant's records are "<ID>_<variant>" (e.g. a recipe judged against the shipped one)
    title: str = ""  # the variant's title (default: the module's TITLE)


def experiment(experiment_id: str):
    """The module registered under `experiment_id`."""
    if experiment_id not in EXPERIMENTS:
        raise UserError(f"No experiment '{experiment_id}'. Available: {', '.join(EXPERIMENTS)}.")
    return importlib.import_module(EXPERIMENTS[experiment_id])


def run(experiment_id: str, config, *, compute=None, progress=None):
    """Measure `experiment_id` with `config` and return its `records.Record` (not written: `records.write`)."""
    module = experiment(experiment_id)
    check(config)
    clock = provenance.Clock()
    if compute is None:
        from analysis.compute.direct import Direct  # lazy: pages read records through this package, without torch

        compute = Direct()
    measured = module.measure(config, compute, progress or (lambda done, total, message: None))
    suffix = measured.variant.replace("-", "_")
    return records.Record(
        id=f"{experiment_id}_{suffix}" if suffix else experiment_id, experiment=experiment_id,
        title=measured.title or module.TITLE, command=provenance.command(experiment_id, config),
        config=asdict(config), data=measured.data, sample=measured.sample, models=tuple(measured.models),
        code_version=code_version([module.__name__]), date=clock.date, wall_seconds=clock.seconds(),
        machine=clock.machine(), tables=tuple(measured.tables), series=tuple(measured.series),
        findings=tuple(measured.findings), extra=measured.extra)
