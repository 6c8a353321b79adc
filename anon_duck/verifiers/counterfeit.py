"""Independent audit of a counterfeit-records release (seed 002).

Runs on the release tables (AT and the catalog) and on the job's own view of the input;
it never imports the anonymizer (:mod:`anon_duck.methods.counterfeit`) and never reads its
private scratch tables, so a bug there shows up here as evidence:

* ``k_anonymity``: every class of AT has at least k published rows, counterfeits included
  (the generic verifier of :mod:`anon_duck.verifiers.models`);
* ``counterfeit_class_ids``: ClassID ↔ generalized QI tuple is one-to-one;
* ``counterfeit_catalog``: Definition 3's shape (disjoint groups of existing classes,
  ascending lists, positive counts);
* ``counterfeit_lemma1``: the catalog's safety condition, checked from the published counts
  alone (equivalent to Lemma 1, see the template);
* ``counterfeit_h_ceiling``: Definition 1 recomputed from the published values;
* ``counterfeit_truthfulness``: per sensitive value, published − catalogued = original, and
  the published truthful table (Table 9) has exactly the input's count.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..backend.base import Backend
from ..hierarchy import NODES
from ..inputs import prepare
from ..job import Job
from ..sqlrender import render
from .models import CheckResult, k_anonymity

LIMIT = 20


def audit(backend: Backend, job: Job, *, release: Sequence[str], catalog: Sequence[str], truthful: Sequence[str],
          k: int, h: float, domain: Mapping[str, tuple[float, float]]) -> list[CheckResult]:
    """All checks above. ``domain`` holds the declared (L, U) of numeric QIs; a numeric QI
    without one uses its hierarchy's top interval, as Eq. 1 does in the method."""
    ds = job.dataset
    qis = [q.column for q in ds.qis]
    inputs = prepare(backend, job)   # the verifier's own read of the input and hierarchies
    results = [k_anonymity(backend, relation=release, qis=qis, k=k, limit=LIMIT)]
    results.append(_check(backend, "counterfeit_class_ids", "verify/counterfeit_class_id_violations.sql.j2",
                          ("class_id", "n_tuples"), {}, relation=release, qis=qis))
    ctx = {"release": release, "catalog": catalog, "sensitive": ds.sensitive}
    results.append(_check(backend, "counterfeit_catalog", "verify/counterfeit_catalog_violations.sql.j2",
                          ("problem", "group_id", "class_id"), {}, **ctx))
    results.append(_check(backend, "counterfeit_lemma1", "verify/counterfeit_lemma1_violations.sql.j2",
                          ("group_id", "class_id", "sensitive_value", "count", "published_elsewhere"), {}, **ctx))
    bounds = _numeric_domains(backend, job, domain)
    results.append(_check(
        backend, "counterfeit_h_ceiling", "verify/counterfeit_h_ceiling_violations.sql.j2", ("class_id", "d"),
        {"h": float(h)}, relation=release, node_table=NODES, sensitive=ds.sensitive,
        qis=[{"column": q.column, "hierarchy": q.hierarchy, "numeric": q.kind == "numeric",
              **({"lo": bounds[q.column][0], "hi": bounds[q.column][1]} if q.kind == "numeric" else {})}
             for q in ds.qis]))
    results.append(_check(backend, "counterfeit_truthfulness", "verify/counterfeit_truthfulness_violations.sql.j2",
                          ("sensitive_value", "published", "catalogued", "truthful", "original"), {},
                          relation=inputs.person, truthful=truthful, **ctx))
    return results


def _check(backend: Backend, name: str, template: str, columns: Sequence[str], params: Mapping[str, Any],
           **context: Any) -> CheckResult:
    """Run one violations query; its last column is the total count (window before LIMIT)."""
    rows = backend.rows(f"verify {name}", render(template, **context), {**params, "limit": LIMIT})
    total = int(rows[0][-1]) if rows else 0
    return CheckResult(name, total == 0, total, [dict(zip(columns, r)) for r in rows])


def _numeric_domains(backend: Backend, job: Job, declared: Mapping[str, tuple[float, float]]) -> dict[str, tuple]:
    """(L, U) per numeric QI: declared, else the top interval of its hierarchy."""
    out = {}
    for q in job.dataset.qis:
        if q.kind != "numeric":
            continue
        if q.column in declared:
            out[q.column] = tuple(declared[q.column])
            continue
        lo, hi = backend.rows(f"verify: domain of {q.column}", render("verify/counterfeit_root_bounds.sql.j2",
                                                                      node_table=NODES),
                              {"hierarchy": q.hierarchy})[0]
        out[q.column] = (float(lo), float(hi))
    return out
