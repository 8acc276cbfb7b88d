"""The experiments registry and its typed records: a record reads back as itself, a damaged one is named by file and
field, every committed record validates and carries a command re-derived from its settings, and a measurement on a
tiny model carries its provenance."""

import json
from pathlib import Path

import pytest

from analysis.core.errors import UserError
from analysis.experiments import EXPERIMENTS, experiment, run
from analysis.experiments.machinery import provenance, records, render
from analysis.experiments.machinery.records import Record, RecordError, Sample, Series, Table

REPO = Path(__file__).resolve().parent.parent


def small_record(**over) -> Record:
    base = dict(id="demo", experiment="methods_models", title="A demo", command="python -m analysis measure demo",
                config={"sample": 10}, data="demo pairs", sample=Sample(n=10, of=100, how="stratified", seed=0,
                                                                        strata={"a": 5, "b": 5}),
                models=(records.Model("tiny", "tiny@1", {"w": "ab" * 32}),), code_version="0.1.0+abc",
                date="2026-11-25", wall_seconds=1.5,
                machine=records.Machine(2, "2.13", 2, "3.11", (1.0, 1.0, 1.0), (1.5, 1.0, 1.0)),
                tables=(Table("scores", "Scores", ("method", "rho", "ci"), (("last", 0.5, [0.4, 0.6]),
                                                                            ("mean", 0.25, None)),
                              digits={"rho": 2}),),
                series=(Series("curve", "A curve", "K", (0, 1), {"a": [0.1, None]}, {"a": [[0.0, 0.2], None]}),),
                findings=("last beats mean.",))
    return Record(**{**base, **over})


def test_a_record_reads_back_as_itself(tmp_path):
    rec = small_record()
    path = records.write(rec, tmp_path)
    assert path.name == "demo.json"
    again = records.load(path)
    assert again == rec
    assert again.table("scores").column("rho") == [0.5, 0.25]
    assert again.table("scores").row("mean") == {"method": "mean", "rho": 0.25, "ci": None}
    assert again.series_named("curve").lines["a"] == [0.1, None]


@pytest.mark.parametrize("damage, expected", [
    (lambda d: [d], "should be a JSON object"),
    (lambda d: {k: v for k, v in d.items() if k != "tables"}, "has no 'tables'"),
    (lambda d: {**d, "tables": "oops"}, "tables should be list"),
    (lambda d: {**d, "tables": [{**d["tables"][0], "rows": [["last", 0.5]]}]}, "rows[0] should be a list of 3"),
    (lambda d: {**d, "tables": [{**d["tables"][0], "rows": [["last", {"x": 1}, None]]}]}, "rows[0][1]"),
    (lambda d: {**d, "schema": 1}, "schema 1"),
    (lambda d: {**d, "sample": {"n": "ten", "how": "x"}}, "sample.n should be int"),
    (lambda d: {**d, "series": [{**d["series"][0], "xs": [0]}]}, "one value per x"),
    (lambda d: {**d, "tables": d["tables"] * 2}, "two tables of one name"),
])
def test_a_damaged_record_is_named_by_file_and_field(tmp_path, damage, expected):
    data = damage(small_record().as_json())
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="broken.json") as err:
        records.load(path)
    assert expected in str(err.value)
    assert records.read("broken", tmp_path) is None  # a page reading it says "not measured" instead of failing


def test_an_unreadable_record_is_one_sentence(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(UserError, match="x.json is not a readable JSON record"):
        records.read_all(tmp_path)


def test_write_refuses_what_json_cannot_hold(tmp_path):
    bad = small_record(tables=(Table("scores", "S", ("a",), ((float("nan"),),)),))
    with pytest.raises(ValueError):
        records.write(bad, tmp_path)
    assert not list(tmp_path.iterdir())


def test_the_command_is_derived_from_the_settings():
    config = experiment("gircse").Config(sample=300, ks=("0", "5"))
    assert provenance.command("gircse", config) == "python -m analysis measure gircse --sample 300 --ks 0,5"
    assert provenance.command("gircse", experiment("gircse").Config()) == "python -m analysis measure gircse"


def settings_of(rec: Record):
    """The experiment's Config rebuilt from a record's JSON settings (lists back to tuples)."""
    cls = experiment(rec.experiment).Config
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in rec.config.items()})


def test_every_committed_record_validates_and_reproduces_its_command():
    committed = records.read_all()  # raises, naming the file, if one does not validate
    assert committed, "docs/results holds no record"
    for rec in committed.values():
        assert rec.experiment in EXPERIMENTS, rec.id
        if "config" in rec.unknown:  # migrated from schema 1: its command is kept as it was recorded
            assert rec.notes, f"{rec.id} is migrated and must say how"
            continue
        assert rec.command == provenance.command(rec.experiment, settings_of(rec)), rec.id
        assert rec.code_version and rec.models and rec.machine is not None, rec.id
        assert "/work/" not in rec.command and "/root/" not in rec.command, rec.id


def test_weights_are_named_without_machine_paths(tmp_path):
    assert provenance.shown_weights("shipped/ablations/mlp-only") == "shipped/ablations/mlp-only"
    assert provenance.shown_weights("people5-names") == "people5-names"
    assert provenance.shown_weights(str(tmp_path / "my-run")) == "my-run"
    with pytest.raises(UserError, match="No causal2vec weights"):
        provenance.weights_folder("causal2vec", "default", "no-such-run")


def test_render_shows_provenance_and_formats_by_column():
    md = render.record_markdown(small_record())
    assert "Command: `python -m analysis measure demo`" in md
    assert "Code version: `0.1.0+abc`" in md
    assert "| last | 0.50 | [0.400, 0.600] |" in md  # rho with its column's 2 digits
    assert "| mean | 0.25 | – |" in md
    migrated = render.record_markdown(small_record(code_version=None, unknown=("code_version", "models")))
    assert "Code version: unknown" in migrated and "code_version, models" in migrated


def test_the_readme_headline_is_filled_from_records():
    text = "before\n<!-- headline:start -->\nold\n<!-- headline:end -->\nafter\n"
    rec = small_record(id="methods_models")
    out = render.readme(text, {"methods_models": rec})
    assert "old\n" not in out and "STS with its intervals" in out and out.endswith("after\n")  # methods_models: a link
    scores = Table("scores", "Scores", ("method", "STS Spearman", "STS 95% CI", "retrieval nDCG@10", "retrieval p"),
                   (("mean", 0.5, [0.4, 0.6], 0.7, "0.002"), ("last", 0.6, [0.5, 0.7], 0.2, "0.002"),
                    ("sentence_encoder (reference: MiniLM alone)", 0.8, [0.7, 0.9], 0.9, "0.002")))
    ranks = Table("ranks", "Rank of each decoder method in each family (1 = best)",
                  ("method", "STS", "retrieval", "mean rank"), (("mean", 2.0, 1.0, 1.5), ("last", 1.0, 2.0, 1.5)))
    families = small_record(id="task_families_tiny", experiment="task_families", tables=(scores, ranks))
    out = render.readme(text, {"methods_models": rec, families.id: families})
    assert "| method | STS Spearman | retrieval nDCG@10 |" in out and "| mean | 0.500 (2) | 0.700 (1) |" in out
    assert "| sentence_encoder (reference: MiniLM alone) | 0.800 | 0.900 |" in out and "demo pairs; `" in out
    assert "| last | 0.50 |" not in out and "STS with its intervals" in out  # the families' STS column shows them
    assert render.readme(text, {}).count("no results recorded yet") == 1
    with pytest.raises(UserError, match="no <!-- headline:start -->"):
        render.readme("no markers", {})


def test_a_bad_setting_is_refused_before_any_work():
    cfg = experiment("methods_models").Config(n_boot=-1)
    with pytest.raises(UserError, match="--n-boot"):
        run("methods_models", cfg)


def tiny_compute(backbone):
    from analysis.compute.direct import Direct

    return Direct(backbones=lambda name: backbone)


def test_a_measurement_carries_its_provenance(tiny_llama):
    from analysis.data.datasets import stsb_dev_part

    try:
        stsb_dev_part("report")
    except UserError as err:
        pytest.skip(f"STS-B dev is not in the data folder: {err}")
    module = experiment("methods_models")
    cfg = module.Config(sample=24, models=("tiny",), methods=("last", "mean", "sentence_encoder"), n_boot=50)
    seen = []
    rec = run("methods_models", cfg, compute=tiny_compute(tiny_llama), progress=lambda *a: seen.append(a))
    assert seen
    records.validate(rec)
    assert rec.command == ("python -m analysis measure methods_models --sample 24 --models tiny "
                           "--methods last,mean,sentence_encoder --n-boot 50")
    assert rec.code_version.startswith("0.1.0+") and rec.models[0].identity == tiny_llama.identity
    assert rec.sample.n == 24 and rec.sample.how == "stratified by genre" and sum(rec.sample.strata.values()) == 24
    assert rec.machine.cores and len(rec.machine.load_before) == 3
    table = rec.table("scores")
    assert table.column("method") == ["last", "mean", "sentence_encoder"]
    assert "p" in table.columns  # the note promises p-values: the table has them
    assert any("best decoder method" in str(c) for c in table.rows[0] + table.rows[1])


def test_the_committed_results_document_matches_its_records(capsys):
    from cli import main

    assert main(["results", "--check"]) == 0, capsys.readouterr().err


def test_results_check_names_a_damaged_record(tmp_path, capsys):
    from cli import main

    (tmp_path / "bad.json").write_text(json.dumps([1, 2]))
    assert main(["results", "--check", "--records", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "bad.json should be a JSON object" in err and "Traceback" not in err and err.count("\n") == 1


def test_a_report_citing_a_changed_record_is_stale_until_results_renews_it(tmp_path, capsys):
    """A report copies its model's claims board from the published record; when the record is measured again,
    `results --check` fails naming the report, and `results` rewrites its Claims section (JSON and HTML)."""
    from analysis.experiments.claims.record import record_source, report_section
    from analysis.experiments.machinery.records import read
    from cli import main

    records, reports = tmp_path / "records", tmp_path / "reports"
    records.mkdir(), reports.mkdir()
    source = REPO / "docs" / "results" / "claims_smollm2_135m.json"
    if not source.exists():
        pytest.skip("no published claims record to cite")
    for p in (REPO / "docs" / "results").glob("*.json"):
        (records / p.name).write_text(p.read_text())
    rec = read("claims_smollm2_135m", records)
    board = rec.extra["board"]
    report = {"model": dict(board["model"]), "settings": {"command": "python -m analysis report"},
              "claims": report_section(board, record_source(rec))}
    (reports / "m.json").write_text(json.dumps(report))
    args = ["results", "--check", "--records", str(records), "--reports", str(reports)]
    capsys.readouterr()
    main(args)  # RESULTS.md may differ for the copied records; the report is current
    assert "m.json" not in capsys.readouterr().err
    changed = json.loads(source.read_text())
    changed["extra"]["board"]["created"] = "2099-01-01T00:00:00+00:00"  # measured again
    changed["extra"]["board"]["claims"][0]["verdict"]["word"] = "holds here"
    (records / source.name).write_text(json.dumps(changed))
    assert main(args) == 2
    assert "m.json differ from the records" in capsys.readouterr().err.replace(str(reports) + "/", "")
    from cli.commands import results

    renewed, broken = results._reports(reports, {r: read(r, records) for r in ["claims_smollm2_135m"]})
    assert not broken and renewed[reports / "m.json"]["claims"]["created"] == "2099-01-01T00:00:00+00:00"
    report["model"]["identity"] = "other weights"
    (reports / "m.json").write_text(json.dumps(report))
    assert main(args) == 2
    assert "now measured on other weights: rebuild the report" in capsys.readouterr().err


def test_the_training_runs_behind_a_record_are_one_table():
    from analysis.experiments.machinery.training_runs import runs_table, steps_at

    table = runs_table({"five people, names": {"command": "python -m analysis train compression --people 5 --names",
                                               "steps_done": 120, "best_step": 120, "wall_seconds": 1087.7,
                                               "examples_per_second": 1.765},
                        "unfinished": {}})
    assert table.rows[0] == ("five people, names", "`python -m analysis train compression --people 5 --names`",
                             120, 120, 18.1, 1.76)
    md = render.table_markdown(table)
    assert "| 120 | 120 | 18.1 | 1.76 |" in md  # minutes with one decimal, not 18.100
    assert "| unfinished | – | – | – | – | – |" in md
    assert steps_at({"steps_done": 34, "best_step": 0, "hyperparameters": {"people": 2}}, 3) == "0: the 2-person run"
    assert steps_at({"steps_done": 34, "best_step": 0, "hyperparameters": {"people": 3}}, 3) == \
        "0: its start; best step 0 of 34"  # the weights it was warmed from: not trained at this N
    assert steps_at({"steps_done": 34, "best_step": 30, "hyperparameters": {"people": 3}}, 3) == "34 (best 30)"


def test_the_front_documents_stay_short_enough_to_read():
    """The README is what a newcomer reads first and ARCHITECTURE.md the design; both have grown into listings
    before (374 and 446 lines), so a limit keeps generated blocks and API detail where they belong."""
    repo = Path(__file__).resolve().parent.parent
    for name, limit in (("README.md", 250), ("docs/ARCHITECTURE.md", 200)):
        n = len((repo / name).read_text(encoding="utf-8").splitlines())
        assert n <= limit, f"{name} has {n} lines (at most {limit}): move detail to docs/ or docstrings"


def test_a_resumed_measurement_says_what_its_stored_values_cost(tmp_path, monkeypatch, capsys):
    """A record's wall time is its own run's: one that read values an earlier run computed says how many, and what
    they took then (`cache.compute.ledger`, counted by the command), so a 3-second resume of an hour's work is not
    published as a 3-second measurement."""
    import time

    from cli.commands import measure as command
    from conftest import run_cli

    def fake(experiment_id, config, *, compute, progress):
        compute.remember({"demo": 1}, lambda: time.sleep(0.2) or 1.0)
        return small_record(id="corpus_stream", experiment="corpus_stream", config={},
                            command="python -m analysis measure corpus_stream", wall_seconds=0.5)

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(command, "measure", fake)
    folder = tmp_path / "records"
    for _ in range(2):
        code, out, err = run_cli(capsys, "measure", "corpus_stream", "--records", folder)
        assert code == 0, err
        notes = records.read("corpus_stream", folder).notes
        if _ == 0:
            assert notes == ()  # computed now: nothing to say
    assert notes[-1].startswith("Resumed from the cache: 1 of 1 stored values were read, computed earlier by the same "
                                "code in 0.0 min; 0 computed now in 0.0 min; this run took 0.0 min.")
