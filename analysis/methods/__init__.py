"""Registry of embedding methods. Each module in this package defines one `EmbeddingMethod` subclass;
they are discovered automatically, so adding a method is adding a file."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
import threading
from dataclasses import dataclass

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.methods.base import EmbeddingMethod, ReadoutParams

__all__ = ["EmbeddingMethod", "ReadoutParams", "param", "get_method", "list_methods", "method_class", "method_names",
           "parse_params", "deviations"]

_REGISTRY: dict[str, type[EmbeddingMethod]] = {}


_DISCOVERING = threading.RLock()  # re-entrant: a method module may look another up while it is imported


def _discover() -> dict[str, type[EmbeddingMethod]]:
    """Every method class, imported once. Under a lock and filled all at once: app sessions are threads, and one
    that saw a half-filled registry offered its user no "mean" (CI, the four-sessions test)."""
    with _DISCOVERING:
        if not _REGISTRY:
            found = {}
            for mod in pkgutil.iter_modules(__path__):
                if mod.name.startswith("_") or mod.name == "base":
                    continue
                module = importlib.import_module(f"{__name__}.{mod.name}")
                for obj in vars(module).values():
                    if isinstance(obj, type) and issubclass(obj, EmbeddingMethod) and "name" in vars(obj):
                        found[obj.name] = obj
            _REGISTRY.update(found)
    return _REGISTRY


@dataclass(frozen=True)
class MethodInfo:
    name: str
    title: str
    summary: str
    params: list[dict]  # one dict per parameter: name, default, type, help and UI meta
    deviations: tuple = ()  # the method's declared differences from its paper (`deviations`)


def method_class(name: str) -> type[EmbeddingMethod]:
    registry = _discover()
    if name not in registry:
        raise UserError(f"Unknown method '{name}'. Available: {', '.join(sorted(registry))}.")
    return registry[name]


def deviations(name: str) -> tuple:
    """Method `name`'s declared differences from its paper: its module's `DEVIATIONS` (`analysis.core.deviations`;
    empty for a baseline with no paper to differ from)."""
    return tuple(getattr(sys.modules[method_class(name).__module__], "DEVIATIONS", ()))


def method_names(spec: str) -> list[str]:
    """The entries of a comma-separated method list ('all': every method, in `list_methods` order), as typed: the
    command line and the benchmark scripts read `--methods` with it (names are checked by the caller)."""
    if spec.strip() == "all":
        return [m.name for m in list_methods()]
    return [n.strip() for n in spec.split(",") if n.strip()]


def get_method(name: str, **params) -> EmbeddingMethod:
    """A configured method instance, e.g. get_method("prompteol", layer=20)."""
    return method_class(name)(**params)


def list_methods() -> list[MethodInfo]:
    """Every available method, in a stable order (registration order of the ORDER list, then by name)."""
    order = ["last", "mean", "prompteol", "echo"]
    names = sorted(_discover(), key=lambda n: (order.index(n) if n in order else len(order), n))
    out = []
    for n in names:
        cls = _REGISTRY[n]
        fields = [
            {"name": f.name, "default": f.default, "type": type(f.default).__name__, **dict(f.metadata)}
            for f in dataclasses.fields(cls.Params)
        ]
        out.append(MethodInfo(n, cls.title, cls.summary, fields, deviations(n)))
    return out


def parse_params(name: str, pairs: list[str]) -> dict:
    """Parse command-line `key=value` strings using each field's default type (or its `parse` meta)."""
    fields = {f.name: f for f in dataclasses.fields(method_class(name).Params)}
    out = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            raise UserError(f"{name}: cannot read parameter '{pair}'; expected key=value with key in {sorted(fields)}")
        f = fields[key]
        try:
            if "parse" in f.metadata:
                out[key] = f.metadata["parse"](raw)
            elif isinstance(f.default, bool):
                if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(raw)
                out[key] = raw.lower() in ("true", "1", "yes")
            elif isinstance(f.default, (int, float, str)) or f.default is None:
                out[key] = type(f.default)(raw) if f.default is not None else raw
            else:
                raise ValueError(f"no parser for {type(f.default).__name__}")
        except ValueError as err:
            raise UserError(f"{name}: bad value for {key}: {raw!r} ({err})") from err
    return out
