"""Names as the engine matches them.

DuckDB matches table and column names without regard to case (quoted or not), and so does Spark
with its default ``spark.sql.caseSensitive=false``. A job written in lower case must therefore
find ``PERSON_ID`` in a SQL Server export, as the engine itself would; the checks that look a
name up in Python (does the column exist? which file holds table ``person``?) follow the
engine's rule through :func:`find`, and the SQL then quotes the spelling found. Two spellings
the engine cannot tell apart (``person_id`` and ``PERSON_ID``) are an error naming both, never a
silent pick.
"""
from __future__ import annotations

from typing import Iterable

from .errors import InputError


def matches(available: Iterable[str], wanted: str, *, case_sensitive: bool) -> list[str]:
    """The names of ``available`` the engine reads as ``wanted``, in their order."""
    if case_sensitive:
        return [a for a in available if a == wanted]
    folded = wanted.casefold()
    return [a for a in available if a.casefold() == folded]


def find(available: Iterable[str], wanted: str, *, case_sensitive: bool, key: str, where: str,
         kind: str = "column") -> str | None:
    """The one spelling in ``available`` the engine reads as ``wanted``; None if there is none.
    Two of them are an :class:`InputError` naming ``key``, ``where`` and both spellings."""
    found = matches(available, wanted, case_sensitive=case_sensitive)
    if len(found) > 1:
        raise InputError(f"{key} = {wanted!r}: {where} has {len(found)} {kind}s of that name, "
                         f"{' and '.join(map(repr, found))}, which differ only in case; names are matched without "
                         f"regard to case, as the engine matches them, so either could be meant: rename or drop one")
    return found[0] if found else None


def resolve(columns: Iterable[str], wanted: str, *, case_sensitive: bool, key: str, where: str) -> str:
    """The spelling of column ``wanted`` in ``columns``; a missing column is an
    :class:`InputError` naming ``key``, ``where`` and the columns there are."""
    columns = list(columns)
    found = find(columns, wanted, case_sensitive=case_sensitive, key=key, where=where)
    if found is None:
        raise InputError(f"{key} = {wanted!r}: no such column in {where} (columns: {', '.join(columns)})")
    return found
