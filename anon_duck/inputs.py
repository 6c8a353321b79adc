"""Resolve a job's inputs in the database and check them against the job.

Files are loaded into scratch tables; tables are only read. Everything a method needs is then
available under fixed scratch names (``_ad_codes(id, code)``, ``_ad_events(id, position,
code, age)``) plus the person relation. Every problem found here is an :class:`InputError`
naming the job-file key, the column and the first offending values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .backend.base import Backend
from .errors import AnonDuckError, InputError
from .hierarchy import HierarchyTables, NODES
from .hierarchy import build as build_hierarchies
from .job import Job, Source
from .scratch import scratch
from .sqlrender import render

NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "FLOAT", "DOUBLE", "REAL")


@dataclass(frozen=True)
class Inputs:
    """Qualified names of the relations a method reads, and what the checks learned."""

    person: tuple[str, ...]
    columns: dict[str, str]          # column name -> DuckDB type of the person relation
    n_rows: int
    hierarchies: HierarchyTables | None
    codes: tuple[str, ...] | None = None    # (id VARCHAR, code VARCHAR), distinct pairs
    events: tuple[str, ...] | None = None   # (id VARCHAR, position INTEGER, code VARCHAR, age INTEGER)


def prepare(backend: Backend, job: Job) -> Inputs:
    """Load, check and normalize everything the job names. Read-only on user tables."""
    ds = job.dataset
    person = _relation(backend, ds.source, "input", scratch("input"))
    columns = _columns(backend, person, "input", ds.source)
    role_columns = [("input.id", ds.id)] + [(f"input.qi[{i}].column", q.column) for i, q in enumerate(ds.qis)] + [
        ("input.sensitive", ds.sensitive), ("input.class", ds.class_)] + [
        ("input.drop", c) for c in ds.drop] + [("input.keep", c) for c in ds.keep]
    if ds.codes and ds.codes.is_list_column:
        role_columns.append(("input.codes.column", ds.codes.code))
    for key, col in role_columns:
        if col is not None and col not in columns:
            raise InputError(f"{key} = {col!r}: no such column in {ds.source.describe()} "
                             f"(columns: {', '.join(columns)})")
    checked = [c for c in [ds.id] + [q.column for q in ds.qis] + [ds.sensitive, ds.class_] if c is not None]
    profile = backend.rows("inputs: profile", render("inputs/profile.sql.j2", relation=person, columns=checked,
                                                     id=ds.id))[0]
    n_rows = int(profile[0])
    if n_rows == 0:
        raise InputError(f"{ds.source.describe()} is empty: nothing to anonymize")
    for col, n_null in zip(checked, profile[1:-1]):
        if n_null:
            examples = [r[0] for r in backend.rows("inputs: NULL examples", render(
                "inputs/null_examples.sql.j2", relation=person, column=col, id=ds.id))]
            raise InputError(f"column {col!r} has {n_null} NULL value(s) (rows with "
                             f"{'id' if ds.id else 'row number'} {', '.join(examples)}); "
                             "anon_duck does not guess values: fill or drop them first")
    if profile[-1]:
        raise InputError(f"input.id = {ds.id!r}: {profile[-1]} duplicate id value(s); each person needs one row")
    for q in ds.qis:
        if q.kind == "numeric" and columns[q.column].split("(")[0] not in NUMERIC_TYPES \
                and not columns[q.column].startswith("DECIMAL"):
            raise InputError(f"input.qi column {q.column!r} is declared numeric but has type "
                             f"{columns[q.column]}; cast it or declare kind = \"categorical\"")
        if q.kind == "date" and columns[q.column] not in ("DATE", "TIMESTAMP"):
            raise InputError(f"input.qi column {q.column!r} is declared date but has type {columns[q.column]}")

    codes = events = None
    if ds.codes:
        codes = _codes(backend, job, person, columns)
    if ds.events:
        events = _events(backend, job, person)

    used = {q.hierarchy for q in ds.qis if q.hierarchy}
    if ds.codes and ds.codes.hierarchy:
        used.add(ds.codes.hierarchy)
    if ds.events:
        used.update(h for h in (ds.events.code_hierarchy, ds.events.age_hierarchy) if h)
    hierarchies = None
    if used:
        values_for: dict[str, tuple] = {}
        for q in ds.qis:
            if q.hierarchy:
                values_for.setdefault(q.hierarchy, (person, q.column))
        if ds.events and ds.events.age_hierarchy:
            values_for.setdefault(ds.events.age_hierarchy, (events, "age"))
        hierarchies = build_hierarchies(backend, [job.hierarchies[h] for h in sorted(used)],
                                        values_for=values_for, base_dir=job.base_dir)
        checks = [(f"input.qi column {q.column!r}", person, q.column, q.hierarchy) for q in ds.qis if q.hierarchy]
        if codes is not None and ds.codes and ds.codes.hierarchy:
            checks.append(("input.codes", codes, "code", ds.codes.hierarchy))
        if events is not None and ds.events:
            if ds.events.code_hierarchy:
                checks.append(("input.events code", events, "code", ds.events.code_hierarchy))
            if ds.events.age_hierarchy:
                checks.append(("input.events age", events, "age", ds.events.age_hierarchy))
        for what, relation, column, hname in checks:
            n_missing, examples = backend.rows(f"inputs: coverage of {hname}", render(
                "inputs/missing_from_hierarchy.sql.j2", relation=relation, column=column,
                node_table=NODES, hierarchy=hname))[0]
            if n_missing:
                raise InputError(f"{what}: {n_missing} distinct value(s) are not leaves of hierarchy "
                                 f"{hname!r}, e.g. {', '.join(map(repr, examples))}")
    return Inputs(person, columns, n_rows, hierarchies, codes, events)


def _relation(backend: Backend, source: Source, key: str, target: tuple[str, ...]) -> tuple[str, ...]:
    if source.table is not None:
        return (source.table,)
    assert source.path is not None
    if not source.path.is_file():
        raise InputError(f"{key}.path = {str(source.path)!r}: no such file")
    fmt = "parquet" if ".parquet" in source.path.name.lower() else "csv"
    try:
        backend.run(f"{key}: load {source.path.name}", render("inputs/load_file.sql.j2", target=target, format=fmt),
                    {"path": str(source.path)})
    except AnonDuckError as err:
        raise InputError(f"{key}.path = {str(source.path)!r}: cannot read it as {fmt}: {err}") from err
    return target


def _columns(backend: Backend, relation: tuple[str, ...], key: str, source: Source) -> dict[str, str]:
    try:
        rows = backend.rows(f"{key}: columns", render("inputs/columns.sql.j2", relation=relation))
    except AnonDuckError as err:
        raise InputError(f"{key}: {source.describe()} does not exist in the database") from err
    return {name: typ for name, typ in rows}


def _require(columns: dict[str, str], wanted: Sequence[tuple[str, str]], where: str) -> None:
    for key, col in wanted:
        if col not in columns:
            raise InputError(f"{key} = {col!r}: no such column in {where} (columns: {', '.join(columns)})")


def _codes(backend: Backend, job: Job, person: tuple[str, ...], person_cols: dict[str, str]) -> tuple[str, ...]:
    spec = job.dataset.codes
    assert spec is not None
    target = scratch("codes")
    if spec.is_list_column:
        if job.dataset.id is None:
            raise InputError("input.codes.column needs input.id to tie codes to persons")
        if not person_cols[spec.code].endswith("[]"):
            raise InputError(f"input.codes.column = {spec.code!r} has type {person_cols[spec.code]}, not a LIST")
        backend.run("inputs: codes", render("inputs/normalize_codes.sql.j2", target=target, relation=person,
                                            id=job.dataset.id, code=spec.code, is_list=True))
        return target
    assert spec.source is not None and spec.id is not None
    rel = _relation(backend, spec.source, "input.codes", scratch("codes_src"))
    _require(_columns(backend, rel, "input.codes", spec.source),
             [("input.codes.id", spec.id), ("input.codes.code", spec.code)], spec.source.describe())
    backend.run("inputs: codes", render("inputs/normalize_codes.sql.j2", target=target, relation=rel,
                                        id=spec.id, code=spec.code, is_list=False))
    _orphans(backend, job, target, person, "input.codes")
    return target


def _events(backend: Backend, job: Job, person: tuple[str, ...]) -> tuple[str, ...]:
    spec = job.dataset.events
    assert spec is not None
    rel = _relation(backend, spec.source, "input.events", scratch("events_src"))
    cols = _columns(backend, rel, "input.events", spec.source)
    wanted = [("input.events.id", spec.id), ("input.events.code", spec.code), ("input.events.age", spec.age)]
    if spec.position:
        wanted.append(("input.events.position", spec.position))
    _require(cols, wanted, spec.source.describe())
    target = scratch("events")
    try:
        backend.run("inputs: events", render("inputs/normalize_events.sql.j2", target=target, relation=rel,
                                             id=spec.id, code=spec.code, age=spec.age, position=spec.position))
    except AnonDuckError as err:
        raise InputError(f"input.events: age and position must be whole numbers ({err})") from err
    profile = backend.rows("inputs: events profile", render(
        "inputs/profile.sql.j2", relation=target, columns=["id", "position", "code", "age"], id=None))[0]
    for col, n_null in zip(["id", "position", "code", "age"], profile[1:-1]):
        if n_null:
            raise InputError(f"input.events: {n_null} event(s) have a NULL {col}")
    _orphans(backend, job, target, person, "input.events")
    return target


def _orphans(backend: Backend, job: Job, child: tuple[str, ...], person: tuple[str, ...], key: str) -> None:
    if job.dataset.id is None:
        raise InputError(f"{key} needs input.id to tie its rows to persons")
    n, examples = backend.rows(f"{key}: ids", render("inputs/orphans.sql.j2", child=child, person=person,
                                                     person_id=job.dataset.id))[0]
    if n:
        raise InputError(f"{key}: {n} id(s) have no row in the person table, e.g. {', '.join(examples)}")
