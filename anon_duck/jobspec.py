"""A job as data: the frozen dataclasses a job file is parsed into (:mod:`anon_duck.job` parses
and checks; :mod:`anon_duck.omop` expands ``[input.omop]`` into the same roles). Kept apart from
the parser so that a module the parser calls can build them without importing the parser back.
"""
from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .csvoptions import DEFAULT as CSV_DEFAULT
from .csvoptions import CsvOptions

DATE_UNITS = ("day", "month", "year", "decade")
# The file names tried, in this order, for an OMOP table in a folder ([input.omop] path).
OMOP_FILE_SUFFIXES = (".parquet", ".csv", ".csv.gz")


def table_parts(name: str) -> tuple[str, ...]:
    """A table name as written in a job, ``table``, ``schema.table`` or
    ``catalog.schema.table``, as its parts."""
    return tuple(name.split("."))


@dataclass(frozen=True)
class Source:
    """Where a relation comes from: a table already in the database, a CSV/Parquet file, or a
    scratch table ``derived`` from ``[input.omop]`` when the inputs are prepared (``origin``
    says what it holds, for messages)."""

    table: str | None = None
    path: Path | None = None
    derived: tuple[str, ...] | None = None
    origin: str = ""
    csv: CsvOptions = CSV_DEFAULT      # how a CSV file is written (``csv = {...}`` of its role)

    @property
    def relation(self) -> tuple[str, ...]:
        """The name parts of ``table``: ``cdm.person`` is table ``person`` of schema ``cdm``
        (job.py checked that no part is empty). Each part is quoted as written; a name whose
        dot is part of the name itself cannot be given (docs/jobs.md)."""
        assert self.table is not None
        return table_parts(self.table)

    def describe(self) -> str:
        if self.derived is not None:
            return self.origin
        return f"table {self.table!r}" if self.table else f"file {str(self.path)!r}"


@dataclass(frozen=True)
class QI:
    column: str
    kind: str
    hierarchy: str | None = None
    weight: float | None = None


@dataclass(frozen=True)
class Codes:
    """Set-valued attribute: a long table ``(id, code)`` or a LIST column of the person table."""

    source: Source | None
    id: str | None
    code: str
    hierarchy: str | None
    is_list_column: bool = False


@dataclass(frozen=True)
class Events:
    """Longitudinal events ``(id, position, code, age)``; ``position`` may be omitted."""

    source: Source
    id: str
    code: str
    age: str
    position: str | None = None
    code_hierarchy: str | None = None
    age_hierarchy: str | None = None


@dataclass(frozen=True)
class HierarchySpec:
    name: str
    type: str
    path: Path | None = None
    table: str | tuple[str, ...] | None = None
    builtin: str | None = None
    # interval builder
    width: float | None = None
    levels: int | None = None
    dyadic: bool = False
    lo: float | None = None
    hi: float | None = None
    # builtin ICD trees: which levels to keep (e.g. 3-digit → section → chapter)
    leaf_level: str | None = None
    delimiter: str | None = None     # None: ';' for arx files, ',' for edge lists
    # mask builder (ARX's redaction): pad to ``length`` with ``padding`` (on the left when the
    # values are aligned right, ARX's RIGHT_TO_LEFT alignment), then mask 1, 2, ... characters
    # from the right with ``mask``
    length: int | None = None
    padding: str = "0"
    mask: str = "*"
    align: str = "right"
    # date builder: the units above the value, bottom up (a subset of DATE_UNITS, in that order;
    # ``day`` only adds a level above timestamps)
    units: tuple[str, ...] = DATE_UNITS
    # edges derived from [input.omop]: hierarchy.build has them derived before reading ``table``
    derived_from: OmopSpec | None = None


@dataclass(frozen=True)
class Dataset:
    """The roles of a dataset. ``source`` is None when the only data are codes or events:
    the persons are then the distinct ids found there (column ``id``)."""

    source: Source | None
    id: str | None
    drop: tuple[str, ...] = ()
    qis: tuple[QI, ...] = ()
    codes: Codes | None = None
    events: Events | None = None
    sensitive: str | None = None
    class_: str | None = None
    keep: tuple[str, ...] = ()
    omop: OmopSpec | None = None     # the [input.omop] the roles were expanded from


@dataclass(frozen=True)
class Release:
    name: str
    seed: int = 0
    schema: str | None = None     # where the release is published (created if absent); None: the default
    # the fewest input persons a code of <release>_retention may stand for; rarer codes are merged
    # into one row (anon_duck/retention.py); None: the method's k
    retention_min_persons: int | None = None

    def where(self, table: str) -> tuple[str, str]:
        """A table or view of the release's schema, qualified (``main`` stands for the default
        schema on every engine: the connection's current schema or database)."""
        return (self.schema or "main", table)


@dataclass(frozen=True)
class Settings:
    memory_limit: str | None = None
    threads: int | None = None
    partition_size: int | None = None   # persons per fragment of a partitioned run (docs/scale.md)


@dataclass(frozen=True)
class RiskSettings:
    """``[risk]``: what ``anon-duck risk`` measures beyond the defaults (docs/risk.md). None
    means the default: no population; thresholds 1/2, 1/5, 1/10, 1/20; the method's k and m
    (else 5 and 2); prefixes of up to 5 events."""

    population_size: int | None = None
    population: Source | None = None     # a relation with the same QI columns as the input
    thresholds: tuple[float, ...] | None = None
    k: int | None = None
    m: int | None = None
    events_prefix: int | None = None


@dataclass(frozen=True)
class Job:
    dataset: Dataset
    hierarchies: Mapping[str, HierarchySpec]
    method: str
    params: Mapping[str, Any]
    release: Release
    settings: Settings = field(default_factory=Settings)
    base_dir: Path = Path(".")
    risk: RiskSettings = field(default_factory=RiskSettings)

    def with_params(self, **params: Any) -> "Job":
        """A copy with some method parameters replaced (used by sweeps and tests)."""
        return dataclasses.replace(self, params={**self.params, **params})

    def with_release(self, name: str) -> "Job":
        return dataclasses.replace(self, release=dataclasses.replace(self.release, name=name))


@dataclass(frozen=True)
class OmopSpec:
    """``[input.omop]`` as parsed: where the tables are and which rules apply."""

    schema: tuple[str, ...] | None
    path: Path | None
    roles: tuple[str, ...]
    qis: tuple[str, ...]
    code: str = "condition_concept_id"
    reference_date: datetime.date | None = None
    domain_ids: tuple[str, ...] = ()
    vocabulary_ids: tuple[str, ...] = ()
    min_code_frequency: int = 1
    class_: str | None = None
    sensitive: str | None = None
    # refuse what a trimmed vocabulary lacks (concepts missing from concept, codes without
    # concept_ancestor rows) instead of placing it (docs/omop.md)
    strict: bool = False
    csv: CsvOptions = CSV_DEFAULT      # how the folder's CSV files are written

    def where(self, table: str) -> str:
        """Where a table is looked for, for error messages."""
        if self.path is not None:
            return f"folder {str(self.path)!r} ({', '.join(table + s for s in OMOP_FILE_SUFFIXES)})"
        assert self.schema is not None
        return f"schema {'.'.join(self.schema)!r} (as {'.'.join((*self.schema, table))})"

    def person_columns(self) -> tuple[str, ...]:
        return tuple(c for c in (*self.qis, self.class_, self.sensitive) if c)
