"""Independent audit of a disassociated release (seed 001, Guarantee 1; digest §2.5).

Reads only the release tables (never the anonymizer's modules or numbers). The sufficient
audit of the digest:

1. every record chunk and shared chunk is k^m-anonymous (``disassociation_chunk_km``);
2. every cluster has at least k records (``disassociation_cluster_size``);
3. inside a cluster the chunk domains are pairwise disjoint (``disassociation_disjoint``);

plus the shape of D^A (a chunk has one subrecord per record it spans, sub_ids 1..n:
``disassociation_chunk_rows``) and publication hygiene (each table has exactly its
published columns: no person id, record number or support count). The fourth condition of
the digest (each item-chunk code occurs in its cluster) and the cover of T^P need the
private record-to-cluster link, so they are checked by the tests' exhaustive maxsup oracle,
not here.

:func:`completeness` is the one check that reads the input too: every input code is released
(disassociation suppresses none) with counts that agree with the input. The privacy audit
cannot see a code that went missing; the method runs both with every release.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..backend.base import Backend
from ..scratch import scratch
from ..sqlrender import render
from .models import CheckResult, km_anonymity, sliced_rows

#: the published columns of each release table
COLUMNS: dict[str, tuple[str, ...]] = {
    "clusters": ("cluster_id", "n_records", "joint_id"),
    "record_chunks": ("chunk_id", "cluster_id", "sub_id", "codes"),
    "shared_chunks": ("chunk_id", "sub_id", "codes"),
    "shared_scope": ("chunk_id", "cluster_id"),
    "item_chunks": ("cluster_id", "code"),
    # what the release kept of each input code (anon_duck/retention.py): counts, no chunk link
    "retention": ("code", "code_label", "persons_input", "persons_exact", "persons_generalized",
                  "persons_without_count", "persons_dropped"),
}

# tables a release published before they existed lacks: checked when present
OPTIONAL = frozenset({"retention"})


def audit(backend: Backend, tables: Mapping[str, Sequence[str]], *, k: int, m: int, limit: int = 20) -> list[CheckResult]:
    """All checks; each passes iff its query returns no rows."""
    out = [_columns(backend, tables)]
    if not out[0].passed:
        return out
    names = {s: tables[s] for s in COLUMNS if s in tables}
    out += _chunk_checks(backend, names, k=k, m=m, limit=limit)
    out.append(_cluster_size(backend, names["clusters"], k=k, m=m, limit=limit))
    out.append(_disjoint(backend, names, k=k, m=m, limit=limit))
    return out


def _cluster_size(backend: Backend, clusters: Sequence[str], *, k: int, m: int, limit: int) -> CheckResult:
    """Every cluster has at least k records (both audits: disassociation's and CBA's)."""
    return _statement_check(backend, "disassociation_cluster_size", render(
        "verify/disassociation_cluster_size.sql.j2", clusters=clusters), {"k": k}, ("cluster_id", "n_records"),
        k=k, m=m, limit=limit)


def _statement_check(backend: Backend, name: str, sql: str, bound: Mapping[str, Any], fields: Sequence[str], *,
                     limit: int, **detail: int) -> CheckResult:
    """A check that is one statement whose rows end with the violations' count."""
    rows = backend.rows(f"verify {name}", sql, {**bound, "limit": max(limit, 1)})
    total = int(rows[0][-1]) if rows else 0
    return CheckResult(name, total == 0, total, [_evidence(fields, r) for r in rows[:limit]], detail)


SLICE_CODE_ROWS = 4_000_000
"""Code occurrences of the record and shared chunks one slice of the k^m check groups (with
each pair of codes of a subrecord): 28.5M at 10^6 persons of the OMOP-shaped CDM, where 1 slice
took 14.8 s, 4 slices 9.1 s, 8 slices 8.8 s and 16 slices 9.7 s; at 10^5 persons one slice."""

SLICE_SUBRECORDS = 80_000_000
"""Subrecords one slice of the shape check ranks in their chunks: 71M at 10^6 persons, one
slice, whose shared chunks took 3.7 s in 1 slice and 4.6 s in 4 (each slice scans the chunks
again); the budget bounds the sort from 10^7 persons on."""


def _chunk_checks(backend: Backend, names: Mapping[str, Sequence[str]], *, k: int, m: int,
                  limit: int) -> list[CheckResult]:
    """Conditions that group by chunk (k^m inside each chunk; each chunk's shape), one slice of
    consecutive chunk ids at a time: every violation lies in one chunk, so the slices' counts
    add up to the release's, in chunk id order. A grouping of every chunk at once outgrew the
    CPU caches (and spilled) at 10^6 persons, 20 times the time of 10^5 for 10 times the rows."""
    lo, hi, subrecords, code_rows = backend.rows("verify disassociation chunks: slices", render(
        "verify/disassociation_chunk_slices.sql.j2", **names))[0]
    lo, hi = (0, 0) if lo is None else (int(lo), int(hi))    # no chunk id at all: one slice, of NULLs
    checks = (("disassociation_chunk_km", "verify/disassociation_chunk_km.sql.j2", {"k": k, "m": m},
               int(code_rows), SLICE_CODE_ROWS, ("chunk_id", "size", *(f"item_{i}" for i in range(1, m + 1)), "support")),
              ("disassociation_chunk_rows", "verify/disassociation_chunk_rows.sql.j2", {}, int(subrecords),
               SLICE_SUBRECORDS, ("kind", "chunk_id", "n_subrecords", "expected", "problem")))
    out = []
    for name, template, context, rows, budget, fields in checks:
        total, listed = sliced_rows(backend, f"verify {name}", render(template, **context, **names),
                                    lo=lo, hi=hi, rows=rows, budget=budget, bound={"first": lo}, limit=limit)
        out.append(CheckResult(name, total == 0, total, [_evidence(fields, r) for r in listed], {"k": k, "m": m}))
    return out


SLICE_PLACE_ROWS = 10_000_000
"""(cluster, code, place) rows one slice of the disjointness check may group. At 10^6 persons
of the OMOP-shaped CDM (179M rows) 18 slices took 20.2 s and 2.2 GB of peak RSS, 9 slices
21.4 s and 2.8 GB, and 6 slices (budgeted by counting a shared chunk's codes once, not once
per cluster it spans) 3.9 GB, at the edge of a 4 GB memory_limit."""


def _disjoint(backend: Backend, names: Mapping[str, Sequence[str]], *, k: int, m: int, limit: int) -> CheckResult:
    """Condition 3, one slice of consecutive cluster ids at a time: every (cluster, code) lies in
    one slice, so the slices' violations add up to the release's, in (cluster, code) order. The
    shared chunks' codes are listed once (:data:`SHARED_CODES`) for all slices."""
    fields = ("cluster_id", "code", "n_places")
    backend.run("verify disassociation_disjoint: shared codes", render(
        "verify/disassociation_shared_codes.sql.j2", target=SHARED_CODES, shared_chunks=names["shared_chunks"]))
    total, rows = 0, []
    try:
        lo, hi, place_rows = backend.rows("verify disassociation_disjoint: slices", render(
            "verify/disassociation_slices.sql.j2", shared_codes=SHARED_CODES, **names))[0]
        if lo is not None:
            total, rows = sliced_rows(backend, "verify disassociation_disjoint", render(
                "verify/disassociation_disjoint.sql.j2", shared_codes=SHARED_CODES, **names),
                lo=int(lo), hi=int(hi), rows=int(place_rows), budget=SLICE_PLACE_ROWS, bound={}, limit=limit)
    finally:
        backend.run("verify disassociation_disjoint: drop shared codes",
                    render("release/drop_table.sql.j2", target=SHARED_CODES))
    return CheckResult("disassociation_disjoint", total == 0, total, [_evidence(fields, r) for r in rows],
                       {"k": k, "m": m})


SHARED_CODES = scratch("verify_shared_codes")
"""(chunk_id, code) of every shared chunk, written by the disjointness check for its slices and
dropped after them."""


def completeness(backend: Backend, tables: Mapping[str, Sequence[str]], *, codes: Sequence[str], k: int,
                 limit: int = 20) -> CheckResult:
    """Every code of the input ``codes`` (id, code) is in the release, and no other; counts
    agree: exactly where the release shows them (record and shared chunks), within the bounds
    an item chunk allows (1 to min(k - 1, cluster size) records per cluster) where it hides them
    (``sql/verify/disassociation_completeness.sql.j2``)."""
    return _statement_check(backend, "disassociation_completeness", render(
        "verify/disassociation_completeness.sql.j2", codes=codes, clusters=tables["clusters"],
        record_chunks=tables["record_chunks"], shared_chunks=tables["shared_chunks"],
        item_chunks=tables["item_chunks"]), {"k": k},
        ("code", "input_records", "subrecords", "item_clusters", "problem"), limit=limit)


def _evidence(fields: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """One violation as a dict; an itemset's positional item_1 .. item_m columns become one
    sorted ``items`` list of its ``size`` codes, as the generic k^m verifier reports it."""
    out = {f: (list(v) if isinstance(v, (list, tuple)) else v) for f, v in zip(fields, row)}
    if "item_1" in out:
        items = [out.pop(f) for f in fields if f.startswith("item_")]
        out["items"] = items[:int(out["size"])]
    return out


def _columns(backend: Backend, tables: Mapping[str, Sequence[str]],
             columns: Mapping[str, tuple[str, ...]] = COLUMNS) -> CheckResult:
    violations: list[dict[str, Any]] = []
    for suffix, expected in columns.items():
        if suffix not in tables:
            if suffix not in OPTIONAL:
                violations.append({"table": suffix, "problem": "missing"})
            continue
        got = tuple(backend.fetch(f"verify disassociation columns of {suffix}",
                                  render("verify/relation_columns.sql.j2", relation=tables[suffix])))
        if got != expected:
            violations.append({"table": suffix, "problem": f"columns {list(got)}, expected {list(expected)}"})
    extra = sorted(set(tables) - set(columns))
    violations += [{"table": s, "problem": "not part of a disassociated release"} for s in extra]
    return CheckResult("disassociation_columns", not violations, len(violations), violations)


#: the published columns of a CBA-baseline release (method ``cba``)
CBA_COLUMNS: dict[str, tuple[str, ...]] = {
    "clusters": ("cluster_id", "n_records"),
    "record_tokens": ("record_id", "cluster_id", "token"),
    "tokens": ("token", "code"),
    "retention": COLUMNS["retention"],
}


def audit_cba(backend: Backend, tables: Mapping[str, Sequence[str]], *, k: int, m: int,
              limit: int = 20) -> list[CheckResult]:
    """Audit of the CBA-style baseline (seed 001 §6.3): the foundation's generic
    ``km_anonymity`` on the generalized records (a token is an item; per cluster: GenDiag
    recodes locally), every cluster >= k records, and token consistency (every used token is
    defined; inside a cluster a code lies in one token only; a record is in one cluster)."""
    out = [_columns(backend, tables, CBA_COLUMNS)]
    if not out[0].passed:
        return out
    out.append(km_anonymity(backend, relation=tables["record_tokens"], id_col="record_id", code_col="token",
                            k=k, m=m, group_cols=("cluster_id",), limit=limit))
    out.append(_cluster_size(backend, tables["clusters"], k=k, m=m, limit=limit))
    out.append(_statement_check(backend, "cba_tokens", render(
        "verify/disassociation_cba_tokens.sql.j2", record_tokens=tables["record_tokens"], tokens=tables["tokens"]),
        {}, ("problem", "what", "n"), k=k, m=m, limit=limit))
    return out
