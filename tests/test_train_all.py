"""`train all`: one queue trains every part in order under one budget, says what will not fit before any training,
refuses a budget too small for anything in one sentence, and a queue killed halfway (kill -9) resumes where it
stopped: finished parts are not trained again, the interrupted one continues from its checkpoint."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dummy_system
import pytest

from analysis.core.errors import UserError
from analysis.experiments.claims.board import CLAIMS
from analysis.models.tiny import tiny_backbone
from analysis.training import queue
from analysis.training.queue import PARTS, Part, make_plan, run_queue
from cli import main

TESTS = Path(__file__).resolve().parent
PARTS_3 = (Part("first", "dummy", {"steps": 4}, ("kv-reroute",), "dummy"),
           Part("second", "dummy", {"steps": 12, "step_seconds": 0.25, "eval_every": 2}, ("kv-bias",), "dummy"),
           Part("third", "dummy", {"steps": 3, "target": -1.0}, ("kv-hybrid",), "dummy"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    dummy_system.register(monkeypatch)
    return tmp_path / "cache"


def _state(cache) -> dict:
    return json.loads(next(cache.glob("runs/all/*/queue.json")).read_text())


def test_every_part_serves_claims_the_board_has():
    ids = {c.id for c in CLAIMS}
    assert all(set(p.claims) <= ids for p in PARTS), [c for p in PARTS for c in p.claims if c not in ids]
    assert all(p.warm_from in {q.label for q in PARTS[:i]} for i, p in enumerate(PARTS) if p.warm_from)


def test_a_budget_too_small_for_anything_is_refused_before_any_work(cache):
    loads = []
    with pytest.raises(UserError, match=r"--budget-hours 0.01 is too small for anything") as err:
        run_queue("default", 0.01, parts=PARTS_3, backbone_for=lambda: loads.append(1))
    assert not loads and str(err.value).count(". ") == 0 and not cache.exists()


def test_the_plan_shortens_every_recipe_alike_and_lists_what_does_not_fit(cache):
    seconds = {"dummy": {"step": 60.0, "eval": 0.0}}  # a minute a step: 19 min for the three recipes
    whole = make_plan(PARTS_3, seconds, budget_minutes=30)
    assert [p.steps for p in whole] == [4, 12, 3] and all(p.fits for p in whole)
    half = make_plan(PARTS_3, seconds, budget_minutes=10)
    assert [p.steps for p in half] == [2, 6, 1] and all(p.fits for p in half)
    tight = make_plan(PARTS_3, seconds, budget_minutes=4)  # a quarter of each recipe: 1 + 3 + 1 min; the last waits
    assert [p.fits for p in tight] == [True, True, False] and "will not fit" in queue.describe(tight, seconds)


def test_the_queue_trains_its_parts_in_order_and_records_each(cache):
    told = []
    state = run_queue("default", 1.0, parts=PARTS_3, backbone_for=lambda: tiny_backbone("llama"), ship=False,
                      say=told.append)
    assert [state["parts"][p.label]["status"] for p in PARTS_3] == ["done"] * 3
    assert state["parts"]["third"]["results"]["w"] < 0  # each part trained with its own settings
    assert any(" 1. first" in line for line in told) and state == _state(cache)


def test_parts_added_since_a_queue_ran_are_timed_planned_and_trained(cache):
    """A queue whose parts grew (new claims' runs) keeps what it finished and plans the new parts, at the same budget
    too: the stored plan was once paired with the parts by position, giving a new part another part's steps."""
    first = run_queue("default", 1.0, parts=PARTS_3[:2], backbone_for=lambda: tiny_backbone("llama"), ship=False,
                      say=lambda text: None)
    more = Part("fourth", "dummy", {"steps": 2, "target": 2.0}, ("kv-bias",), "dummy-new")
    state = run_queue("default", 1.0, parts=(*PARTS_3, more), backbone_for=lambda: tiny_backbone("llama"), ship=False,
                      say=lambda text: None)
    assert [state["parts"][p.label]["status"] for p in (*PARTS_3, more)] == ["done"] * 4
    assert state["parts"]["second"] == first["parts"]["second"]  # not trained again
    assert [p["steps"] for p in state["plan"]] == [4, 12, 3, 2] and set(state["step_seconds"]) == {"dummy",
                                                                                                  "dummy-new"}


def test_a_killed_queue_resumes_where_it_stopped(cache):
    script = textwrap.dedent("""
        import dummy_system
        from analysis.models.tiny import tiny_backbone
        from analysis.training.queue import run_queue
        from test_train_all import PARTS_3
        dummy_system.register()
        run_queue("default", 1.0, parts=PARTS_3, backbone_for=lambda: tiny_backbone("llama"), ship=False,
                  say=lambda text: None)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=TESTS.parent)
    checkpoint = None
    deadline = time.time() + 120
    while time.time() < deadline and checkpoint is None:  # kill once the second part has checkpointed step 4
        found = list(cache.glob("runs/dummy/*/all-second/run/checkpoint/state.json"))
        if found and json.loads(found[0].read_text())["step"] >= 4:
            checkpoint = found[0]
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert checkpoint is not None, "the second part never checkpointed"
    first_manifest = next(cache.glob("runs/dummy/*/all-first/manifest.json"))
    first_written = first_manifest.stat().st_mtime_ns
    killed_at = json.loads(checkpoint.read_text())["step"]
    assert 4 <= killed_at < 12 and _state(cache)["parts"]["first"]["status"] == "done"

    state = run_queue("default", 1.0, parts=PARTS_3, backbone_for=lambda: tiny_backbone("llama"), ship=False,
                      say=lambda text: None)
    assert [state["parts"][p.label]["status"] for p in PARTS_3] == ["done"] * 3
    assert first_manifest.stat().st_mtime_ns == first_written  # not trained again
    log = json.loads(next(cache.glob("runs/dummy/*/all-second/run/log.json")).read_text())
    assert [t["step"] for t in log["train"]] == list(range(1, 13))  # steps before the kill kept, none twice


def test_parts_shipped_before_are_not_trained_again_unless_asked(cache, tmp_path, monkeypatch):
    """A model whose parts this repository already shipped (whole recipes, trained one command at a time) gets only
    the missing parts from `train all`: it once planned every part at a share of its recipe and shipped the shortened
    runs over the whole-recipe weights. A part that warms up from an adopted one starts from the shipped folder."""
    from analysis.weights import artefacts

    monkeypatch.setattr(artefacts, "ARTEFACTS", tmp_path / "artefacts")
    run_queue("default", 1.0, parts=PARTS_3[:1], backbone_for=lambda: tiny_backbone("llama"), say=lambda text: None)
    shipped = next((tmp_path / "artefacts").glob("dummy/*/manifest.json"))
    written = shipped.stat().st_mtime_ns
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "another-cache"))  # a new machine: no run folders
    warm = Part("warm", "dummy", {"steps": 2}, ("kv-bias",), "dummy", warm_from="first")
    told = []
    state = run_queue("default", 1.0, parts=(PARTS_3[0], warm), backbone_for=lambda: tiny_backbone("llama"),
                      ship=False, say=told.append)
    assert state["parts"]["first"]["from"].startswith("shipped before this queue")
    assert state["parts"]["warm"]["status"] == "done" and shipped.stat().st_mtime_ns == written
    assert any("not trained again" in line and "first" in line for line in told)
    assert any(" 1. first" in line and "done: shipped before this queue" in line for line in told)
    state = run_queue("default", 1.0, parts=PARTS_3[:1], backbone_for=lambda: tiny_backbone("llama"),
                      say=told.append)
    assert "every part is trained for this model already" in told[-1] and state["parts"]["first"]["status"] == "done"
    state = run_queue("default", 1.0, parts=PARTS_3[:1], backbone_for=lambda: tiny_backbone("llama"), retrain=True,
                      say=lambda text: None)
    assert "from" not in state["parts"]["first"] and shipped.stat().st_mtime_ns != written
    retrained = shipped.stat().st_mtime_ns
    state = run_queue("default", 1.0, parts=PARTS_3[:1], backbone_for=lambda: tiny_backbone("llama"), retrain=True,
                      say=lambda text: None)  # a --retrain queue run again resumes: its own parts stay done
    assert shipped.stat().st_mtime_ns == retrained


def test_later_parts_time_limits_stretch_when_earlier_parts_took_longer_than_planned(cache, monkeypatch):
    """The clock is a backstop (estimate times SAFETY): on a machine slower than its probe, a part stopped at it would
    ship short of its schedule, so the limit grows by how much longer than planned the parts before it took."""
    from analysis.training import systems

    state = queue.QueueState("default", 1.0, "float32", plan=[{"part": "first", "minutes": 2.0}],
                             parts={"first": {"status": "done", "wall_seconds": 300.0},  # 5 min for 2 planned
                                    "adopted": {"status": "done", "wall_seconds": 0.0, "from": "shipped before"}})
    assert queue.slowdown(state) == 2.5
    assert queue.slowdown(queue.QueueState("default", 1.0, "float32")) == 1.0  # nothing yet; never below 1
    limits = []
    monkeypatch.setattr(systems, "run", lambda name, config, **kw: limits.append(config.max_minutes) or 1 / 0)
    planned = queue.Planned("second", "dummy", 12, 12, 4.0, True)
    with pytest.raises(ZeroDivisionError):
        queue._run_part(PARTS_3[1], planned, state, cache, lambda: tiny_backbone("llama"), PARTS_3, ship=False,
                        say=lambda text: None, progress_for=None)
    assert limits == [round(4.0 * queue.SAFETY * 2.5, 2)]


def test_a_part_whose_weights_git_does_not_hold_still_says_how_long_it_took(tmp_path, monkeypatch):
    """Gemma 3's Causal2Vec weights (6-9 MB a part) stay out of git, manifests with them; shipping notes each part in
    its system's ledger, so a fresh clone's help still gives the minutes, steps and date it took here."""
    from analysis.training import runs, systems
    from analysis.weights import artefacts

    monkeypatch.setattr(artefacts, "ARTEFACTS", tmp_path / "artefacts")
    part = next(p for p in PARTS if p.label == "causal2vec-concat")
    result = tmp_path / "run"
    result.mkdir()
    (result / "manifest.json").write_text(json.dumps({"wall_seconds": 839.1, "steps_done": 180,
                                                      "created": "2026-11-28T08:08:57Z", "partial": False}))
    (result / "weights.safetensors").write_bytes(b"weights")
    shipped = runs.ship(result, "causal2vec", "gemma3-270m", systems.ship_place(part.system, part.settings))
    assert queue.took_here(part, "gemma3-270m") == "14 min, 180 steps, 2026-11-28"
    weights = {r["part"]: r["weights"] for r in queue.inventory("gemma3-270m")}  # the Training page's table
    assert weights["causal2vec-concat"] == "in this copy" and weights["gircse"] == "not trained"
    shutil.rmtree(shipped)  # a fresh clone: the ignored folder is not there
    assert queue.took_here(part, "gemma3-270m").startswith("14 min, 180 steps, 2026-11-28 (weights not in this copy")
    row = next(r for r in queue.inventory("gemma3-270m") if r["part"] == "causal2vec-concat")
    assert row["weights"] == "trained here, not in this copy" and row["minutes"] == 14.0 and row["steps"] == 180
    assert queue.took_here(part, "smollm2-135m") == "not trained here yet"


def test_the_help_says_how_long_each_part_took_here_for_each_built_in_model(capsys):
    """A part shipped for a model gives its manifest's minutes, steps and date; one never shipped says so."""
    gircse = next(p for p in PARTS if p.label == "gircse")
    assert re.fullmatch(r"\d+ min, 320 steps, 2026-\d\d-\d\d", queue.took_here(gircse, "smollm2-135m"))
    assert queue.took_here(gircse, "no-such-model") == "not trained here yet"
    with pytest.raises(SystemExit):
        main(["train", "all", "--help"])
    out = capsys.readouterr().out
    assert "smollm2-135m: " in out and "gemma3-270m: " in out and "how long each took" in out
