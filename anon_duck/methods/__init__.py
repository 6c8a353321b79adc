"""The method registry: job files name a method, the registry finds it.

A method module registers itself by name here; the registry imports lazily so a method's
dependencies load only when it runs.
"""
from __future__ import annotations

import importlib

from ..errors import JobError
from .base import Method

# name -> (module, attribute). One line per method; the table README.md documents.
_REGISTRY: dict[str, tuple[str, str]] = {
    "fulldomain": ("anon_duck.methods.fulldomain", "METHOD"),
    "artuc": ("anon_duck.methods.artuc", "METHOD"),
    "artuc_baseline": ("anon_duck.methods.artuc", "BASELINE"),
    "artuc_rmr": ("anon_duck.methods.artuc", "RMR"),
    "lkc": ("anon_duck.methods.lkc", "METHOD"),
    "disassociation": ("anon_duck.methods.disassociation", "METHOD"),
    "cba": ("anon_duck.methods.disassociation.cba", "METHOD"),
    "counterfeit": ("anon_duck.methods.counterfeit", "METHOD"),
    "longitudinal": ("anon_duck.methods.longitudinal", "METHOD"),
}


def method_names() -> list[str]:
    return sorted(_REGISTRY)


def get_method(name: str) -> Method:
    if name not in _REGISTRY:
        raise JobError(f"method.name = {name!r}: unknown method; available: {', '.join(method_names())}")
    module, attr = _REGISTRY[name]
    return getattr(importlib.import_module(module), attr)
