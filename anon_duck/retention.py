"""What a release kept of its input, per code and per quasi-identifier, as release tables.

``<release>_retention(code, code_label, persons_input, persons_exact, persons_generalized,
persons_without_count, persons_dropped)``: every code-based method stages it from the input's
(person, code) pairs and a method-specific table of what the release gives each pair
(``outcomes(id, code, outcome)``), built in SQL where the method still knows which published
record is which person (scratch only: the link never reaches the release). The counts add up
over disjoint fragments of the persons, so a partitioned run sums the fragments' rows
(:attr:`~anon_duck.methods.base.ReleaseTable.sums`).

``<release>_qi_retention(qi, status, level, records)``: per quasi-identifier, how many input
records the release shows with the exact value (status ``exact``, level 0), generalized
``level`` levels up the QI's hierarchy (``generalized``), or not at all (``suppressed``, level
NULL). docs/analyst.md shows how to read both before trusting a count.

A code's input count is not covered by the privacy models, so ``<release>_retention`` counts
only codes held by at least ``[release] retention_min_persons`` persons (default: the method's
k); a rarer code keeps its row (NULL counts) only when the release names it anyway, and the
rare codes' counts are summed into one row with code NULL (:func:`merge_rare_codes`). The
independent check :func:`~anon_duck.verifiers.models.min_count` gates it like every other
release table.
"""
from __future__ import annotations

from typing import Any, Mapping

from .backend.base import Backend
from .columns import hi_column, lo_column
from .hierarchy import NODES
from .inputs import Inputs
from .job import Job
from .methods.base import ReleaseTable, Staged
from .scratch import scratch
from .verifiers.models import CheckResult, min_count
from .sqlrender import render

RETENTION = scratch("retention_codes")
MERGED = scratch("retention_merged")
EVENT_CODES = scratch("retention_event_codes")
OUTCOMES = scratch("retention_outcomes")
QI_RETENTION = scratch("retention_qis")
# the grouping keys of the retention tables: a partitioned run sums the other columns
CODE_KEYS = ("code", "code_label")
QI_KEYS = ("qi", "status", "level")


def code_retention(backend: Backend, job: Job, inputs: Inputs, outcomes: tuple[str, ...] = OUTCOMES,
                   target: tuple[str, ...] = RETENTION) -> ReleaseTable:
    """Stage ``<release>_retention`` from the input's (person, code) pairs (the codes role, or
    the events role's distinct pairs) and ``outcomes``."""
    ds = job.dataset
    if inputs.codes is not None and ds.codes is not None:
        codes, hierarchy = inputs.codes, ds.codes.hierarchy
    else:
        assert ds.events is not None
        codes, hierarchy = event_codes(backend, inputs), ds.events.code_hierarchy
    backend.run("retention: codes", render("retention/codes.sql.j2", target=target, codes=codes,
                                           outcomes=outcomes, nodes=NODES, hierarchy=hierarchy))
    return ReleaseTable("retention", target, shuffle=False, sums=CODE_KEYS)


def event_codes(backend: Backend, inputs: Inputs) -> tuple[str, ...]:
    """The events input's distinct (person, code) pairs, staged for a method's outcomes."""
    assert inputs.events is not None
    backend.run("retention: event codes", render("retention/event_codes.sql.j2", target=EVENT_CODES,
                                                 events=inputs.events))
    return EVENT_CODES


def qi_retention(backend: Backend, job: Job, inputs: Inputs, release: tuple[str, ...], *,
                 intervals: bool = False, target: tuple[str, ...] = QI_RETENTION) -> ReleaseTable:
    """Stage ``<release>_qi_retention`` from a published table with one row per kept input
    record and each QI printed as its hierarchy node's label, or, for a numeric QI without
    one (every numeric QI with ``intervals``), as an interval with ``<qi>__lo`` and ``<qi>__hi``
    columns (ArtUC)."""
    qis = [{"column": q.column, "hierarchy": q.hierarchy} if q.hierarchy and not (intervals and q.kind == "numeric") else
           {"column": q.column, "hierarchy": None, "lo": lo_column(q.column), "hi": hi_column(q.column)}
           for q in job.dataset.qis]
    backend.run("retention: quasi-identifiers", render("retention/qis.sql.j2", target=target, release=release,
                                                       nodes=NODES, qis=qis), {"n_input": inputs.n_rows})
    return ReleaseTable("qi_retention", target, shuffle=False, sums=QI_KEYS)


def qi_retention_levels(backend: Backend, job: Job, inputs: Inputs, release: tuple[str, ...],
                        levels: dict[str, int], catalog: tuple[str, ...] | None = None,
                        target: tuple[str, ...] = QI_RETENTION) -> ReleaseTable:
    """Stage ``<release>_qi_retention`` of a full-domain release from the chosen ``levels``
    (QI column -> level), when its printed values are not hierarchy labels; ``catalog``: the
    counterfeit catalog whose counts are rows that stand for no input record."""
    qis = [{"column": c, "level": int(lvl)} for c, lvl in levels.items()]
    backend.run("retention: quasi-identifiers", render("retention/qi_levels.sql.j2", target=target, release=release,
                                                       catalog=catalog, qis=qis), {"n_input": inputs.n_rows})
    return ReleaseTable("qi_retention", target, shuffle=False, sums=QI_KEYS)


def min_persons(job: Job, params: Any) -> int:
    """The fewest input persons a code of ``<release>_retention`` is counted with: the job's
    ``[release] retention_min_persons``, else the method's k (the group size its privacy model
    already publishes), else 1."""
    if job.release.retention_min_persons is not None:
        return job.release.retention_min_persons
    return int(getattr(params, "k", 1))


def merge_rare_codes(backend: Backend, staged: Staged, floor: int) -> Staged:
    """``staged`` with its retention table as published: no count of a code held by fewer than
    ``floor`` persons, their sums in one row (sql/retention/rare_codes.sql.j2). Run on the whole
    input's counts, after a partitioned run has summed its fragments; a release without codes
    is returned as it is."""
    tables = []
    for t in staged.tables:
        if t.suffix == "retention":
            backend.run("retention: merge rare codes", render("retention/rare_codes.sql.j2", target=MERGED,
                                                              source=t.staged, floor=floor))
            t = ReleaseTable(t.suffix, MERGED, t.shuffle, t.repeats, t.sums)
        tables.append(t)
    return Staged(tables, staged.facts)


def check(backend: Backend, tables: Mapping[str, tuple[str, ...]], floor: int) -> list[CheckResult]:
    """The independent check of ``<release>_retention`` (staged or published): no named code
    is counted with fewer than ``floor`` persons of the input. No check for a release without
    codes."""
    if "retention" not in tables:
        return []
    return [min_count(backend, relation=tables["retention"], key="code", count="persons_input", min_count=floor)]
