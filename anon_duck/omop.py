"""``[input.omop]``: an OMOP CDM v5.3 or v5.4 database as the standard roles of a job.

A job names an OMOP database (a schema, or a folder of CSV/Parquet files named after the
tables) instead of its own tables. :func:`expand` turns that, when the job is parsed, into an
ordinary :class:`~anon_duck.job.Dataset` and hierarchies, so every method reads OMOP data the
way it reads any other input; the relations they name are scratch tables that
:func:`anon_duck.omop_derive.derive` builds with the templates in ``sql/omop/`` when the inputs
are prepared (and again when a release is re-verified, since a hierarchy's edges come from the
data). The rules, their defaults and their costs are documented in ``docs/omop.md``; in short:

* persons: ``person_id``; QIs year of birth (or age at ``reference_date``), gender, race and
  ethnicity (concept names of the ``*_concept_id`` columns) and zip3 (``location.zip``);
* codes: ``(person_id, code)`` from ``condition_occurrence``; events: ``(person_id, code,
  age at condition_start_date)`` in date then code order;
* the code hierarchy: ``concept_ancestor`` made a tree by keeping, for each concept, the
  parent farthest from the top of the vocabulary (ties: smallest concept id), restricted to
  the ancestors of used codes, labelled with ``concept.concept_name`` (or the id, when a
  trimmed vocabulary lacks the concept).

Tables and columns are found as the engine finds names (any case). Bad input (a missing table
or column, a NULL year of birth) is an :class:`InputError` naming what is wrong; what a trimmed
vocabulary lacks is placed and counted, or refused with ``strict = true``.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Mapping

from .csvoptions import parse as parse_csv
from .errors import JobError
from .jobspec import OMOP_FILE_SUFFIXES, QI, Codes, Dataset, Events, HierarchySpec, OmopSpec, Source
from .names import matches
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
        "class", "sensitive", "roles", "strict", "csv"}
ROOT = "*"
# OMOP's concept 0, "No matching concept": a bucket of its own, never placed under a real concept
NO_MATCHING_CONCEPT = 0
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
        has_location = path is not None and path.is_dir() and any(
            matches((f.name for f in path.iterdir() if f.is_file()), f"location{s}", case_sensitive=False)
            for s in OMOP_FILE_SUFFIXES)
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
    strict = t.get("strict", False)
    if not isinstance(strict, bool):
        raise JobError(f"{key}.strict = {strict!r}: must be true or false")
    if "csv" in t and path is None:
        raise JobError(f"{key}.csv: says how the CSV files of a folder are written; {key}.schema names tables")
    spec = OmopSpec(schema, path, roles, qis, code, reference,
                    _strings(t.get("domain_id", []), f"{key}.domain_id"),
                    _strings(t.get("vocabulary_id", []), f"{key}.vocabulary_id"), frequency, class_, sensitive,
                    strict, parse_csv(t["csv"], f"{key}.csv") if "csv" in t else OmopSpec.csv)
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
