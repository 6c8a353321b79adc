"""How a release's tables and views are named: ``<release>_<suffix>`` for every table,
``<release>_meta`` for its metadata, ``<release>`` for the main analyst view, all in the
job's ``[release] schema`` (DuckDB's ``main``, the connection's current schema or database,
when the job names none). One place spells them, so publication, export, verification and the
hygiene checks agree."""
from __future__ import annotations

from dataclasses import dataclass

from ..job import Job
from ..jobspec import Release
from ..methods.base import AnalystView


@dataclass(frozen=True)
class ReleaseNames:
    """The names of release ``release``'s objects, all in ``schema`` (None: the default one)."""

    release: str
    schema: str | None = None

    @classmethod
    def of(cls, job: Job) -> ReleaseNames:
        """The names of ``job``'s release."""
        return cls(job.release.name, job.release.schema)

    def where(self, name: str) -> tuple[str, str]:
        """The qualified name of one of the release's tables or views (jobspec.Release.where)."""
        return Release(self.release, schema=self.schema).where(name)

    def table(self, suffix: str) -> str:
        """``<release>_<suffix>``: a published table (or a secondary analyst view)."""
        return f"{self.release}_{suffix}"

    @property
    def meta(self) -> str:
        """``<release>_meta``: what was published, with what, and how it was verified."""
        return self.table("meta")

    def view(self, view: AnalystView) -> str:
        """``<release>`` for the main analyst view, ``<release>_<suffix>`` for the others."""
        return self.table(view.suffix) if view.suffix else self.release

    def suffix(self, table: str) -> str:
        """The suffix of a published table's name (the inverse of :meth:`table`)."""
        if not self.owns_table(table):
            raise ValueError(f"{table!r} is not a table of release {self.release!r}")
        return table[len(self.release) + 1:]

    def owns_table(self, table: str) -> bool:
        """Whether ``table`` may be a table of this release: ``<release>_*``, not the metadata."""
        return table.startswith(f"{self.release}_") and table != self.meta

    def owns_view(self, view: str) -> bool:
        """Whether ``view`` may be an analyst view of this release: ``<release>`` or ``<release>_*``."""
        return (view == self.release or view.startswith(f"{self.release}_")) and view != self.meta


class TableNames(dict):
    """suffix → ``(<release>_<suffix>,)`` for any suffix a view template names."""

    def __init__(self, names: ReleaseNames) -> None:
        super().__init__()
        self.names = names

    def __missing__(self, suffix: str) -> tuple[str, ...]:
        # unqualified in the default schema: a view reads its tables as the search path finds them
        table = self.names.table(suffix)
        return self.names.where(table) if self.names.schema else (table,)
