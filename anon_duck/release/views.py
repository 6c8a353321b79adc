"""The analyst views a method publishes over its release tables (docs/analyst.md): their
statements, and the check that each still shows what its definition does."""
from __future__ import annotations

from typing import Sequence

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


def view_sql(job: Job, view: AnalystView, mode: str, columns: Sequence[str] = ()) -> str:
    """An analyst view's statement: ``create`` it, or count its ``mismatches`` with its
    definition (``columns``: the view's column names as the engine lists them). It reads the
    release tables by unqualified name (lib/analyst_view.jinja); the method's checked
    parameters are there too (``params``: a view may answer as the method's report does, e.g.
    disassociation's item_count)."""
    names = ReleaseNames(job.release.name)
    return render(view.template, mode=mode, target=("main", names.view(view)), tables=TableNames(names),
                  params=get_method(job.method).check_params(job), columns=list(columns), **view.context)


def check_views(backend: Backend, job: Job) -> CheckResult:
    """analyst_views: every view the method publishes exists, and ``SELECT *`` of it equals its
    definition over the release tables, row for row (a view replaced by hand, or one missing,
    is a violation naming it)."""
    names = ReleaseNames(job.release.name)
    violations = []
    for view in analyst_views(job):
        name = names.view(view)
        if not backend.table_exists(name):
            violations.append({"view": name, "problem": "missing"})
            continue
        columns = list(backend.columns(f"verify: columns of view {name}", ("main", name)))
        differ = int(backend.scalar(f"verify: view {name}", view_sql(job, view, "mismatches", columns)))
        if differ:
            violations.append({"view": name, "problem": f"{differ} group(s) of equal rows differ from its definition"})
    return CheckResult("analyst_views", not violations, len(violations), violations,
                       {"views": [names.view(v) for v in analyst_views(job)]})
