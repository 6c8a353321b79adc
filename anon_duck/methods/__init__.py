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
    "mondrian": ("anon_duck.methods.mondrian", "METHOD"),
}


def register(name: str, module: str, attribute: str = "METHOD", *, templates: str | None = None) -> None:
    """Make a method defined outside this package (a plug-in) available to job files as
    ``method.name = name``: ``module`` is its importable path, ``attribute`` the object with the
    :class:`~anon_duck.methods.base.Method` contract, ``templates`` an optional folder of its own
    SQL templates (rendered like the package's; a name there must not shadow one of ``sql/``)."""
    if name in _REGISTRY and _REGISTRY[name] != (module, attribute):
        raise JobError(f"method {name!r} is already registered (by {_REGISTRY[name][0]})")
    if templates is not None:
        from ..sqlrender import add_template_dir
        add_template_dir(templates)
    _REGISTRY[name] = (module, attribute)


def method_names() -> list[str]:
    return sorted(_REGISTRY)


def get_method(name: str) -> Method:
    if name not in _REGISTRY:
        raise JobError(f"method.name = {name!r}: unknown method; available: {', '.join(method_names())}")
    module, attr = _REGISTRY[name]
    return getattr(importlib.import_module(module), attr)
