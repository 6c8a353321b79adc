"""The column layout of a generalized release, in one place: a QI is published under its own
name as a label (``[30-39]``, ``1305*``); a numeric QI also as its bounds, ``<qi>__lo`` and
``<qi>__hi`` (DOUBLE), which the generic verifiers, metrics and reports read. Templates reach the
same names through the ``lo_column`` / ``hi_column`` filters (anon_duck/sqlrender.py)."""
from __future__ import annotations

LO, HI = "__lo", "__hi"


def lo_column(qi: str) -> str:
    """The lower-bound column of numeric QI ``qi``."""
    return qi + LO


def hi_column(qi: str) -> str:
    """The upper-bound column of numeric QI ``qi``."""
    return qi + HI


def bounds(qi: str) -> tuple[str, str]:
    """(lower, upper) bound columns of numeric QI ``qi``."""
    return lo_column(qi), hi_column(qi)


def is_bound(column: str) -> bool:
    """Whether ``column`` is named like a bound column (a QI may not be: it would collide)."""
    return column.endswith((LO, HI))
