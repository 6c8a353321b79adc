"""Independent verifiers: each privacy model checked on the released relation only.

A verifier is one SQL query (``sql/verify/<model>_violations.sql.j2``) that returns the
offending groups; zero rows means the release passes (dbt-utils' generic tests work the same
way). It never reuses a number the anonymizer computed and never imports a method, so a bug
in an anonymizer (wrong label mapping, a class merged twice, ...) shows up here as evidence:
the violating rows themselves.

Every verifier returns a :class:`CheckResult`. ``n_violations`` is the total number of
violating rows, counted in SQL before ``LIMIT`` (k-anonymity and l-diversity count them in
the same statement that summarizes the classes and checks NULLs, so a passing release costs
one aggregation: ``sql/lib/one_pass_verdict.jinja``; (k, k^m) likewise, by a window over its
violations beside its summary; the others by a window over the result);
``violations`` holds the first ``limit`` of them (as ``{column: value}`` dicts, QI values
under their own column names); ``detail`` holds the summary a reader wants next to a pass
(e.g. the smallest class).

Conventions shared by all verifiers:

* A relation is a name (``"release"``) or a tuple of name parts (``("main", "release")``);
  the parts are quoted one by one and never split on dots.
* Every column name is quoted (sqlglot), so any name a table can have works.
* k-anonymity, l-diversity and t-closeness read a NULL QI as a value of its own (it is what
  GROUP BY does, in every engine, and what a reader of the release sees: the NULL rows form a
  class that must itself be large and diverse enough), and a NULL sensitive value as one value
  of its own ("unknown"); ``detail["nulls"]``, present when there are any, counts the NULL rows
  per column. The dbt tests
  render the same macros, so both paths agree (docs/verifiers.md, "NULLs"). The other
  verifiers join on ids and codes, where a NULL would vanish from the join: NULL in a column
  they group or join on raises :class:`~anon_duck.errors.InputError` naming the column and the
  number of NULL rows.
* Output columns are aliased positionally inside SQL (``q_0``, ``q_1``, ...), so a QI called
  ``n`` or ``class_size`` cannot collide with the verifier's own columns in SQL. In the
  Python dicts the QIs get their real names back; a QI whose name equals one of the
  verifier's reserved keys (listed per function) is refused with an InputError.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

from ..backend.base import Backend
from ..argcheck import Relation, column_names, distinct_names, nonempty_name, positive_int, show
from ..errors import InputError
from ..inputs import NUMERIC_TYPES
from ..sqlrender import render


# The one list of the generic verifiers: anon_duck.verifiers re-exports exactly these (before,
# each module kept its own list, and this one had lost ``suppression``).
__all__ = ["CheckResult", "k_anonymity", "suppression", "l_diversity", "km_anonymity", "kkm_anonymity",
           "lkc_privacy", "lkc_groups", "lkc_subsets", "refuse_nulls", "t_closeness", "is_numeric_type", "min_count",
           "sliced_rows", "id_ranges"]


@dataclass
class CheckResult:
    """Outcome of one verifier: ``passed`` iff ``n_violations == 0``. ``violations`` holds at
    most ``limit`` rows (the evidence), ``n_violations`` counts all of them."""

    name: str
    passed: bool
    n_violations: int
    violations: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------
# k-anonymity and l-diversity
# ------------------------------------------------------------------------------------------
def k_anonymity(backend: Backend, *, relation: Relation, qis: Sequence[str], k: int,
                limit: int = 20) -> CheckResult:
    """k-anonymity: every equivalence class of the QI tuple has at least ``k`` rows.

    Violations are the classes with fewer than ``k`` rows, smallest first:
    ``{<qi>: value, ..., "class_size": n}``. A NULL QI is a value of its own (see the module
    docstring). ``detail``: n_rows, n_classes, min_class_size, max_class_size, nulls, k.
    Reserved key: ``class_size``.
    """
    name = "k_anonymity"
    qis = column_names(name, "qis", qis)
    positive_int(name, "k", k)
    _reserved(name, qis, ("class_size",))
    summary, rows = _one_pass(backend, name, relation, qis, limit, "verify/k_anonymity_violations.sql.j2", k=int(k))
    violations = [{**_qi_dict(qis, r), "class_size": r[len(qis)]} for r in rows]
    return _counted(name, summary, violations, limit, {"k": int(k)})


def suppression(backend: Backend, *, relation: Relation, original: Relation, limit: float) -> CheckResult:
    """Record suppression within its limit: the release leaves out at most
    ``floor(limit * n)`` of the ``n`` input records (ARX's suppression limit), and never adds
    one. One violation ``{"n_input", "n_release", "suppressed", "allowed"}`` when it does not
    hold. ``detail``: the same numbers and the limit."""
    name = "suppression"
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 <= limit <= 1:
        raise InputError(f"{name}: limit must be a share of records in [0, 1]; got {limit!r}")
    n_input, n_release = backend.rows(f"verify {name}", render("verify/suppressed_rows.sql.j2", relation=relation,
                                                               original=original))[0]
    allowed = int(math.floor(limit * int(n_input) + 1e-9))
    detail = {"n_input": int(n_input), "n_release": int(n_release), "suppressed": int(n_input) - int(n_release),
              "allowed": allowed}
    ok = 0 <= detail["suppressed"] <= allowed
    return CheckResult(name, ok, 0 if ok else 1, [] if ok else [dict(detail)], {**detail, "limit": float(limit)})


def min_count(backend: Backend, *, relation: Relation, key: str, count: str, min_count: int,
              limit: int = 20) -> CheckResult:
    """Small-cell suppression of a table of counts: every row whose ``key`` is not NULL has
    ``count >= min_count`` or a NULL count (a suppressed cell); rarer subjects are counted only
    merged under a NULL key. The gate
    of ``<release>_retention`` (key ``code``, count ``persons_input``), whose input counts no
    privacy model covers. Violations, fewest first: ``{<key>: value, <count>: n}``.
    ``detail``: min_count."""
    name = "min_count"
    key, count = column_names(name, "key and count", [key, count])
    positive_int(name, "min_count", min_count)
    rows = backend.rows(f"verify {name}", render("verify/min_count_violations.sql.j2", relation=relation, key=key,
                                                 count=count, min_count=int(min_count)),
                        {"limit": _sql_limit(limit)})
    return _result(name, rows, [{key: r[0], count: int(r[1])} for r in rows], limit, {"min_count": int(min_count)})


L_KINDS = ("distinct", "entropy", "recursive")


def l_diversity(backend: Backend, *, relation: Relation, qis: Sequence[str], sensitive: str, l: int,
                kind: str = "distinct", c: float | None = None, limit: int = 20) -> CheckResult:
    """l-diversity (Machanavajjhala et al. 2007) of ``sensitive`` in every equivalence class:

    * ``kind="distinct"``: at least ``l`` distinct values;
    * ``kind="entropy"``: entropy ``-sum p ln p >= ln l`` (1e-9 of slack for rounding);
    * ``kind="recursive"`` with ``c > 0``: recursive (c, l)-diversity, ``r_1 < c (r_l + ... +
      r_m)`` over the class's value counts in descending order.

    A NULL sensitive value counts as one value of its own, a NULL QI too (module docstring).
    Violations are the violating classes, least diverse first:
    ``{<qi>: value, ..., "class_size": n, "n_distinct": d, "entropy": e}``. ``detail``:
    n_rows, n_classes, min_class_size, max_class_size, min_distinct_sensitive, min_entropy,
    nulls, kind, l (and c). Reserved keys: ``class_size``, ``n_distinct``, ``entropy``.
    """
    name = "l_diversity"
    qis = column_names(name, "qis", qis)
    sensitive = nonempty_name(name, "sensitive", sensitive)
    positive_int(name, "l", l)
    if kind not in L_KINDS:
        raise InputError(f"{name}: kind must be one of {', '.join(L_KINDS)}; got {kind!r}")
    if kind == "recursive":
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not c > 0 or not math.isfinite(c):
            raise InputError(f"{name}: recursive (c, l)-diversity needs a number c > 0; got c = {c!r}")
    elif c is not None:
        raise InputError(f"{name}: c is a parameter of kind 'recursive' only; got kind {kind!r} with c = {c!r}")
    if sensitive in qis:
        raise InputError(f"{name}: the sensitive column {sensitive!r} is also a QI")
    _reserved(name, qis, ("class_size", "n_distinct", "entropy"))
    summary, rows = _one_pass(backend, name, relation, qis, limit, "verify/l_diversity_violations.sql.j2",
                              extra=("min_distinct_sensitive", "min_entropy"), sensitive_col=sensitive,
                              sensitive=sensitive, l=int(l),
                              kind=kind, c=None if c is None else float(c))
    n = len(qis)
    violations = [{**_qi_dict(qis, r), "class_size": r[n], "n_distinct": r[n + 1], "entropy": _rounded(r[n + 2])}
                  for r in rows]
    summary["min_entropy"] = _rounded(summary["min_entropy"])
    extra = {"kind": kind, "l": int(l)} | ({"c": float(c)} if kind == "recursive" else {})
    return _counted(name, summary, violations, limit, extra)


def t_closeness(backend: Backend, *, relation: Relation, qis: Sequence[str], sensitive: str, t: float,
                ordered: bool | None = None, reference: Relation | None = None, limit: int = 20) -> CheckResult:
    """t-closeness (Li, Li, Venkatasubramanian 2007): in every equivalence class the Earth
    Mover's Distance between the class's distribution of ``sensitive`` and the reference
    distribution is at most ``t`` (1e-9 of slack for rounding).

    The ground distance follows the sensitive attribute's kind: ``ordered=False`` is the equal
    distance of categorical values (EMD = half the L1 distance); ``ordered=True`` the ordered
    distance of numeric values (EMD = ``1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)|`` over the
    reference's ``m`` distinct values in ascending order). ``ordered=None`` (the default) picks
    ordered when the column's type in ``relation`` is numeric. The reference distribution is
    that of ``reference`` (e.g. the input of a release that suppressed records), by default of
    ``relation`` itself. A NULL sensitive value is one value of its own (ordered: after all the
    others), a NULL QI too (module docstring).

    Violations are the violating classes, farthest first: ``{<qi>: value, ...,
    "class_size": n, "emd": d}``. ``detail``: n_rows, n_classes, min_class_size,
    max_class_size, max_emd, nulls, t, ordered. Reserved keys: ``class_size``, ``emd``.
    """
    name = "t_closeness"
    qis = column_names(name, "qis", qis)
    sensitive = nonempty_name(name, "sensitive", sensitive)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 1:
        raise InputError(f"{name}: t must be a number in [0, 1]; got {t!r}")
    if sensitive in qis:
        raise InputError(f"{name}: the sensitive column {sensitive!r} is also a QI")
    _reserved(name, qis, ("class_size", "emd"))
    if ordered is None:
        ordered = is_numeric_type(backend.columns(f"verify {name}: column types", relation).get(sensitive, ""))
    summary, rows = _one_pass(backend, name, relation, qis, limit, "verify/t_closeness_violations.sql.j2",
                              extra=("max_emd",), sensitive=sensitive, t=float(t), ordered=bool(ordered),
                              reference=reference)
    n = len(qis)
    violations = [{**_qi_dict(qis, r), "class_size": r[n], "emd": _rounded(r[n + 1])} for r in rows]
    summary["max_emd"] = _rounded(summary["max_emd"])
    return _counted(name, summary, violations, limit, {"t": float(t), "ordered": bool(ordered)})


def _rounded(value: float | None) -> float | None:
    """An entropy or EMD as reported: to 12 decimals, so that engines that add the same terms in
    another order report the same number (the verdict itself is decided in SQL, with 1e-9 of
    slack)."""
    return None if value is None else round(float(value), 12)


def is_numeric_type(sql_type: str) -> bool:
    """Whether a column type (as the backend names it) holds numbers: t-closeness then measures
    the ordered distance between values, as Li et al. do for numeric attributes."""
    head = sql_type.upper().split("(")[0].strip()
    return head in NUMERIC_TYPES or head == "DECIMAL"


# ------------------------------------------------------------------------------------------
# k^m-anonymity and (k, k^m)-anonymity (set-valued data)
# ------------------------------------------------------------------------------------------
def km_anonymity(backend: Backend, *, relation: Relation, id_col: str, code_col: str, k: int, m: int,
                 group_cols: Sequence[str] = (), limit: int = 20) -> CheckResult:
    """k^m-anonymity (Terrovitis et al. 2008) of long-format set-valued data, per group.

    ``relation`` has one row per (record id, code), plus optional ``group_cols`` (e.g. a
    cluster or equivalence-class id, repeated on each of the record's rows). A record is a
    distinct id; its itemsets are the sets of 1..m of its distinct codes. Every itemset that
    occurs must be contained in at least ``k`` records of the same group; with no group
    columns the whole relation is one group.

    All violating itemsets are reported (not only the minimal ones, although every superset
    of a violating itemset that occurs is itself violating):
    ``{<group col>: value, ..., "size": s, "items": [sorted codes], "support": n}``. NULL ids,
    codes or group values raise InputError. ``detail``: n_rows, n_records, k, m. Reserved
    keys: ``size``, ``items``, ``support``.
    """
    name = "km_anonymity"
    id_col, code_col = nonempty_name(name, "id_col", id_col), nonempty_name(name, "code_col", code_col)
    group_cols = column_names(name, "group_cols", group_cols, allow_empty=True)
    positive_int(name, "k", k)
    positive_int(name, "m", m)
    distinct_names(name, [id_col, code_col, *group_cols])
    _reserved(name, group_cols, ("size", "items", "support"))
    n_rows, n_records, longest = _record_profile(backend, name, relation, id_col, [code_col, *group_cols])
    m_eff = _itemset_bound(m, longest)
    rows = backend.rows(f"verify {name}", render("verify/km_anonymity_violations.sql.j2", relation=relation,
                                                 id_col=id_col, code_col=code_col, group_cols=group_cols, k=int(k),
                                                 m=m_eff),
                        {"limit": _sql_limit(limit)})
    g = len(group_cols)
    violations = [{**_qi_dict(group_cols, r), "size": r[g], "items": _items(r, g + 1, r[g]), "support": r[g + 1 + m_eff]}
                  for r in rows]
    return _result(name, rows, violations, limit,
                   {"n_rows": n_rows, "n_records": n_records, "k": int(k), "m": int(m)})


def kkm_anonymity(backend: Backend, *, relation: Relation, qis: Sequence[str], codes_relation: Relation,
                  id_col: str, code_col: str, k: int, m: int, limit: int = 20) -> CheckResult:
    """(k, k^m)-anonymity (seed 000, Definition 1) through its two sufficient conditions.

    ``relation`` has one row per published record: ``id_col`` and the generalized QIs; a
    class is a distinct generalized QI tuple. ``codes_relation`` is long format
    ``(id_col, code_col)``; records are joined to their class by id (codes of ids that are not
    in ``relation`` are ignored; a record without codes still counts towards its class).

    * kind ``'class'`` (Condition 1): a class with fewer than ``k`` records;
    * kind ``'itemset'`` (Condition 2): inside a class, an itemset of 1..m distinct codes that
      occurs in fewer than ``k`` of the class's records. Only classes that pass Condition 1
      are searched: in a smaller class every itemset fails trivially, and listing them all
      would bury the evidence. So ``passed`` is exact, and each failing class shows up either
      as one 'class' row or through its rare itemsets.

    Violations: ``{"kind", <qi>: value, ..., "class_size", "size", "items", "support"}``
    (``size``/``items``/``support`` are None for ``'class'`` rows). NULL QIs, ids or codes and
    duplicate ids in ``relation`` raise InputError. ``detail``: n_records, n_classes,
    min_class_size, max_class_size, k, m.

    Up to m = 2 one statement answers everything (verdict, class summary, NULL and duplicate-id
    checks, the first ``limit`` violations): the records' rows, NULLs and ids are counted off
    the check's own grouping of the records, the codes' NULLs off their statistics. Beyond
    m = 2 the longest record is asked first, since the itemset size it bounds shapes the query.
    Reserved keys: ``kind``, ``class_size``, ``size``, ``items``, ``support``.
    """
    name = "kkm_anonymity"
    qis = column_names(name, "qis", qis)
    id_col, code_col = nonempty_name(name, "id_col", id_col), nonempty_name(name, "code_col", code_col)
    positive_int(name, "k", k)
    positive_int(name, "m", m)
    if id_col in qis:
        raise InputError(f"{name}: the id column {id_col!r} is also a QI")
    _reserved(name, qis, ("kind", "class_size", "size", "items", "support"))
    m_eff = int(m) if int(m) <= 2 else _itemset_bound(m, _longest_record(backend, name, codes_relation, id_col))
    rows = backend.rows(f"verify {name}", render("verify/kkm_anonymity_violations.sql.j2", relation=relation, qis=qis,
                                                 codes_relation=codes_relation, id_col=id_col, code_col=code_col,
                                                 k=int(k), m=m_eff),
                        {"limit": _sql_limit(limit)})
    n = len(qis)
    head = rows[0]
    # head: n_rows, n_records, id and QI NULLs, codes' id and code NULLs, n_classes, min, max, then the listing
    n_rows, n_records = int(head[0]), int(head[1])
    _raise_on_nulls(name, relation, dict(zip([id_col, *qis], head[2:3 + n])))
    if n_records != n_rows:
        raise InputError(f"{name}: {n_rows - n_records} duplicate value(s) in id column {id_col!r} of the "
                         "record relation; it must hold one row per record")
    _raise_on_nulls(name, codes_relation, dict(zip([id_col, code_col], head[3 + n:5 + n])))
    n_classes, lo, hi = head[5 + n:8 + n]
    listed = [r[8 + n:] for r in rows] if head[-1] is not None else []
    violations = [{"kind": r[0], **_qi_dict(qis, r[1:]), "class_size": r[n + 1], "size": r[n + 2],
                   "items": None if r[n + 2] is None else _items(r, n + 3, r[n + 2]), "support": r[n + 3 + m_eff]}
                  for r in listed]
    detail = {"n_records": n_rows, "n_classes": int(n_classes), "min_class_size": lo, "max_class_size": hi,
              "k": int(k), "m": int(m)}
    return _result(name, listed, violations, limit, detail)


# ------------------------------------------------------------------------------------------
# LKC-privacy
# ------------------------------------------------------------------------------------------
def lkc_privacy(backend: Backend, *, relation: Relation, qis: Sequence[str], sensitive: str | None,
                sensitive_values: Sequence[Any] | None = None, L: int, K: int, C: float | Fraction | str,
                max_sets: int = 256, paranoid: bool = False, limit: int = 20) -> CheckResult:
    """LKC-privacy (seed 003, Definition 3.1) of a released relation.

    For every qid over at most ``L`` QIs: ``|T[qid]| >= K`` and, for every sensitive value
    ``s`` in ``sensitive_values`` (None = every value of ``sensitive``; an empty list, or
    ``sensitive=None``, checks only K), ``|T[qid ∧ s]| / |T[qid]| <= C``.

    Which subsets are checked (spec §2.3): by default every subset of size
    ``min(L, |active|)`` of the *active* QIs, those with more than one distinct value in the
    relation (counted in SQL first). A constant column never splits a group, and a group over
    a smaller qid is a disjoint union of groups over its supersets, so this is exact. With
    ``paranoid=True`` every subset of every size 1..L of all QIs is checked instead: slower,
    and used by the tests to cross-check the reduction.

    The subsets become ``GROUP BY GROUPING SETS``, at most ``max_sets`` per statement:
    DuckDB's peak memory grows by about 2 MB per grouping set in one statement (spec §7.3:
    ~0.6 GB at 250 sets, out of memory at 18,564), so large checks run as several statements
    whose violations are concatenated here. C is compared exactly, in 128-bit integers:
    ``n_s * den > num * n`` with ``C = num/den``; a float C is read as the simplest fraction
    that rounds to it (``0.3`` is 3/10 and ``1/3`` is 1/3, not the binary doubles next to
    them); ``C`` may also be a Fraction or a string like ``"1/3"``.

    Violations: ``{"subset": [qi names], "qid": {qi: value}, "n", "sensitive_value", "n_s",
    "conf", "reason"}`` with reason ``'K'`` (then sensitive_value/n_s/conf are None) or
    ``'C'``. NULL QIs or sensitive values raise InputError. Values of ``sensitive_values`` are
    matched against the column's values cast to VARCHAR, and ``sensitive_value`` is reported
    as that text (so one list works for any column type). ``detail``: L, K, C (as text),
    active_qis, subset sizes, n_subsets, n_statements.
    """
    name = "lkc_privacy"
    qis = column_names(name, "qis", qis)
    if not isinstance(L, int) or L < 1:
        raise InputError(f"{name}: L must be an integer >= 1; got {L!r}")
    positive_int(name, "K", K)
    positive_int(name, "max_sets", max_sets)
    _sql_limit(limit)
    c = _fraction(name, C)
    sensitive, values = _lkc_sensitive(name, qis, sensitive, sensitive_values)
    n_rows, sets, active = _lkc_sets(backend, name, relation, qis, sensitive, L, paranoid)
    detail = {"L": L, "K": int(K), "C": str(c), "active_qis": active, "paranoid": paranoid,
              "subset_sizes": sorted({len(s) for s in sets}), "n_subsets": len(sets), "n_statements": 0,
              "n_rows": n_rows}
    if n_rows == 0:
        return CheckResult(name, True, 0, [], detail)
    total, violations = 0, []
    for chunk in _chunks(sets, max_sets):
        remaining = max(limit - len(violations), 0)
        rows = backend.rows(f"verify {name} ({len(chunk)} grouping sets)",
                            render("verify/lkc_violations.sql.j2", relation=relation, qis=qis, sensitive=sensitive,
                                   sensitive_values=values, K=int(K), c_num=c.numerator, c_den=c.denominator,
                                   sets=chunk),
                            {"limit": _sql_limit(remaining)})
        detail["n_statements"] += 1
        total += rows[0][-1] if rows else 0
        violations += [_lkc_violation(qis, r) for r in rows[:remaining]]
    return CheckResult(name, total == 0, int(total), violations, detail)


def lkc_groups(backend: Backend, *, relation: Relation, qis: Sequence[str], sensitive: str | None,
               sensitive_values: Sequence[Any] | None = None, L: int, max_sets: int = 256,
               paranoid: bool = False) -> list[dict[str, Any]]:
    """Every group that :func:`lkc_privacy` checks (same subsets, same chunking), with its
    size: ``{"subset", "qid", "n", "max_n_s", "max_conf"}``, where ``max_n_s`` is the largest
    count of a value of S in the group (0 if none occurs). This is the evidence behind a pass,
    e.g. the 12 size-2 groups of seed 003's Table 2 (spec lkc_privacy §4.4); it returns every
    group, so use it on small relations or for debugging."""
    name = "lkc_groups"
    qis = column_names(name, "qis", qis)
    if not isinstance(L, int) or L < 1:
        raise InputError(f"{name}: L must be an integer >= 1; got {L!r}")
    positive_int(name, "max_sets", max_sets)
    sensitive, values = _lkc_sensitive(name, qis, sensitive, sensitive_values)
    n_rows, sets, _ = _lkc_sets(backend, name, relation, qis, sensitive, L, paranoid)
    if n_rows == 0:
        return []
    out = []
    for chunk in _chunks(sets, max_sets):
        rows = backend.rows(f"verify {name} ({len(chunk)} grouping sets)",
                            render("verify/lkc_groups.sql.j2", relation=relation, qis=qis, sensitive=sensitive,
                                   sensitive_values=values, sets=chunk))
        n = len(qis)
        for r in rows:
            subset = _gid_subset(qis, r[0])
            out.append({"subset": subset, "qid": {q: r[1 + qis.index(q)] for q in subset},
                        "n": r[n + 1], "max_n_s": r[n + 2], "max_conf": r[n + 3]})
    return out


def lkc_subsets(qis: Sequence[str], active: Sequence[str], L: int, paranoid: bool) -> list[tuple[str, ...]]:
    """The QI subsets LKC-privacy must check (spec §2.3): all ``min(L, |active|)``-subsets
    of the active QIs (the empty subset, i.e. the whole table, when none is active), or,
    when ``paranoid``, every subset of size 1..min(L, |qis|) of all QIs."""
    if paranoid:
        return [s for size in range(1, min(L, len(qis)) + 1) for s in itertools.combinations(qis, size)]
    return list(itertools.combinations(list(active), min(L, len(active))))


def _lkc_sensitive(name: str, qis: list[str], sensitive: str | None,
                   sensitive_values: Sequence[Any] | None) -> tuple[str | None, list[str] | None]:
    """The sensitive column to render (None = only the K condition) and the values of S as
    text (None = every value)."""
    if sensitive is None:
        return None, None
    sensitive = nonempty_name(name, "sensitive", sensitive)
    if sensitive in qis:
        raise InputError(f"{name}: the sensitive column {sensitive!r} is also a QI")
    if sensitive_values is None:
        return sensitive, None
    if isinstance(sensitive_values, (str, bytes)):
        raise InputError(f"{name}: sensitive_values must be a list of values, not the string {sensitive_values!r}")
    values = [str(v) for v in sensitive_values]
    if not values:
        return None, None
    return sensitive, values


def _lkc_sets(backend: Backend, name: str, relation: Relation, qis: list[str], sensitive: str | None, L: int,
              paranoid: bool) -> tuple[int, list[tuple[str, ...]], list[str]]:
    """Refuse NULLs, find the QIs with two or more values in SQL, and pick the subsets to check."""
    n_rows, _, varies = refuse_nulls(backend, name, relation, [*qis, *([sensitive] if sensitive else [])],
                                      varying=qis)
    active = [q for q in qis if varies[q]]
    return n_rows, lkc_subsets(qis, active, L, paranoid), active


def _lkc_violation(qis: list[str], r: tuple) -> dict[str, Any]:
    n = len(qis)
    subset = _gid_subset(qis, r[0])
    # r: gid, q_0..q_{n-1}, n, s, n_s, reason, conf, n_violations
    return {"subset": subset, "qid": {q: r[1 + qis.index(q)] for q in subset}, "n": r[n + 1],
            "sensitive_value": r[n + 2], "n_s": r[n + 3], "conf": r[n + 5], "reason": r[n + 4]}


def _gid_subset(qis: list[str], gid: int) -> list[str]:
    """grouping_id(q_0, .., q_{n-1}) sets bit n-1-i when q_i is rolled up."""
    n = len(qis)
    return [q for i, q in enumerate(qis) if not (int(gid) >> (n - 1 - i)) & 1]


def _fraction(name: str, C: Any) -> Fraction:
    """C as an exact fraction. A float is read as the simplest fraction that rounds to it
    (0.3 -> 3/10, 1/3 -> 1/3), not as the binary value just below or above it, so a share of
    exactly C passes whichever way the user wrote C."""
    try:
        if isinstance(C, float):
            if not math.isfinite(C):
                raise ValueError(C)
            exact = Fraction(C)
            c = next(f for f in (exact.limit_denominator(10 ** d) for d in range(1, 18)) if float(f) == C)
        else:
            c = Fraction(C) if isinstance(C, (int, Fraction)) else Fraction(str(C))
    except (ValueError, ZeroDivisionError, StopIteration, TypeError) as err:
        raise InputError(f"{name}: C must be a number in (0, 1]; got {C!r}") from err
    if not 0 < c <= 1:
        raise InputError(f"{name}: C must be in (0, 1]; got {C!r}")
    return c


def _record_profile(backend: Backend, name: str, relation: Relation, id_col: str,
                    columns: list[str]) -> tuple[int, int, int]:
    """One GROUP BY over the record id: refuse NULL ids and NULLs in ``columns`` (InputError
    naming the first such column, id first), and return (rows, distinct ids, the most rows of
    one record, which bounds the items of its itemsets)."""
    row = backend.rows(f"verify {name}: record profile", render(
        "verify/record_profile.sql.j2", relation=relation, id_col=id_col, columns=columns))[0]
    _raise_on_nulls(name, relation, dict(zip([id_col, *columns], row[2:3 + len(columns)])))
    return int(row[0]), int(row[1]), int(row[-1])


def _longest_record(backend: Backend, name: str, relation: Relation, id_col: str) -> int:
    """The most rows of one record of a long relation (one GROUP BY over the id): what bounds the
    itemsets' size when m > 2, asked before the check because it shapes the check's query. NULLs
    are left to the check, which reports them."""
    return int(backend.rows(f"verify {name}: longest record", render(
        "verify/record_profile.sql.j2", relation=relation, id_col=id_col, columns=[]))[0][-1])


def _itemset_bound(m: int, longest: int) -> int:
    """min(m, rows of the largest record): the same check (an itemset cannot have more items
    than its record has rows), without unrolling impossible itemset sizes; the listing holds
    the same violations whatever the bound, only its trailing NULL item columns differ."""
    return max(1, min(int(m), int(longest)))


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# ------------------------------------------------------------------------------------------
# shared helpers
# ------------------------------------------------------------------------------------------
def refuse_nulls(backend: Backend, name: str, relation: Relation, columns: Sequence[str],
                  varying: Sequence[str] = ()) -> tuple[int, dict[str, int], dict[str, bool]]:
    """Profile the relation in one SQL statement; raise InputError for the first column that
    holds NULLs. Returns (n_rows, nulls per column, whether each ``varying`` column holds two
    or more values)."""
    columns = list(dict.fromkeys(columns))
    row = backend.rows(f"verify {name}: profile", render("verify/column_profile.sql.j2", relation=relation,
                                                         columns=columns, varying=list(varying)))[0]
    nulls = dict(zip(columns, row[1:1 + len(columns)]))
    _raise_on_nulls(name, relation, nulls)
    return int(row[0]), nulls, dict(zip(varying, (bool(v) for v in row[1 + len(columns):])))


def _raise_on_nulls(name: str, relation: Relation, nulls: Mapping[str, int]) -> None:
    """InputError naming the first column (in the order given) that holds NULLs."""
    for col, n_null in nulls.items():
        if n_null:
            raise InputError(f"{name}: column {col!r} of {show(relation)} has {n_null} NULL value(s); a verified "
                             "release must not contain NULL in a QI, sensitive, id or code column")


_SUMMARY = ("n_rows", "n_classes", "min_class_size", "max_class_size", "n_violations")


def _one_pass(backend: Backend, name: str, relation: Relation, qis: list[str], limit: int, template: str, *,
              extra: Sequence[str] = (), sensitive_col: str | None = None,
              **context: Any) -> tuple[dict[str, Any], list[tuple]]:
    """Run a verifier written with lib/one_pass_verdict.jinja: one statement answers the
    verdict, the class summary and the NULL count, and lists the first ``limit`` violating
    classes. A NULL is a value of its own (module docstring): the NULL rows per QI (and in
    ``sensitive_col``, whose count the template reports last among the summary columns, after
    ``extra``) go into the summary as ``nulls`` (only the columns that have any; no key when
    none has). Returns the
    summary (``_SUMMARY`` plus ``extra`` plus ``nulls``) and the listed classes (the columns
    after the summary)."""
    rows = backend.rows(f"verify {name}", render(template, relation=relation, qis=qis, **context),
                        {"limit": _sql_limit(limit)})
    head = rows[0]
    n = len(_SUMMARY)
    nulls = dict(zip(qis, head[n:n + len(qis)]))
    width = n + len(qis) + len(extra)
    if sensitive_col is not None:
        nulls[sensitive_col] = head[width]
        width += 1
    summary = dict(zip((*_SUMMARY, *extra), (*head[:n], *head[n + len(qis):n + len(qis) + len(extra)])))
    if any(nulls.values()):
        summary["nulls"] = {c: int(v) for c, v in nulls.items() if v}
    listed = [r[width:] for r in rows] if summary["n_violations"] else []
    return summary, listed


def _counted(name: str, summary: Mapping[str, Any], violations: list[dict[str, Any]], limit: int,
             detail: Mapping[str, Any]) -> CheckResult:
    """The CheckResult of a one-pass verifier: its verdict is the counted violations."""
    total = int(summary["n_violations"])
    facts = {k: v for k, v in summary.items() if k != "n_violations"}
    facts["n_rows"], facts["n_classes"] = int(facts["n_rows"]), int(facts["n_classes"])
    return CheckResult(name, total == 0, total, violations[:max(limit, 0)], {**facts, **detail})


def _result(name: str, rows: list[tuple], violations: list[dict[str, Any]], limit: int,
            detail: Mapping[str, Any]) -> CheckResult:
    """``n_violations`` is the last column of every row (a window count before LIMIT)."""
    total = int(rows[0][-1]) if rows else 0
    return CheckResult(name, total == 0, total, violations[:max(limit, 0)], dict(detail))


def sliced_rows(backend: Backend, stage: str, sql: str, *, lo: int, hi: int, rows: int, budget: int,
                bound: Mapping[str, Any], limit: int) -> tuple[int, list[tuple]]:
    """Run a check one slice of consecutive ids at a time: ``sql`` is bound to ``$lo`` and
    ``$hi`` (the slice's ids, from ``lo`` to ``hi``), ``$limit`` and ``bound``, and ends each row
    with its slice's window count. The ids are cut into ``ceil(rows / budget)`` ranges of equal
    width (at least one). Returns the total count and the first ``limit`` rows in slice order:
    a check whose every violation lies in one slice, ordered by id first, gives the one
    statement's answer."""
    total, listed = 0, []
    for start, end in id_ranges(lo, hi, rows, budget):
        got = backend.rows(stage, sql, {**bound, "lo": start, "hi": end, "limit": _sql_limit(limit)})
        total += int(got[0][-1]) if got else 0
        listed += got[:limit - len(listed)]
    return total, listed


def id_ranges(lo: int, hi: int, rows: int, budget: int) -> list[tuple[int, int]]:
    """The ids ``lo`` to ``hi`` cut into ``ceil(rows / budget)`` ranges (first, last) of equal
    width, at least one: slices of about ``budget`` of ``rows`` rows spread evenly over the ids."""
    n = max(1, -(-rows // budget))
    step = -(-(hi - lo + 1) // n)
    return [(start, start + step - 1) for start in range(lo, hi + 1, step)]


def _sql_limit(limit: int) -> int:
    """LIMIT 0 would also hide the window count, so at least one row is always fetched."""
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise InputError(f"limit must be an integer; got {limit!r}")
    return max(limit, 1)


def _qi_dict(names: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    return {c: row[i] for i, c in enumerate(names)}


def _items(row: Sequence[Any], first: int, size: int) -> list[Any]:
    """An itemset as a sorted list, from the positional item_1 .. item_m columns of a row."""
    return list(row[first:first + int(size)])




def _reserved(verifier: str, names: Sequence[str], reserved: Sequence[str]) -> None:
    for n in names:
        if n in reserved:
            raise InputError(f"{verifier}: column {n!r} has the name of an output field of this verifier "
                             f"({', '.join(reserved)}); rename it in the release")
