"""Parameters of ArtUC and its comparators, and the utility constraint set U (Definition 8 of
seed 000) as written in a job file. Only the shape of the job is checked here; checks that
need the data or the hierarchies (conflicts, coverage, unknown nodes) are in
:mod:`.constraints`.

Two ways to write U under ``[method]``:

* ``[[method.constraint]]`` tables, one per constraint u = {v_A1, ..., v_Al, v_A(l+1)}: a key
  per QI column (numeric: ``[lo, hi]`` closed, or a string ``"[19:50]"``, ``"[0:12)"``,
  ``"[51]"``, ``"51"``; categorical: a hierarchy node) and the code set as ``codes = [...]``
  (explicit) or ``code_group = "<node of the code hierarchy>"`` (every leaf below it: an ICD
  chapter, section or 3-digit node). A QI left out is unconstrained (the whole domain/root).
* ``[method.constraint_grid]`` for the experiments' Table 6 shape: per QI either
  ``{ lo = 1918, width = 20 }`` (consecutive closed bands of ``width`` integers from ``lo``
  up to the data's maximum), a list of ranges, or a list of nodes; and ``code_level`` =
  ``"chapter"`` | ``"section"`` | ``"category"`` or a depth (every hierarchy node at that
  depth is one code set). The demographic boxes are the product of the QI partitions; box and
  code set pairing does not matter to ArtUC (spec §2.6), so they are kept as two partitions.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ...errors import JobError
from ...job import Job
from ..base import Param, parse_params, require_roles

ICD_LEVEL_DEPTH = {"chapter": 1, "section": 2, "category": 3, "subcategory": 4}
_RANGE = re.compile(r"^\s*\[\s*(-?\d+(?:\.\d+)?)\s*(?::\s*(-?\d+(?:\.\d+)?)\s*)?([\])])\s*$")
_NUMBER = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*$")

PARAMS = (
    Param("k", int, lo=2, doc="every class has >= k records, every <= m codes in >= k of them"),
    Param("m", int, lo=1, doc="the attacker knows up to m codes of a patient"),
    Param("delta", float, lo=0.0, hi=1.0, doc="NCP(D~) bound (Requirement 1)"),
    Param("epsilon", float, None, lo=0.0, doc="bound on the suppressed codes S (Requirement 4)"),
    Param("epsilon_share", float, None, lo=0.0, hi=1.0,
          doc="epsilon as a share of the distinct codes (paper: 0.06); default when epsilon is absent"),
    Param("strict_boxes", bool, False, doc="a record in no constraint box is an error instead of suppressed"),
    Param("exhaustive_merge", bool, False, doc="Step 22: try the next cluster when C_UL has no partner (A6)"),
    Param("merge_candidates", int, 0, lo=0,
          doc="Step 20 pruning: only the N same-group clusters with the smallest NCP increase (0 = all)"),
    Param("anytime", bool, False, doc="Algorithm 2: merge by UL alone, accept while NCP <= delta"),
)
STRUCTURED = ("constraint", "constraint_grid")


@dataclass(frozen=True)
class Range:
    """A closed numeric interval [lo, hi] (``[x:y)`` is stored as [x, y-1], A24)."""

    lo: float
    hi: float


@dataclass(frozen=True)
class Constraint:
    """One utility constraint (Definition 8): QI elements by column, and a code set."""

    elements: tuple[tuple[str, Range | str], ...]
    codes: tuple[str, ...] = ()
    code_group: str | None = None


@dataclass(frozen=True)
class Bands:
    lo: float
    width: float


@dataclass(frozen=True)
class Grid:
    """Table 6 shape: per-QI partitions (bands, ranges or nodes) and a code level (depth)."""

    partitions: tuple[tuple[str, Bands | tuple[Range, ...] | tuple[str, ...]], ...]
    code_depth: int


@dataclass(frozen=True)
class ArtUCParams:
    k: int
    m: int
    delta: float
    epsilon: float | None
    epsilon_share: float | None
    strict_boxes: bool
    exhaustive_merge: bool
    merge_candidates: int
    anytime: bool
    constraints: tuple[Constraint, ...] = ()
    grid: Grid | None = None

    def epsilon_for(self, n_distinct_codes: int) -> float:
        """ε in codes: given, or a share of the distinct codes (paper default 0.06, §5.1)."""
        if self.epsilon is not None:
            return self.epsilon
        return (0.06 if self.epsilon_share is None else self.epsilon_share) * n_distinct_codes


def check_artuc_params(job: Job, *, constraints_required: bool = True) -> ArtUCParams:
    """Validate ``[method]`` for ArtUC-style methods (``method.<key>`` errors)."""
    require_roles(job, qis=True, codes=True)
    if job.dataset.id is None:
        raise JobError(f"method {job.method!r} needs input.id to tie codes to persons")
    for i, q in enumerate(job.dataset.qis):
        if q.kind == "date":
            raise JobError(f"input.qi[{i}] ({q.column!r}): method {job.method!r} handles numeric and categorical "
                           "QIs; cast the date to a number (e.g. a year)")
        if q.kind == "categorical" and not q.hierarchy:
            raise JobError(f"input.qi[{i}] ({q.column!r}): a categorical QI needs a hierarchy (Definition 2 "
                           "generalizes it to the closest common ancestor)")
    simple = dataclasses.replace(job, params={k: v for k, v in job.params.items() if k not in STRUCTURED})
    values = parse_params(simple, PARAMS)
    if values["epsilon"] is not None and values["epsilon_share"] is not None:
        raise JobError("method.epsilon and method.epsilon_share: give one of them, not both")
    constraints: tuple[Constraint, ...] = ()
    grid = None
    if "constraint" in job.params and "constraint_grid" in job.params:
        raise JobError("method.constraint and method.constraint_grid: give one of them, not both")
    if "constraint" in job.params:
        raw = job.params["constraint"]
        if not isinstance(raw, list) or not raw:
            raise JobError("method.constraint: expected a non-empty list of [[method.constraint]] tables")
        constraints = tuple(_constraint(job, c, f"method.constraint[{i}]") for i, c in enumerate(raw))
    elif "constraint_grid" in job.params:
        grid = _grid(job, job.params["constraint_grid"])
    elif constraints_required:
        raise JobError(f"method {job.method!r} needs a utility constraint set: add [[method.constraint]] tables "
                       "or a [method.constraint_grid] table (Definition 8)")
    return ArtUCParams(**values, constraints=constraints, grid=grid)


def parse_range(v: Any, key: str) -> Range:
    """``[lo, hi]`` (closed), or the paper's notation ``[x:y]``, ``[x:y)``, ``[x]``, ``x``."""
    if isinstance(v, list):
        if len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise JobError(f"{key} = {v!r}: a numeric element is [lo, hi] (two numbers)")
        lo, hi = float(v[0]), float(v[1])
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        lo = hi = float(v)
    elif isinstance(v, str) and _NUMBER.match(v):
        lo = hi = float(v)
    elif isinstance(v, str) and (mt := _RANGE.match(v)):
        lo = float(mt.group(1))
        hi = float(mt.group(2)) if mt.group(2) is not None else lo
        if mt.group(3) == ")":
            if mt.group(2) is None:
                raise JobError(f"{key} = {v!r}: a half-open range needs two ends, like [0:12)")
            hi -= 1   # [x:y) holds the integers x..y-1 (Table 6), A24
    else:
        raise JobError(f"{key} = {v!r}: write a numeric element as [lo, hi] or \"[lo:hi]\" / \"[lo:hi)\"")
    if lo > hi:
        raise JobError(f"{key} = {v!r}: empty range (lo > hi)")
    return Range(lo, hi)


def _constraint(job: Job, t: Any, key: str) -> Constraint:
    if not isinstance(t, Mapping):
        raise JobError(f"{key}: expected a table, got {type(t).__name__}")
    qis = {q.column: q for q in job.dataset.qis}
    clash = {"codes", "code_group"} & set(qis)
    if clash:
        raise JobError(f"input.qi column {sorted(clash)[0]!r} clashes with a reserved key of [[method.constraint]]")
    for name in t:
        if name not in qis and name not in ("codes", "code_group"):
            raise JobError(f"{key}.{name}: not a quasi-identifier of the job (QIs: {', '.join(qis)}); "
                           "the code set is 'codes' or 'code_group'")
    if ("codes" in t) == ("code_group" in t):
        raise JobError(f"{key}: give the code set as exactly one of codes = [...] or code_group = \"<node>\"")
    elements: list[tuple[str, Range | str]] = []
    for col, q in qis.items():
        if col not in t:
            continue
        if q.kind == "numeric":
            elements.append((col, parse_range(t[col], f"{key}.{col}")))
        else:
            v = t[col]
            if not isinstance(v, str) or not v:
                raise JobError(f"{key}.{col} = {v!r}: a categorical element is a node of hierarchy {q.hierarchy!r}")
            elements.append((col, v))
    codes: tuple[str, ...] = ()
    group = None
    if "codes" in t:
        raw = t["codes"]
        if not isinstance(raw, list) or not raw or not all(isinstance(c, str) and c for c in raw):
            raise JobError(f"{key}.codes = {raw!r}: a non-empty list of code strings (quote them: \"053.20\")")
        if len(set(raw)) != len(raw):
            raise JobError(f"{key}.codes lists a code twice")
        codes = tuple(sorted(raw))
    else:
        group = t["code_group"]
        if not isinstance(group, str) or not group:
            raise JobError(f"{key}.code_group = {group!r}: a node of the code hierarchy, e.g. \"001-139\"")
        if not job.dataset.codes or not job.dataset.codes.hierarchy:
            raise JobError(f"{key}.code_group needs a hierarchy on the codes (input.codes.hierarchy)")
    return Constraint(tuple(elements), codes, group)


def _grid(job: Job, t: Any) -> Grid:
    key = "method.constraint_grid"
    if not isinstance(t, Mapping):
        raise JobError(f"{key}: expected a table")
    qis = {q.column: q for q in job.dataset.qis}
    for name in t:
        if name not in qis and name != "code_level":
            raise JobError(f"{key}.{name}: not a quasi-identifier of the job (QIs: {', '.join(qis)}) "
                           "nor code_level")
    if "code_level" not in t:
        raise JobError(f"{key}: missing code_level (chapter, section, category or a depth)")
    level = t["code_level"]
    if isinstance(level, str) and level in ICD_LEVEL_DEPTH:
        depth = ICD_LEVEL_DEPTH[level]
    elif isinstance(level, int) and not isinstance(level, bool) and level >= 1:
        depth = level
    else:
        raise JobError(f"{key}.code_level = {level!r}: one of {', '.join(ICD_LEVEL_DEPTH)} or a depth >= 1")
    if not job.dataset.codes or not job.dataset.codes.hierarchy:
        raise JobError(f"{key}.code_level needs a hierarchy on the codes (input.codes.hierarchy)")
    parts: list[tuple[str, Bands | tuple[Range, ...] | tuple[str, ...]]] = []
    for col, q in qis.items():
        if col not in t:
            continue
        v, k2 = t[col], f"{key}.{col}"
        if q.kind == "numeric":
            if isinstance(v, Mapping):
                if set(v) != {"lo", "width"} or not all(isinstance(v[x], (int, float)) and not isinstance(v[x], bool)
                                                        for x in v) or v["width"] <= 0:
                    raise JobError(f"{k2} = {dict(v)!r}: bands are {{ lo = <number>, width = <positive number> }}")
                parts.append((col, Bands(float(v["lo"]), float(v["width"]))))
            elif isinstance(v, list) and v:
                parts.append((col, tuple(parse_range(x, f"{k2}[{i}]") for i, x in enumerate(v))))
            else:
                raise JobError(f"{k2}: a numeric partition is {{ lo, width }} or a list of ranges")
        else:
            if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
                raise JobError(f"{k2} = {v!r}: a categorical partition is a list of hierarchy nodes")
            parts.append((col, tuple(v)))
    return Grid(tuple(parts), depth)
