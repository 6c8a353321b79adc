"""The analyst views a method publishes over its release tables (docs/analyst.md): their
statements, and the check that each still shows what its definition does."""
from __future__ import annotations

from typing import Any, Sequence

from ..backend.base import Backend
from ..job import Job
from ..methods import get_method
from ..methods.base import AnalystView
from ..sqlrender import render
from ..verifiers import CheckResult
from .names import ReleaseNames, TableNames


def analyst_views(job: Job) -> tuple[AnalystView, ...]:
    """The analyst views of the job's method (none for a plugged-in method that declares none)."""
    return tuple(getattr(get_method(job.method), "views", ()))


def view_sql(job: Job, view: AnalystView, mode: str, columns: Sequence[str] = (),
             only: Sequence[str] | None = None) -> str:
    """An analyst view's statement: ``create`` it, or count its ``mismatches`` with its
    definition (``columns``: the view's column names as the engine lists them). It reads the
    release tables by unqualified name (lib/analyst_view.jinja); the method's checked
    parameters are there too (``params``: a view may answer as the method's report does, e.g.
    disassociation's item_count). ``only``: the names of the bind parameters of a sampled check
    (:func:`view_sample`)."""
    names = ReleaseNames.of(job)
    return render(view.template, mode=mode, target=names.where(names.view(view)), tables=TableNames(names),
                  params=get_method(job.method).check_params(job), columns=list(columns),
                  only=[f"${p}" for p in only or ()], **view.context)


def view_sample(backend: Backend, job: Job, view: AnalystView) -> dict[str, Any]:
    """The bind parameters (``only_<i>``: value) of the values a sampled view is checked on
    (sql/views/sample_values.sql.j2); none for a view checked in full."""
    if view.sample is None:
        return {}
    names = ReleaseNames.of(job)
    values = render(view.sample.template, tables=TableNames(names))
    rows = backend.rows(f"verify: sample of view {names.view(view)}",
                        render("views/sample_values.sql.j2", values=values, size=view.sample.size),
                        {"seed": str(job.release.seed)})
    return {f"only_{i}": v for i, (v,) in enumerate(rows)}


def check_views(backend: Backend, job: Job) -> CheckResult:
    """analyst_views: every view the method publishes exists, and ``SELECT *`` of it equals its
    definition over the release tables, row for row (a view replaced by hand, or one missing,
    is a violation naming it); a view of pairs, or a table too large to compare whole on every
    verify, on the rows of a seeded sample of its first column's values (:class:`ViewSample`),
    so the check stays linear in the release (docs/verifiers.md, "Analyst views")."""
    names = ReleaseNames.of(job)
    violations = []
    for view in analyst_views(job):
        name = names.view(view)
        if not backend.table_exists(name, names.schema or "main"):
            violations.append({"view": name, "problem": "missing"})
            continue
        columns = list(backend.columns(f"verify: columns of view {name}", names.where(name)))
        only = view_sample(backend, job, view)
        differ = int(backend.scalar(f"verify: view {name}", view_sql(job, view, "mismatches", columns, list(only)),
                                    only))
        if differ:
            violations.append({"view": name, "problem": f"{differ} group(s) of equal rows differ from its definition"})
    return CheckResult("analyst_views", not violations, len(violations), violations,
                       {"views": [names.view(v) for v in analyst_views(job)]})
