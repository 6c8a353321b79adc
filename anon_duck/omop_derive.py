"""``[input.omop]`` derived: the scratch tables an expanded OMOP job names (anon_duck/omop.py
parses the job; the rules are in docs/omop.md).

OMOP databases arrive as they are exported: upper-case names from SQL Server or Oracle, a
vocabulary trimmed to the concepts in use, concept 0 for "no matching concept". Tables and
columns are found as the engine finds names (names.py) and quoted as found. What a trimmed
vocabulary lacks is placed, counted and said (:class:`Notes`, one warning line each) unless the
job sets ``strict = true``, which refuses it as anon_duck did before, naming the first problem:

* a concept id absent from ``concept`` (in the person concept columns, the code column or among
  the ancestors of used codes) is labelled with its id;
* a used concept with no ``concept_ancestor`` row is a top concept, a child of the root ``*``;
* concept 0 is its own top concept, never given a parent nor made anyone's parent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .backend.base import Backend
from .csvoptions import is_csv_error, unreadable
from .errors import AnonDuckError, InputError
from .jobspec import OMOP_FILE_SUFFIXES, OmopSpec
from .names import find
from .omop import (CODE_TREE, CODES, CONCEPT_COLUMNS, CONDITIONS, EVENTS, MAX_LEVELS, NO_MATCHING_CONCEPT, PARENTS,
                   PERSONS, READY, ROOT, edge_table)
from .scratch import scratch
from .sqlrender import render

EXAMPLES = 3      # concept ids a warning names
STRICT_EXAMPLES = 5   # and a strict refusal


@dataclass(frozen=True)
class Table:
    """An OMOP table as found: its relation and the spelling of each column the job reads
    (OMOP's lower-case name -> the name in the table)."""

    rel: tuple[str, ...]
    col: Mapping[str, str]


@dataclass
class Notes:
    """What the derivation placed instead of refusing, for ``run`` and ``inspect`` to say."""

    absent_concepts: int = 0                # distinct concept ids absent from concept (0 aside)
    absent_examples: list[str] = field(default_factory=list)
    without_ancestors: int = 0              # used concepts with no concept_ancestor row (0 aside)
    without_ancestor_examples: list[str] = field(default_factory=list)
    tie_breaks: dict[str, int] = field(default_factory=dict)   # concepts with several parents, by deciding rule

    def warnings(self) -> list[str]:
        out = []
        if self.absent_concepts:
            out.append(f"input.omop: {self.absent_concepts} concept id(s) are not in table concept (e.g. "
                       f"{', '.join(self.absent_examples)}): each is labelled with its id, and a gender, race or "
                       "ethnicity is its id (strict = true refuses them)")
        if self.without_ancestors:
            out.append(f"input.omop: {self.without_ancestors} concept(s) used as codes have no row in concept_ancestor "
                       f"(e.g. {', '.join(self.without_ancestor_examples)}): each is a top concept under the root "
                       f"{ROOT!r} (strict = true refuses them)")
        return out

    def summary(self) -> dict[str, Any]:
        """For ``inspect``: the counts behind the warnings and the multiple-parent rule's."""
        return {"concepts_absent_from_concept": self.absent_concepts,
                "codes_without_concept_ancestor_rows": self.without_ancestors,
                "several_parents_decided_by": dict(self.tie_breaks)}


def derive(backend: Backend, spec: OmopSpec) -> Notes | None:
    """Build the scratch tables the expanded job names, once per session (the inputs and a
    re-verification's hierarchies both ask for them); None if they were built already. Reads
    the OMOP tables, never writes them."""
    if backend.scratch_exists(READY):
        return None
    notes = Notes()
    needs_birth = "person" in spec.roles and bool({"year_of_birth", "age"} & set(spec.person_columns())) \
        or "events" in spec.roles
    tables = _tables(backend, spec)
    if needs_birth:
        _refuse_null_births(backend, tables["person"])
    absent: list[tuple[tuple[str, ...], str, str]] = []   # (relation, column, what) whose concept ids count
    if "person" in spec.roles:
        absent += _persons(backend, spec, tables)
    if "codes" in spec.roles or "events" in spec.roles:
        absent += _conditions(backend, spec, tables)
        mapping = _code_tree(backend, spec, tables, notes)
        absent.append((PARENTS, "concept_id", "concept_ancestor (ancestors of used codes)"))
        if "codes" in spec.roles:
            backend.run("omop: codes", render("omop/codes.sql.j2", target=CODES, conditions=CONDITIONS,
                                              mapping=mapping))
        if "events" in spec.roles:
            backend.run("omop: events", render("omop/events.sql.j2", target=EVENTS, conditions=CONDITIONS,
                                               mapping=mapping, person=tables["person"]))
    if absent and not spec.strict:
        n, examples = _absent(backend, absent, tables["concept"], EXAMPLES)
        notes.absent_concepts, notes.absent_examples = int(n), list(examples or [])
    backend.run("omop: ready", render("omop/ready.sql.j2", target=READY))
    return notes


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


def table_file(folder: Path, table: str) -> Path | None:
    """The file holding ``table`` in a folder: ``<table>.parquet``, ``.csv`` or ``.csv.gz``
    (tried in that order), its name matched without regard to case (a SQL Server export writes
    ``PERSON.csv``); two names differing only in case are an error naming both."""
    names = sorted(f.name for f in folder.iterdir() if f.is_file())
    for suffix in OMOP_FILE_SUFFIXES:
        name = find(names, table + suffix, case_sensitive=False, key=f"input.omop: table {table!r}",
                    where=f"folder {str(folder)!r}", kind="file")
        if name is not None:
            return folder / name
    return None


def _tables(backend: Backend, spec: OmopSpec) -> dict[str, Table]:
    """Each needed table as found (a folder's file loaded into a scratch table), with its needed
    columns found as the engine finds names; every missing table or column is named with where
    it was looked for."""
    if spec.path is not None and not spec.path.is_dir():
        raise InputError(f"input.omop.path = {str(spec.path)!r}: no such folder")
    case_sensitive = backend.case_sensitive()
    out: dict[str, Table] = {}
    for table, wanted in _needed(spec).items():
        if spec.path is not None:
            file = table_file(spec.path, table)
            if file is None:
                raise InputError(f"input.omop: no OMOP table {table!r} in {spec.where(table)}")
            relation: tuple[str, ...] = scratch(f"omop_src_{table}")
            fmt = "parquet" if file.suffix.lower() == ".parquet" else "csv"
            try:
                backend.load_file(f"omop: load {file.name}", relation, str(file), fmt, _TEXT, spec.csv)
            except AnonDuckError as err:
                if fmt == "csv" and is_csv_error(str(err)):
                    raise InputError(f"input.omop: {str(file)!r}: {unreadable(str(err), 'input.omop.csv')}") from err
                raise InputError(f"input.omop: cannot read {str(file)!r} as {fmt}: {err}") from err
        else:
            assert spec.schema is not None
            relation = (*spec.schema, table)
        try:
            columns = backend.columns(f"omop: columns of {table}", relation)
        except AnonDuckError as err:
            raise InputError(f"input.omop: no OMOP table {table!r} in {spec.where(table)}") from err
        where = f"OMOP table {table!r} in {spec.where(table)}"
        found = {c: find(columns, c, case_sensitive=case_sensitive, key=f"input.omop: column {c!r}", where=where)
                 for c in wanted}
        missing = [c for c, spelled in found.items() if spelled is None]
        if missing:
            raise InputError(f"input.omop: {where} has no column {', '.join(map(repr, missing))} "
                             f"(columns: {', '.join(columns)})")
        out[table] = Table(relation, {c: spelled for c, spelled in found.items() if spelled is not None})
    return out


def _refuse_null_births(backend: Backend, person: Table) -> None:
    n, examples = backend.rows("omop: years of birth", render("omop/null_births.sql.j2", person=person))[0]
    if n:
        raise InputError(f"input.omop: {n} person(s) have no year_of_birth (person_id {', '.join(examples)}); ages "
                         "and years of birth need it — anon_duck does not guess values: fill it or remove them")


def _absent(backend: Backend, sources: list[tuple[tuple[str, ...], str, str]], concept: Table,
            limit: int) -> tuple[int, list[str]]:
    """How many distinct concept ids of the ``sources`` columns (concept 0 aside) table concept
    lacks, and the first ``limit`` of them."""
    n, examples = backend.rows("omop: concepts absent from concept", render(
        "omop/missing_concepts.sql.j2", sources=[(rel, column) for rel, column, _ in sources], concept=concept,
        limit=limit, skip_zero=True))[0]
    return int(n), list(examples or [])


def _refuse_missing_concepts(backend: Backend, relation: tuple[str, ...], column: str, concept: Table,
                             what: str) -> None:
    """``strict = true``: concept ids of ``column`` absent from concept are refused, as anon_duck
    did before it accepted trimmed vocabularies (concept 0 too)."""
    n, examples = backend.rows(f"omop: concepts of {column}", render(
        "omop/missing_concepts.sql.j2", sources=[(relation, column)], concept=concept, limit=STRICT_EXAMPLES,
        skip_zero=False))[0]
    if n:
        raise InputError(f"input.omop: {n} concept id(s) in {what} are not in table concept "
                         f"({', '.join(examples)}); add them to concept (the vocabulary is incomplete), or leave "
                         "strict out to label them with their ids")


def _persons(backend: Backend, spec: OmopSpec,
             tables: Mapping[str, Table]) -> list[tuple[tuple[str, ...], str, str]]:
    """The person relation and its flat hierarchies; returns the concept columns read."""
    columns = spec.person_columns()
    person = tables["person"]
    read = [(person.rel, person.col[CONCEPT_COLUMNS[c]], f"person.{CONCEPT_COLUMNS[c]}")
            for c in columns if c in CONCEPT_COLUMNS]
    if spec.strict:
        for relation, column, what in read:
            _refuse_missing_concepts(backend, relation, column, tables["concept"], what)
    backend.run("omop: persons", render(
        "omop/persons.sql.j2", target=PERSONS, person=person, concept=tables["concept"],
        location=tables.get("location"), columns=list(columns), concept_columns=CONCEPT_COLUMNS,
        reference_year=spec.reference_date.year if spec.reference_date else None))
    for c in columns:
        if c in CONCEPT_COLUMNS:
            backend.run(f"omop: hierarchy {c}", render("omop/flat_edges.sql.j2", target=edge_table(c),
                                                       relation=PERSONS, column=c, root=ROOT))
        elif c == "zip3":
            backend.run("omop: hierarchy zip3", render("omop/zip3_edges.sql.j2", target=edge_table(c),
                                                       relation=PERSONS, root=ROOT))
    return read


def _conditions(backend: Backend, spec: OmopSpec,
                tables: Mapping[str, Table]) -> list[tuple[tuple[str, ...], str, str]]:
    """Condition rows as (person_id, code, concept_id, start_date): every check on them first,
    then the vocabulary filters; returns the concept column read."""
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
    what = f"condition_occurrence.{placing}"
    if spec.strict:
        _refuse_missing_concepts(backend, condition.rel, condition.col[placing], concept, what)
    backend.run("omop: conditions", render(
        "omop/conditions.sql.j2", target=CONDITIONS, condition=condition, concept=concept, code=spec.code,
        placing=placing, domain_ids=list(spec.domain_ids), vocabulary_ids=list(spec.vocabulary_ids)))
    return [(condition.rel, condition.col[placing], what)]


def _code_tree(backend: Backend, spec: OmopSpec, tables: Mapping[str, Table], notes: Notes) -> tuple[str, ...]:
    """The code hierarchy's edge table; returns the code map (code → published code) after rare
    codes were rolled up to their parents."""
    concept, ancestor = tables["concept"], tables["concept_ancestor"]
    n_conditions, n_orphans, orphans = backend.rows("omop: concepts without ancestors", render(
        "omop/orphan_concepts.sql.j2", conditions=CONDITIONS, ancestor=ancestor, skip_zero=not spec.strict))[0]
    if not n_conditions:
        raise InputError("input.omop: no condition_occurrence row is left"
                         + (" after the domain_id/vocabulary_id filters" if spec.domain_ids or spec.vocabulary_ids
                            else "") + ", nothing to anonymize")
    if n_orphans and spec.strict:
        raise InputError(f"input.omop: {n_orphans} concept(s) used as codes have no row in concept_ancestor, not "
                         f"even their own ({', '.join(orphans)}), so they have no place in the code hierarchy; "
                         "filter them out with domain_id/vocabulary_id or add their rows (or leave strict out to "
                         "make them top concepts)")
    notes.without_ancestors, notes.without_ancestor_examples = int(n_orphans), list(orphans or [])[:EXAMPLES]
    backend.run("omop: parents", render("omop/parents.sql.j2", target=PARENTS, conditions=CONDITIONS,
                                        ancestor=ancestor, source_values=spec.code == "condition_source_value",
                                        no_match=NO_MATCHING_CONCEPT))
    if spec.strict:
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
                                          max_depth=MAX_LEVELS, no_match=NO_MATCHING_CONCEPT))
    depth, smallest = backend.rows("omop: tie-breaks", render("omop/tie_breaks.sql.j2", parents=PARENTS,
                                                              tree=CODE_TREE))[0]
    notes.tie_breaks = {"depth": int(depth or 0), "smallest_concept_id": int(smallest or 0)}
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
