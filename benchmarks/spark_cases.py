"""Spark bench cases (issue #19, "scale, measured"), each beside a DuckDB twin on the same data
with the same parameters, so that the runner prints their ratio and whether both published the
same release.

A Spark case runs on ``local[2]`` with :data:`CONFIG` (driver memory fixed), in a warehouse
folder of its own. Starting the session (the JVM, and the Derby metastore it opens on first
use) is timed apart as ``session_s``; ``seconds`` is the work the case names, as for the DuckDB
cases. Memory is the process tree's (:mod:`.proctree`): the Python driver (the bench worker),
the JVM (driver and executor in one, in local mode) and the Python workers the JVM starts for
``applyInPandas``, sampled from before the session starts to the end of the timed work.
pyspark is imported only when a Spark case runs, so the other cases (and ``--quick``, which
leaves these out: :data:`SPARK`) need neither pyspark nor Java.
"""
from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import duckdb

from anon_duck.sqlrender import render
from anon_duck.verifiers import k_anonymity
from .cases import QIS, _bms_job, _jobs, _run_job, _second_call, _synthetic, case, export_digest
from .generators import DATA
from .proctree import RolePeaks, TreeSampler

if TYPE_CHECKING:
    from anon_duck.job import Job

SPARK: set[str] = set()
"""The cases that start a Spark session: ``--quick`` (CI) leaves them out."""

MASTER = "local[2]"
CONFIG = {"spark.driver.memory": "4g", "spark.driver.maxResultSize": "2g"}
"""The bench session's settings: 4 GB of heap for driver and executor (one JVM in local mode;
Spark's default is 1 GB; with 2 GB full-domain's input profile of 10M rows ran out of heap),
and up to 2 GB of results collected to the driver (the untimed release digest exports the
release through Arrow: 10M rows of a full-domain release)."""

DIS_PARTITION = 50_000
"""Persons per fragment of the partitioned disassociation cases: 24 fragments of BMS-WebView-1
×20, 3 of ×2 (fewer, larger fragments need fewer fragmentation rounds, docs/scale.md Limits)."""

ARTUC_PARTITION = 10_000
"""Persons per fragment of the partitioned ArtUC cases: 34 fragments of INFORMS-like ×10, 4 of
×1 (ArtUC's time grows faster than its input, so smaller fragments cost less in all; at 10,000
the NCP of INFORMS was lowest, docs/scale.md)."""

ADULT_ROWS = 30_162      # fixtures/adult/adult.parquet


def spark_case(name: str, *, peer_of: str, floor_of: str | None = None,
               data: Callable[[float], object] | None = None) -> Callable:
    """:func:`cases.case`, marked as a Spark case (:data:`SPARK`); ``peer_of`` names its DuckDB
    twin, so the runner prints Spark / DuckDB."""
    SPARK.add(name)
    return case(name, peer_of=peer_of, floor_of=floor_of, data=data)


@functools.cache
def _session() -> tuple[Any, float]:
    """This process's session and the seconds it took to start, the metastore opened (the
    first catalog access creates the Derby database: done here, not inside the timed work)."""
    from anon_duck.backend.spark import SparkBackend, spark_session
    folder = tempfile.mkdtemp(prefix="anon_duck_bench_spark_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    t0 = time.perf_counter()
    spark = spark_session(Path(folder) / "warehouse", master=MASTER, config=CONFIG)
    SparkBackend(spark).table_exists("_ad_bench_warm_up")
    atexit.register(_stop, spark)        # atexit runs it first, before the folder is removed
    return spark, time.perf_counter() - t0


def _stop(spark: Any) -> None:
    """Stop the session and reap its JVM before the worker exits. The runner counts the CPU of
    the worker's reaped descendants as the repetition's own (load.py, ``RUSAGE_CHILDREN``); a
    JVM left to die after the worker was never waited for, so its CPU showed as *other* load
    and marked every Spark row busy. The JVM exits when its stdin closes (pyspark's signal)."""
    from pyspark import SparkContext
    gateway = SparkContext._gateway
    spark.stop()
    if gateway is not None and getattr(gateway, "proc", None) is not None:
        gateway.shutdown()
        gateway.proc.stdin.close()
        gateway.proc.wait(timeout=120)


def _role(pid: int, name: str, parent: str | None) -> str:
    """Which part of a Spark case a process of the bench worker's tree is: the Python workers
    are the JVM's Python descendants (its daemon and the workers it forks); the launcher's
    short-lived processes (``spark-submit`` runs a shell and a Python helper) are other.
    (A child the JVM is still starting shares the JVM's memory and is not counted at all:
    :func:`.proctree._shares_memory`.)"""
    if parent is None:
        return "py_driver"
    if name == "java":
        return "jvm"
    return "py_workers" if parent in ("jvm", "py_workers") and name.startswith("python") else "other"


class _Measured:
    """A Spark case's session, with its process tree sampled from before the session starts."""

    def __init__(self) -> None:
        from anon_duck.backend.spark import SparkBackend
        self.sampler = TreeSampler(os.getpid(), _role).start()
        self.spark, self.session_s = _session()
        self.backend = SparkBackend(self.spark)

    def memory(self) -> dict[str, float]:
        """Stop sampling and return the peaks in MiB: called right after the timed work, so
        untimed work after it (a release digest pulls the release to the driver) is not counted.
        ``peak_rss_mb`` is the whole tree's, the one memory column every case has. Processes
        of no named role (the launcher's, or anything the JVM starts that is not Python) are
        reported when there were any, with their command names: the total includes them."""
        roles = self.sampler.stop()

        def peak(role: str, of: str) -> float:
            return round(getattr(roles.get(role, RolePeaks()), of))
        other = {"other_mb": peak("other", "sum_mb"), "other": "+".join(sorted(roles["other"].names))} \
            if "other" in roles else {}
        return {"session_s": round(self.session_s, 2), "peak_rss_mb": round(self.sampler.total_mb),
                "jvm_peak_mb": peak("jvm", "max_mb"), "py_driver_peak_mb": peak("py_driver", "max_mb"),
                "py_workers_max_mb": peak("py_workers", "max_mb"), "py_workers_sum_mb": peak("py_workers", "sum_mb"),
                "py_workers": len(roles.get("py_workers", RolePeaks()).processes), **other}


# ------------------------------------------------------------------------------------------
# k-anonymity verifier on the synthetic 1M × 8 QIs (10M at scale 10); DuckDB twin: verify_k
# ------------------------------------------------------------------------------------------
def _spark_table(run: _Measured, path: Path) -> None:
    """The cached Parquet file as table ``t``: Spark keeps a table as Parquet files, so the
    verifier reads it as it would read a steward's table (DuckDB's twin reads its own file)."""
    run.spark.read.parquet(str(path.resolve())).createOrReplaceTempView("t")   # the JVM's cwd may differ


@spark_case("verify_k_spark", peer_of="verify_k", data=_synthetic)
def verify_k_spark(scale: float) -> dict[str, Any]:
    """``verify_k`` on Spark: the k-anonymity verifier (k = 5) through the Spark backend."""
    path, n = _synthetic(scale)
    run = _Measured()
    _spark_table(run, path)
    seconds, res = _second_call(lambda: k_anonymity(run.backend, relation="t", qis=QIS, k=5))
    return {"seconds": seconds, "rows": n, "min_class": res.detail.get("min_class_size"),
            "violations": res.n_violations, **run.memory()}


@spark_case("verify_k_spark_floor", peer_of="verify_k_floor", floor_of="verify_k_spark", data=_synthetic)
def verify_k_spark_floor(scale: float) -> dict[str, Any]:
    """``verify_k_floor`` on Spark: the one GROUP BY, to price the verifier's extra work there."""
    path, n = _synthetic(scale)
    run = _Measured()
    _spark_table(run, path)
    sql = render("bench/floor_k.sql.j2", relation=("t",), qis=QIS)
    seconds, value = _second_call(lambda: run.backend.scalar("bench: floor", sql))
    return {"seconds": seconds, "rows": n, "value": value, **run.memory()}


# ------------------------------------------------------------------------------------------
# methods end to end: the same job on both engines, the release digests compared by the runner
# ------------------------------------------------------------------------------------------
DIGEST_SCALE = 1.0
"""The largest scale at which a Spark case digests its release: ``export`` brings the release
to the driver through Arrow (docs/spark.md, Export), and the 10M-row full-domain release
overflowed a 4g driver there. The twins' releases are compared at scale 1 (and in
tests/test_bench_spark.py); above it the runner leaves the pair out of "same release?"."""


def _run_spark_job(job: Job, *, digest: bool) -> dict[str, Any]:
    """:func:`cases._run_job` on Spark: ``api.run`` timed, then (untimed, after the memory
    peaks are taken) the release digested as ``export`` writes it from the session when
    ``digest``."""
    from anon_duck import api
    run = _Measured()
    t0 = time.perf_counter()
    result = api.run(run.spark, job)
    seconds = time.perf_counter() - t0
    memory = run.memory()
    release = {"release": export_digest(run.spark, job)} if digest else {}
    return {"seconds": seconds, "verified": result.verified, "facts": result.facts, **release, **memory}


def _method_figures(out: dict[str, Any], rows: int) -> dict[str, Any]:
    """What a method case reports on either engine: its time, rows, verdict, fragments,
    release digest, and every memory figure the run took."""
    kept = {k: v for k, v in out.items() if k in ("seconds", "verified", "release", "session_s")
            or k.endswith("_mb") or k in ("py_workers", "other")}
    return {**kept, "rows": rows, "fragments": out["facts"].get("partition", {}).get("fragments", 1)}


def _twins(name: str, job: Callable[[float], Job], rows: Callable[[float, dict[str, Any]], int]) -> None:
    """Register ``name``, ``job(scale)`` run end to end on DuckDB (``api.run``, publication
    included), and ``<name>_spark``, the same job on Spark beside it; ``rows(scale, facts)`` is
    the figure both report as their size."""
    def on(run: Callable[[Job, float], dict[str, Any]]) -> Callable[[float], dict[str, Any]]:
        def measure(scale: float) -> dict[str, Any]:
            out = run(job(scale), scale)
            return _method_figures(out, rows(scale, out["facts"]))
        return measure
    case(name, data=job)(on(lambda j, scale: _run_job(j)))
    spark_case(f"{name}_spark", peer_of=name, data=job)(
        on(lambda j, scale: _run_spark_job(j, digest=scale <= DIGEST_SCALE)))


def _adult_alpha(scale: float) -> int:
    """Copies of each Adult record (the record and its variations) for about 1M × scale rows."""
    return max(1, round(1_000_000 * scale / ADULT_ROWS))


def _adult_big(scale: float) -> Job:
    """Full-domain k-anonymity (k = 10, ``adult_fulldomain.toml``) on Adult blown up to about
    1M × scale rows (seed 003's variations, ``generators.adult_blowup``: each record and
    alpha − 1 variations), cached as Parquet so that both engines read the same file."""
    from anon_duck.backend.duckdb import DuckDBBackend
    from anon_duck.job import Source, load_job
    from .generators.adult_blowup import blow_up
    job = load_job(_jobs() / "adult_fulldomain.toml")
    path = DATA / f"adult_blowup_{_adult_alpha(scale)}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with duckdb.connect() as con:
            table = blow_up(DuckDBBackend(con), job, _adult_alpha(scale))
            con.execute(render("bench/write_parquet.sql.j2", source=table, path=str(path)))
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, source=Source(path=path)))


def _partitioned(job: Job, size: int) -> Job:
    return dataclasses.replace(job, settings=dataclasses.replace(job.settings, partition_size=size))


def _toy(name: str, size: int) -> Job:
    """A toy job cut into fragments of ``size`` (the scale of tests and ``--quick``), without
    the constraints that name codes some fragment lacks (docs/scale.md)."""
    from anon_duck.job import load_job
    job = load_job(_jobs() / name)
    return dataclasses.replace(_partitioned(job, size), params={k: v for k, v in job.params.items()
                                                                if k not in ("policy", "constraints")})


def _dis_job(scale: float) -> Job:
    """Disassociation (k = 5, m = 2) of BMS-WebView-1 ×(2 × scale) (×20 at scale 10), cut into
    fragments of :data:`DIS_PARTITION`; below scale 0.5 the toy of seed 001 in two fragments."""
    if scale < 0.5:
        return _toy("disassociation_toy.toml", 6)
    return _partitioned(_bms_job(round(2 * scale)), DIS_PARTITION)


def _artuc_job(scale: float) -> Job:
    """ArtUC (UC1, k = 10, m = 2, δ = 0.1 as in ``artuc_informs_uc1.toml``, 4 merge partners) of
    33,961 × scale INFORMS-like persons (×10 at scale 10), cut into fragments of
    :data:`ARTUC_PARTITION`; below scale 0.5 the toy of seed 000 in two fragments."""
    from .artuc import informs_like_job
    if scale < 0.5:
        return _toy("artuc_toy.toml", 4)
    return _partitioned(informs_like_job(round(33_961 * scale), delta=0.1), ARTUC_PARTITION)


_twins("fulldomain_adult_big", _adult_big, lambda scale, facts: _adult_alpha(scale) * ADULT_ROWS)
_twins("disassociation_bms_part", _dis_job, lambda scale, facts: facts["records"])
_twins("artuc_informs_part", _artuc_job, lambda scale, facts: facts["published_records"])
