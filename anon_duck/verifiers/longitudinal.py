"""Independent audit of a longitudinal release (seed 004), on the release tables only.

Definition 1 is enforced on the whole released trajectory (spec A11): the equivalence classes
are the groups of patients with identical released pair sequences, empty included, and each
must hold at least k patients. The check runs the generic :func:`anon_duck.verifiers.k_anonymity`
on the readable ``trajectory`` column of ``patients`` after a structural check proves that
column is exactly the patient's pairs in ``events``. Nothing here imports the anonymizer or
reads a number it computed.
"""
from __future__ import annotations

from typing import Sequence

from ..backend.base import Backend
from ..sqlrender import render
from .models import CheckResult, k_anonymity, sliced_rows

Relation = tuple[str, ...]
EXPECTED_PATIENTS = ("release_id", "trajectory", "n_pairs")
EXPECTED_EVENTS = ("release_id", "pos", "code", "code_label", "age", "age_lo", "age_hi")


def consistency(backend: Backend, *, patients: Relation, events: Relation, limit: int = 20) -> CheckResult:
    """Structural problems of the release (``sql/verify/longitudinal_consistency_violations.sql.j2``),
    one slice of consecutive release ids at a time (about :data:`SLICE_EVENTS` events each):
    the check spells every trajectory out, and at 10^6 patients the whole text at once (50M
    pairs) outgrew a 4 GB memory_limit. Each check compares the rows of one release id, so the
    slices' violations add up to the release's, in release id order."""
    fields = ("release_id", "problem", "detail")
    lo, hi, event_rows = release_ids(backend, "verify longitudinal consistency: slices", patients=patients,
                                     events=events)
    total, rows = sliced_rows(backend, "verify longitudinal consistency", render(
        "verify/longitudinal_consistency_violations.sql.j2", patients=patients, events=events),
        lo=lo, hi=hi, rows=int(event_rows), budget=SLICE_EVENTS, bound={"first": lo}, limit=limit)
    return CheckResult("longitudinal_consistency", total == 0, total, [dict(zip(fields, r)) for r in rows])


def release_ids(backend: Backend, stage: str, *, patients: Relation, events: Relation) -> tuple[int, int, int]:
    """The release ids' range over both tables and the events' count, to cut a release into
    slices of consecutive ids (0, 0 when there is no id at all: one slice, of NULL ids)."""
    lo, hi, event_rows = backend.rows(stage, render("verify/longitudinal_slices.sql.j2", patients=patients,
                                                    events=events))[0]
    return (0, 0, int(event_rows)) if lo is None else (int(lo), int(hi), int(event_rows))


SLICE_EVENTS = 5_000_000
"""Events one slice of the consistency check spells out (10^6 patients of ~50 events each are
50M, in ten slices)."""


def columns(backend: Backend, *, patients: Relation, events: Relation, forbidden: Sequence[str]) -> CheckResult:
    """The release has its expected columns, and none named like the person id or a dropped
    column (the payload columns of ``patients`` are the job's keep/sensitive/class columns)."""
    violations = []
    for name, relation, expected in (("patients", patients, EXPECTED_PATIENTS), ("events", events, EXPECTED_EVENTS)):
        have = list(backend.fetch(f"verify longitudinal columns of {name}",
                                  render("verify/relation_columns.sql.j2", relation=relation)))
        violations += [{"table": name, "column": c, "problem": "missing"} for c in expected if c not in have]
        violations += [{"table": name, "column": c, "problem": "identifying column released"}
                       for c in have if c in forbidden]
        if name == "events":
            violations += [{"table": name, "column": c, "problem": "unexpected column"}
                           for c in have if c not in expected]
    return CheckResult("longitudinal_columns", not violations, len(violations), violations)


def verify_release(backend: Backend, *, patients: Relation, events: Relation, k: int,
                   forbidden: Sequence[str]) -> list[CheckResult]:
    """Every check of a longitudinal release: columns, structure, then k-anonymity."""
    return [columns(backend, patients=patients, events=events, forbidden=forbidden),
            consistency(backend, patients=patients, events=events),
            k_anonymity(backend, relation=patients, qis=["trajectory"], k=k)]
