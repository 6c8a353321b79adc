"""Method-specific audits of an LKC-privacy release (seed 003), on the released table only.

The privacy model itself is checked by the foundation's :func:`anon_duck.verifiers.lkc_privacy`.
These audits add what only this method's output format promises; nothing here imports the
anonymizer or reads its state, cuts or taxonomies.

* :func:`interval_cut` — the grown intervals ``[lo, hi)`` of a numeric QID never overlap: they
  are a cut of one interval tree, so a record's interval is unambiguous (§3.2 of seed 003).
* :func:`release_columns` — the release holds exactly the columns the job allows: no person
  id, no dropped or unlisted input column (raw data never leaves through a stray column).
"""
from __future__ import annotations

from typing import Sequence

from ..backend.base import Backend
from ..columns import hi_column, lo_column
from ..sqlrender import render
from .models import CheckResult


def interval_cut(backend: Backend, *, relation: tuple[str, ...], column: str, limit: int = 20) -> CheckResult:
    """The released intervals ``[lo, hi)`` of a grown numeric QID are pairwise disjoint."""
    rows = backend.rows(f"verify lkc: intervals of {column}", render(
        "verify/lkc_interval_overlaps.sql.j2", relation=relation, column=column, lo=lo_column(column),
        hi=hi_column(column)), {"limit": max(limit, 1)})
    total = int(rows[0][2]) if rows else 0
    return CheckResult(f"lkc_interval_cut[{column}]", total == 0, total,
                       [{"a": a, "b": b} for a, b, _ in rows][:limit])


def release_columns(backend: Backend, *, relation: tuple[str, ...], allowed: Sequence[str]) -> CheckResult:
    """Every column of the release is in ``allowed``; the extra ones are the violations."""
    names = list(backend.fetch("verify lkc: release columns", render("verify/relation_columns.sql.j2",
                                                                     relation=relation)))
    extra = [n for n in names if n not in set(allowed)]
    return CheckResult("lkc_release_columns", not extra, len(extra), [{"column": n} for n in extra],
                       {"columns": names})
