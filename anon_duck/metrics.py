"""Utility metrics of a generalized release: NCP, discernibility, ARE of a count workload.

Each metric is one SQL aggregate (``sql/metrics/*.sql.j2``) that returns a handful of
numbers; Python only finishes them (a mean over queries, a ratio). No metric reads records
into Python.

A *generalized relation* follows the convention of the anonymizers: for every QI column
``c`` it has ``c`` (VARCHAR label); a numeric QI also has ``c__lo`` and ``c__hi`` (DOUBLE,
closed interval bounds, lo = hi for a single value); a categorical QI's label is a node of
its hierarchy. Hierarchies are the shared tables
``hier_node(hierarchy, node, parent, depth, is_leaf, n_leaves, lo, hi, label)`` and
``hier_closure(hierarchy, node, ancestor, distance)`` (reflexive), passed in by name.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .backend.base import Backend
from .argcheck import Relation, distinct_names, nonempty_name, show
from .errors import InputError
from .scratch import scratch
from .sqlrender import render


__all__ = ["ncp", "discernibility", "make_workload", "are"]


# ------------------------------------------------------------------------------------------
# NCP
# ------------------------------------------------------------------------------------------
def ncp(backend: Backend, *, relation: Relation, numeric: Sequence[tuple[str, float, float]],
        categorical: Sequence[tuple[str, str]], hier_node_relation: Relation,
        weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Normalized Certainty Penalty (seed 000, Definitions 3-4; spec rt_kkm §2.3).

    Per attribute: numeric ``(hi - lo) / (dom_hi - dom_lo)`` from ``c__lo``/``c__hi`` (0 when
    the domain is a single value; the domain bounds are given, usually the original data's
    min and max); categorical 0 for a leaf, else ``n_leaves(node) / n_leaves(root)``. Per
    record: ``sum_i w_i NCP_i`` with ``weights`` (default ``1 / #QIs`` each; when given it
    must name every QI). Returns ``{"ncp": mean over records, "ncp_sum": sum over records
    (NCP of the whole set as a cluster, Definition 4), "per_attribute": {col: mean NCP},
    "n_records": n, "weights": {col: w}}``; on an empty relation ``ncp`` and the
    per-attribute means are NaN.

    Raises InputError when a numeric bound is NULL or a categorical label is not a node of
    its hierarchy (naming the column and the number of rows), since either would silently
    drop the record's penalty.
    """
    num_cols = [nonempty_name("ncp", "numeric column", c) for c, _, _ in numeric]
    cat_cols = [nonempty_name("ncp", "categorical column", c) for c, _ in categorical]
    cols = num_cols + cat_cols
    if not cols:
        raise InputError("ncp: give at least one numeric or categorical QI")
    distinct_names("ncp", cols)
    w = _weights(cols, weights)
    params: dict[str, Any] = {}
    for i, (c, lo, hi) in enumerate(numeric):
        if lo is None or hi is None or not (math.isfinite(float(lo)) and math.isfinite(float(hi))) or hi < lo:
            raise InputError(f"ncp: domain of numeric column {c!r} must be finite with lo <= hi; got [{lo}, {hi}]")
        params |= {f"dom_lo_{i}": float(lo), f"dom_hi_{i}": float(hi), f"w_num_{i}": w[c]}
    for j, (c, h) in enumerate(categorical):
        params |= {f"hier_{j}": nonempty_name("ncp", f"hierarchy of {c!r}", h), f"w_cat_{j}": w[c]}
    row = backend.rows("metrics: NCP", render("metrics/ncp.sql.j2", relation=relation, numeric=num_cols,
                                              categorical=cat_cols, hier_node=hier_node_relation), params)[0]
    n_records, ncp_sum, ncp_mean = int(row[0]), float(row[1]), row[2]
    means = row[3:3 + len(cols)]
    missing = row[3 + len(cols):]
    for c, n_missing in zip(cols, missing):
        if n_missing:
            what = "a NULL interval bound" if c in num_cols else "a label that is not a node of its hierarchy"
            raise InputError(f"ncp: {n_missing} row(s) of {show(relation)} have {what} in column {c!r}")
    return {"ncp": _float(ncp_mean), "ncp_sum": ncp_sum, "n_records": n_records,
            "per_attribute": {c: _float(m) for c, m in zip(cols, means)}, "weights": w}


def _weights(cols: list[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return {c: 1.0 / len(cols) for c in cols}
    unknown = sorted(set(weights) - set(cols))
    missing = [c for c in cols if c not in weights]
    if unknown or missing:
        raise InputError(f"ncp: weights must name exactly the QIs; unknown {unknown}, missing {missing}")
    out = {c: float(weights[c]) for c in cols}
    bad = {c: v for c, v in out.items() if not (math.isfinite(v) and v >= 0)}
    if bad:
        raise InputError(f"ncp: weights must be finite and >= 0; got {bad}")
    return out


# ------------------------------------------------------------------------------------------
# Discernibility
# ------------------------------------------------------------------------------------------
def discernibility(backend: Backend, *, relation: Relation, qis: Sequence[str], k: int | None = None) -> dict[str, Any]:
    """Discernibility metric DM = sum over equivalence classes of |E|^2 (Bayardo & Agrawal
    2005) and the average class size C_avg = n / #classes (LeFevre et al. 2006), normalized
    as C_avg / k when ``k`` is given (1.0 is the ideal). Classes are the distinct QI tuples of
    the published relation; there is no suppression term, because suppressed records are
    not in it. Returns ``{"dm", "n_records", "n_classes", "c_avg", "c_avg_norm" (None without
    k), "min_class_size", "max_class_size"}``."""
    if isinstance(qis, str):
        raise InputError(f"discernibility: qis must be a list of column names, not the string {qis!r}")
    qis = [nonempty_name("discernibility", "qis", q) for q in qis]
    if not qis:
        raise InputError("discernibility: qis must name at least one column")
    distinct_names("discernibility", qis)
    if k is not None and (not isinstance(k, int) or k < 1):
        raise InputError(f"discernibility: k must be an integer >= 1; got {k!r}")
    n, n_classes, dm, lo, hi = backend.rows("metrics: discernibility",
                                            render("metrics/discernibility.sql.j2", relation=relation, qis=qis))[0]
    c_avg = n / n_classes if n_classes else float("nan")
    return {"dm": int(dm), "n_records": int(n), "n_classes": int(n_classes), "c_avg": c_avg,
            "c_avg_norm": (c_avg / k) if k is not None else None, "min_class_size": lo, "max_class_size": hi}


# ------------------------------------------------------------------------------------------
# ARE
# ------------------------------------------------------------------------------------------
def make_workload(backend: Backend, *, original_relation: Relation, numeric: Sequence[str],
                  categorical: Sequence[tuple[str, str]], n_queries: int = 100, qi_per_query: int = 2,
                  selectivity: float = 0.1, seed: int = 0, hier_closure_relation: Relation | None = None,
                  name: Relation | None = None) -> Relation:
    """Write a seeded count-query workload and return its table name.

    Each query draws one original record (uniformly: a distinct QI tuple with probability
    proportional to its count, spec rt_kkm §5.4) and ``qi_per_query`` distinct QIs
    (uniformly), and puts one predicate on each QI built from that record's value ``v``, so
    that every query matches at least one original record:

    * numeric ``c``: the closed range ``[floor(v - h), ceil(v + h)]`` with
      ``h = selectivity * (max - min) / 2`` over the data (``selectivity`` is the range width
      as a fraction of the domain; 0 gives point queries ``[v, v]``);
    * categorical ``c``: ``v`` itself or, uniformly, one of its ancestors below the root
      (from ``hier_closure_relation``); the root would match every record.

    Only aggregates leave the database: the frequency table of distinct QI tuples (records
    with a NULL QI are left out) and each categorical value's ancestors. The RNG is numpy's
    ``default_rng(seed)``. The table (``name``, default the run's scratch table
    ``_ad_are_workload``) is long format, one row per predicate:
    ``(query_id BIGINT, attr VARCHAR, qlo DOUBLE, qhi DOUBLE, node VARCHAR)``, with qlo/qhi
    NULL for categorical and node NULL for numeric predicates. ``hier_closure_relation``
    defaults to the shared closure table of :mod:`anon_duck.hierarchy`.
    """
    numeric = [nonempty_name("make_workload", "numeric column", c) for c in numeric]
    cat_cols = [nonempty_name("make_workload", "categorical column", c) for c, _ in categorical]
    attrs = numeric + cat_cols
    distinct_names("make_workload", attrs)
    if not isinstance(n_queries, int) or n_queries < 1:
        raise InputError(f"make_workload: n_queries must be an integer >= 1; got {n_queries!r}")
    if not isinstance(qi_per_query, int) or not 1 <= qi_per_query <= len(attrs):
        raise InputError(f"make_workload: qi_per_query must be between 1 and the number of QIs ({len(attrs)}); "
                         f"got {qi_per_query!r}")
    if not (math.isfinite(selectivity) and 0 <= selectivity <= 1):
        raise InputError(f"make_workload: selectivity must be in [0, 1]; got {selectivity!r}")
    if hier_closure_relation is None and categorical:
        from .hierarchy import CLOSURE  # the run's shared tables; imported late to keep metrics light
        hier_closure_relation = CLOSURE
    target = scratch("are_workload") if name is None else name

    tuples = backend.fetch("workload: QI tuples", render("metrics/qi_tuples.sql.j2", relation=original_relation,
                                                         numeric=numeric, categorical=cat_cols))
    counts = np.asarray(tuples["cnt"], dtype=float)
    if counts.size == 0:
        raise InputError(f"make_workload: {show(original_relation)} has no record without a NULL QI")
    columns = [np.asarray(tuples[f"num_{i}"], dtype=float) for i in range(len(numeric))] + \
              [np.asarray(tuples[f"cat_{j}"], dtype=object) for j in range(len(cat_cols))]
    half = [selectivity * (col.max() - col.min()) / 2 for col in columns[:len(numeric)]]
    ancestors: list[dict[str, list[str]]] = []
    for c, h in categorical:
        rows = backend.rows(f"workload: ancestors of {c}", render("metrics/value_ancestors.sql.j2",
                                                                 relation=original_relation, column=c,
                                                                 hier_closure=hier_closure_relation),
                            {"hierarchy": h})
        # the value itself and its ancestors, the root left out (unless the value is the root)
        ancestors.append({v: (list(a[:-1]) if len(a) > 1 else [v]) for v, a in rows})

    rng = np.random.default_rng(seed)
    records = rng.choice(counts.size, size=n_queries, p=counts / counts.sum())
    query_id, attr, qlo, qhi, node = [], [], [], [], []
    for q, rec in enumerate(records):
        for a in sorted(rng.choice(len(attrs), size=qi_per_query, replace=False)):
            a = int(a)
            query_id.append(q)
            attr.append(attrs[a])
            if a < len(numeric):
                v = float(columns[a][rec])
                qlo.append(float(math.floor(v - half[a])))
                qhi.append(float(math.ceil(v + half[a])))
                node.append(None)
            else:
                options = ancestors[a - len(numeric)][columns[a][rec]]
                node.append(str(options[int(rng.integers(len(options)))]))
                qlo.append(math.nan)     # numpy NaN arrives in DuckDB as NULL
                qhi.append(math.nan)
    backend.write_table(target, {"query_id": np.array(query_id, dtype=np.int64),
                                 "attr": np.array(attr, dtype=object),
                                 "qlo": np.array(qlo, dtype=float), "qhi": np.array(qhi, dtype=float),
                                 "node": np.array(node, dtype=object)})
    return target


def are(backend: Backend, *, workload: Relation, original_relation: Relation, generalized_relation: Relation,
        numeric: Sequence[str], categorical: Sequence[tuple[str, str]], hier_closure_relation: Relation,
        hier_node_relation: Relation) -> dict[str, Any]:
    """Average Relative Error of a count-query workload (seed 000, Definition 7):
    ``ARE = mean over queries with actual > 0 of |estimate - actual| / actual``.

    ``actual`` counts the original rows matching every predicate of the query; ``estimate``
    is the expected count on the generalized relation under the uniform assumption (spec
    rt_kkm §2.5, A25): the sum over records of the product over the query's predicates of
    P(match), with

    * numeric ``[lo, hi]`` vs ``[qlo, qhi]``: ``|[lo,hi] ∩ [qlo,qhi] ∩ Z| / |[lo,hi] ∩ Z|``.
      Numeric QIs are taken to be integer-valued (ages, years: what the hierarchies
      generalize), so an interval stands for the integers in it; ``hi - lo + 1`` is its size
      for integer bounds. A single value (lo = hi) matches iff it lies in the range, integer
      or not; an interval holding no integer falls back to the length ratio.
    * categorical node vs query node: ``|leaves(node) ∩ leaves(qnode)| / |leaves(node)|``
      through ``hier_closure`` (1 under the query node, n_leaves(qnode)/n_leaves(node) above
      it, 0 elsewhere).

    The original relation's categorical values are expected to be leaves (a value missing from
    the hierarchy matches no categorical predicate). One SQL statement answers all queries.
    Returns ``{"are", "n_queries", "n_used" (queries with actual > 0), "per_query": [{"query_id",
    "actual", "estimate", "rel_error"}]}``; ``are`` is NaN when no query has actual > 0.
    """
    numeric = [nonempty_name("are", "numeric column", c) for c in numeric]
    cat_cols = [nonempty_name("are", "categorical column", c) for c, _ in categorical]
    if not numeric and not cat_cols:
        raise InputError("are: give at least one numeric or categorical QI")
    distinct_names("are", numeric + cat_cols)
    params: dict[str, Any] = {"attrs": numeric + cat_cols}
    params |= {f"num_attr_{i}": c for i, c in enumerate(numeric)}
    for j, (c, h) in enumerate(categorical):
        params |= {f"cat_attr_{j}": c, f"hier_{j}": nonempty_name("are", f"hierarchy of {c!r}", h)}
    f = backend.fetch("metrics: ARE workload", render(
        "metrics/are_counts.sql.j2", workload=workload, original_relation=original_relation,
        generalized_relation=generalized_relation, hier_closure=hier_closure_relation, hier_node=hier_node_relation,
        numeric=numeric, categorical=cat_cols), params)
    unknown = int(np.asarray(f["n_unknown"]).sum()) if len(f["query_id"]) else 0
    if unknown:
        raise InputError(f"are: {unknown} predicate(s) of workload {show(workload)} are on columns that are not "
                         f"among the QIs given ({', '.join(numeric + cat_cols)})")
    actual = np.asarray(f["actual"], dtype=float)
    estimate = np.asarray(f["estimate"], dtype=float)
    used = actual > 0
    rel = np.full(actual.shape, np.nan)
    rel[used] = np.abs(estimate[used] - actual[used]) / actual[used]
    per_query = [{"query_id": int(q), "actual": float(a), "estimate": float(e), "rel_error": _float(r)}
                 for q, a, e, r in zip(f["query_id"], actual, estimate, rel)]
    return {"are": float(rel[used].mean()) if used.any() else float("nan"), "n_queries": int(actual.size),
            "n_used": int(used.sum()), "per_query": per_query}


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------




def _float(v: Any) -> float:
    return float("nan") if v is None else float(v)

