"""Publication: the verified, staged tables of a run become release ``<name>`` in one
transaction (on Spark: staged, then swapped), with ``<name>_meta`` and the analyst views.

1. every table is written under a staging name, in release order: the previous release is
   still whole;
2. the previous release's views and tables are dropped and the staged tables renamed into place;
3. the analyst views are created over the published tables.

Readers see the old release or the new one; a failure leaves the old one."""
from __future__ import annotations

import json
import warnings
from typing import Any, Iterable, Mapping, Sequence

from ..backend.base import Backend
from ..errors import AnonDuckError, InputError
from ..job import Job
from ..scratch import staging
from ..sqlrender import render
from ..verifiers import CheckResult
from ..version import __version__
from .catalog import previous_release
from .names import ReleaseNames
from .order import copy_in_order
from .views import analyst_views, view_sql


def publish(backend: Backend, job: Job, tables: list, checks: list[CheckResult],
            facts: Mapping[str, Any]) -> list[str]:
    """Publish the staged ``tables`` (``ReleaseTable``s) of a verified run; returns the
    published tables' names."""
    names = ReleaseNames.of(job)
    published = [names.table(t.suffix) for t in tables]
    views = analyst_views(job)
    view_names = [names.view(v) for v in views]
    meta_rows = sorted(_meta_rows(job, names, tables, checks, facts) + [("view", v) for v in view_names])
    staged = {table: staging(table, names.schema) for table in published + [names.meta]}
    try:
        with backend.transaction():
            if names.schema:     # [release] schema: created if absent, in the publication's transaction
                backend.run(f"publish: schema {names.schema}", render("release/create_schema.sql.j2",
                                                                       schema=names.schema))
            earlier = previous_release(backend, names)
            previous = [] if earlier is None else earlier.tables + [names.meta]
            previous_views = [] if earlier is None else earlier.views
            for table in published + view_names:   # never overwrite what no earlier run of this release made
                if table not in previous + previous_views and backend.table_exists(table, names.schema or "main"):
                    raise InputError(f"release.name = {names.release!r} would overwrite table {table!r}, which is "
                                     "not part of an earlier release of that name; choose another release name")
            # 1. every table under its staging name: the previous release is still whole
            for t in tables:
                target = names.table(t.suffix)
                copy_in_order(backend, f"publish {target}", staged[target], t.staged, t.shuffle, job.release.seed,
                              grouped=t.repeats)
            backend.write_table(staged[names.meta], {"key": [k for k, _ in meta_rows],
                                                     "value": [v for _, v in meta_rows]})
            # 2. swap: drop the previous release, move the staged tables into place
            for old in previous_views:
                backend.run(f"publish: drop view {old}", render("release/drop_view.sql.j2", target=names.where(old)))
            for old in previous:
                backend.run(f"publish: drop {old}", render("release/drop_table.sql.j2", target=names.where(old)))
            for table, source in staged.items():
                backend.run(f"publish: rename {table}", render("release/rename_table.sql.j2", source=source, name=table))
            # 3. the analyst views over the published tables (docs/analyst.md)
            for view in views:
                backend.run(f"publish: view {names.view(view)}", view_sql(job, view, "create"))
    except BaseException:
        backend.cleanup(lambda: drop_staged(backend, staged.values()))
        raise
    return published


def _meta_rows(job: Job, names: ReleaseNames, tables: list, checks: list[CheckResult],
               facts: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``<release>_meta``'s rows but the views: the method and its parameters, the seed, the
    version, the verifier's verdicts, the run's facts, and which table is which."""
    return [("method", job.method), ("seed", str(job.release.seed)), ("anon_duck_version", __version__),
            ("params", json.dumps(dict(job.params), sort_keys=True, default=str)),
            ("verified", json.dumps({c.name: c.passed for c in checks}, sort_keys=True)),
            ("facts", json.dumps(dict(facts), sort_keys=True, default=str))] + \
        [("table", names.table(t.suffix)) for t in tables] + \
        [("sorted_table", names.table(t.suffix)) for t in tables if not t.shuffle]


def drop_staged(backend: Backend, names: Iterable[Sequence[str]]) -> None:
    """After a failed publication: DuckDB rolled the transaction back already (the drops find
    nothing); on Spark the staged tables written so far go, the previous release stays. A
    table that cannot be dropped is named in a warning (the original error is what the caller
    sees), never passed over in silence."""
    for source in names:
        try:
            backend.run("publish: drop staged", render("release/drop_table.sql.j2", target=source))
        except AnonDuckError as err:
            warnings.warn(f"staged table {'.'.join(source)} of a failed publication could not be dropped ({err}); "
                          "drop it by hand", RuntimeWarning, stacklevel=2)
