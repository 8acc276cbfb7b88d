"""Which code computed a result: a digest of some modules' source and of every project module they import.

A cache key carries the code version of the modules that compute its result (`cache.keys`), so editing a method
invalidates that method's results and nothing else: a CLI help string or another method's module leaves the
stored layer maps and embeddings valid. The imports are read from the source with `ast`, counting imports inside
functions (a lazy import runs as surely as a top-level one); `tests/test_layers.py` checks the architecture with
the same walker, so the graph the keys trust is the graph the layer rules check.

    source_digest(["analysis.methods.prompteol"])   # '3f2a…': prompteol, base, forward, tokens, ...
    source_digest()                                 # every module of the package (a trained artefact's provenance)

`analysis.code_version(modules)` puts the package's `__version__` in front.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the `analysis` package, wherever it is installed
# CPython 3.11's `ast` keeps one recursion counter per interpreter, so two threads parsing at once (two app sessions
# asking for their first cache key) can fail with "AST constructor recursion depth mismatch": parse one at a time.
_PARSING = threading.Lock()


def parse(source: str | bytes) -> ast.Module:
    """`ast.parse`, one thread at a time (see `_PARSING`): the app's sessions are threads of one process."""
    with _PARSING:
        return ast.parse(source)


def module_files(base: Path, packages, skip=()) -> dict[str, Path]:
    """Dotted module name -> file for every .py under `base/<package>`; a package's `__init__` is named by the
    package. Folders named in `skip` are not walked (a data folder can hold a large tree)."""
    out = {}
    for package in packages:
        for folder, dirs, files in os.walk(base / package):
            dirs[:] = sorted(d for d in dirs if d not in skip and d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                parts = list((Path(folder) / name).relative_to(base).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                out[".".join(parts)] = Path(folder) / name
    return out


def imports(path: Path, name: str, known) -> set[str]:
    """What module `name` (source at `path`) imports anywhere, top level or inside functions: the modules of
    `known` it names, plus third-party names (anything whose top-level package is not one of `known`'s)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: `from . import x` inside package a.b is a.b.x
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    ours = {m.split(".")[0] for m in known}
    return {m for m in found if m in known or m.split(".")[0] not in ours}


@functools.lru_cache(maxsize=4)
def _graph(root: Path) -> tuple[dict[str, Path], dict[str, frozenset]]:
    files = module_files(root.parent, (root.name,))
    return files, {name: frozenset(imports(path, name, files) & files.keys()) for name, path in files.items()}


def _file_of(module: str, files: dict[str, Path], package: str) -> Path | None:
    """The package's own file, else the loaded module's (a method defined in a script or a test); None for a
    module without a source file (defined interactively: its name alone enters the digest)."""
    if module in files:
        return files[module]
    if module == package or module.startswith(package + "."):
        raise ValueError(f"{module} is not a module of {package} (renamed? update the names given)")
    file = getattr(sys.modules.get(module), "__file__", None)
    return Path(file) if file and file.endswith(".py") else None


@functools.lru_cache(maxsize=256)
def _digest(modules: frozenset, root: Path) -> str:
    files, graph = _graph(root)
    sources, todo = {}, list(modules)
    while todo:  # the transitive closure of the imports
        module = todo.pop()
        if module in sources:
            continue
        path = _file_of(module, files, root.name)
        sources[module] = path.read_bytes() if path is not None else b""
        if module in graph:
            todo.extend(graph[module])
        elif path is not None:
            todo.extend(imports(path, module, files) & files.keys())
    h = hashlib.sha256()
    for module in sorted(sources):
        h.update(module.encode() + b"\0" + sources[module] + b"\0")
    return h.hexdigest()[:16]


def source_digest(modules=None, root: Path | None = None) -> str:
    """A digest of the source of `modules` (dotted names) and of every project module they import, transitively.
    None: every module of the package. Memoised per module set; `root` (default `ROOT`, read at call time) is
    the package folder to read."""
    root = ROOT if root is None else Path(root)
    if modules is None:
        modules = _graph(root)[0].keys()
    return _digest(frozenset(modules), root)
