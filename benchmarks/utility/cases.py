"""The utility benchmark's cases: ``omop_utility_<method>_k<k>`` runs the method on the
generated CDM (benchmarks/omop_cases.py's jobs, k set), then measures what the release kept:
the retention shares, the demographics' NCP and the workload's errors (:mod:`.workload`,
:mod:`.estimate`). One case per method and k, each in its own worker as every bench case."""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Mapping

import duckdb

from anon_duck import api, release
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.inputs import prepare
from anon_duck.job import Job
from anon_duck.reports.loss import attribute_loss
from anon_duck.session import session
from anon_duck.sqlrender import render

from ..cases import case, connect
from ..omop_cases import PERSONS, cdm, fixture_doc, job_on_cdm, persons
from . import estimate, workload

METHODS = ("fulldomain", "mondrian", "lkc", "counterfeit", "artuc", "disassociation", "longitudinal")
KS = (5, 10)
K_KEY = {"lkc": "K"}                      # LKC's k is its K (L = 2, C = 1 as in the fixture job)
BORROWED: dict[str, dict[str, Any]] = {"mondrian": {"roles": ["person"]}, "counterfeit": {"sensitive": "ethnicity"}}
"""Methods without an OMOP fixture job of their own: fulldomain's input, with these ``[input.omop]``
keys (Mondrian is not in the OMOP roles table: person QIs; counterfeit needs a sensitive attribute)."""
MAX_PERSONS: dict[str, int] = {"artuc": 500, "longitudinal": 5000}
"""Methods run on fewer persons than 10,000 × scale, where 10K persons took over 3 minutes on
the shared 2-core machine (the brief's budget); the table shows each row's persons. Measured
with the machine busy (load 8-11): ArtUC 74 s at 500 persons, 433 s at 1,000; longitudinal
64 s at 5,000, not done in 300 s at 10,000."""
OUTCOMES = ("exact", "generalized", "without_count", "dropped")


def name(method: str, k: int) -> str:
    return f"omop_utility_{method}_k{k}"


def method_scale(method: str, scale: float) -> float:
    """The CDM scale ``method`` runs at: ``scale``, capped by :data:`MAX_PERSONS`."""
    cap = MAX_PERSONS.get(method)
    return scale if cap is None else min(scale, cap / PERSONS)


def utility_job(method: str, k: int, scale: float, folder: Path | None = None) -> Job:
    """The fixture job of ``method`` (fixtures/jobs/omop_<method>.toml) with its k set, on the
    CDM at ``scale`` (or the one in ``folder``)."""
    doc = fixture_doc("fulldomain" if method in BORROWED else method)
    params = {"name": method, "k": k} if method in BORROWED else {**doc["method"], K_KEY.get(method, "k"): k}
    omop = {**doc["input"]["omop"], **BORROWED.get(method, {})}
    doc = {**doc, "input": {"omop": omop}, "method": params,
           "release": {**doc["release"], "name": f"utility_{method}_k{k}"}}
    return job_on_cdm(doc, method_scale(method, scale), folder)


def measure(con: duckdb.DuckDBPyConnection, job: Job, cdm_path: Path) -> dict[str, Any]:
    """Run ``job`` (timed), then everything the utility table shows of its release."""
    t0 = time.perf_counter()
    result = api.run(con, job)
    seconds = time.perf_counter() - t0
    backend = DuckDBBackend(con)
    found = workload.load_input(backend, cdm_path)
    drawn = workload.build(backend, found)
    kinds = dict(backend.rows("utility: kinds", render("bench/utility/kinds.sql.j2", workload=drawn)))
    errors = relative_errors(workload.truth(backend, found, drawn), estimate.answers(backend, job, found, drawn), kinds)
    return {"seconds": seconds, "verified": result.verified, "method": job.method, **retention_shares(con, job),
            "ncp": demographics_ncp(con, job), **errors}


def retention_shares(con: duckdb.DuckDBPyConnection, job: Job) -> dict[str, float | None]:
    """The input's (person, code) pairs by outcome, as shares; None for a release without
    ``<release>_retention`` (no codes released)."""
    with session(con, job) as backend:
        retention = release.release_tables(backend, job).get("retention")
        row = None if retention is None else backend.rows("utility: retention", render(
            "bench/utility/retention_shares.sql.j2", retention=retention))[0]
    if row is None or not row[0]:
        return {f"pairs_{o}": None for o in OUTCOMES}
    return {f"pairs_{o}": float(n) / float(row[0]) for o, n in zip(OUTCOMES, row[1:])}


def demographics_ncp(con: duckdb.DuckDBPyConnection, job: Job) -> float | None:
    """NCP of the released demographics: the mean over the release's QIs of each QI's NCP as
    ``anon-duck report`` recomputes it from the release (anon_duck/reports/loss.py); None when
    the release shows no QI."""
    with session(con, job) as backend:
        tables = release.release_tables(backend, job)
        attributes = attribute_loss(backend, job, prepare(backend, job), tables, {}, {})["attributes"]
    values = [a["ncp"] for a in attributes if a.get("ncp") is not None]
    return statistics.fmean(values) if values else None


def relative_errors(actual: Mapping[int, int], estimates: Mapping[int, float],
                    kinds: Mapping[int, str]) -> dict[str, Any]:
    """Average relative error |estimate - actual| / actual over the answered queries with
    actual > 0, per kind (``are_<kind>``, None when the release answers none of that kind) and
    over all answered ones (``are``); ``answered``: how many queries that is."""
    used = {q: abs(estimates[q] - actual[q]) / actual[q] for q in estimates if actual[q] > 0}
    out: dict[str, Any] = {f"are_{kind}": _mean([e for q, e in used.items() if kinds[q] == kind])
                           for kind in workload.KINDS}
    return {**out, "are": _mean(list(used.values())), "answered": len(used)}


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _utility_case(method: str, k: int):
    def run_case(scale: float) -> dict[str, Any]:
        job = utility_job(method, k, scale)
        at = method_scale(method, scale)
        with connect() as con:
            return {"rows": persons(at), "k": k, **measure(con, job, cdm(at))}
    run_case.__doc__ = f"{method} at k = {k} on the OMOP-shaped CDM: what the release kept (issue #32, item 3)."
    return run_case


def _data(method: str):
    return lambda scale: cdm(method_scale(method, scale))


for _method in METHODS:
    for _k in KS:
        case(name(_method, _k), data=_data(_method))(_utility_case(_method, _k))

CASES = tuple(name(m, k) for m in METHODS for k in KS)
TWINS = tuple(name(m, k) for m in METHODS for k in KS[1:])
"""Cases that run their method's code again at another k: ``--quick`` (which checks that every
case completes, not its numbers) runs each method at the first k only."""
