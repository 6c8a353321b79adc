"""The report document: one nested dict, the same for ``--json``, the terminal summary and the
HTML page. docs/report.md documents its schema (``SCHEMA``)."""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from . import catalog

SCHEMA = "anon_duck.report/1"
QUANTILES = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
HISTOGRAM_BINS = 10


def build(*, meta: Mapping[str, Any], report: Mapping[str, Any], risk: Mapping[str, Any],
          loss: Mapping[str, Any], retention: Mapping[str, Any] | None = None,
          provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The document of one release from its metadata (``method``, ``seed``, ``params``,
    ``verified``, ``facts``, ``anon_duck_version``), the method's report, the risk section
    and the per-attribute loss."""
    method = str(meta["method"])
    verified = dict(meta.get("verified") or {})
    notes = [n for n in (report.get("note"), catalog.lookup(report, ("classification", "skipped"))) if n]
    return {
        "schema": SCHEMA,
        "release": report["release"],
        "method": method,
        "params": dict(meta.get("params") or {}),
        "seed": meta.get("seed"),
        "anon_duck_version": meta.get("anon_duck_version"),
        "checks": {"verified": verified, "verdict": "pass" if verified and all(verified.values()) else "fail"},
        "facts": dict(meta.get("facts") or {}),
        "risk": dict(risk),
        "loss": dict(loss),
        "headline": _headline(method, meta.get("facts") or {}, report),
        "measures": catalog.measures_of(method, report, meta.get("facts") or {}),
        "workloads": workloads_of(method, report),
        "notes": notes,
        "retention": dict(retention or {"codes": None, "qis": None}),
        "provenance": dict(provenance or {}),
    }


def _headline(method: str, facts: Mapping[str, Any], report: Mapping[str, Any]) -> dict[str, Any]:
    """``{"name", "value"}`` of the method's headline loss (:data:`catalog.HEADLINE`): the number
    ``run`` prints first and a sweep plots, so the three agree on one release."""
    return {"name": catalog.headline_of(method).measure, "value": catalog.headline_value(method, facts, report)}


def workloads_of(method: str, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Distributions of query workloads (never the hundred numbers themselves): the per-query
    relative errors of the generalized report's ARE as quantiles and a histogram; ARE by query
    size (disassociation, cba); the MRE bins of disassociation's utility constraints."""
    out = []
    per_query = catalog.lookup(report, ("are", "per_query"))
    if per_query:
        errors = [q["rel_error"] for q in per_query if q["rel_error"] is not None and not math.isnan(q["rel_error"])]
        if errors:
            out.append({"name": "ARE per query", "measure": "relative error of one COUNT query",
                        **distribution(errors)})
    for workload in ("W1", "W2"):
        by_size = catalog.lookup(report, ("are", workload, "expected", "by_size")) or \
            catalog.lookup(report, ("are", workload, "by_size"))
        if by_size:
            out.append({"name": f"ARE {workload} by query size", "measure": "ARE of the queries of each size "
                        "(codes per query)", "bars": {str(k): v for k, v in by_size.items()}})
    bins = catalog.lookup(report, ("mre", "bins"))
    if bins:
        out.append({"name": "MRE of utility constraints", "measure": "share of constraints whose support "
                    "error falls in each bin", "bars": dict(bins)})
    return out


def distribution(values: list[float]) -> dict[str, Any]:
    """Count, mean, quantiles and a histogram of ``values``."""
    a = np.asarray(values, dtype=float)
    counts, edges = np.histogram(a, bins=HISTOGRAM_BINS)
    return {"n": int(a.size), "mean": float(a.mean()),
            "quantiles": {f"p{int(q * 100)}": float(np.quantile(a, q)) for q in QUANTILES},
            "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}}
