"""The risk part of the report: prosecutor-model measures and class sizes of the input and of
the release, side by side. One function builds it (:func:`risk_section`), so further measures
(the ``anon-duck risk`` command's) are added in one place."""
from __future__ import annotations

from typing import Any

from ..backend.base import Backend
from ..inputs import Inputs
from ..job import Job
from ..risk import class_size_distribution, risk_measures
from . import classes

DEFAULT_K = 5
"""The class size below which a record counts as "at risk" when the method has no k of its own."""


def risk_k(job: Job) -> int:
    """The k the risk measures count "records below k" against: the method's own k (``k``, or
    LKC's ``K``), else :data:`DEFAULT_K`."""
    for key in ("k", "K"):
        value = job.params.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return DEFAULT_K


def risk_section(backend: Backend, job: Job, inputs: Inputs, tables: classes.Tables) -> dict[str, Any]:
    """``{"model", "k", "before": side, "after": side or None}``; a side holds what a class is (``class_definition``),
    :data:`anon_duck.risk.RISK_MEASURES` and the class-size distribution."""
    k = risk_k(job)
    view = classes.after(backend, job, tables)
    return {"model": "prosecutor", "k": k,
            "before": side(backend, classes.before(backend, job, inputs), k),
            "after": side(backend, view, k) if view is not None else None}


def side(backend: Backend, view: classes.ClassView, k: int) -> dict[str, Any]:
    """The risk of one relation (a sweep reads the release side of each point with it)."""
    measures = risk_measures(backend, relation=view.relation, qis=view.columns, k=k)
    return {"class_definition": view.meaning, **measures,
            "distribution": class_size_distribution(backend, relation=view.relation, qis=view.columns)}
