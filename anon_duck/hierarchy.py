"""Generalization hierarchies as DuckDB tables.

Every hierarchy a job names is turned into one edge list and then into three scratch tables
shared by all methods:

* ``hier_node(hierarchy, node, parent, depth, is_leaf, n_leaves, lo, hi, label, level)``
* ``hier_closure(hierarchy, node, ancestor, distance)`` (reflexive)
* ``hier_level(hierarchy, leaf, level, node)`` (full-domain levels)

Levels (ARX's rule: every leaf has a node at every level, a shorter branch repeats a node).
Each node has a ``level``: 0 for leaves, the root's level is the hierarchy's height, and levels
grow strictly from a node to its parent. A node stands for its leaves from its own level up to
the level below its parent's, so level i of a leaf is its highest ancestor whose level is at
most i, and the nodes of one level partition the leaves. Builders that know their levels say
them (an interval that would equal its parent stays at the next level; an ARX column is a
level); in an edge list or a built-in tree a node's level is the height minus its depth, so a
branch shorter than the tallest one keeps its leaf for the levels it lacks. At load time every
hierarchy, whatever its type, goes through the same checks: a single tree listing each node once
(``hierarchy/shape_errors.sql.j2``, ``cycles.sql.j2``) whose levels grow up every chain
(``hierarchy/level_errors.sql.j2``); :func:`_refuse` names every offending node in one error.

Sources: ARX-style CSV (one line per leaf, one column per level, leaf first), edge lists
(CSV ``node,parent[,label]`` or a table with those columns), integer interval builders
(fixed width, or dyadic: the width doubles per level), masking (ARX's redaction: mask one more
trailing character per level) and dates (day → month → year → decade), built in SQL from
the column's values, and the built-in ICD-9-CM and ICD-10-CM trees shipped in
``anon_duck/data`` (see LICENSES.md there).
"""
from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from .backend.base import Backend
from .errors import AnonDuckError, InputError, JobError
from .job import HierarchySpec
from .jobspec import table_parts
from .omop_derive import derive as derive_omop
from .scratch import scratch
from .sqlrender import render

DATA_DIR = Path(__file__).resolve().parent / "data"
BUILTIN_FILES = {"icd9cm": "icd9cm.csv.gz", "icd10cm": "icd10cm.csv.gz"}
# Tree levels of the built-in files, root first. ``leaf_level`` cuts the tree below a level.
ICD_LEVELS = ("root", "chapter", "section", "category", "subcategory", "subclassification")

# No real hierarchy is this deep; the bound stops the recursive walk on a cyclic edge list.
MAX_DEPTH = 256
EDGES, NODES, CLOSURE, LEVELS = scratch("hier_edge"), scratch("hier_node"), scratch("hier_closure"), scratch("hier_level")


@dataclass(frozen=True)
class Edge:
    node: str
    parent: str | None
    label: str | None = None
    lo: float | None = None
    hi: float | None = None
    level: int | None = None     # None: the height minus the node's depth (see the module docstring)


def arx_edges(path: Path, delimiter: str = ";") -> list[Edge]:
    """ARX hierarchy CSV: ``leaf;level1;...;*`` per line; column j is level j. A value equal
    to the one before it (ARX repeats a value that is not generalized at that level) adds no
    edge: that node stands for its leaves at both levels."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f, delimiter=delimiter) if r and any(c.strip() for c in r)]
    except OSError as err:
        raise JobError(f"cannot read hierarchy file {str(path)!r}: {err.strerror}") from err
    if not rows:
        raise JobError(f"hierarchy file {str(path)!r} is empty")
    width = len(rows[0])
    parent_of: dict[str, str | None] = {}
    level_of: dict[str, int] = {}
    for line_no, row in enumerate(rows, 1):
        if len(row) != width:
            raise JobError(f"{path}: line {line_no} has {len(row)} levels, the first line has {width}")
        chain = [(0, row[0])] + [(j, v) for j, (prev, v) in enumerate(zip(row, row[1:]), 1) if v != prev]
        for (level, child), par in zip(chain, [v for _, v in chain[1:]] + [None]):
            known = parent_of.setdefault(child, par)
            if known != par:
                raise JobError(f"{path}: line {line_no}: {child!r} has two parents ({known!r} and {par!r}); "
                               "a hierarchy must be a tree")
            if level_of.setdefault(child, level) != level:
                raise JobError(f"{path}: line {line_no}: {child!r} starts at column {level + 1}, on an earlier "
                               f"line at column {level_of[child] + 1}; a value must start at the same level on "
                               "every line")
    return [Edge(n, p, level=level_of[n]) for n, p in parent_of.items()]


def edge_list_edges(path: Path, delimiter: str = ",") -> list[Edge]:
    """CSV with a header naming ``node`` and ``parent`` (and optionally ``label``)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f, delimiter=delimiter)
            missing = {"node", "parent"} - set(reader.fieldnames or [])
            if missing:
                raise JobError(f"{path}: an edge list needs columns node,parent (missing {', '.join(sorted(missing))})")
            return [Edge(r["node"], r["parent"] or None, r.get("label") or None) for r in reader]
    except OSError as err:
        raise JobError(f"cannot read hierarchy file {str(path)!r}: {err.strerror}") from err


def interval_edges(values: Sequence[float], *, width: float, levels: int | None, dyadic: bool,
                   lo: float | None = None, hi: float | None = None, name: str = "") -> list[Edge]:
    """Integer intervals over every integer in ``[lo, hi]`` (default: the observed min and
    max), so leaf counts measure the domain, not the sample.

    Level 1 holds closed intervals ``[a-b]`` of ``width`` values aligned at ``lo``; with
    ``dyadic`` each further level doubles the width (2, 4, 8, ... as in Fig. 3 of seed 004,
    or ARX's 5, 10, 20 for age) until one interval covers the domain, and that interval is
    the root. Without ``dyadic`` there is one interval level under a ``*`` root. ``levels``
    caps the number of interval levels (then ``*`` is the root). The last interval of a
    level is cut at ``hi``; an interval equal to its parent (``[88-90]`` under a cut
    ``[88-97]``) is that parent: the node stays, at its first level, and stands for its leaves
    at the next level too, so every level partitions the domain."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise InputError(f"hierarchy {name!r}: the column has no values to build intervals from")
    if not np.all(arr == np.round(arr)) or width != int(width) or width < 1:
        raise JobError(f"hierarchy.{name}: interval hierarchies need integer values and a whole width >= 1")
    base = int(lo if lo is not None else arr.min())
    top = int(hi if hi is not None else arr.max())
    if arr.min() < base or arr.max() > top:
        raise InputError(f"hierarchy {name!r}: values {arr.min():g}..{arr.max():g} fall outside "
                         f"lo..hi = {base}..{top}")
    if top - base > 1_000_000:
        raise JobError(f"hierarchy.{name}: the domain {base}..{top} is too wide for an interval hierarchy")

    def label(a: int, b: int) -> str:
        return f"[{a}-{b}]"

    edges: dict[str, Edge] = {str(v): Edge(str(v), None, str(v), v, v, 0) for v in range(base, top + 1)}
    current = {str(v): (v, v) for v in range(base, top + 1)}
    w, level = int(width), 0
    while len(current) > 1 and (levels is None or level < levels):
        level += 1
        nxt: dict[str, tuple[int, int]] = {}
        for node, (a, _) in current.items():
            pa = base + ((a - base) // w) * w
            pb = min(pa + w - 1, top)
            parent = label(pa, pb)
            nxt[parent] = (pa, pb)
            if parent == node:
                continue
            e = edges[node]
            edges[node] = Edge(node, parent, e.label, e.lo, e.hi, e.level)
            edges.setdefault(parent, Edge(parent, None, parent, pa, pb, level))
        current = nxt
        if not dyadic:
            break
        w *= 2
    if len(current) > 1:
        edges["*"] = Edge("*", None, "*", base, top, level + 1)
        for node in current:
            e = edges[node]
            edges[node] = Edge(node, "*", e.label, e.lo, e.hi, e.level)
    return list(edges.values())


def build(backend: Backend, specs: Iterable[HierarchySpec], *,
          values_for: Mapping[str, Sequence[tuple[tuple[str, ...], str]]] | None = None) -> None:
    """Build the scratch hierarchy tables for ``specs``.

    ``values_for`` maps the name of a hierarchy built from the data (interval, mask, date) to
    the ``(relation, column)`` pairs whose distinct values become its leaves: every column that
    uses it, so two QIs can share one hierarchy.
    """
    values_for = values_for or {}
    backend.write_table(EDGES, {"hierarchy": np.array([], dtype=str), "node": np.array([], dtype=str),
                                "parent": np.array([], dtype=str), "label": np.array([], dtype=str),
                                "lo": np.array([], dtype=float), "hi": np.array([], dtype=float),
                                "level": np.array([], dtype=float)})
    for spec in specs:
        if spec.type == "builtin":
            _load_builtin(backend, spec)
            continue
        if spec.type in ("mask", "date"):
            if spec.name not in values_for:
                raise JobError(f"hierarchy.{spec.name}: a {spec.type} hierarchy is built from the values of the "
                               "column that uses it; no input.qi column names it")
            (_mask_edges if spec.type == "mask" else _date_edges)(backend, spec, values_for[spec.name])
            continue
        if spec.type == "arx":
            edges = arx_edges(spec.path, spec.delimiter or ";")
        elif spec.type == "edges":
            if spec.derived_from is not None:    # e.g. a re-verification: the tables are derived first
                derive_omop(backend, spec.derived_from)
            edges = edge_list_edges(spec.path, spec.delimiter or ",") if spec.path else _edges_from_table(backend, spec)
        else:  # interval
            if spec.name not in values_for:
                raise JobError(f"hierarchy.{spec.name}: an interval hierarchy must be used by a numeric column")
            sources = values_for[spec.name]
            rows = backend.rows(f"hierarchy {spec.name}: values",
                                render("hierarchy/distinct_values.sql.j2", sources=sources))
            try:
                vals = [float(r[0]) for r in rows]
            except ValueError as err:
                raise InputError(f"hierarchy.{spec.name}: {_columns_hold(sources)} a non-numeric value ({err}); an "
                                 "interval hierarchy needs numbers") from err
            edges = interval_edges(vals, width=spec.width or 1, levels=spec.levels, dyadic=spec.dyadic,
                                   lo=spec.lo, hi=spec.hi, name=spec.name)
        _append_edges(backend, spec.name, edges)
    _refuse(backend.rows("hierarchy: shape", render("hierarchy/shape_errors.sql.j2", edges=EDGES)),
            "a hierarchy must be a single tree that lists each node once")
    backend.run("hierarchy: closure and nodes", render("hierarchy/build.sql.j2", edges=EDGES, node_table=NODES,
                                                        closure_table=CLOSURE, max_depth=MAX_DEPTH))
    _refuse(backend.rows("hierarchy: cycles", render("hierarchy/cycles.sql.j2", closure_table=CLOSURE,
                                                     max_depth=MAX_DEPTH)),
            f"a hierarchy must be a tree (at most {MAX_DEPTH} levels deep)")
    _refuse(backend.rows("hierarchy: levels check", render("hierarchy/level_errors.sql.j2", node_table=NODES)),
            "the levels of a hierarchy must grow from every node to its parent, from 0 at the leaves to the "
            "root's, so that every level partitions the leaves")
    backend.run("hierarchy: levels", render("hierarchy/levels.sql.j2", node_table=NODES, closure_table=CLOSURE,
                                            level_table=LEVELS))


def _refuse(problems: list[tuple[str, str, str]], rule: str) -> None:
    """One error for every ``(hierarchy, node, problem)`` a check found, each hierarchy named
    with all its offending nodes (the checks return at most 10 rows), so a steward fixes a file
    in one pass instead of one node per run."""
    if not problems:
        return
    by_hierarchy: dict[str, list[str]] = {}
    for hierarchy, node, problem in problems:
        by_hierarchy.setdefault(hierarchy, []).append(f"node {node!r} {problem}")
    raise JobError("; ".join(f"hierarchy.{h}: " + ", ".join(p) for h, p in by_hierarchy.items()) + f" — {rule}")


def _columns_hold(sources: Sequence[tuple[tuple[str, ...], str]]) -> str:
    """The columns a hierarchy is built from, for an error message: "column 'a' holds" or
    "columns 'a', 'b' hold"."""
    names = [repr(column) for _, column in sources]
    return f"column {names[0]} holds" if len(names) == 1 else f"columns {', '.join(names)} hold"


def _mask_edges(backend: Backend, spec: HierarchySpec, sources: Sequence[tuple[tuple[str, ...], str]]) -> None:
    """ARX's masking hierarchy: pad to ``length`` (default: the longest value, as ARX does), then
    mask one more character from the right per level (``hierarchy/mask_edges.sql.j2``). A value
    that cannot be padded to ``length``, or that holds the mask character (it could then equal
    a masked node), is refused by name before anything is built."""
    longest, n_long, too_long, n_masked, masked = backend.rows(f"hierarchy {spec.name}: values", render(
        "hierarchy/mask_values.sql.j2", sources=sources, width=spec.length, mask=spec.mask))[0]
    where = _columns_hold(sources)
    if n_long:
        raise InputError(f"hierarchy.{spec.name}.length = {spec.length}: {where} {n_long} longer "
                         f"value(s) ({', '.join(map(repr, too_long))}; the longest has {longest} characters)")
    if n_masked:
        raise InputError(f"hierarchy.{spec.name}: {where} {n_masked} value(s) with the mask "
                         f"character {spec.mask!r} ({', '.join(map(repr, masked))}); set mask to a character "
                         "the values do not use")
    width = spec.length or int(longest or 0)
    if width < 1:
        raise InputError(f"hierarchy.{spec.name}: {where} no value to mask")
    backend.run(f"hierarchy {spec.name}: mask", render(
        "hierarchy/mask_edges.sql.j2", target=EDGES, hierarchy=spec.name, sources=sources,
        width=width, padding=spec.padding, mask=spec.mask, align=spec.align))


def _date_edges(backend: Backend, spec: HierarchySpec, sources: Sequence[tuple[tuple[str, ...], str]]) -> None:
    """Day → month → year → decade → * above each value (``hierarchy/date_edges.sql.j2``).
    Values that are not dates are named; the day is a level only above timestamps (a date is
    its own day, and a node equal to its leaf would be its own parent)."""
    n_bad, bad, has_time = backend.rows(f"hierarchy {spec.name}: values", render(
        "hierarchy/date_values.sql.j2", sources=sources))[0]
    if n_bad:
        raise InputError(f"hierarchy.{spec.name}: {_columns_hold(sources)} {n_bad} value(s) that are not dates "
                         f"({', '.join(map(repr, bad))}); a date hierarchy needs a DATE or TIMESTAMP column "
                         "(YYYY-MM-DD values)")
    backend.run(f"hierarchy {spec.name}: dates", render(
        "hierarchy/date_edges.sql.j2", target=EDGES, hierarchy=spec.name, sources=sources,
        units=[u for u in spec.units if u != "day" or has_time]))


def _append_edges(backend: Backend, name: str, edges: list[Edge]) -> None:
    tmp = scratch("hier_edge_part")
    backend.write_table(tmp, {
        "hierarchy": np.array([name] * len(edges), dtype=object),
        "node": np.array([e.node for e in edges], dtype=object),
        "parent": np.array([e.parent for e in edges], dtype=object),
        "label": np.array([e.label for e in edges], dtype=object),
        "lo": np.array([np.nan if e.lo is None else e.lo for e in edges], dtype=float),
        "hi": np.array([np.nan if e.hi is None else e.hi for e in edges], dtype=float),
        "level": np.array([np.nan if e.level is None else e.level for e in edges], dtype=float),
    })
    backend.run(f"hierarchy {name}: append", render("hierarchy/append_edges.sql.j2", target=EDGES, source=tmp))


def _edges_from_table(backend: Backend, spec: HierarchySpec) -> list[Edge]:
    assert spec.table is not None
    # a job's "schema.table" is its parts; a derived hierarchy's scratch table is parts already
    relation = table_parts(spec.table) if isinstance(spec.table, str) else spec.table
    try:
        has_label = "label" in backend.columns(f"hierarchy {spec.name}: columns", relation)
    except AnonDuckError as err:
        raise InputError(f"hierarchy.{spec.name}.table = {spec.table!r}: no such table") from err
    rows = backend.rows(f"hierarchy {spec.name}: edges table",
                        render("hierarchy/edges_from_table.sql.j2", relation=relation, has_label=has_label))
    return [Edge(str(n), None if p is None else str(p), None if lab is None else str(lab)) for n, p, lab in rows]


def _load_builtin(backend: Backend, spec: HierarchySpec) -> None:
    assert spec.builtin is not None
    path = DATA_DIR / BUILTIN_FILES[spec.builtin]
    cut = spec.leaf_level or ICD_LEVELS[-1]
    if cut not in ICD_LEVELS[1:]:
        raise JobError(f"hierarchy.{spec.name}.leaf_level = {cut!r}: one of {', '.join(ICD_LEVELS[1:])}")
    keep = ICD_LEVELS[: ICD_LEVELS.index(cut) + 1]
    tree = scratch("hier_builtin")      # read by the engine's own reader, as an input file is
    backend.load_file(f"hierarchy {spec.name}: read built-in {spec.builtin}", tree, str(path), "csv",
                      ["node", "parent", "level_name", "label"])
    backend.run(f"hierarchy {spec.name}: built-in {spec.builtin}",
                render("hierarchy/load_builtin.sql.j2", target=EDGES, source=tree, hierarchy=spec.name,
                       levels=list(keep)))
    backend.run("hierarchy: drop built-in", render("release/drop_table.sql.j2", target=tree))


def read_builtin_rows(name: str) -> list[dict[str, str]]:
    """The built-in tree as dicts, for tools that want it outside SQL (e.g. data generators)."""
    with gzip.open(DATA_DIR / BUILTIN_FILES[name], "rt", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))
