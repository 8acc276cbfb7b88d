"""The project's structure, checked from the source: no import cycles between modules (lazy imports inside
functions count too), and nothing imports upward. Layers, top to bottom: pages/app.py -> ui -> cache -> analysis;
the command line (analysis/__main__.py, analysis/commands/) is an application like the app and may use cache/."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "cache", "ui")
APP = "app"  # app.py and pages/*.py


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in sorted((REPO / pkg).rglob("*.py")):
            if "store" in f.relative_to(REPO).parts[1:-1]:  # cache/store/ holds data, not code
                continue
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    out["app"] = REPO / "app.py"
    for f in sorted((REPO / "pages").glob("*.py")):
        out[f"pages.{f.stem}"] = f
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of this project that `path` imports anywhere (top level or inside functions), plus the names of
    third-party top-level packages it imports (for the streamlit rule)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known or m.split(".")[0] not in PACKAGES}


@pytest.fixture(scope="module")
def graph():
    mods = _modules()
    known = set(mods)
    return {name: _imports(path, name, known) for name, path in mods.items()}


def _layer(module: str) -> str:
    if module == "app" or module.startswith("pages."):
        return APP
    if module == "analysis.__main__" or module.startswith("analysis.commands"):
        return "cli"
    return module.split(".")[0]


ALLOWED = {  # layer -> project layers (and streamlit) it may import
    "analysis": {"analysis"},
    "cli": {"analysis", "cli", "cache"},
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
    assert "analysis.intrinsic_dim" in graph["analysis.methods.kv_embedding"]
    assert "cache" in graph["analysis.commands._common"]
    assert "analysis.corpora" in graph["analysis.intrinsic_dim"]  # imported inside auto_corpus()
