"""The Python API behind the CLI: run, verify, report, export, inspect. Each takes a DuckDB
connection or a SparkSession (the engine's backend does the rest).

``run`` is the only function that writes to the database, and it writes only
``<release>_*`` tables, in one transaction (on Spark: staged, then swapped), after the
independent verifier has passed:

1. check the job's method parameters (nothing touched yet);
2. load and check the inputs, build hierarchies (scratch TEMP tables only);
3. the method computes its release into staged scratch tables;
4. the method's verifier checks the staged tables — a violation raises
   :class:`VerificationError` and nothing is published;
5. the new tables (rows in a seeded random order) and ``<release>_meta`` are written under
   staging names, then the previous release of the same name is dropped and the staged
   tables renamed into place — on DuckDB all of it one transaction;
6. scratch tables are dropped, whatever happened.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import partition, release, retention
from .backend import Backend, backend_for
from .errors import AnonDuckError, VerificationError
from .inputs import Inputs, load_population, prepare
from .job import Job, Source
from .methods import get_method
from .methods.base import Method, Progress, Staged
from .risk import Population, codes_risk, drivers, events_risk, qi_risk, resolve_risk_options
from .session import Connection, session
from .sqlrender import render
from .verifiers import CheckResult

__all__ = ["RunResult", "backend_for", "export", "inspect", "release_report", "report", "risk", "run", "sweep",
           "verify"]


@dataclass
class RunResult:
    release: str
    tables: list[str]
    checks: list[CheckResult]
    facts: dict[str, Any]
    seconds: float
    stages: list[tuple[str, float]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)     # what the input checks accepted but say (Inputs)

    @property
    def verified(self) -> bool:
        return all(c.passed for c in self.checks)


def _quiet(phase: str, done: int, total: int) -> None:
    return None


def run(con: Connection, job: Job, *, progress: Progress | None = None) -> RunResult:
    """Anonymize, verify, publish. Raises and leaves the database as it was on any error."""
    t0 = time.perf_counter()
    method = get_method(job.method)
    params = method.check_params(job)
    partition.check(job, method, params)
    with session(con, job, publishes=True) as backend:
        inputs = prepare(backend, job)
        staged = _anonymize(backend, job, method, inputs, params, progress)
        checks = _checks(backend, job, method, {t.suffix: t.staged for t in staged.tables}, params)
        _gate(job, checks)
        tables = release.publish(backend, job, staged.tables, checks, staged.facts)
    return RunResult(job.release.name, tables, checks, staged.facts, time.perf_counter() - t0, backend.trace,
                     inputs.warnings)


def _anonymize(backend: Backend, job: Job, method: Method, inputs: Inputs, params: Any,
               progress: Progress | None) -> Staged:
    """The release as it will be published, staged: the method's (partitioned when the job says
    so), then its retention table without the counts of rare codes (retention.py)."""
    staged = partition.anonymize(backend, job, method, inputs, params, progress or _quiet)
    return retention.merge_rare_codes(backend, staged, retention.min_persons(job, params))


def _checks(backend: Backend, job: Job, method: Method, tables: Mapping[str, tuple[str, ...]],
            params: Any) -> list[CheckResult]:
    """The independent checks of a release, staged or published (``tables``: suffix -> table):
    the method's verifier and the retention table's small-count check."""
    return method.verify(backend, job, tables, params) + \
        retention.check(backend, tables, retention.min_persons(job, params))


def _gate(job: Job, checks: list[CheckResult]) -> None:
    """The verifier gate: no checks, or a failed one, stops the call before anything is published."""
    if not checks:
        raise AnonDuckError(f"method {job.method!r} returned no verifier checks — a bug in the method; "
                            "nothing was published")
    failed = [c for c in checks if not c.passed]
    if failed:
        raise VerificationError(
            f"the independent verifier rejected the release of method {job.method!r}: "
            + "; ".join(f"{c.name}: {c.n_violations} violation(s)" for c in failed)
            + " — this is a bug in the anonymizer; nothing was published",
            [v for c in failed for v in c.violations])


def verify(con: Connection, job: Job) -> list[CheckResult]:
    """Re-check a published release with the method's independent verifier, and check that its
    analyst views exist and still show what their definitions do."""
    method = get_method(job.method)
    params = method.check_params(job)
    with session(con, job) as backend:   # a verifier may re-read the inputs into scratch tables
        return _checks(backend, job, method, release.release_tables(backend, job), params) + \
            [release.check_views(backend, job)]


def report(con: Connection, job: Job) -> dict[str, Any]:
    """Utility and risk measures of a published release: the method's own report."""
    method = get_method(job.method)
    params = method.check_params(job)
    with session(con, job) as backend:
        tables = release.release_tables(backend, job)
        inputs = prepare(backend, job)
        return _method_report(backend, job, inputs, tables, params)


def _method_report(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                   params: Any) -> dict[str, Any]:
    out = get_method(job.method).report(backend, job, inputs, tables, params)
    return {"release": job.release.name, "method": job.method, **out}


def risk(con: Connection, job: Job, *, population_size: int | None = None, population_table: str | None = None,
         thresholds: Sequence[float] | None = None, k: int | None = None, m: int | None = None,
         events_prefix: int | None = None) -> dict[str, Any]:
    """Re-identification risk of the job's input, before any release (docs/risk.md: every
    measure, its formula and source, and this dict's schema). Keyword arguments override the
    job's ``[risk]`` keys; ``population_table`` names a table in the database with the input's
    QI columns. Only aggregates leave the engine."""
    options = resolve_risk_options(job, population_size=population_size, thresholds=thresholds, k=k, m=m,
                                   events_prefix=events_prefix)
    with session(con, job) as backend:
        inputs = prepare(backend, job)
        source = Source(table=population_table) if population_table is not None else job.risk.population
        population = Population(options.population_size, None if source is None else load_population(backend, job, source))
        qis = [q.column for q in job.dataset.qis]
        out: dict[str, Any] = {"options": options.as_dict(), "qis": None, "drivers": None,
                               "codes": None, "events": None}
        if qis:
            out["qis"] = qi_risk(backend, relation=inputs.person, qis=qis, k=options.k,
                                 thresholds=options.thresholds, population=population)
            out["drivers"] = drivers(backend, relation=inputs.person, qis=qis)
        if inputs.codes is not None:
            out["codes"] = codes_risk(backend, relation=inputs.codes, n_persons=inputs.n_rows, m=options.m, k=options.k)
        if inputs.events is not None:
            out["events"] = events_risk(backend, relation=inputs.events, j_max=options.events_prefix)
    return out


def release_report(con: Connection, job: Job) -> dict[str, Any]:
    """The report document of a published release (docs/report.md): what was released and how
    it was verified (from ``<release>_meta``), the re-identification risk of the input and of the
    release side by side, the loss per attribute, and the method's measures (those of
    :func:`report`) each with what it means and which paper defines it."""
    from .reports import document, loss, risk as risk_report
    from .reports.provenance import provenance
    from .reports.retention import retention_section
    method = get_method(job.method)
    params = method.check_params(job)
    with session(con, job) as backend:
        tables = release.release_tables(backend, job)
        inputs = prepare(backend, job)
        out = _method_report(backend, job, inputs, tables, params)
        meta = release.read_meta(backend, release.ReleaseNames.of(job))
        return document.build(meta=meta, report=out, risk=risk_report.risk_section(backend, job, inputs, tables),
                              loss=loss.attribute_loss(backend, job, inputs, tables, meta["facts"], out),
                              retention=retention_section(backend, tables),
                              provenance=provenance(backend, job, inputs, tables))


def sweep(con: Connection, job: Job, param: str, values: Sequence[Any], *, progress: Progress | None = None,
          on_point: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``job``'s method once per value of its parameter ``param`` (k, h, L/K/C, m ...) in
    scratch space, verify each result, and measure its loss and the risk of its release: the
    privacy/utility trade-off a steward picks a value from (docs/report.md). Publishes nothing
    and leaves no scratch table; every value is checked before any work. ``on_point`` is called
    with each point as it is measured."""
    from .reports.sweep import measure_point, sweep_document
    method = get_method(job.method)
    jobs = [job.with_params(**{param: v}) for v in values]
    checked = [method.check_params(j) for j in jobs]
    for point_job, params in zip(jobs, checked):
        partition.check(point_job, method, params)
    points = []
    for value, point_job, params in zip(values, jobs, checked):
        t0 = time.perf_counter()
        with session(con, point_job) as backend:
            inputs = prepare(backend, point_job)
            staged = _anonymize(backend, point_job, method, inputs, params, progress)
            tables = {t.suffix: t.staged for t in staged.tables}
            checks = _checks(backend, point_job, method, tables, params)
            _gate(point_job, checks)
            point = measure_point(backend, point_job, inputs, tables, staged.facts,
                                  lambda: _method_report(backend, point_job, inputs, tables, params))
        point = {"value": value, **point, "verified": {c.name: c.passed for c in checks},
                 "seconds": time.perf_counter() - t0}
        points.append(point)
        if on_point is not None:
            on_point(point)
    return sweep_document(job, param, points)


def export(con: Connection, job: Job, to: str | Path, *, views: bool = True) -> list[Path]:
    """Write only the release tables and its analyst views (``views=False``: the tables alone)
    and return the files written. ``to`` is what is created, and its suffix (any case) picks
    the format: a new folder of Parquet files (``release/`` or ``release.parquet``), a new
    folder of CSV files (``release.csv``), or a new DuckDB file (``release.duckdb``/``.db``);
    all or nothing, never over an earlier export (release/exports.py)."""
    with session(con, job) as backend:
        return release.export(backend, job, to, views=views)


def inspect(con: Connection, job: Job) -> dict[str, Any]:
    """Profile the input: rows, distinct values per QI, the current k (smallest class on the
    raw QIs), codes/events counts. Hierarchy coverage problems are reported as errors by
    :func:`prepare`, with the column, the count and the first values."""
    with session(con, job) as backend:
        return _profile(backend, job, prepare(backend, job, strict=False))


def _profile(backend: Backend, job: Job, inputs: Inputs) -> dict[str, Any]:
    qis = [q.column for q in job.dataset.qis]
    row = backend.rows("inspect: profile", render("inputs/inspect.sql.j2", relation=inputs.person, qis=qis))[0]
    out: dict[str, Any] = {"rows": inputs.n_rows,
                           "distinct": dict(zip(qis, row[:len(qis)])),
                           "classes": row[len(qis)], "current_k": row[len(qis) + 1]}
    if inputs.codes:
        n_pairs, n_codes, n_persons, max_len = backend.rows(
            "inspect: codes", render("inputs/inspect_codes.sql.j2", relation=inputs.codes))[0]
        out["codes"] = {"pairs": n_pairs, "distinct_codes": n_codes, "persons_with_codes": n_persons,
                        "mean_per_person": round(n_pairs / n_persons, 3) if n_persons else 0, "max_per_person": max_len}
    out["missing_from_hierarchies"] = [c for c in inputs.coverage if c["missing"]]
    if inputs.omop:
        out["omop"] = inputs.omop
    out["warnings"] = inputs.warnings
    if inputs.events:
        n_events, n_persons, n_codes, n_ages = backend.rows(
            "inspect: events", render("inputs/inspect_events.sql.j2", relation=inputs.events))[0]
        out["events"] = {"events": n_events, "persons": n_persons, "distinct_codes": n_codes, "distinct_ages": n_ages}
    return out


