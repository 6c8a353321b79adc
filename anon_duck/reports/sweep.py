"""One point of a parameter sweep, measured on a staged (never published) release, and the
sweep document (docs/report.md "Sweep"): the loss the method's report leads with against the
prosecutor risk of the release, ARX's privacy/utility trade-off view."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from ..backend.base import Backend
from ..inputs import Inputs
from ..job import Job
from . import catalog, classes
from .risk import risk_k, risk_thresholds, side

SCHEMA = "anon_duck.sweep/1"


def loss_of(method: str) -> catalog.SweepLoss:
    """The loss a sweep plots for ``method``: its headline (:data:`catalog.HEADLINE`), the
    number ``run`` prints first and the report leads with."""
    return catalog.headline_of(method)


def measure_point(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                  facts: Mapping[str, Any], report: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
    """``{"loss", "risk_before", "risk_after"}`` of one staged release (the risk sides without
    their class-size distributions). ``report`` runs the method's report on the staged tables,
    only when the loss is not among the run's facts."""
    spec = loss_of(job.method)
    value = catalog.headline_value(job.method, facts, None if spec.from_facts else report())
    k, thresholds = risk_k(job), risk_thresholds(job)
    after = classes.after(backend, job, tables)
    return {"loss": value,
            "risk_before": _measures(side(backend, classes.before(backend, job, inputs), k, thresholds)),
            "risk_after": _measures(side(backend, after, k, thresholds)) if after is not None else None}


def _measures(risk: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in risk.items() if key != "distribution"}


def sweep_document(job: Job, param: str, points: list[dict[str, Any]]) -> dict[str, Any]:
    spec = loss_of(job.method)
    measure = catalog.MEASURES.get(spec.measure)
    return {"schema": SCHEMA, "release": job.release.name, "method": job.method, "param": param,
            "loss": {"name": spec.measure, "meaning": measure.meaning if measure else "",
                     "source": measure.source if measure else ""},
            "risk": {"model": "prosecutor"}, "points": points}
