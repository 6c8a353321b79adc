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

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from . import partition
from .backend.base import Backend
from .backend.duckdb import DuckDBBackend
from .backend.spark import SparkBackend
from .errors import AnonDuckError, InputError, VerificationError
from .inputs import Inputs, load_population, prepare
from .job import Job, Source
from .methods import get_method
from .methods.base import AnalystView, Progress
from .risk import Population, codes_risk, drivers, events_risk, qi_risk, resolve_risk_options
from .scratch import drop_scratch, scratch, staging
from .sqlrender import render
from .verifiers import CheckResult
from .version import __version__


@dataclass
class RunResult:
    release: str
    tables: list[str]
    checks: list[CheckResult]
    facts: dict[str, Any]
    seconds: float
    stages: list[tuple[str, float]] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return all(c.passed for c in self.checks)


# what every call takes: a DuckDB connection or a SparkSession (pyspark is an optional extra)
Connection = Any


def _quiet(phase: str, done: int, total: int) -> None:
    return None


def backend_for(con: Any, job: Job | None) -> Backend:
    """The backend of a caller's connection: a DuckDB connection (the job's [settings] apply for
    the call) or a SparkSession."""
    if _is_spark(con):
        return SparkBackend(con)
    if job is None:
        return DuckDBBackend(con)
    return DuckDBBackend(con, memory_limit=job.settings.memory_limit, threads=job.settings.threads)


def _is_spark(con: Any) -> bool:
    return type(con).__name__ == "SparkSession" and type(con).__module__.startswith("pyspark")


@contextlib.contextmanager
def _session(con: Connection, job: Job, *, publishes: bool = False) -> Iterator[Backend]:
    """One API call's backend: the job's settings hold inside it; on the way out (error,
    Ctrl-C or not) the scratch tables are dropped and the caller's settings restored.

    Before any setting or table is touched, every call refuses a connection with a
    transaction open: publication is a transaction of its own and DuckDB cannot nest one, an
    export to a DuckDB file writes a second database (one transaction writes one), and any
    statement that fails inside the caller's transaction would abort it, losing their
    uncommitted work. A call that ``publishes`` also refuses a read-only database (the whole
    run would otherwise end in DuckDB's error at publication)."""
    _check_connection(backend_for(con, None), job, publishes)
    backend = backend_for(con, job)
    try:
        yield backend
    finally:
        try:
            drop_scratch(backend)
        finally:
            try:
                backend.restore_settings()
            except AnonDuckError:
                pass  # the connection is unusable (e.g. interrupted); nothing to give back


def _check_connection(probe: Backend, job: Job, publishes: bool) -> None:
    if publishes and not probe.writable():
        raise InputError(f"release {job.release.name!r}: the database is open read-only, and a run writes its release "
                         "tables into it; open it writable (nothing was run)")
    if probe.in_transaction():
        raise InputError("the connection has a transaction open: anon_duck works in transactions of its own (a run "
                         "publishes in one, DuckDB cannot nest them, and a failing statement would abort yours); "
                         "commit or roll back first (nothing was run, and your transaction is still open)")


def run(con: Connection, job: Job, *, progress: Progress | None = None) -> RunResult:
    """Anonymize, verify, publish. Raises and leaves the database as it was on any error."""
    t0 = time.perf_counter()
    method = get_method(job.method)
    params = method.check_params(job)
    partition.check(job, method, params)
    with _session(con, job, publishes=True) as backend:
        inputs = prepare(backend, job)
        staged = partition.anonymize(backend, job, method, inputs, params, progress or _quiet)
        checks = method.verify(backend, job, {t.suffix: t.staged for t in staged.tables}, params)
        _gate(job, checks)
        tables = _publish(backend, job, staged.tables, checks, staged.facts)
    return RunResult(job.release.name, tables, checks, staged.facts, time.perf_counter() - t0, backend.trace)


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
    with _session(con, job) as backend:   # a verifier may re-read the inputs into scratch tables
        return method.verify(backend, job, release_tables(backend, job), params) + [_check_views(backend, job)]


def _check_views(backend: Backend, job: Job) -> CheckResult:
    """analyst_views: every view the method publishes exists, and ``SELECT *`` of it equals its
    definition over the release tables, row for row (a view replaced by hand, or one missing,
    is a violation naming it)."""
    violations = []
    for view in _views(job):
        name = view_name(job.release.name, view)
        if not backend.table_exists(name):
            violations.append({"view": name, "problem": "missing"})
            continue
        columns = list(backend.columns(f"verify: columns of view {name}", ("main", name)))
        differ = int(backend.scalar(f"verify: view {name}", _view_sql(job, view, "mismatches", columns)))
        if differ:
            violations.append({"view": name, "problem": f"{differ} group(s) of equal rows differ from its definition"})
    return CheckResult("analyst_views", not violations, len(violations), violations,
                       {"views": [view_name(job.release.name, v) for v in _views(job)]})


def report(con: Connection, job: Job) -> dict[str, Any]:
    """Utility and risk measures of a published release: the method's own report."""
    method = get_method(job.method)
    params = method.check_params(job)
    with _session(con, job) as backend:
        tables = release_tables(backend, job)
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
    with _session(con, job) as backend:
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
    from .reports import document, loss, risk
    from .reports.provenance import provenance
    from .reports.retention import retention_section
    method = get_method(job.method)
    params = method.check_params(job)
    with _session(con, job) as backend:
        tables = release_tables(backend, job)
        inputs = prepare(backend, job)
        out = _method_report(backend, job, inputs, tables, params)
        meta = _meta(backend, job.release.name)
        return document.build(meta=meta, report=out, risk=risk.risk_section(backend, job, inputs, tables),
                              loss=loss.attribute_loss(backend, job, inputs, tables, meta["facts"], out),
                              retention=retention_section(backend, tables),
                              provenance=provenance(backend, job, inputs, tables))


def _meta(backend: Backend, name: str) -> dict[str, Any]:
    """The scalar entries of ``<release>_meta``, the JSON ones parsed."""
    meta = ("main", f"{name}_meta")
    value = {key: backend.scalar(f"release: {key}", render("release/meta_value.sql.j2", meta=meta), {"key": key})
             for key in ("method", "seed", "anon_duck_version", "params", "verified", "facts")}
    return {**value, **{key: json.loads(value[key] or "{}") for key in ("params", "verified", "facts")}}


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
        with _session(con, point_job) as backend:
            inputs = prepare(backend, point_job)
            staged = partition.anonymize(backend, point_job, method, inputs, params, progress or _quiet)
            tables = {t.suffix: t.staged for t in staged.tables}
            checks = method.verify(backend, point_job, tables, params)
            _gate(point_job, checks)
            point = measure_point(backend, point_job, inputs, tables, staged.facts,
                                  lambda: _method_report(backend, point_job, inputs, tables, params))
        point = {"value": value, **point, "verified": {c.name: c.passed for c in checks},
                 "seconds": time.perf_counter() - t0}
        points.append(point)
        if on_point is not None:
            on_point(point)
    return sweep_document(job, param, points)


def export(con: Connection, job: Job, to: str | Path) -> list[Path]:
    """Write only the release tables and return the files written. ``to`` is what is created,
    and its suffix (any case) picks the format: a new folder of Parquet files (``release/`` or
    ``release.parquet``), a new folder of CSV files (``release.csv``), or a new DuckDB file
    (``release.duckdb``/``.db``). Never source tables, ids or dropped columns: only the tables
    and analyst views the release's metadata lists, which the publisher built from the staged
    release; every table in release order (sql/lib/release_order.jinja), the same files from
    every engine.

    All or nothing, and never over an earlier export: everything is written into a hidden
    sibling that is renamed into place at the end, and removed if anything fails."""
    target = Path(to)
    suffix = target.suffix.lower()     # out.CSV is CSV too
    is_db = suffix in (".duckdb", ".db")
    fmt = "csv" if suffix == ".csv" else "parquet"
    if target.exists():
        raise InputError(f"export: {target} exists; anon_duck never writes over an earlier export: remove it "
                         "or export to a new path")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    with _session(con, job) as engine:
        names = [f"{job.release.name}_{s}" for s in release_tables(engine, job)] + [f"{job.release.name}_meta"] + \
            _previous_release(engine, job.release.name).views      # the analyst views, as tables
        order = _release_order(engine, job.release.name)
        with engine.local_copy(names) as backend:
            _write_export(backend, names, order, partial, target, fmt, is_db)
    return [target] if is_db else [target / f"{name}.{fmt}" for name in names]


@dataclass(frozen=True)
class _Order:
    """How a release's tables are ordered (sql/lib/release_order.jinja): in the seeded order of
    ``seed``, except the tables in ``sorted`` (and the metadata table), sorted by their columns."""

    seed: str
    sorted: frozenset[str]
    # the analyst views: a chunked copy reads row ids, which a view lacks, and a view's
    # materialized copy is not the same Parquet file (DuckDB writes a column it knows holds no
    # NULL as REQUIRED); a view is written in one statement
    views: frozenset[str] = frozenset()

    def context(self, backend: Backend, name: str) -> dict[str, Any]:
        """release_order's context for table ``name`` as ``backend`` holds it."""
        columns = list(backend.columns(f"export: columns of {name}", (name,)).items())
        return {"columns": columns, "seeded": name not in self.sorted, "seed": self.seed}


def _release_order(backend: Backend, name: str) -> _Order:
    meta = ("main", f"{name}_meta")
    seed = backend.scalar("release: seed", render("release/meta_value.sql.j2", meta=meta), {"key": "seed"})
    listed = {key: [r[0] for r in backend.rows(f"release: {key} rows", render("release/meta_tables.sql.j2", meta=meta,
                                                                            key=key))]
              for key in ("sorted_table", "view")}
    return _Order(str(seed), frozenset([meta[1]] + listed["sorted_table"]), frozenset(listed["view"]))


def _write_export(backend: DuckDBBackend, names: list[str], order: _Order, partial: Path, target: Path, fmt: str,
                  is_db: bool) -> None:
    """Write the tables ``names`` to ``partial`` in release order, then rename it to ``target``
    (all or nothing)."""
    try:
        if is_db:
            _export_database(backend, names, order, partial)
        else:
            partial.mkdir(parents=True)
            for name in names:
                _export_file(backend, name, order, partial / f"{name}.{fmt}", fmt)
        os.replace(partial, target)
    except BaseException:
        if partial.is_dir():
            shutil.rmtree(partial)
        partial.unlink(missing_ok=True)
        raise


def _export_file(backend: DuckDBBackend, name: str, order: _Order, path: Path, fmt: str) -> None:
    """Write table ``name`` to ``path`` in release order. A seeded table (not an analyst view,
    see :class:`_Order`) beyond one sort budget is first copied in order into a scratch table in
    chunks (:func:`_copy_chunks`), which the file then takes as stored (DuckDB keeps a table's
    insertion order in a plain scan): the file's rows are never sorted in one piece."""
    context = order.context(backend, name)
    budget = _chunk_budget(backend, f"export {name}", (name,), context["columns"]) \
        if context["seeded"] and name not in order.views else None
    if budget is None:
        backend.run(f"export {name}", render("release/export_file.sql.j2", source=(name,), format=fmt, path=str(path),
                                             ordered=False, **context))
        return
    ordered = scratch("export_ordered")
    _copy_chunks(backend, f"export {name}", ordered, (name,), context["columns"], context["seed"], budget)
    backend.run(f"export {name}", render("release/export_file.sql.j2", source=ordered, format=fmt, path=str(path),
                                         ordered=True))
    backend.run(f"export {name}: drop copy", render("release/drop_table.sql.j2", target=ordered))


def _export_database(backend: DuckDBBackend, names: list[str], order: _Order, path: Path) -> None:
    alias = "anon_duck_export"
    backend.run("export: attach", render("release/attach.sql.j2", alias=alias, path=str(path)))
    try:
        for name in names:
            context = order.context(backend, name)
            seeded = context["seeded"] and name not in order.views
            _copy_in_order(backend, f"export {name}", (alias, "main", name), (name,), seeded, context["seed"])
    finally:
        backend.run("export: detach", render("release/detach.sql.j2", alias=alias))


def inspect(con: Connection, job: Job) -> dict[str, Any]:
    """Profile the input: rows, distinct values per QI, the current k (smallest class on the
    raw QIs), codes/events counts. Hierarchy coverage problems are reported as errors by
    :func:`prepare`, with the column, the count and the first values."""
    with _session(con, job) as backend:
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
    if inputs.events:
        n_events, n_persons, n_codes, n_ages = backend.rows(
            "inspect: events", render("inputs/inspect_events.sql.j2", relation=inputs.events))[0]
        out["events"] = {"events": n_events, "persons": n_persons, "distinct_codes": n_codes, "distinct_ages": n_ages}
    return out


def release_tables(backend: Backend, job: Job) -> dict[str, tuple[str, ...]]:
    """suffix → qualified name of each published table, from ``<release>_meta``; refuses a
    release another method made (its verifier would read tables it does not know)."""
    meta = f"{job.release.name}_meta"
    earlier = _previous_release(backend, job.release.name)
    if earlier is None:
        raise InputError(f"release {job.release.name!r} is not in this database (no table {meta!r}); "
                         "run the job first")
    made_by = backend.scalar("release: method", render("release/meta_value.sql.j2", meta=("main", meta)),
                             {"key": "method"})
    if made_by != job.method:
        raise InputError(f"release {job.release.name!r} was made by method {made_by!r}, not by this job's "
                         f"method.name = {job.method!r}")
    prefix = job.release.name + "_"
    return {n[len(prefix):]: ("main", n) for n in earlier.tables}


@dataclass(frozen=True)
class _Earlier:
    """What an earlier run of a release published: its tables and analyst views (meta aside)."""

    tables: list[str]
    views: list[str]


def _previous_release(backend: Backend, name: str) -> _Earlier | None:
    """The tables and views of an earlier run of release ``name``, or None if there was none.

    A ``<name>_meta`` table is trusted only if it has anon_duck's shape (key, value VARCHAR
    with an ``anon_duck_version`` row) and lists only ``<name>_*`` tables (and views named
    ``<name>`` or ``<name>_*``): publishing drops what it lists, so a user's table of that
    name must never steer what is dropped."""
    meta = f"{name}_meta"
    if not backend.table_exists(meta):
        return None
    columns = backend.columns("release: meta columns", ("main", meta))
    ours = list(columns.items()) == [("key", "VARCHAR"), ("value", "VARCHAR")] and backend.scalar(
        "release: meta version", render("release/meta_value.sql.j2", meta=("main", meta)),
        {"key": "anon_duck_version"}) is not None
    listed = {key: [r[0] for r in backend.rows(f"release: {key} rows", render(
        "release/meta_tables.sql.j2", meta=("main", meta), key=key))] if ours else [] for key in ("table", "view")}
    if not ours or any(not t.startswith(f"{name}_") or t == meta for t in listed["table"]) or \
            any(v != name and not v.startswith(f"{name}_") or v == meta for v in listed["view"]):
        raise InputError(f"table {meta!r} exists but was not written by anon_duck for release {name!r}; "
                         "choose another release.name")
    return _Earlier(listed["table"], listed["view"])


def _copy_in_order(backend: Backend, stage: str, target: tuple[str, ...], source: tuple[str, ...], seeded: bool,
                   seed: Any, *, grouped: bool = False) -> None:
    """Copy table ``source`` to a new table ``target``, its rows in release order
    (sql/lib/release_order.jinja): publication and export.

    One statement (release/publish_table), but for a seeded table beyond its engine's sort
    budget (:func:`_chunk_budget`), which is copied in chunks (:func:`_copy_chunks`). A
    ``grouped`` table (``ReleaseTable.repeats``: mostly identical rows, as LKC's generalized
    release) is one statement that sorts its distinct rows only and repeats them."""
    columns = list(backend.columns(f"{stage}: columns", source).items())
    budget = _chunk_budget(backend, stage, source, columns) if seeded and not grouped else None
    if budget is None:
        backend.run(stage, render("release/publish_table.sql.j2", target=target, source=source, columns=columns,
                                  seeded=seeded, seed=seed, grouped=grouped))
        return
    _copy_chunks(backend, stage, target, source, columns, seed, budget)


def _chunk_budget(backend: Backend, stage: str, source: tuple[str, ...], columns: list[tuple[str, str]]) -> int | None:
    """The bytes of row text per chunk if the seeded table ``source`` must be copied in chunks,
    else None: on an engine without a sort budget (Spark's sort spills), and for a table whose
    whole row text is below one budget (release/row_bytes; release/order_keys would make one
    chunk of it). DuckDB's sort of wide rows fails rather than spill under ``memory_limit``
    (ArtUC's release holds 1.6 GB of code-set text at EHRD scale), but under DuckDB's default
    limit nearly every table fits, and the one statement then digests each row once where the
    chunks' keys digest it, sort the digests and join them back (the five tables of ArtUC's
    52K-record EHRD-like release: 1.56 CPU seconds, counting their text included, against 2.05 s
    as one chunk each)."""
    budget = backend.sort_budget()
    if budget is None:
        return None
    total = backend.scalar(f"{stage}: bytes", render("release/row_bytes.sql.j2", source=source, columns=columns))
    return None if total is None or total < budget else budget


def _copy_chunks(backend: Backend, stage: str, target: tuple[str, ...], source: tuple[str, ...],
                 columns: list[tuple[str, str]], seed: Any, budget: int) -> None:
    """Copy the seeded table ``source`` to ``target`` in release order in chunks of consecutive
    digests of about ``budget`` bytes of row text: the digests and row ids alone are sorted
    (release/order_keys), then each chunk's rows are sorted by their stored digest and columns
    and appended (release/copy_chunk). The same rows in the same order as the one statement,
    and no sort holds much more than a budget of row text. ``source`` holds rows (its row text
    reached the budget), so there is at least one chunk, and the first creates ``target``."""
    keys = scratch("order_keys")
    backend.run(f"{stage}: keys", render("release/order_keys.sql.j2", target=keys, source=source, columns=columns,
                                         seed=seed, budget=budget))
    chunks = [c for (c,) in backend.rows(f"{stage}: chunks", render("release/order_chunks.sql.j2", keys=keys))]
    for i, chunk in enumerate(chunks):
        backend.run(f"{stage}: chunk {i + 1}/{len(chunks)}",
                    render("release/copy_chunk.sql.j2", target=target, source=source, keys=keys, columns=columns,
                           create=i == 0), {"chunk": chunk})
    backend.run(f"{stage}: drop keys", render("release/drop_table.sql.j2", target=keys))


def _drop_staged(backend: Backend, names: Iterable[Sequence[str]]) -> None:
    """After a failed publication: DuckDB rolled the transaction back already (the drops find
    nothing); on Spark the staged tables written so far go, the previous release stays."""
    for source in names:
        try:
            backend.run("publish: drop staged", render("release/drop_table.sql.j2", target=source))
        except AnonDuckError:
            pass


def _views(job: Job) -> tuple[AnalystView, ...]:
    """The analyst views of the job's method (none for a plugged-in method that declares none)."""
    return tuple(getattr(get_method(job.method), "views", ()))


def view_name(release: str, view: AnalystView) -> str:
    """``<release>`` for the main analyst view, ``<release>_<suffix>`` for the others."""
    return f"{release}_{view.suffix}" if view.suffix else release


def _view_sql(job: Job, view: AnalystView, mode: str, columns: Sequence[str] = ()) -> str:
    """An analyst view's statement: ``create`` it, or count its ``mismatches`` with its
    definition (``columns``: the view's column names as the engine lists them). It reads the release tables by unqualified name (lib/analyst_view.jinja); the
    method's checked parameters are there too (``params``: a view may answer as the method's
    report does, e.g. disassociation's item_count)."""
    return render(view.template, mode=mode, target=("main", view_name(job.release.name, view)),
                  tables=_TableNames(job.release.name), params=get_method(job.method).check_params(job),
                  columns=list(columns), **view.context)


class _TableNames(dict):
    """suffix → ``(<release>_<suffix>,)`` for any suffix a view template names."""

    def __init__(self, release: str) -> None:
        super().__init__()
        self.release = release

    def __missing__(self, suffix: str) -> tuple[str]:
        return (f"{self.release}_{suffix}",)


def _publish(backend: Backend, job: Job, tables: list, checks: list[CheckResult],
             facts: Mapping[str, Any]) -> list[str]:
    name = job.release.name
    meta = ("main", f"{name}_meta")
    published = [f"{name}_{t.suffix}" for t in tables]
    views = _views(job)
    view_names = [view_name(name, v) for v in views]
    meta_rows = [("method", job.method), ("seed", str(job.release.seed)), ("anon_duck_version", __version__),
                 ("params", json.dumps(dict(job.params), sort_keys=True, default=str)),
                 ("verified", json.dumps({c.name: c.passed for c in checks}, sort_keys=True)),
                 ("facts", json.dumps(dict(facts), sort_keys=True, default=str))] + \
                [("table", t) for t in published] + \
                [("sorted_table", f"{name}_{t.suffix}") for t in tables if not t.shuffle] + \
                [("view", v) for v in view_names]
    meta_rows.sort()    # the metadata table is published sorted, like every unseeded table
    staged = {table: staging(table) for table in published + [meta[1]]}
    try:
        with backend.transaction():
            earlier = _previous_release(backend, name)
            previous = [] if earlier is None else earlier.tables + [meta[1]]
            previous_views = [] if earlier is None else earlier.views
            for table in published + view_names:   # never overwrite what no earlier run of this release made
                if table not in previous + previous_views and backend.table_exists(table):
                    raise InputError(f"release.name = {name!r} would overwrite table {table!r}, which is not "
                                     "part of an earlier release of that name; choose another release name")
            # 1. write every table under its staging name: the previous release is still whole
            for t in tables:
                target = f"{name}_{t.suffix}"
                _copy_in_order(backend, f"publish {target}", staged[target], t.staged, t.shuffle, job.release.seed,
                               grouped=t.repeats)
            backend.write_table(staged[meta[1]], {"key": [k for k, _ in meta_rows], "value": [v for _, v in meta_rows]})
            # 2. swap: drop the previous release, move the staged tables into place
            for old in previous_views:
                backend.run(f"publish: drop view {old}", render("release/drop_view.sql.j2", target=("main", old)))
            for old in previous:
                backend.run(f"publish: drop {old}", render("release/drop_table.sql.j2", target=("main", old)))
            for table, source in staged.items():
                backend.run(f"publish: rename {table}", render("release/rename_table.sql.j2", source=source, name=table))
            # 3. the analyst views over the published tables (docs/analyst.md)
            for view in views:
                backend.run(f"publish: view {view_name(name, view)}", _view_sql(job, view, "create"))
    except BaseException:
        _drop_staged(backend, staged.values())
        raise
    return published
