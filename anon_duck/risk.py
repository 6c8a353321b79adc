"""Re-identification risk of a relation under the prosecutor model (a record's risk is one over
its equivalence class's size): the measures a steward reads before and after a release.

The SQL is the dbt package's (``macros/risk.sql``), so a dbt model computing
``anon_duck.risk_measures`` and this function give the same numbers for the same table.
"""
from __future__ import annotations

from typing import Any, Sequence

from .argcheck import Relation, column_names, positive_int
from .backend.base import Backend
from .sqlrender import render
from .verifiers.models import refuse_nulls

RISK_MEASURES = ("n_records", "n_classes", "min_class_size", "max_class_size", "prosecutor_risk_max",
                 "prosecutor_risk_avg", "records_below_k", "sample_uniques")


def risk_measures(backend: Backend, *, relation: Relation, qis: Sequence[str], k: int = 5) -> dict[str, Any]:
    """One dict of :data:`RISK_MEASURES`: class counts and sizes, the highest and the average
    prosecutor risk (1 / smallest class; classes / records), the share of records in classes
    smaller than ``k`` and the number of sample uniques. NULL in a QI raises InputError (it
    would form a class of its own)."""
    qis = column_names("risk_measures", "qis", qis)
    positive_int("risk_measures", "k", k)
    refuse_nulls(backend, "risk_measures", relation, qis)
    row = backend.rows("risk: measures", render("risk/risk_measures.sql.j2", relation=relation, qis=qis, k=int(k)))[0]
    return dict(zip(RISK_MEASURES, row))


def class_size_distribution(backend: Backend, *, relation: Relation, qis: Sequence[str]) -> list[dict[str, int]]:
    """``[{"class_size", "n_classes", "n_records"}, ...]``, smallest class size first."""
    qis = column_names("class_size_distribution", "qis", qis)
    refuse_nulls(backend, "class_size_distribution", relation, qis)
    rows = backend.rows("risk: class sizes", render("risk/class_size_distribution.sql.j2", relation=relation, qis=qis))
    return [{"class_size": int(s), "n_classes": int(c), "n_records": int(n)} for s, c, n in rows]
