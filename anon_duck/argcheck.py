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


def column_names(verifier: str, arg: str, values: Sequence[str], *, allow_empty: bool = False) -> list[str]:
    """A non-empty (unless allow_empty) list of distinct column names."""
    if isinstance(values, str):
        raise InputError(f"{verifier}: {arg} must be a list of column names, not the string {values!r}")
    out = [nonempty_name(verifier, arg, v) for v in values]
    if not out and not allow_empty:
        raise InputError(f"{verifier}: {arg} must name at least one column")
    distinct_names(verifier, out)
    return out


def positive_int(verifier: str, arg: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"{verifier}: {arg} must be an integer >= 1; got {value!r}")
