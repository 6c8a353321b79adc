"""Argument checks shared by the verifiers and the metrics: both take column names and
relations from callers (the CLI, a method, a user's script), and both must refuse a bad one
with an InputError that names the function and the argument, before any SQL is built."""
from __future__ import annotations

from typing import Any, Sequence

from .errors import InputError

Relation = str | Sequence[str]   # a name, or a tuple of name parts (each quoted on its own)


def nonempty_name(where: str, what: str, value: Any) -> str:
    if not isinstance(value, str) or value == "":
        raise InputError(f"{where}: {what} must be a non-empty name; got {value!r}")
    return value


def distinct_names(where: str, names: Sequence[str]) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise InputError(f"{where}: column {n!r} is named twice")
        seen.add(n)


def show(relation: Relation) -> str:
    return repr(relation if isinstance(relation, str) else ".".join(relation))
