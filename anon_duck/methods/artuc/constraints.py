"""The utility constraint set U in the database: boxes, code blocks, validation and record
grouping (seed 000, Definitions 8-9, Algorithm 1 Steps 1-2).

U is stored as two partitions (spec rt_kkm §2.6): the distinct demographic parts of the
constraints ("boxes", one wide row each) and the distinct code sets ("blocks", (code, block)).
ArtUC groups records by box and lets GenDiag merge codes only inside a block; the pairing of a
box with a code set inside one constraint has no effect on either.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...backend.base import Backend
from ...errors import InputError
from ...hierarchy import CLOSURE, NODES
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from .qis import QIInfo
from ...sqlrender import render
from .params import ArtUCParams, Bands, Range

if TYPE_CHECKING:
    from .generalize import Demographics

BOXES, CODESETS, BLOCKS, RECORD_BOX = (scratch("artuc_box"), scratch("artuc_codeset"), scratch("artuc_block"),
                                       scratch("artuc_record_box"))


def qi_infos(backend: Backend, job: Job, inputs: Inputs) -> list[QIInfo]:
    """QIs with their NCP weights (given, else 1/l: spec §2.3) and numeric data domains: the
    whole input's in a fragment of a partitioned run (``inputs.domains``), so that a fragment
    prices a generalization as the unpartitioned run does and builds the same boxes."""
    qis = job.dataset.qis
    out = []
    for i, q in enumerate(qis):
        lo = hi = math.nan
        if q.kind == "numeric" and q.column in inputs.domains:
            lo, hi = inputs.domains[q.column]
        elif q.kind == "numeric":
            lo, hi = backend.rows(f"artuc: domain of {q.column}", render(
                "metrics/domain.sql.j2", relation=inputs.person, column=q.column))[0]
        out.append(QIInfo(i, q.column, q.kind == "numeric", q.hierarchy,
                          q.weight if q.weight is not None else 1.0 / len(qis), float(lo), float(hi)))
    return out


def build(backend: Backend, job: Job, inputs: Inputs, params: ArtUCParams, qis: list[QIInfo]) -> None:
    """Materialize boxes and blocks, and reject a U that names unknown nodes, conflicts, or does
    not cover the data (Definition 8), with an error naming the attribute and the values."""
    roots = _roots(backend, qis)
    boxes = _boxes(params, qis, roots)
    cols: dict[str, Any] = {"box": np.arange(len(boxes), dtype=np.int32)}
    for q in qis:
        if q.numeric:
            cols[f"q{q.i}_lo"] = np.array([b[q.i].lo for b in boxes], dtype=float)
            cols[f"q{q.i}_hi"] = np.array([b[q.i].hi for b in boxes], dtype=float)
        else:
            cols[f"q{q.i}_node"] = np.array([b[q.i] for b in boxes], dtype=object)
    backend.write_table(BOXES, cols)
    code_h = job.dataset.codes.hierarchy if job.dataset.codes else None
    rows = [(i, c, None) for i, u in enumerate(params.constraints) for c in u.codes] + \
           [(i, None, u.code_group) for i, u in enumerate(params.constraints) if u.code_group]
    backend.write_table(CODESETS, {"uc": np.array([r[0] for r in rows], dtype=np.int32),
                                   "code": np.array([r[1] for r in rows], dtype=object),
                                   "node": np.array([r[2] for r in rows], dtype=object)})
    ctx = [q.ctx() for q in qis]
    unknown = backend.rows("artuc: constraint nodes", render(
        "artuc/uc_unknown_nodes.sql.j2", box_table=BOXES, code_table=CODESETS, node_table=NODES, qis=ctx,
        code_hierarchy=code_h))
    if unknown:
        what, attr, value = unknown[0]
        where = {"qi": f"is not a node of the hierarchy of {attr!r}",
                 "code_group": f"is not a node of the code hierarchy {code_h!r}",
                 "code": f"is not a leaf code of the code hierarchy {code_h!r}"}[what]
        raise InputError(f"method.constraint: {value!r} {where} "
                         f"({len(unknown)} such element(s), e.g. {', '.join(repr(u[2]) for u in unknown)})")
    backend.run("artuc: code blocks", render(
        "artuc/code_blocks.sql.j2", target=BLOCKS, code_table=CODESETS, closure_table=CLOSURE, node_table=NODES,
        code_hierarchy=code_h, grid=params.grid is not None),
        {"depth": params.grid.code_depth} if params.grid is not None else None)
    conflicts = backend.rows("artuc: constraint conflicts", render(
        "artuc/uc_conflicts.sql.j2", box_table=BOXES, block_table=BLOCKS, closure_table=CLOSURE, qis=ctx))
    if conflicts:
        raise InputError("method.constraint: the utility constraints conflict (Definition 8: two constraint "
                         "boxes must not overlap, two code sets must be equal or disjoint): "
                         + "; ".join(f"{'boxes' if a == 'box' else 'code sets'} ({x}) and ({y})"
                                     for a, x, y in conflicts))
    uncovered = backend.rows("artuc: constraint coverage", render(
        "artuc/uc_uncovered.sql.j2", relation=inputs.person, box_table=BOXES, block_table=BLOCKS,
        codes=inputs.codes, closure_table=CLOSURE, qis=ctx))
    if uncovered:
        raise InputError("method.constraint: the utility constraints do not cover the data (Definition 8): "
                         + "; ".join(f"{n} value(s) of {a} lie in no constraint, e.g. {', '.join(map(str, ex))}"
                                     for a, n, ex in uncovered))


def group_records(backend: Backend, job: Job, inputs: Inputs, params: ArtUCParams, qis: list[QIInfo]) -> int:
    """Step 1: the box of every record into RECORD_BOX; returns the number of records in no box
    (A16: suppressed and reported, or an error with ``strict_boxes``)."""
    backend.run("artuc: step 1 record grouping", render(
        "artuc/record_boxes.sql.j2", target=RECORD_BOX, relation=inputs.person, id=job.dataset.id,
        box_table=BOXES, closure_table=CLOSURE, qis=[q.ctx() for q in qis]))
    n_none, n_multi, examples = backend.rows("artuc: records without a box", render(
        "artuc/records_without_box.sql.j2", source=RECORD_BOX))[0]
    if n_multi:
        raise InputError(f"method.constraint: {n_multi} record(s) lie in two constraint boxes; the constraints "
                         "must be conflict-free")
    if n_none and params.strict_boxes:
        raise InputError(f"method.constraint: {n_none} record(s) lie in no constraint box (each attribute is "
                         f"covered, but no single constraint holds all their values), e.g. ids "
                         f"{', '.join(examples)}; set method.strict_boxes = false to suppress them")
    return int(n_none)


def _roots(backend: Backend, qis: list[QIInfo]) -> dict[str, str]:
    names = sorted({q.hierarchy for q in qis if not q.numeric and q.hierarchy})
    if not names:
        return {}
    rows = backend.rows("artuc: hierarchy roots", render("artuc/hierarchy_roots.sql.j2", node_table=NODES),
                        {"names": names})
    return dict(rows)


def _boxes(params: ArtUCParams, qis: list[QIInfo], roots: dict[str, str]) -> list[tuple]:
    """Distinct demographic parts of U, one tuple per box (Range per numeric QI, node per
    categorical QI). An attribute a constraint leaves out is its whole domain / the root."""
    def whole(q: QIInfo) -> Range | str:
        return Range(q.lo, q.hi) if q.numeric else roots[q.hierarchy]

    if params.grid is None:
        seen: dict[tuple, None] = {}
        for u in params.constraints:
            given = dict(u.elements)
            seen.setdefault(tuple(given.get(q.column, whole(q)) for q in qis), None)
        return list(seen)
    parts = dict(params.grid.partitions)
    axes: list[list[Range | str]] = []
    for q in qis:
        p = parts.get(q.column)
        if p is None:
            axes.append([whole(q)])
        elif isinstance(p, Bands):
            n = max(1, math.ceil((q.hi - p.lo + 1) / p.width))
            axes.append([Range(p.lo + j * p.width, p.lo + (j + 1) * p.width - 1) for j in range(n)])
        else:
            axes.append(list(p))
    return list(itertools.product(*axes))


def unconstrained(backend: Backend, job: Job, inputs: Inputs) -> None:
    """No utility constraints (the RmR approximation): every record in box 0, every code in block 0."""
    backend.run("artuc: one box, one block", render(
        "artuc/unconstrained.sql.j2", record_box=RECORD_BOX, blocks=BLOCKS, relation=inputs.person,
        id=job.dataset.id, codes=inputs.codes))


def box_states(backend: Backend, demo: "Demographics") -> dict[int, tuple[list[float], list[float], list[int]]]:
    """Each box's elements as a Definition 2 state (numeric [lo, hi]; categorical node id), for
    the Baseline, which generalizes every record of a box to the box itself."""
    rows = backend.fetch("artuc: boxes", render("artuc/boxes.sql.j2", box_table=BOXES))
    out = {}
    for j, b in enumerate(rows["box"]):
        lo = [float(rows[f"q{q.i}_lo"][j]) if q.numeric else 0.0 for q in demo.qis]
        hi = [float(rows[f"q{q.i}_hi"][j]) if q.numeric else 0.0 for q in demo.qis]
        node = [int(demo.trees[q.i].index(np.array([rows[f"q{q.i}_node"][j]], dtype=object))[0])
                if not q.numeric else -1 for q in demo.qis]
        out[int(b)] = (lo, hi, node)
    return out
