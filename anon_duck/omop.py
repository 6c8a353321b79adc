"""``[input.omop]``: an OMOP CDM v5.4 database as the standard roles of a job.

A job names an OMOP database (a schema, or a folder of CSV/Parquet files named after the
tables) instead of its own tables. :func:`expand` turns that, when the job is parsed, into an
ordinary :class:`~anon_duck.job.Dataset` and hierarchies, so every method reads OMOP data the
way it reads any other input; the relations they name are scratch tables that :func:`derive`
builds with the templates in ``sql/omop/`` when the inputs are prepared (and again when a
release is re-verified, since a hierarchy's edges come from the data). The rules, their
defaults and their costs are documented in ``docs/omop.md``; in short:

* persons: ``person_id``; QIs year of birth (or age at ``reference_date``), gender, race and
  ethnicity (concept names of the ``*_concept_id`` columns) and zip3 (``location.zip``);
* codes: ``(person_id, code)`` from ``condition_occurrence``; events: ``(person_id, code,
  age at condition_start_date)`` in date then code order;
* the code hierarchy: ``concept_ancestor`` made a tree by keeping, for each concept, the
  parent farthest from the top of the vocabulary (ties: smallest concept id), restricted to
  the ancestors of used codes, labelled with ``concept.concept_name``.

Bad input (a missing table or column, a NULL year of birth, a concept id missing from
``concept``, a used concept with no ``concept_ancestor`` row) is an :class:`InputError`
naming what is wrong; nothing is dropped silently.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Mapping

from .backend.base import Backend
from .errors import AnonDuckError, InputError, JobError
from .jobspec import OMOP_FILE_SUFFIXES, QI, Codes, Dataset, Events, HierarchySpec, OmopSpec, Source
from .scratch import scratch
from .sqlrender import render

# person columns a job can use as QIs (or name as class/sensitive), and where each comes from
PERSON_COLUMNS = ("year_of_birth", "age", "gender", "race", "ethnicity", "zip3")
CONCEPT_COLUMNS = {"gender": "gender_concept_id", "race": "race_concept_id", "ethnicity": "ethnicity_concept_id"}
CODE_COLUMNS = ("condition_concept_id", "condition_source_concept_id", "condition_source_value")
ROLES = ("person", "codes", "events")
# The roles each built-in method reads (its check_params: disassociation codes only, longitudinal
# events only, ArtUC QIs + codes, the others person QIs); a plug-in method names its own.
METHOD_ROLES = {
    "artuc": ("person", "codes"), "artuc_baseline": ("person", "codes"), "artuc_rmr": ("person", "codes"),
    "disassociation": ("codes",), "cba": ("codes",), "longitudinal": ("events",),
    "fulldomain": ("person",), "lkc": ("person",), "counterfeit": ("person",),
}
KEYS = {"path", "schema", "qis", "code", "reference_date", "domain_id", "vocabulary_id", "min_code_frequency",
        "class", "sensitive", "roles"}
ROOT = "*"
# No vocabulary is this deep; the bound ends the walks up the tree (the roll-up of rare codes,
# the chains of parents) on a malformed concept_ancestor.
MAX_LEVELS = 256

# Scratch tables the derivation writes (the relations and edge tables the expanded job names)
PERSONS, CODES, EVENTS = scratch("omop_person"), scratch("omop_codes"), scratch("omop_events")
CONDITIONS, PARENTS, READY = scratch("omop_cond"), scratch("omop_parent"), scratch("omop_ready")
CODE_TREE = scratch("omop_h_code")


def edge_table(column: str) -> tuple[str, str, str]:
    """The scratch edge table of the hierarchy derived for a person column (or ``code``)."""
    return scratch(f"omop_h_{column}")


# --------------------------------------------------------------------------------------
# job parsing
# --------------------------------------------------------------------------------------
def expand(t: Mapping[str, Any], base: Path, method: str,
           user_hierarchies: Mapping[str, HierarchySpec]) -> tuple[Dataset, dict[str, HierarchySpec]]:
    """``[input.omop]`` → the dataset's roles and the hierarchies they name. A hierarchy the job
    defines itself under a derived name (``[hierarchy.year_of_birth]``, ``[hierarchy.code]``,
    ...) replaces the default one."""
    key = "input.omop"
    unknown = sorted(set(t) - KEYS)
    if unknown:
        raise JobError(f"unknown key {unknown[0]!r} in [{key}]; allowed: {', '.join(sorted(KEYS))}")
    if ("path" in t) == ("schema" in t):
        raise JobError(f"{key}: give exactly one of path (a folder of CSV/Parquet files named after the OMOP "
                       "tables) or schema (the schema, or database.schema, holding them)")
    path = Path(base, _text(t["path"], f"{key}.path")) if "path" in t else None
    schema = tuple(_text(t["schema"], f"{key}.schema").split(".")) if "schema" in t else None
    if schema is not None and (len(schema) > 2 or not all(schema)):
        raise JobError(f"{key}.schema = {t['schema']!r}: a schema or database.schema")
    roles = _names(t.get("roles", list(METHOD_ROLES.get(method, ()))), f"{key}.roles", ROLES)
    if not roles:
        raise JobError(f"{key}.roles: method {method!r} is not a built-in method; say which roles it reads "
                       f"(a list of {', '.join(ROLES)})")
    reference = t.get("reference_date")
    if reference is not None:
        if isinstance(reference, str):
            try:
                reference = datetime.date.fromisoformat(reference)
            except ValueError:
                reference = None
        if not isinstance(reference, datetime.date) or isinstance(reference, datetime.datetime):
            raise JobError(f"{key}.reference_date = {t['reference_date']!r}: a date, like 2024-01-01")
    class_ = _opt_name(t.get("class"), f"{key}.class", PERSON_COLUMNS)
    sensitive = _opt_name(t.get("sensitive"), f"{key}.sensitive", PERSON_COLUMNS)
    if "qis" in t:
        qis = _names(t["qis"], f"{key}.qis", PERSON_COLUMNS)
    else:
        has_location = path is not None and any((path / f"location{s}").is_file() for s in OMOP_FILE_SUFFIXES)
        qis = tuple(c for c in ("age" if reference else "year_of_birth", "gender", "race", "ethnicity")
                    + (("zip3",) if has_location else ()) if c not in (class_, sensitive))
    if "age" in (*qis, class_, sensitive) and reference is None:
        raise JobError(f"{key}: the person column 'age' is the age at reference_date: set {key}.reference_date")
    first: dict[str, str] = {}
    for role, column in [(f"{key}.qis", c) for c in qis] + [(f"{key}.class", class_), (f"{key}.sensitive", sensitive)]:
        if column is not None and first.setdefault(column, role) != role:
            raise JobError(f"{role} = {column!r} is also in {first[column]}; a column has exactly one role")
    code = t.get("code", CODE_COLUMNS[0])
    if code not in CODE_COLUMNS:
        raise JobError(f"{key}.code = {code!r}: one of {', '.join(CODE_COLUMNS)}")
    frequency = t.get("min_code_frequency", 1)
    if not isinstance(frequency, int) or isinstance(frequency, bool) or frequency < 1:
        raise JobError(f"{key}.min_code_frequency = {frequency!r}: a whole number of persons >= 1")
    spec = OmopSpec(schema, path, roles, qis, code, reference,
                    _strings(t.get("domain_id", []), f"{key}.domain_id"),
                    _strings(t.get("vocabulary_id", []), f"{key}.vocabulary_id"), frequency, class_, sensitive)
    if "person" in roles and not qis:
        raise JobError(f"{key}.qis: the person role needs at least one quasi-identifier")
    if "person" not in roles and (class_ or sensitive or "qis" in t):
        raise JobError(f"{key}: qis, class and sensitive are person columns; method {method!r} reads no person "
                       "table (add \"person\" to roles)")
    return _dataset(spec), _hierarchies(spec, user_hierarchies)


def _dataset(spec: OmopSpec) -> Dataset:
    where = "[input.omop]"
    person = Source(derived=PERSONS, origin=f"the persons of {where}") if "person" in spec.roles else None
    qis = tuple(QI(c, "numeric" if c in ("year_of_birth", "age") else "categorical", c) for c in spec.qis)
    codes = Codes(Source(derived=CODES, origin=f"the codes of {where}"), "person_id", "code", "code") \
        if "codes" in spec.roles else None
    events = Events(Source(derived=EVENTS, origin=f"the events of {where}"), "person_id", "code", "age", "position",
                    "code", "event_age") if "events" in spec.roles else None
    return Dataset(person, "person_id", (), qis if person else (), codes, events, spec.sensitive, spec.class_,
                   omop=spec)


def _hierarchies(spec: OmopSpec, user: Mapping[str, HierarchySpec]) -> dict[str, HierarchySpec]:
    """The default hierarchy of each derived column: 5-year dyadic intervals over years of
    birth and ages, value → ``*`` over gender, race and ethnicity, 3 → 2 → 1 digits → ``*``
    over zip3, 2-year dyadic intervals over event ages, and the code tree."""
    out: dict[str, HierarchySpec] = {}
    for column in spec.qis if "person" in spec.roles else ():
        if column in ("year_of_birth", "age"):
            out[column] = HierarchySpec(column, "interval", width=5.0, dyadic=True)
        else:
            out[column] = HierarchySpec(column, "edges", table=edge_table(column), derived_from=spec)
    if "codes" in spec.roles or "events" in spec.roles:
        out["code"] = HierarchySpec("code", "edges", table=CODE_TREE, derived_from=spec)
    if "events" in spec.roles:
        out["event_age"] = HierarchySpec("event_age", "interval", width=2.0, dyadic=True)
    return {**out, **{name: h for name, h in user.items() if name in out}}


def _text(v: Any, key: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise JobError(f"{key} = {v!r}: expected a non-empty string")
    return v


def _strings(v: Any, key: str) -> tuple[str, ...]:
    values = [v] if isinstance(v, str) else v
    if not isinstance(values, list) or not all(isinstance(x, str) and x for x in values):
        raise JobError(f"{key} = {v!r}: a string or a list of strings")
    return tuple(values)


def _names(v: Any, key: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    names = _strings(v, key)
    for n in names:
        if n not in allowed:
            raise JobError(f"{key}: {n!r} is not one of {', '.join(allowed)}")
    if len(set(names)) != len(names):
        raise JobError(f"{key} = {list(names)!r}: names a column twice")
    return names


def _opt_name(v: Any, key: str, allowed: tuple[str, ...]) -> str | None:
    if v is None:
        return None
    if _text(v, key) not in allowed:
        raise JobError(f"{key} = {v!r}: one of the person columns {', '.join(allowed)}")
    return v


# --------------------------------------------------------------------------------------
# derivation
# --------------------------------------------------------------------------------------
def derive(backend: Backend, spec: OmopSpec) -> None:
    """Build the scratch tables the expanded job names, once per session (the inputs and a
    re-verification's hierarchies both ask for them). Reads the OMOP tables, never writes them."""
    if backend.scratch_exists(READY):
        return
    needs_birth = "person" in spec.roles and bool({"year_of_birth", "age"} & set(spec.person_columns())) \
        or "events" in spec.roles
    tables = _tables(backend, spec)
    if needs_birth:
        _refuse_null_births(backend, tables["person"])
    if "person" in spec.roles:
        _persons(backend, spec, tables)
    if "codes" in spec.roles or "events" in spec.roles:
        _conditions(backend, spec, tables)
        mapping = _code_tree(backend, spec, tables)
        if "codes" in spec.roles:
            backend.run("omop: codes", render("omop/codes.sql.j2", target=CODES, conditions=CONDITIONS,
                                              mapping=mapping))
        if "events" in spec.roles:
            backend.run("omop: events", render("omop/events.sql.j2", target=EVENTS, conditions=CONDITIONS,
                                               mapping=mapping, person=tables["person"]))
    backend.run("omop: ready", render("omop/ready.sql.j2", target=READY))


def _needed(spec: OmopSpec) -> dict[str, tuple[str, ...]]:
    """The tables and columns the job's roles read."""
    person = ["person_id"]
    columns = spec.person_columns() if "person" in spec.roles else ()
    if "events" in spec.roles or {"year_of_birth", "age"} & set(columns):
        person.append("year_of_birth")
    person += [CONCEPT_COLUMNS[c] for c in columns if c in CONCEPT_COLUMNS]
    needed: dict[str, tuple[str, ...]] = {"person": tuple(person),
                                          "concept": ("concept_id", "concept_name", "domain_id", "vocabulary_id")}
    if "zip3" in columns:
        needed["person"] += ("location_id",)
        needed["location"] = ("location_id", "zip")
    if "codes" in spec.roles or "events" in spec.roles:
        condition = ["person_id", "condition_start_date", spec.code]
        if spec.code == "condition_source_value":
            condition.append("condition_source_concept_id")
        needed["condition_occurrence"] = tuple(condition)
        needed["concept_ancestor"] = ("ancestor_concept_id", "descendant_concept_id", "min_levels_of_separation",
                                      "max_levels_of_separation")
    return needed


# columns read as text from CSV: codes and names keep their spelling ("00501" is not 501)
_TEXT = ("concept_name", "domain_id", "vocabulary_id", "concept_code", "condition_source_value", "zip")


def _tables(backend: Backend, spec: OmopSpec) -> dict[str, tuple[str, ...]]:
    """Each needed table's relation (a folder's file loaded into a scratch table), with its
    needed columns checked; every missing table or column is named with where it was looked for."""
    if spec.path is not None and not spec.path.is_dir():
        raise InputError(f"input.omop.path = {str(spec.path)!r}: no such folder")
    out: dict[str, tuple[str, ...]] = {}
    for table, wanted in _needed(spec).items():
        if spec.path is not None:
            file = next((spec.path / (table + s) for s in OMOP_FILE_SUFFIXES if (spec.path / (table + s)).is_file()), None)
            if file is None:
                raise InputError(f"input.omop: no OMOP table {table!r} in {spec.where(table)}")
            relation: tuple[str, ...] = scratch(f"omop_src_{table}")
            fmt = "parquet" if file.suffix == ".parquet" else "csv"
            try:
                backend.load_file(f"omop: load {file.name}", relation, str(file), fmt, _TEXT)
            except AnonDuckError as err:
                raise InputError(f"input.omop: cannot read {str(file)!r} as {fmt}: {err}") from err
        else:
            assert spec.schema is not None
            relation = (*spec.schema, table)
        try:
            columns = backend.columns(f"omop: columns of {table}", relation)
        except AnonDuckError as err:
            raise InputError(f"input.omop: no OMOP table {table!r} in {spec.where(table)}") from err
        missing = [c for c in wanted if c not in columns]
        if missing:
            raise InputError(f"input.omop: OMOP table {table!r} in {spec.where(table)} has no column "
                             f"{', '.join(map(repr, missing))} (columns: {', '.join(columns)})")
        out[table] = relation
    return out


def _refuse_null_births(backend: Backend, person: tuple[str, ...]) -> None:
    n, examples = backend.rows("omop: years of birth", render("omop/null_births.sql.j2", person=person))[0]
    if n:
        raise InputError(f"input.omop: {n} person(s) have no year_of_birth (person_id {', '.join(examples)}); ages "
                         "and years of birth need it — anon_duck does not guess values: fill it or remove them")


def _refuse_missing_concepts(backend: Backend, relation: tuple[str, ...], column: str, concept: tuple[str, ...],
                             what: str) -> None:
    n, examples = backend.rows(f"omop: concepts of {column}", render(
        "omop/missing_concepts.sql.j2", relation=relation, column=column, concept=concept))[0]
    if n:
        raise InputError(f"input.omop: {n} concept id(s) in {what} are not in table concept "
                         f"({', '.join(examples)}); add them to concept (the vocabulary is incomplete)")


def _persons(backend: Backend, spec: OmopSpec, tables: Mapping[str, tuple[str, ...]]) -> None:
    columns = spec.person_columns()
    for c in columns:
        if c in CONCEPT_COLUMNS:
            _refuse_missing_concepts(backend, tables["person"], CONCEPT_COLUMNS[c], tables["concept"],
                                     f"person.{CONCEPT_COLUMNS[c]}")
    backend.run("omop: persons", render(
        "omop/persons.sql.j2", target=PERSONS, person=tables["person"], concept=tables["concept"],
        location=tables.get("location"), columns=list(columns), concept_columns=CONCEPT_COLUMNS,
        reference_year=spec.reference_date.year if spec.reference_date else None))
    for c in columns:
        if c in CONCEPT_COLUMNS:
            backend.run(f"omop: hierarchy {c}", render("omop/flat_edges.sql.j2", target=edge_table(c),
                                                       relation=PERSONS, column=c, root=ROOT))
        elif c == "zip3":
            backend.run("omop: hierarchy zip3", render("omop/zip3_edges.sql.j2", target=edge_table(c),
                                                       relation=PERSONS, root=ROOT))


def _conditions(backend: Backend, spec: OmopSpec, tables: Mapping[str, tuple[str, ...]]) -> None:
    """Condition rows as (person_id, code, concept_id, start_date): every check on them first,
    then the vocabulary filters."""
    condition, concept = tables["condition_occurrence"], tables["concept"]
    placing = "condition_source_concept_id" if spec.code == "condition_source_value" else spec.code
    n_null, n_orphans, orphans = backend.rows("omop: condition checks", render(
        "omop/condition_checks.sql.j2", condition=condition, person=tables["person"], code=spec.code,
        placing=placing))[0]
    if n_null:
        raise InputError(f"input.omop: {n_null} condition_occurrence row(s) have no {spec.code}"
                         + (f" or no {placing}" if placing != spec.code else "") + " — fill them or remove them")
    if n_orphans:
        raise InputError(f"input.omop: condition_occurrence names {n_orphans} person_id(s) with no row in person "
                         f"({', '.join(orphans)})")
    _refuse_missing_concepts(backend, condition, placing, concept, f"condition_occurrence.{placing}")
    backend.run("omop: conditions", render(
        "omop/conditions.sql.j2", target=CONDITIONS, condition=condition, concept=concept, code=spec.code,
        placing=placing, domain_ids=list(spec.domain_ids), vocabulary_ids=list(spec.vocabulary_ids)))


def _code_tree(backend: Backend, spec: OmopSpec, tables: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The code hierarchy's edge table; returns the code map (code → published code) after rare
    codes were rolled up to their parents."""
    concept, ancestor = tables["concept"], tables["concept_ancestor"]
    n_conditions, n_orphans, orphans = backend.rows("omop: concepts without ancestors", render(
        "omop/orphan_concepts.sql.j2", conditions=CONDITIONS, ancestor=ancestor))[0]
    if not n_conditions:
        raise InputError("input.omop: no condition_occurrence row is left"
                         + (" after the domain_id/vocabulary_id filters" if spec.domain_ids or spec.vocabulary_ids
                            else "") + ", nothing to anonymize")
    if n_orphans:
        raise InputError(f"input.omop: {n_orphans} concept(s) used as codes have no row in concept_ancestor, not "
                         f"even their own ({', '.join(orphans)}), so they have no place in the code hierarchy; "
                         "filter them out with domain_id/vocabulary_id or add their rows")
    backend.run("omop: parents", render("omop/parents.sql.j2", target=PARENTS, conditions=CONDITIONS,
                                        ancestor=ancestor, source_values=spec.code == "condition_source_value"))
    _refuse_missing_concepts(backend, PARENTS, "concept_id", concept, "concept_ancestor (ancestors of used codes)")
    if spec.code == "condition_source_value":
        n, clashes = backend.rows("omop: source values", render("omop/value_clashes.sql.j2", parents=PARENTS))[0]
        if n:
            raise InputError(f"input.omop.code = 'condition_source_value': {n} source value(s) have two "
                             f"source concepts or are spelled like a concept id of the hierarchy ({', '.join(clashes)}); "
                             "a node of the code tree needs one name and one parent")
    mapping = _roll_up(backend, spec)
    backend.run("omop: code tree", render("omop/code_tree.sql.j2", target=CODE_TREE, parents=PARENTS,
                                          mapping=mapping, concept=concept, root=ROOT,
                                          max_depth=MAX_LEVELS))
    return mapping


def _roll_up(backend: Backend, spec: OmopSpec) -> tuple[str, ...]:
    """Codes held by fewer than ``min_code_frequency`` persons are replaced by their parent in
    the tree, again and again until every code is frequent enough or a top concept (which stays
    whatever its count). Python drives the rounds; each is one statement on tiny tables."""
    current, other = scratch("omop_map"), scratch("omop_map_next")
    backend.run("omop: code map", render("omop/code_map.sql.j2", target=current, conditions=CONDITIONS))
    for _ in range(MAX_LEVELS):
        rare = backend.scalar("omop: rare codes", render(
            "omop/roll_up.sql.j2", target=None, mapping=current, parents=PARENTS, conditions=CONDITIONS),
            {"min_persons": spec.min_code_frequency})
        if not rare:
            return current
        backend.run("omop: roll up", render("omop/roll_up.sql.j2", target=other, mapping=current, parents=PARENTS,
                                            conditions=CONDITIONS), {"min_persons": spec.min_code_frequency})
        current, other = other, current
    raise InputError(f"input.omop.min_code_frequency: rare codes still rolling up after {MAX_LEVELS} rounds; "
                     "concept_ancestor is deeper than any vocabulary (a cycle?)")
