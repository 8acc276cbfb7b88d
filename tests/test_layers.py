"""The project's structure, checked from the source: no import cycles between modules (lazy imports inside
functions count too), and nothing imports upward. Layers, top to bottom: pages/app.py -> ui -> cache -> analysis;
the command line (cli/__init__.py, cli/commands/) is an application like the app and may use cache/."""

from pathlib import Path

import pytest

from analysis.core.versions import imports, module_files  # the walker cache keys trust (analysis.core.versions)

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "cli", "cache", "ui")
APP = "app"  # app.py and pages/*.py


def _modules() -> dict[str, Path]:
    out = module_files(REPO, PACKAGES, skip=("store",))  # cache/store/ holds data, not code
    out["app"] = REPO / "app.py"
    for f in sorted((REPO / "pages").glob("*.py")):
        out[f"pages.{f.stem}"] = f
    return out


@pytest.fixture(scope="module")
def graph():
    mods = _modules()
    known = set(mods)
    return {name: imports(path, name, known) for name, path in mods.items()}


def _layer(module: str) -> str:
    if module == "app" or module.startswith("pages."):
        return APP
    if module == "analysis.__main__":
        return "entry"
    return module.split(".")[0]


ALLOWED = {  # layer -> project layers (and streamlit) it may import
    "analysis": {"analysis"},
    "cli": {"analysis", "cli", "cache"},
    "entry": {"cli"},
    "cache": {"cache", "analysis"},
    "ui": {"ui", "cache", "analysis", "streamlit"},
    APP: {"ui", "cache", "analysis", "streamlit"},
}


def test_nothing_imports_upward(graph):
    bad = []
    for mod, targets in graph.items():
        for t in targets:
            layer = "streamlit" if t.split(".")[0] == "streamlit" else (_layer(t) if t.split(".")[0] in PACKAGES
                                                                         or t == "app" else None)
            if layer is not None and layer not in ALLOWED[_layer(mod)]:
                bad.append(f"{mod} imports {t}")
    assert bad == []


def test_no_import_cycles(graph):
    project = {m: {t for t in ts if t in graph and t != m} for m, ts in graph.items()}
    # A package's __init__ is imported with any of its submodules; that implied edge is not a cycle of ours,
    # so only explicit imports count.
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in project[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in project:
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_checker_sees_lazy_imports(graph):
    # known answers: a function-level import is an edge, and a real upward edge would be reported
    assert "analysis.inspect.intrinsic_dim" in graph["analysis.methods.kv_embedding"]
    assert "cache" in graph["cli.commands._common"]
    assert "analysis.weights.lora" in graph["analysis.methods.causal2vec"]  # imported inside a method
    assert "analysis.data.corpora" in graph["analysis.inspect.intrinsic_dim"]  # imported inside auto_corpus()


# Library folders, bottom to top, and the folders each may import (its own always). The root package
# (analysis/__init__.py: load_backbone, get_method, code_version) is a lazy facade any folder may use.
FOLDERS = {
    "core": set(),  # tokens, forward, pooling, trace, errors, paths, budgets, vectors, text, versions
    "models": {"core"},  # backbones, tiny models, the sentence encoder
    "data": {"core"},  # corpora, user files, the data-set registry, personas
    "weights": {"core", "models"},  # artefact folders, shipped-weights lookup, LoRA attach/merge, adapters
    # methods may not import training, evaluation, sweeps or each other's helpers; KV-Embedding's layers=auto is
    # defined by the intrinsic-dimension rule, the one reach into inspect/ (EXCEPTIONS)
    "methods": {"core", "models", "data", "weights"},
    "eval": {"core", "models", "data", "methods"},  # metrics, samples, STS scoring, tasks, MTEB encoder
    "inspect": {"core", "models", "data", "weights", "methods", "eval"},
    "sweep": {"core", "models", "data", "methods", "eval", "inspect"},
    "compression": {"core", "models", "data", "weights", "eval"},  # eval: Wilson intervals (eval.stats)
    "training": {"core", "models", "data", "weights", "methods", "eval", "inspect", "compression"},
    # the door to stored results (`Compute`) and its direct implementation, which computes what the others ask
    "compute": {"core", "models", "data", "weights", "methods", "eval", "inspect", "sweep", "compression"},
    "report": {"core", "models", "data", "weights", "methods", "eval", "inspect", "sweep", "compute"},  # the model report
    # measurements that publish numbers: they may use everything below (the model report is one of them)
    "experiments": {"core", "models", "data", "weights", "methods", "eval", "inspect", "sweep", "compression",
                    "training", "compute", "report"},
}
EXCEPTIONS = {("analysis.methods.kv_embedding", "analysis.inspect.intrinsic_dim")}


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "analysis" and len(parts) > 2 or (len(parts) == 2 and parts[0] == "analysis"
                                                                     and parts[1] in FOLDERS) else None


def test_every_library_module_lives_in_a_folder():
    loose = sorted(f.name for f in (REPO / "analysis").glob("*.py") if f.name not in ("__init__.py", "__main__.py"))
    assert loose == [], "put each module in the folder of its job (FOLDERS)"
    folders = sorted(p.name for p in (REPO / "analysis").iterdir() if (p / "__init__.py").exists())
    assert sorted(set(folders) - {"artefacts"}) == sorted(FOLDERS)


def test_folders_import_only_folders_below(graph):
    bad = []
    for mod, targets in graph.items():
        here = _folder(mod)
        if here is None:
            continue
        for t in targets:
            there = _folder(t)
            if there is None and t.split(".")[0] in ("cli", "cache", "ui"):
                bad.append(f"{mod} imports {t} (the library never imports the applications)")
            elif there not in (None, here) and there not in FOLDERS[here] and (mod, t) not in EXCEPTIONS:
                bad.append(f"{mod} imports {t} ({here} may import {sorted(FOLDERS[here])})")
    assert bad == []


def test_the_folder_rule_reports_a_violation(graph):
    # known answer: an edge methods -> training would be reported
    fake = {**graph, "analysis.methods.last": graph["analysis.methods.last"] | {"analysis.training.loop"}}
    with pytest.raises(AssertionError):
        test_folders_import_only_folders_below(fake)


def _method_module(module: str) -> bool:
    """A method's own module (auto-discovered): not the package, `base`, or a shared helper named `_...`."""
    parts = module.split(".")
    return (len(parts) == 3 and parts[:2] == ["analysis", "methods"] and parts[2] != "base"
            and not parts[2].startswith("_"))


def test_methods_never_import_each_other(graph):
    """What two methods share moves down (`methods.base`, a `methods._helper`, or `core`), so editing one method
    never changes another's code version, and so its cached results."""
    bad = [f"{mod} imports {t}" for mod, targets in graph.items() if _method_module(mod)
           for t in targets if _method_module(t) and t != mod]
    assert bad == []


def test_the_method_rule_reports_a_violation(graph):
    fake = {**graph, "analysis.methods.htp": graph["analysis.methods.htp"] | {"analysis.methods.token_prepending"}}
    with pytest.raises(AssertionError):
        test_methods_never_import_each_other(fake)
