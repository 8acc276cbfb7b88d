"""Every method and trained system declares its differences from its paper in one place (`DEVIATIONS`), and the
help, the pages and the claims board read them from there (`analysis.experiments.machinery.fidelity.of`)."""

import json
import pkgutil
import shlex

import pytest

import analysis.methods
from analysis.core.deviations import Deviation
from analysis.core.errors import UserError
from analysis.experiments.machinery.fidelity import of
from analysis.methods import get_method, list_methods, parse_params
from analysis.training.systems import SYSTEMS, system


def _method_modules():
    return [m.name for m in pkgutil.iter_modules(analysis.methods.__path__)
            if not m.name.startswith("_") and m.name != "base"]


@pytest.mark.parametrize("module", _method_modules())
def test_every_method_module_declares_its_deviations(module):
    import importlib

    found = importlib.import_module(f"analysis.methods.{module}").DEVIATIONS
    assert isinstance(found, tuple) and all(isinstance(d, Deviation) for d in found)


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_every_trained_system_declares_its_deviations(name):
    found = system(name).DEVIATIONS
    assert found and all(isinstance(d, Deviation) for d in found)


def _settings(restore: str) -> list[str]:
    """The literal settings of a restore text ("k=v" or "--flag value" before any parenthesis), none of the
    placeholders written in angle brackets."""
    head = restore.split(" (")[0]
    return [] if "<" in head else shlex.split(head)


@pytest.mark.parametrize("info", list_methods(), ids=lambda i: i.name)
def test_a_method_restore_is_a_real_setting(info):
    for d in info.deviations:
        pairs = _settings(d.restore)
        if pairs:  # a parameter that exists and takes that value
            get_method(info.name, **parse_params(info.name, pairs))


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_a_system_restore_is_a_real_flag(name):
    import argparse

    from analysis.core.options import add_options, from_args

    parser = argparse.ArgumentParser()
    add_options(parser, system(name).Config)
    for d in system(name).DEVIATIONS:
        words = [w for w in _settings(d.restore) if w not in ("N", "X")]  # "--steps N": a number of your choice
        flags = [w for w in words if w.startswith("--")]
        values = [w for w in words if not w.startswith("--")]
        if flags and len(flags) == len(values):  # each flag with its value: parsed and checked like the CLI's
            from_args(system(name).Config, parser.parse_args(words))
        for flag in flags:
            assert any(flag in a.option_strings for a in parser._actions), (name, flag)


def test_of_reads_methods_and_systems_by_name():
    assert of("method:kv_embedding") == analysis.methods.deviations("kv_embedding")
    assert of("system:gircse") == system("gircse").DEVIATIONS
    both = of("causal2vec")  # a method and a trained system of one name: the method's first
    assert both == analysis.methods.deviations("causal2vec") + system("causal2vec").DEVIATIONS
    assert of("method:mean") == ()
    with pytest.raises(UserError, match="declares deviations"):
        of("method:gircse")  # a trained system, not a method
    with pytest.raises(UserError, match="method:<name>"):
        of("paper:kv")


def test_sentence_names_what_restores_it():
    d = Deviation("prompt", paper="uses A", here="uses B", why="reasons", restore="prompt=paper")
    assert d.sentence() == ("prompt: the paper uses A; this repository uses B (reasons). The paper's choice: "
                            "`prompt=paper`.")
    assert Deviation("x", "does A", "does B", "why", source="source").sentence().endswith("No setting restores it.")
    assert d.as_json()["restore"] == "prompt=paper" and d.as_json()["source"] == "paper"


def test_methods_command_prints_the_deviations(capsys):
    from cli import main

    assert main(["methods", "htp"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "htp" and out["differences_from_the_paper"]
    assert all({"topic", "paper", "here", "why", "restore", "sentence"} <= set(d) for d in
               out["differences_from_the_paper"])
    assert main(["methods", "nope"]) == 2


def test_train_help_lists_the_recipe_deviations(capsys):
    from cli import main

    with pytest.raises(SystemExit):
        main(["train", "gircse", "--help"])
    text = capsys.readouterr().out
    assert "Differences from the paper's recipe" in text and "--objective icr-mean" in text


def test_nothing_calls_a_setting_the_papers_unless_it_is():
    """Known wrong claims stay fixed: the KV prompt this repository uses by default is not the paper's, and the
    untrained concatenation is not Causal2Vec's control."""
    kv = {f["name"]: f for f in next(i for i in list_methods() if i.name == "kv_embedding").params}
    assert "not the paper's" in kv["prompt"]["help"]
    c2v = {f["name"]: f for f in next(i for i in list_methods() if i.name == "causal2vec").params}
    assert "the paper's control" not in c2v["readout"]["help"]
