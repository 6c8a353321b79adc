"""Independent audit of an ArtUC / Baseline / RmR release (seed 000), on the published tables
only: ``release`` (record, class, generalized QIs), ``tokens`` (class, token, code) and
``record_tokens`` (record, token).

Checks, each one SQL query returning the offending rows (zero rows = pass):

* ``artuc_structure``: a class has one QI tuple; a record holds only its class's tokens; the
  tokens of a class are disjoint (Definition 2's local recoding of codes);
* ``kkm_anonymity``: Conditions 1 and 2 of Definition 1 on the classes an attacker sees;
* ``utility_constraints_demographics`` / ``utility_constraints_codes``: Definition 9, with the
  utility constraints re-read from the job (not from anything the anonymizer stored).

This module never imports the anonymizer (``anon_duck.methods.artuc``); it reads the parsed
constraint set as plain data (``constraints``/``grid`` attributes of the params object).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..backend.base import Backend
from ..hierarchy import CLOSURE, NODES
from ..hierarchy import build as build_hierarchies
from ..job import Job
from ..sqlrender import render
from .models import CheckResult

LIMIT = 20


def verify_release(backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]], *, k: int, m: int,
                   params: Any, constraints: bool = True) -> list[CheckResult]:
    """All checks of an ArtUC-style release; ``constraints = False`` skips Definition 9 (RmR)."""
    qis = [q.column for q in job.dataset.qis]
    release, tokens, rtok = tables["release"], tables["tokens"], tables["record_tokens"]
    out = [
        _check(backend, "artuc_structure", render("verify/artuc_structure_violations.sql.j2", release=release,
                                                  tokens=tokens, record_tokens=rtok, qis=qis), {}),
        _check(backend, "kkm_anonymity", render("verify/artuc_kkm_violations.sql.j2", release=release, tokens=tokens,
                                                record_tokens=rtok, qis=qis, k=k, m=m), {}),
    ]
    if not constraints:
        return out
    _ensure_hierarchies(backend, job)
    qctx = [{"column": q.column, "numeric": q.kind == "numeric", "hierarchy": q.hierarchy} for q in job.dataset.qis]
    code_h = job.dataset.codes.hierarchy if job.dataset.codes else None
    if params.grid is not None:
        parts = dict(params.grid.partitions)
        grid = [_partition(parts.get(q.column)) for q in job.dataset.qis]
        box_sql = render("verify/artuc_box_violations.sql.j2", release=release, closure_table=CLOSURE, qis=qctx,
                         constraints=None, grid=grid)
        block_sql = render("verify/artuc_block_violations.sql.j2", tokens=tokens, closure_table=CLOSURE,
                           node_table=NODES, code_hierarchy=code_h, sets=None, depth=params.grid.code_depth)
    else:
        rows = []
        for u in params.constraints:
            given = dict(u.elements)
            rows.append([_element(given.get(q.column)) for q in job.dataset.qis])
        sets = [{"index": i, "codes": list(u.codes), "group": u.code_group} for i, u in enumerate(params.constraints)]
        box_sql = render("verify/artuc_box_violations.sql.j2", release=release, closure_table=CLOSURE, qis=qctx,
                         constraints=rows, grid=None)
        block_sql = render("verify/artuc_block_violations.sql.j2", tokens=tokens, closure_table=CLOSURE,
                           node_table=NODES, code_hierarchy=code_h, sets=sets, depth=None)
    out.append(_check(backend, "utility_constraints_demographics", box_sql, {}))
    out.append(_check(backend, "utility_constraints_codes", block_sql, {}))
    return out


def _element(el: Any) -> Any:
    """A constraint element as template data: None, [lo, hi] or a node name."""
    if el is None or isinstance(el, str):
        return el
    return [el.lo, el.hi]


def _partition(p: Any) -> Any:
    if p is None:
        return None
    if hasattr(p, "width"):
        return {"lo": p.lo, "width": p.width}
    return [_element(x) for x in p]


def _check(backend: Backend, name: str, sql: str, params: dict[str, Any]) -> CheckResult:
    res = backend.fetch(f"verify: {name}", sql, {**params, "limit": LIMIT})
    cols = [c for c in res if c != "n_violations"]
    n = int(res["n_violations"][0]) if res["n_violations"].size else 0
    rows = [{c: _plain(res[c][i]) for c in cols} for i in range(res["n_violations"].size)]
    return CheckResult(name, n == 0, n, rows)


def _plain(v: Any) -> Any:
    """numpy scalars and arrays (LIST columns) as plain Python values."""
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if v is np.ma.masked:
        return None
    return v.item() if isinstance(v, np.generic) else v


def _ensure_hierarchies(backend: Backend, job: Job) -> None:
    """The hierarchy tables exist during a run; ``anon-duck verify`` on a published release
    builds them from the job's hierarchy definitions (no data needed for file/built-in trees)."""
    if backend.scratch_exists(NODES):
        return
    used = {q.hierarchy for q in job.dataset.qis if q.hierarchy}
    if job.dataset.codes and job.dataset.codes.hierarchy:
        used.add(job.dataset.codes.hierarchy)
    specs = [job.hierarchies[h] for h in sorted(used) if job.hierarchies[h].type != "interval"]
    build_hierarchies(backend, specs)
