"""Resolve a job's inputs in the database and check them against the job.

Files are loaded into scratch tables; tables are only read. Everything a method needs is then
available under fixed scratch names (``_ad_codes(id, code)``, ``_ad_events(id, position,
code, age)``) plus the person relation. Every problem found here is an :class:`InputError`
naming the job-file key, the column and the first offending values.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .backend.base import Backend
from .csvoptions import is_csv_error, unreadable
from .errors import AnonDuckError, InputError
from .hierarchy import NODES
from .hierarchy import build as build_hierarchies
from .job import Job, Source
from .names import resolve
from .omop_derive import derive as derive_omop
from .scratch import scratch
from .sqlrender import render

INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT")
NUMERIC_TYPES = INTEGER_TYPES + ("FLOAT", "DOUBLE", "REAL")


@dataclass(frozen=True)
class Inputs:
    """Qualified names of the relations a method reads, and what the checks learned."""

    person: tuple[str, ...]
    n_rows: int
    codes: tuple[str, ...] | None = None    # (id VARCHAR, code VARCHAR), distinct pairs
    events: tuple[str, ...] | None = None   # (id VARCHAR, position INTEGER, code VARCHAR, age INTEGER)
    coverage: list[dict] = field(default_factory=list)  # per checked column: values missing from its hierarchy
    # one fragment of a partitioned run (docs/scale.md): what the job names may occur in the
    # input but not here, and was checked on the whole input before the cut
    fragment: bool = False
    # a fragment's view of the whole input: the (min, max) of each numeric QI over every
    # person, against which NCP is measured (partition/fragments.py); empty otherwise
    domains: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # what [input.omop] placed instead of refusing (omop_derive.Notes.summary) and the warning
    # lines saying so, which run and inspect print
    omop: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def prepare(backend: Backend, job: Job, *, strict: bool = True) -> Inputs:
    """Load, check and normalize everything the job names. Read-only on user tables.

    With ``strict=False`` (``inspect``), values missing from hierarchies are collected in
    ``Inputs.coverage`` instead of raising."""
    ds = job.dataset
    notes = derive_omop(backend, ds.omop) if ds.omop is not None else None   # OMOP: the roles' relations first
    inputs = _prepare(backend, job, strict)
    if notes is not None:
        inputs = dataclasses.replace(inputs, omop=notes.summary(), warnings=notes.warnings())
    return inputs


def _prepare(backend: Backend, job: Job, strict: bool) -> Inputs:
    ds = job.dataset
    if ds.source is None:
        return _prepare_without_person_table(backend, job, strict)
    # ids and categorical values are labels, never numbers: keep their spelling from CSV
    text = [c for c in [ds.id, *(q.column for q in ds.qis if q.kind == "categorical"), ds.sensitive, ds.class_] if c]
    person = _relation(backend, ds.source, "input", scratch("input"), text)
    columns = _columns(backend, person, "input", ds.source)
    role_columns = [("input.id", ds.id)] + [(f"input.qi[{i}].column", q.column) for i, q in enumerate(ds.qis)] + [
        ("input.sensitive", ds.sensitive), ("input.class", ds.class_)] + [
        ("input.drop", c) for c in ds.drop] + [("input.keep", c) for c in ds.keep]
    if ds.codes and ds.codes.is_list_column:
        role_columns.append(("input.codes.column", ds.codes.code))
    found = _require(backend, columns, [(key, col) for key, col in role_columns if col is not None],
                     ds.source.describe())
    person, columns = _named_as_job(backend, person, columns, found)
    n_rows = _check_person_rows(backend, job, person)
    _check_kinds(backend, job, person, columns)

    codes = _codes(backend, job, person, columns) if ds.codes else None
    events = _events(backend, job, person) if ds.events else None
    coverage = _hierarchies(backend, job, person, codes, events, strict)
    return Inputs(person, n_rows, codes, events, coverage)


def load_population(backend: Backend, job: Job, source: Source) -> tuple[str, ...]:
    """The population a risk analysis compares the input with (``[risk.population]``): a table
    is only read, a file is loaded into a scratch table, categorical QIs as text like the
    input's, so the two compare value for value."""
    text = [q.column for q in job.dataset.qis if q.kind == "categorical"]
    relation = _relation(backend, source, "risk.population", scratch("population"), text)
    _columns(backend, relation, "risk.population", source)
    return relation


def _prepare_without_person_table(backend: Backend, job: Job, strict: bool) -> Inputs:
    """Codes or events only: the persons are the distinct ids found there."""
    ds = job.dataset
    assert ds.id is not None
    codes = _codes(backend, job, None, {}) if ds.codes else None
    events = _events(backend, job, None) if ds.events else None
    person = scratch("input")
    backend.run("inputs: persons from ids", render("inputs/persons_from_ids.sql.j2", target=person, id=ds.id,
                                                   children=[c for c in (codes, events) if c is not None]))
    n_rows = _check_person_rows(backend, job, person)
    coverage = _hierarchies(backend, job, person, codes, events, strict)
    return Inputs(person, n_rows, codes, events, coverage)


def _check_kinds(backend: Backend, job: Job, person: tuple[str, ...], columns: dict[str, str]) -> None:
    """Every QI declared numeric holds numbers and every QI declared date holds dates; all
    offending columns are named at once, numeric ones with their first values that are not
    numbers and the ids of their rows."""
    ds = job.dataset
    problems = []
    for q in ds.qis:
        kind = columns[q.column]
        if q.kind == "numeric" and kind.split("(")[0] not in NUMERIC_TYPES and not kind.startswith("DECIMAL"):
            detail = _not_numbers(backend, person, q.column, ds.id, "DOUBLE") or "its values are numbers written as text"
            problems.append(f"column {q.column!r} is declared numeric but has type {kind}; {detail}")
        if q.kind == "date" and kind not in ("DATE", "TIMESTAMP"):
            problems.append(f"column {q.column!r} is declared date but has type {kind}")
    if problems:
        raise InputError("input.qi: " + "; ".join(problems) + " — cast or clean the values, or declare "
                         "kind = \"categorical\"")


def _check_person_rows(backend: Backend, job: Job, person: tuple[str, ...]) -> int:
    """Row count, NULLs in role columns, duplicate ids: one profiling query."""
    ds = job.dataset
    where = ds.source.describe() if ds.source else "the ids of the codes/events"
    checked = [c for c in [ds.id] + [q.column for q in ds.qis] + [ds.sensitive, ds.class_] if c is not None]
    profile = backend.rows("inputs: profile", render("inputs/profile.sql.j2", relation=person, columns=checked,
                                                     id=ds.id))[0]
    n_rows = int(profile[0])
    if n_rows == 0:
        raise InputError(f"{where}: no rows, nothing to anonymize")
    _refuse_nulls(backend, person, dict(zip(checked, checked)), profile[1:-1], ds.id, "")
    if profile[-1]:
        raise InputError(f"input.id = {ds.id!r}: {profile[-1]} duplicate id value(s); each person needs one row")
    return n_rows


def _not_numbers(backend: Backend, relation: tuple[str, ...], column: str, id_column: str | None,
                 cast_to: str) -> str | None:
    """The values of ``column`` that are not numbers (do not cast to ``cast_to``: DOUBLE, or
    INTEGER for whole numbers), as a phrase naming their count and the first of them with the
    ids (or row numbers) of their rows; None if every value is a number."""
    bad = backend.rows(f"inputs: values of {column}", render(
        "inputs/non_numeric_values.sql.j2", relation=relation, column=column, id=id_column, cast_to=cast_to))
    if not bad:
        return None
    where = "id" if id_column else "row"
    kind = "whole numbers" if cast_to == "INTEGER" else "numbers"
    return f"{bad[0][2]} value(s) are not {kind}: " + ", ".join(f"{v!r} ({where} {r})" for v, r, _ in bad)


def _refuse_nulls(backend: Backend, relation: tuple[str, ...], columns: dict[str, str], counts: Sequence[int],
                  id_column: str | None, key: str) -> None:
    """Name every column with NULLs at once (``columns``: column in ``relation`` -> the name the
    job gave it, ``counts`` their NULL counts), each with the ids (or row numbers) of its first
    rows with a NULL."""
    nulls = []
    for (column, name), n_null in zip(columns.items(), counts):
        if n_null:
            by_id = id_column if id_column and column != id_column else None   # a NULL id cannot name its row
            examples = [r[0] for r in backend.rows("inputs: NULL examples", render(
                "inputs/null_examples.sql.j2", relation=relation, column=column, id=by_id))]
            nulls.append(f"column {name!r} has {n_null} NULL (rows with {'id' if by_id else 'row number'} "
                         f"{', '.join(examples)})")
    if nulls:
        raise InputError(f"{key}NULL values in {len(nulls)} column(s): " + "; ".join(nulls) +
                         " — anon_duck does not guess values: fill or drop them first")


def _hierarchies(backend: Backend, job: Job, person: tuple[str, ...], codes: tuple[str, ...] | None,
                 events: tuple[str, ...] | None, strict: bool) -> list[dict]:
    """Build the hierarchies the job uses (scratch tables NODES, CLOSURE, LEVELS) and check
    that every value is a leaf; returns the coverage of each checked column."""
    ds = job.dataset
    used = {q.hierarchy for q in ds.qis if q.hierarchy}
    if ds.codes and ds.codes.hierarchy:
        used.add(ds.codes.hierarchy)
    if ds.events:
        used.update(h for h in (ds.events.code_hierarchy, ds.events.age_hierarchy) if h)
    if not used:
        return []
    values_for: dict[str, list[tuple[tuple[str, ...], str]]] = {}   # a data-built hierarchy: every column using it
    for q in ds.qis:
        if q.hierarchy:
            values_for.setdefault(q.hierarchy, []).append((person, q.column))
    if ds.events and ds.events.age_hierarchy:
        values_for.setdefault(ds.events.age_hierarchy, []).append((events, "age"))
    build_hierarchies(backend, [job.hierarchies[h] for h in sorted(used)], values_for=values_for)
    checks = [(f"input.qi column {q.column!r}", person, q.column, q.hierarchy) for q in ds.qis if q.hierarchy]
    if codes is not None and ds.codes and ds.codes.hierarchy:
        checks.append(("input.codes", codes, "code", ds.codes.hierarchy))
    if events is not None and ds.events:
        if ds.events.code_hierarchy:
            checks.append(("input.events code", events, "code", ds.events.code_hierarchy))
        if ds.events.age_hierarchy:
            checks.append(("input.events age", events, "age", ds.events.age_hierarchy))
    coverage: list[dict] = []
    for what, relation, column, hname in checks:
        n_missing, examples = backend.rows(f"inputs: coverage of {hname}", render(
            "inputs/missing_from_hierarchy.sql.j2", relation=relation, column=column,
            node_table=NODES, hierarchy=hname))[0]
        if n_missing and strict:
            raise InputError(f"{what}: {n_missing} distinct value(s) are not leaves of hierarchy "
                             f"{hname!r}, e.g. {', '.join(map(repr, sorted(examples)))}")
        coverage.append({"what": what, "hierarchy": hname, "missing": int(n_missing), "examples": sorted(examples or [])})
    return coverage


def _named_as_job(backend: Backend, person: tuple[str, ...], columns: dict[str, str],
                  found: dict[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The person relation with its role columns spelled as the job spells them. The engine
    found ``AGE`` for the job's ``age`` (names.py), but a method reads a column back by the
    job's name from a result (whose columns keep the relation's spelling) and publishes it under
    that name: when a spelling differs, the relation is copied into scratch with those columns
    renamed (every other column as it is). The usual case, every name as written, reads the
    relation itself."""
    renamed = {spelled: name for name, spelled in found.items() if spelled != name}
    if not renamed:
        return person, columns
    target = scratch("input_named")
    backend.run("inputs: names as in the job", render("inputs/rename_columns.sql.j2", target=target, relation=person,
                                                      columns=list(columns), renamed=renamed))
    return target, {renamed.get(c, c): kind for c, kind in columns.items()}


def _relation(backend: Backend, source: Source, key: str, target: tuple[str, ...],
              text_columns: Sequence[str] = ()) -> tuple[str, ...]:
    """The relation a source names; a file is loaded into ``target`` (``text_columns`` read as
    text, CSV as the source's ``csv`` options say)."""
    if source.derived is not None:
        return source.derived
    if source.table is not None:
        return source.relation
    assert source.path is not None
    if not source.path.is_file():
        raise InputError(f"{key}.path = {str(source.path)!r}: no such file")
    fmt = "parquet" if ".parquet" in source.path.name.lower() else "csv"
    try:
        backend.load_file(f"{key}: load {source.path.name}", target, str(source.path), fmt, text_columns, source.csv)
    except AnonDuckError as err:
        if fmt == "csv" and is_csv_error(str(err)):
            raise InputError(f"{key}.path = {str(source.path)!r}: {unreadable(str(err), f'{key}.csv')}") from err
        raise InputError(f"{key}.path = {str(source.path)!r}: cannot read it as {fmt}: {err}") from err
    return target


def _columns(backend: Backend, relation: tuple[str, ...], key: str, source: Source) -> dict[str, str]:
    try:
        return backend.columns(f"{key}: columns", relation)
    except AnonDuckError as err:
        raise InputError(f"{key}: {source.describe()} does not exist in the database") from err


def _require(backend: Backend, columns: dict[str, str], wanted: Sequence[tuple[str, str]],
             where: str) -> dict[str, str]:
    """Each wanted column's spelling in ``columns``, found as the engine finds names (names.py);
    the first missing or ambiguous one is an InputError naming its key."""
    case_sensitive = backend.case_sensitive()
    return {col: resolve(columns, col, case_sensitive=case_sensitive, key=key, where=where) for key, col in wanted}


def _codes(backend: Backend, job: Job, person: tuple[str, ...] | None, person_cols: dict[str, str]) -> tuple[str, ...]:
    spec = job.dataset.codes
    assert spec is not None
    target = scratch("codes")
    if spec.is_list_column:
        assert person is not None  # a LIST column needs a person table (checked in job.py)
        if job.dataset.id is None:
            raise InputError("input.codes.column needs input.id to tie codes to persons")
        if not person_cols[spec.code].endswith("[]"):
            raise InputError(f"input.codes.column = {spec.code!r} has type {person_cols[spec.code]}, not a LIST")
        backend.run("inputs: codes", render("inputs/normalize_codes.sql.j2", target=target, relation=person,
                                            id=job.dataset.id, code=spec.code, is_list=True))
        return target
    assert spec.source is not None and spec.id is not None
    rel = _relation(backend, spec.source, "input.codes", scratch("codes_src"), [spec.id, spec.code])
    found = _require(backend, _columns(backend, rel, "input.codes", spec.source),
                     [("input.codes.id", spec.id), ("input.codes.code", spec.code)], spec.source.describe())
    # a derived relation (sql/omop/codes.sql.j2) holds distinct pairs already: not made distinct
    # twice (3.6 s of 40M pairs at 10^6 persons, in every run and verify)
    backend.run("inputs: codes", render("inputs/normalize_codes.sql.j2", target=target, relation=rel,
                                        id=found[spec.id], code=found[spec.code], is_list=False,
                                        distinct=spec.source.derived is None))
    _orphans(backend, job, target, person, "input.codes")
    return target


def _events(backend: Backend, job: Job, person: tuple[str, ...] | None) -> tuple[str, ...]:
    spec = job.dataset.events
    assert spec is not None
    rel = _relation(backend, spec.source, "input.events", scratch("events_src"), [spec.id, spec.code])
    cols = _columns(backend, rel, "input.events", spec.source)
    wanted = [("input.events.id", spec.id), ("input.events.code", spec.code), ("input.events.age", spec.age)]
    if spec.position:
        wanted.append(("input.events.position", spec.position))
    found = _require(backend, cols, wanted, spec.source.describe())
    whole = [found[c] for c in (spec.age, spec.position) if c and cols[found[c]] not in INTEGER_TYPES]
    problems = [f"column {c!r} has type {cols[c]}; {detail}" for c in whole
                if (detail := _not_numbers(backend, rel, c, found[spec.id], "INTEGER"))]
    if problems:
        raise InputError("input.events: age and position must be whole numbers: " + "; ".join(problems))
    target = scratch("events")
    backend.run("inputs: events", render("inputs/normalize_events.sql.j2", target=target, relation=rel,
                                         id=found[spec.id], code=found[spec.code], age=found[spec.age],
                                         position=found[spec.position] if spec.position else None))
    canonical = {"id": spec.id, "position": spec.position or "position", "code": spec.code, "age": spec.age}
    profile = backend.rows("inputs: events profile", render(
        "inputs/profile.sql.j2", relation=target, columns=list(canonical), id=None))[0]
    _refuse_nulls(backend, target, canonical, profile[1:-1], "id", "input.events: ")
    _orphans(backend, job, target, person, "input.events")
    return target


def _orphans(backend: Backend, job: Job, child: tuple[str, ...], person: tuple[str, ...] | None, key: str) -> None:
    if person is None:
        return  # the persons are these ids
    if job.dataset.id is None:
        raise InputError(f"{key} needs input.id to tie its rows to persons")
    n, examples = backend.rows(f"{key}: ids", render("inputs/orphans.sql.j2", child=child, person=person,
                                                     person_id=job.dataset.id))[0]
    if n:
        raise InputError(f"{key}: {n} id(s) have no row in the person table, e.g. {', '.join(examples)}")
