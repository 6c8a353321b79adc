"""The narrow interface every method uses (PipelineDP-style): run a statement, fetch
aggregates as numpy columns, write a table from numpy columns, and one transaction.
A backend holds no algorithm logic; the SQL of its own (catalog, settings) is in
sql/engines/<engine>/. An engine is described by an :class:`Engine` (how to recognise its
connection, open one, wrap it); anon_duck/backend/__init__.py lists them. docs/ENGINES.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ..csvoptions import CsvOptions


@runtime_checkable
class Backend(Protocol):
    trace: list

    def writable(self, schema: str = "main") -> bool:
        """Whether a release can be written into ``schema`` (``main``: the default one; a run
        refuses a read-only database up front, PostgreSQL a role that may not CREATE there)."""

    def in_transaction(self) -> bool:
        """Whether the caller holds a transaction open (every API call refuses one)."""

    def local_copy(self, tables: Sequence[str], schema: str = "main") -> ContextManager[Any]:
        """A DuckDB backend whose default schema holds the ``tables`` of ``schema`` (what an
        export writes from, with DuckDB's writers, so every engine exports the same files):
        DuckDB itself (a cursor of its own for another schema); other engines copy the tables
        into an in-memory DuckDB through Arrow."""

    def threads(self) -> int:
        """How many threads the engine works with: a Python stage running in parallel uses as
        many, so one setting bounds the CPU a run takes."""

    def sort_budget(self) -> int | None:
        """Bytes of row text one sort may hold when a release table is published (release/order.py),
        or None if the engine's sort of any size stays within its memory (Spark spills)."""

    def restore_settings(self) -> None:
        """Give the caller's settings back as they were before the call."""

    def cleanup(self, work: Callable[[], None]) -> None:
        """Run ``work`` (drop staged or scratch tables) so that it works after an interrupt too:
        an engine whose client an interrupt can leave mid-conversation (Spark's py4j gateway)
        runs it on a connection of its own."""

    def run(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Execute one statement; ``stage`` names the step for traces and errors."""

    def fetch(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        """Execute a query and return its columns as numpy arrays."""

    def rows(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        """Execute a query and return its (few) rows as tuples."""

    def scalar(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        """Execute a query that returns one value."""

    def write_table(self, name: Sequence[str] | str, columns: Mapping[str, np.ndarray | list]) -> None:
        """Create (or replace) a table from numpy columns in one bulk insert."""

    def transaction(self) -> ContextManager[None]:
        """All-or-nothing scope for publishing a release."""

    def load_file(self, stage: str, target: Sequence[str], path: str, fmt: str, text_columns: Sequence[str],
                  csv: CsvOptions | None = None) -> None:
        """Load a CSV (with a header, unless ``csv`` says otherwise) or Parquet file into scratch
        table ``target``; the ``text_columns`` that exist (matched as the engine matches names)
        are read as text (codes and ids keep their spelling). ``csv``: how the file is written
        (the job's ``csv = {...}``), passed to the engine's reader."""

    def case_sensitive(self) -> bool:
        """Whether the engine tells names apart by case (DuckDB never does; Spark only with
        spark.sql.caseSensitive=true): input names are looked up by the same rule (names.py)."""

    def columns(self, stage: str, relation: Sequence[str] | str) -> dict[str, str]:
        """A relation's columns and their types, spelled as DuckDB does (VARCHAR, BIGINT, ...)."""

    def table_exists(self, name: str, schema: str = "main") -> bool:
        """Whether ``schema`` (``main``: the default one) holds a table or view ``name`` (case ignored)."""

    def scratch_tables(self, where: Sequence[str]) -> list[str]:
        """The session's scratch tables under ``where`` = (catalog, schema, name prefix), as
        ``scratch.scratch(group)`` gives it: their last name parts."""

    def scratch_exists(self, name: Sequence[str]) -> bool:
        """Whether this session holds the scratch table ``name`` (``scratch.scratch(...)``): an
        audit re-run by ``anon-duck verify`` rebuilds what a run left in scratch. Engines keep
        their catalogs differently, so the backend answers."""


class FragmentRunner(Protocol):
    """An optional capability: a backend that runs a partitioned run's fragments its own way
    (Spark: one executor task each; DuckDB: worker processes, one per core) has
    ``anonymize_fragments``; on any other backend the fragments run one after another on the
    run's connection (anon_duck/partition)."""

    def anonymize_fragments(self, job: Any, method: Any, inputs: Any, params: Any, fragments: Any,
                            progress: Callable[[str, int, int], None]) -> tuple[list[Any], list[dict[str, Any]]] | None:
        """Every fragment anonymized by ``method``: the union of their staged tables (one
        ``ReleaseTable`` per release table, ids not yet renumbered) and each fragment's facts,
        in fragment order; ``progress`` counts the fragments done. None declines: the
        fragments then run one after another on the run's connection."""


@dataclass(frozen=True)
class Engine:
    """One engine as the factory (anon_duck/backend/__init__.py) sees it: ``accepts`` tells its
    connection object by its class; ``backend`` wraps one (``job``: the job whose
    ``[settings]`` hold for the call, or None); ``connect`` opens one for the CLI from ``--db``
    (a context manager: what it opened it closes)."""

    name: str
    accepts: Callable[[Any], bool]
    backend: Callable[[Any, Any], Backend]
    connect: Callable[..., ContextManager[Any]]
