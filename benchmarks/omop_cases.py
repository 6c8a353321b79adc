"""Bench cases on an OMOP CDM shaped like a health system's (issue #31): 10,000 × scale persons
with ~50 condition events each over 2,000 concepts (benchmarks/generators/omop_cdm.py), every
method from ``[input.omop] path =``: ``run`` timed, then ``verify``, ``risk`` and ``report`` each
timed on the published release, with the process's CPU time and peak RSS. Methods that work per person set (disassociation, longitudinal, ArtUC)
run partitioned from 100K persons on (``partition_size``; docs/scale.md), as a steward would
at that size. Each case works in a database file of its own (:func:`database_file`)."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, Callable, Iterator

from anon_duck.job import Job, job_from_dict

from .cases import _jobs, case, connect, peak_then_digest
from .generators import DATA
from .generators.omop_cdm import Shape, cached
from .proctree import RolePeaks, TreeSampler

PERSONS = 10_000           # at scale 1
PARTITION_SIZE = {"disassociation": 20_000, "artuc": 20_000, "longitudinal": 2_000}
"""Persons per fragment, from PARTITIONED_FROM persons on. Longitudinal's MDAV' compares every
trajectory with every other of its input, so its time per person grows with the fragment: on
this CDM 2.8, 3.4, 4.8 and 12.3 ms per person unpartitioned at 1K, 2K, 5K and 10K persons
(one run each, on the shared 2-core machine); 2,000 keeps a fragment's clusters among 400
candidates' worth of similar persons (fragments.py sorts them by QIs, then events)."""
PARTITIONED_FROM = 100_000
# ArtUC is not among them: on this shape (dense code sets) it is strongly super-linear, 433 s at
# 1,000 persons (benchmarks/utility.md), so a step of 10K persons could not finish; the utility
# benchmark measures it on 500 persons (benchmarks/utility/cases.py MAX_PERSONS).
METHODS = ("fulldomain", "lkc", "disassociation", "longitudinal")
PARTITIONABLE = ("disassociation", "longitudinal", "artuc")


def persons(scale: float) -> int:
    return max(200, round(PERSONS * scale))


def cdm(scale: float):
    """The generated CDM at ``scale`` (cached under bench_out/data)."""
    n = persons(scale)
    return cached(DATA / f"omop_cdm_{n}", Shape(persons=n))


def omop_job(method: str, scale: float) -> Job:
    """``fixtures/jobs/omop_<method>.toml`` on the generated CDM, partitioned from 100K persons."""
    return job_on_cdm(fixture_doc(method), scale)


def fixture_doc(method: str) -> dict[str, Any]:
    """``fixtures/jobs/omop_<method>.toml`` as a TOML document (for a bench to edit)."""
    doc = tomllib.loads((_jobs() / f"omop_{method}.toml").read_text())
    assert doc["input"]["omop"]["path"] == "../omop", f"omop_{method}.toml reads another folder"
    return doc


def job_on_cdm(doc: dict[str, Any], scale: float, folder: Path | None = None) -> Job:
    """The job of TOML document ``doc`` reading the generated CDM at ``scale`` (or the one in
    ``folder``: its ``[input.omop] path`` replaced), partitioned from 100K persons when its
    method can be."""
    path = cdm(scale) if folder is None else folder
    doc = {**doc, "input": {**doc["input"], "omop": {**doc["input"]["omop"], "path": str(path.resolve())}}}
    job = job_from_dict(doc, base_dir=_jobs())
    if job.method in PARTITIONABLE and persons(scale) >= PARTITIONED_FROM:
        job = dataclasses.replace(job, settings=dataclasses.replace(job.settings,
                                                                    partition_size=PARTITION_SIZE[job.method]))
    return job


@contextlib.contextmanager
def database_file() -> Iterator[str]:
    """A new DuckDB file in a temporary folder, removed with the folder after the case. A
    health system's CDM lives in a database, not in the memory of one process: under the 4 GB
    memory_limit DuckDB can drop a file's clean pages and read them again, where an in-memory
    database must spill its tables (the input's 50M events and the release at 1M persons) to
    temporary files before any query may use the memory."""
    with tempfile.TemporaryDirectory(prefix="omop_cdm_") as folder:
        yield str(Path(folder) / "cdm.duckdb")


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the fragments' worker
    processes, anon_duck/backend/fragment_pool.py, end with the run that started them)."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def _role(pid: int, name: str, parent: str | None) -> str:
    """The bench worker is the driver; every process it starts is a fragment worker."""
    return "driver" if parent is None else "workers"


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = work()
    return time.perf_counter() - t0, out


def _omop_case(method: str) -> Callable[[float], dict[str, Any]]:
    def run_case(scale: float) -> dict[str, Any]:
        from anon_duck import api
        job = omop_job(method, scale)
        with database_file() as database, connect(database) as con:
            sampler = TreeSampler(os.getpid(), _role).start()
            cpu0 = _cpu()
            seconds, result = _timed(lambda: api.run(con, job))
            cpu = _cpu() - cpu0
            verify_s, checks = _timed(lambda: api.verify(con, job))
            risk_s, _ = _timed(lambda: api.risk(con, job))
            report_s = _timed(lambda: api.report(con, job))[0]
            roles = sampler.stop()
            workers = roles.get("workers", RolePeaks())
            return {"seconds": seconds, "cpu_s": cpu, "verify_s": verify_s, "run_verify_s": seconds + verify_s,
                    "risk_s": risk_s, "report_s": report_s,
                    "rows": persons(scale), "verified": result.verified and all(c.passed for c in checks),
                    "fragments": result.facts.get("partition", {}).get("fragments", 1),
                    # the tables only: exporting disassociation's support view pairs every code of
                    # a cluster with every other, billions of rows from 100K persons on
                    **peak_then_digest(con, job, views=False),
                    # the whole tree's peak: the driver and its fragment workers at once
                    "peak_rss_mb": round(sampler.total_mb), "workers_max_mb": round(workers.max_mb),
                    "workers_sum_mb": round(workers.sum_mb)}
    run_case.__doc__ = f"{method} on the OMOP-shaped CDM: run, then verify, risk and report, each timed."
    return run_case


for _method in METHODS:
    case(f"omop_cdm_{_method}", data=cdm)(_omop_case(_method))

