"""The risk part of the report: the risk measures of the input and of the release, side by side.
One function builds it (:func:`risk_section`); each side carries the prosecutor measures, the
records at risk per threshold and the marketer risk that ``anon-duck risk`` reports for the
input (the same function, :func:`anon_duck.risk.risk_measures`, and the same thresholds), so the
report's "before" column is ``anon-duck risk``'s numbers for the same job."""
from __future__ import annotations

from typing import Any, Sequence

from ..backend.base import Backend
from ..inputs import Inputs
from ..job import Job
from ..risk import DEFAULT_K, class_size_distribution, method_whole, resolve_risk_options, risk_measures
from . import classes

def risk_k(job: Job) -> int:
    """The k the risk measures count "records below k" against: the method's own k (``k``, or
    LKC's ``K``), else :data:`anon_duck.risk.DEFAULT_K`."""
    return method_whole(job, "k") or method_whole(job, "K") or DEFAULT_K


def risk_thresholds(job: Job) -> tuple[float, ...]:
    """The records-at-risk thresholds ``anon-duck risk`` uses for ``job`` (its ``[risk]``
    thresholds, else 1 in 2, 5, 10, 20)."""
    return resolve_risk_options(job).thresholds


def risk_section(backend: Backend, job: Job, inputs: Inputs, tables: classes.Tables) -> dict[str, Any]:
    """``{"model", "k", "thresholds", "before": side, "after": side or None}``; a side holds what
    a class is (``class_definition``), :data:`anon_duck.risk.RISK_MEASURES`, ``records_at_risk``,
    ``marketer_risk`` and the class-size distribution."""
    k, thresholds = risk_k(job), risk_thresholds(job)
    view = classes.after(backend, job, tables)
    return {"model": "prosecutor", "k": k, "thresholds": list(thresholds),
            "before": side(backend, classes.before(backend, job, inputs), k, thresholds),
            "after": side(backend, view, k, thresholds) if view is not None else None}


def side(backend: Backend, view: classes.ClassView, k: int, thresholds: Sequence[float]) -> dict[str, Any]:
    """The risk of one relation (a sweep reads the release side of each point with it). The
    marketer risk is the one without a population (El Emam: classes / records, what an
    attacker matching every record of a register to the data re-identifies on average)."""
    measures = risk_measures(backend, relation=view.relation, qis=view.columns, k=k, thresholds=thresholds)
    return {"class_definition": view.meaning, **measures, "marketer_risk": measures["prosecutor_risk_avg"],
            "distribution": class_size_distribution(backend, relation=view.relation, qis=view.columns)}
