"""Benchmark cases. Each returns ``{"seconds": ..., "rows": ..., <figures>}``; ``seconds``
times only the measured work (data loading is excluded). A case that generates data names
its builder (``@case(..., data=builder)``): the runner calls the builder in an untimed worker
first, so the case's own call finds the data cached and no repetition pays for generating it,
in time or in peak RSS."""
from __future__ import annotations

import atexit
import hashlib
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import duckdb

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.hierarchy import NODES
from anon_duck.sqlrender import render
from anon_duck.verifiers import k_anonymity, l_diversity
from .generators import DATA

if TYPE_CHECKING:
    from anon_duck.job import Job

CASES: dict[str, Callable[[float], dict[str, Any]]] = {}
# name -> (peer case, what it is compared with): the runner prints ratios for these pairs.
PEERS: dict[str, str] = {}
# name -> the verifier case it is the floor of: the one query a hand-written check runs on the
# same data; the runner prints ours / floor, what the verifier's extra work costs.
FLOORS: dict[str, str] = {}
# name -> the case's data builder: ``builder(scale)`` generates and caches (under DATA) what the
# case reads at that scale; the case calls the same builder, which then only finds the cache.
PREPARE: dict[str, Callable[[float], object]] = {}
# name -> the peer library the case imports (the bench extra's, not the product's): a case whose
# library is not installed is left out of --quick and refused by name when asked for.
NEEDS: dict[str, str] = {}

MEMORY_LIMIT: str | None = None
"""DuckDB's ``memory_limit`` for every connection a case opens (the worker sets it from the
runner's ``--memory-limit``): the suite runs every case under one budget and reports peak RSS
next to it. None: DuckDB's default (80% of RAM)."""

VERIFY_QIS = [10, 2, 5, 4, 3, 6, 2, 3]   # 8 QIs, 43,200 combinations: classes of all sizes at 1M rows


def case(name: str, *, peer_of: str | None = None, floor_of: str | None = None,
         data: Callable[[float], object] | None = None, needs: str | None = None):
    """Register a case; ``data`` is its data builder (see :data:`PREPARE`), so that the runner
    can build the data before the timed repetitions rather than inside the first one;
    ``floor_of`` names the verifier case this one is the floor of (see :data:`FLOORS`)."""
    def register(fn: Callable[[float], dict[str, Any]]) -> Callable[[float], dict[str, Any]]:
        CASES[name] = fn
        if peer_of:
            PEERS[name] = peer_of
        if floor_of:
            FLOORS[name] = floor_of
        if data:
            PREPARE[name] = data
        if needs:
            NEEDS[name] = needs
        return fn
    return register


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A fresh database (in memory by default) under :data:`MEMORY_LIMIT`, set before anything
    is loaded, without DuckDB's progress bar (it would draw on the worker's stdout, the runner's
    channel)."""
    con = duckdb.connect(database, config={"memory_limit": MEMORY_LIMIT} if MEMORY_LIMIT else {})
    con.execute(render("bench/no_progress_bar.sql.j2"))
    return con


def _cached(name: str, n: int, template: str, **context: Any) -> tuple[Path, int]:
    """Generate ``n`` rows with a seeded template once and keep them as Parquet."""
    path = DATA / f"{name}_{n}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with duckdb.connect() as con:
            con.execute(render(template, target=("t",), **context), {"n": n, "seed": 42})
            con.execute(render("bench/write_parquet.sql.j2", source=("t",), path=str(path)))
    return path, n


def _synthetic(scale: float) -> tuple[Path, int]:
    """1M × 8 QIs at scale 1 (cached Parquet)."""
    return _cached("synthetic_qis", int(1_000_000 * scale), "bench/synthetic_qis.sql.j2",
                   cardinalities=VERIFY_QIS, n_sensitive=6)


def _file_database() -> duckdb.DuckDBPyConnection:
    """A fresh database file (in a temporary folder, removed at exit) under :data:`MEMORY_LIMIT`,
    for a case's input, as a steward's table would be: DuckDB can evict its blocks, where an
    in-memory table has to stay in RAM (or be written to the temp directory) beside the case's
    own work."""
    folder = tempfile.mkdtemp(prefix="anon_duck_bench_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return connect(str(Path(folder) / "bench.duckdb"))


def _loaded(scale: float, data: Callable[[float], tuple[Path, int]] = _synthetic, *,
            records: Callable[[float], tuple[Path, int]] | None = None) -> tuple[duckdb.DuckDBPyConnection, int]:
    """The verifier cases' input as table ``t`` of a database file (:func:`_file_database`): an
    in-memory table of 10M rows would stay whole in RAM beside the check's own work.
    ``records`` loads a second table ``r`` beside it: the records whose (id, code) rows ``t``
    holds, for the (k, k^m) cases."""
    path, n = data(scale)
    con = _file_database()
    con.execute(render("bench/load_parquet.sql.j2", target=("t",)), {"path": str(path)})
    if records is not None:
        con.execute(render("bench/load_parquet.sql.j2", target=("r",)), {"path": str(records(scale)[0])})
    return con, n


QIS = [f"q{i}" for i in range(len(VERIFY_QIS))]


def _second_call(check: Callable[[], Any]) -> tuple[float, Any]:
    """Time the second of two calls of ``check`` (a verifier, or its floor's query): the first
    compiles anon_duck's templates for this process (10-40 ms, once, whatever the data) and
    warms the engine, so verifier and floor are compared on the work one more check costs."""
    check()
    t0 = time.perf_counter()
    result = check()
    return time.perf_counter() - t0, result


@case("verify_k", data=_synthetic)
def verify_k(scale: float) -> dict[str, Any]:
    """Our k-anonymity verifier on 1M rows × 8 QIs (k = 5)."""
    con, n = _loaded(scale)
    seconds, res = _second_call(lambda: k_anonymity(DuckDBBackend(con), relation="t", qis=QIS, k=5))
    return {"seconds": seconds, "rows": n, "min_class": res.detail.get("min_class_size"),
            "violations": res.n_violations}


@case("verify_l", data=_synthetic)
def verify_l(scale: float) -> dict[str, Any]:
    """Our distinct l-diversity verifier on the same data (l = 2)."""
    con, n = _loaded(scale)
    seconds, res = _second_call(lambda: l_diversity(DuckDBBackend(con), relation="t", qis=QIS, sensitive="sens", l=2))
    return {"seconds": seconds, "rows": n, "violations": res.n_violations}


def _floor(scale: float, template: str, data: Callable[[float], tuple[Path, int]] = _synthetic, *,
           records: Callable[[float], tuple[Path, int]] | None = None, **context: Any) -> dict[str, Any]:
    """Time one hand-written check (``template`` over table ``t`` of ``data``, and ``r`` of
    ``records``: see :func:`_loaded`)."""
    con, n = _loaded(scale, data, records=records)
    seconds, value = _second_call(lambda: con.execute(render(template, relation=("t",), **context)).fetchone()[0])
    return {"seconds": seconds, "rows": n, "value": value}


@case("verify_k_floor", floor_of="verify_k", data=_synthetic)
def verify_k_floor(scale: float) -> dict[str, Any]:
    """``verify_k``'s floor: the smallest class size by one GROUP BY (value = min class)."""
    return _floor(scale, "bench/floor_k.sql.j2", qis=QIS)


@case("verify_l_floor", floor_of="verify_l", data=_synthetic)
def verify_l_floor(scale: float) -> dict[str, Any]:
    """``verify_l``'s floor: the fewest distinct sensitive values in a class, one GROUP BY."""
    return _floor(scale, "bench/floor_l.sql.j2", qis=QIS, sensitive="sens")


@case("pycanon_k", peer_of="verify_k", data=_synthetic, needs="pycanon")
def pycanon_k(scale: float) -> dict[str, Any]:
    """pycanon's k_anonymity on the same data (a pandas DataFrame; loading excluded)."""
    from pycanon import anonymity
    con, n = _loaded(scale)
    df = con.execute(render("bench/select_all.sql.j2", relation=("t",))).df()
    t0 = time.perf_counter()
    k = anonymity.k_anonymity(df, QIS)
    return {"seconds": time.perf_counter() - t0, "rows": n, "min_class": int(k)}


@case("pycanon_l", peer_of="verify_l", data=_synthetic, needs="pycanon")
def pycanon_l(scale: float) -> dict[str, Any]:
    from pycanon import anonymity
    con, n = _loaded(scale)
    df = con.execute(render("bench/select_all.sql.j2", relation=("t",))).df()
    t0 = time.perf_counter()
    anonymity.l_diversity(df, QIS, ["sens"])
    return {"seconds": time.perf_counter() - t0, "rows": n}


# ------------------------------------------------------------------------------------------
# methods, end to end (load + anonymize + verify + publish), on the data their issues name
# ------------------------------------------------------------------------------------------
def _run_job(job) -> dict[str, Any]:
    """:func:`_timed_run` on a fresh in-memory database."""
    with connect() as con:
        return _timed_run(con, job)


def _timed_run(con: duckdb.DuckDBPyConnection, job: Job) -> dict[str, Any]:
    """Time ``api.run`` (and its process CPU time, every DuckDB thread's included: what other
    programs on a shared machine do not inflate); then (untimed) count the rows of the
    release's first table, so a case reports what it measured rather than a size it expects,
    and digest the release."""
    from anon_duck import api
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = api.run(con, job)
    seconds, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    figures = peak_then_digest(con, job)
    published = con.execute(render("util/fingerprint.sql.j2", relation=(result.tables[0],))).fetchone()[0]
    return {"seconds": seconds, "cpu_s": cpu_s, "verified": result.verified, "facts": result.facts,
            "published_rows": published, **figures}


def peak_then_digest(con: duckdb.DuckDBPyConnection, job: Job, *, views: bool = True) -> dict[str, Any]:
    """``peak_rss_mb``, this process's peak RSS so far, then ``release``, the release's digest
    (:func:`release_digest`), for a case to call right after its measured work: the digest
    exports the release, untimed and without the case's memory_limit, so the peak must be read
    before it to be the measured work's."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"peak_rss_mb": peak, "release": release_digest(con, job, views=views)}


def release_digest(con: duckdb.DuckDBPyConnection, job: Job, *, views: bool = True) -> str:
    """The first 16 hex digits of the SHA-256 of the release as ``anon-duck export`` writes it
    (CSV files: names and bytes, the metadata table left out since it names the version): the
    suite compares it with the digest a target pins, so a speed-up that changed the release
    shows as a changed release rather than as a faster one."""
    # DuckDB's default memory_limit: under a 1GB cap its writers fail on ArtUC's 1.6 GB of code-set
    # text (docs/artuc.md, Memory); the digest is untimed and comes after the case's peak RSS
    con.execute(render("engines/duckdb/set_setting.sql.j2", name="memory_limit", value=None))
    return export_digest(con, job, views=views)


def export_digest(con: Any, job: Job, *, views: bool = True) -> str:
    """:func:`release_digest` on any engine's connection (a SparkSession too: ``export`` writes
    the same files from every engine, so equal digests mean the same release). ``views=False``:
    of the release tables alone (the views are computed from them)."""
    from anon_duck import api
    h = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(api.export(con, job, Path(tmp) / "release.csv", views=views)):
            if path.stem != f"{job.release.name}_meta":
                h.update(path.name.encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _jobs() -> Path:
    from anon_duck.demo import FIXTURES
    return FIXTURES / "jobs"


@case("fulldomain_adult")
def fulldomain_adult(scale: float) -> dict[str, Any]:
    """Full-domain k-anonymity (k = 10) of Adult (30,162 rows); below scale 1, the toy."""
    from anon_duck.job import load_job
    job = load_job(_jobs() / ("adult_fulldomain.toml" if scale >= 1 else "toy_fulldomain.toml"))
    out = _run_job(job)
    rows = out["published_rows"]
    return {"seconds": out["seconds"], "rows": rows, "verified": out["verified"], "lm": round(out["facts"]["lm"], 4),
            "c_avg_norm": round(rows / out["facts"]["classes"] / job.params["k"], 2), "release": out["release"],
            "peak_rss_mb": out["peak_rss_mb"]}


@case("mondrian_adult")
def mondrian_adult(scale: float) -> dict[str, Any]:
    """Mondrian (relaxed, k = 10) of Adult on the same 5 QIs (30,162 rows; issue #32); below
    scale 1, the toy. The whole run: load, the cut rounds, the verifier gate, publication
    (``cpu_s``: its process CPU time). Untimed: the report's NCP and C_avg/k of the release
    (``anon-duck report``)."""
    from anon_duck import api
    from anon_duck.job import load_job
    job = load_job(_jobs() / ("mondrian_adult.toml" if scale >= 1 else "mondrian_toy.toml"))
    with connect() as con:
        out = _timed_run(con, job)
        report = api.report(con, job)
    return {"seconds": out["seconds"], "cpu_s": round(out["cpu_s"], 3), "rows": out["published_rows"],
            "verified": out["verified"], "partitions": out["facts"]["classes"], "rounds": out["facts"]["rounds"],
            "ncp": round(report["ncp"]["ncp"], 4), "c_avg_norm": round(report["discernibility"]["c_avg_norm"], 2),
            "release": out["release"], "peak_rss_mb": out["peak_rss_mb"]}


@case("anonypy_mondrian_adult", peer_of="mondrian_adult", needs="anonypy")
def anonypy_mondrian_adult(scale: float) -> dict[str, Any]:
    """anonypy's Mondrian (multidimensional local recoding) of Adult on the same 5 QIs, k = 10:
    the peer of ``mondrian_adult``, on a pandas DataFrame of the same file (loading excluded).

    Timed (``seconds``): its partitioning and its own release (``anonypy.anonymize``: one row
    per partition and class value), since ours publishes a release too; ``partition_s`` is the
    partitioning alone (what this case timed before: the ratio against it is also shown in
    docs/mondrian.md); ``cpu_s`` the process CPU time of the timed work, as ours reports it.
    Untimed, its NCP with the formula of ours, two ways: ``ncp`` of its
    partitions recoded on the job's hierarchies exactly as Mondrian publishes its own
    (``mondrian.recode``, then the same report: NCP, C_avg/k of the published classes);
    ``ncp_sets`` of what anonypy itself publishes, value sets, each counted as a node whose
    leaves are its values (|set| / leaves(root), 0 for one value; numeric ranges as ours)."""
    from anonypy import anonypy, mondrian
    from anon_duck.demo import FIXTURES
    from anon_duck.job import load_job
    job = load_job(_jobs() / "mondrian_adult.toml")      # its QIs; below scale 1, 12 rows at k = 2
    qis = [q.column for q in job.dataset.qis]
    k = job.params["k"] if scale >= 1 else 2
    with duckdb.connect() as con:
        con.execute(render("bench/load_parquet.sql.j2", target=("t",)), {"path": str(FIXTURES / "adult/adult.parquet")})
        df = con.execute(render("bench/select_all.sql.j2", relation=("t",))).df()
    if scale < 1:
        df = df.head(12)
    for q in job.dataset.qis:
        if q.kind != "numeric":
            df[q.column] = df[q.column].astype("category")
    t0, cpu0 = time.perf_counter(), time.process_time()
    partitions = mondrian.Mondrian(df, qis, "salary_class").partition(k=k)
    partition_s = time.perf_counter() - t0
    published = anonypy.anonymize(df, partitions, qis, "salary_class")
    seconds, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    figures = _peer_ncp(job, df, partitions) if scale >= 1 else {}
    return {"seconds": seconds, "cpu_s": round(cpu_s, 3), "partition_s": round(partition_s, 3), "rows": len(df),
            "classes": len(partitions),
            "published_rows": len(published), "c_avg_norm": round(len(df) / len(partitions) / k, 2), **figures}


def _peer_ncp(job: Job, df: Any, partitions: list[Any]) -> dict[str, Any]:
    """``anonypy_mondrian_adult``'s NCP figures (see there); ``df`` holds the job's input in
    the order the partitions index it."""
    import numpy as np

    from anon_duck.inputs import prepare
    from anon_duck.methods import mondrian
    from anon_duck.methods.reporting import generalized_report
    part = np.empty(len(df), dtype=np.int64)
    for i, rows in enumerate(partitions):
        part[df.index.get_indexer(rows)] = i
    with connect() as con:
        backend = DuckDBBackend(con)
        inputs = prepare(backend, job)
        backend.write_table(("peer_partitions",), {"rid": df[job.dataset.id].astype(str).to_numpy(), "part": part})
        recoded = mondrian.recode(backend, job, inputs, ("peer_partitions",))
        report = generalized_report(backend, job, inputs, recoded, k=job.params["k"])
        leaves = {q.column: backend.rows("bench: root leaves", render("mondrian/hierarchy_root.sql.j2",
                                                                         node_table=NODES),
                                         {"hierarchy": q.hierarchy})[0][0]
                  for q in job.dataset.qis if q.kind != "numeric"}
    numeric = [q.column for q in job.dataset.qis if q.kind == "numeric"]
    total = 0.0
    for rows in partitions:
        sub = df.loc[rows]
        score = sum((sub[c].max() - sub[c].min()) / (df[c].max() - df[c].min()) for c in numeric)
        score += sum(0.0 if sub[c].nunique() == 1 else sub[c].nunique() / n for c, n in leaves.items())
        total += len(sub) * score / len(job.dataset.qis)
    return {"ncp": round(report["ncp"]["ncp"], 4), "ncp_sets": round(total / len(df), 4),
            "c_avg_norm_recoded": round(report["discernibility"]["c_avg_norm"], 2)}


def _bms_job(scale: float) -> Job:
    """``disassociation_bms``'s job: BMS-WebView-1 blown up ``round(scale)`` times (cached
    Parquet beyond 1), the toy of seed 001 below scale 1."""
    import dataclasses

    from anon_duck.job import load_job
    from .papers.disassociation import blow_up
    if scale < 1:
        return load_job(_jobs() / "disassociation_toy.toml")
    job = load_job(_jobs() / "disassociation_bms.toml")
    factor = round(scale)
    if factor == 1:
        return job
    data = DATA / f"bms_x{factor}.parquet"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        blow_up(job.dataset.codes.source.path, factor, 7, data)
    codes = dataclasses.replace(job.dataset.codes, source=dataclasses.replace(job.dataset.codes.source, path=data))
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, codes=codes))


@case("disassociation_bms", data=_bms_job)
def disassociation_bms(scale: float) -> dict[str, Any]:
    """Disassociation (k = 5, m = 2) of BMS-WebView-1 blown up ``round(scale)`` times
    (1 = the real 59,601 transactions); below scale 1, the toy of seed 001."""
    out = _run_job(_bms_job(scale))
    return {"seconds": out["seconds"], "rows": out["facts"]["records"], "verified": out["verified"],
            "clusters": out["facts"]["clusters"], "release": out["release"],
            "peak_rss_mb": out["peak_rss_mb"]}


@case("longitudinal_d50")
def longitudinal_d50(scale: float) -> dict[str, Any]:
    """A-GS + MDAV' (k = 5) on a D50^Pop-like cohort of 27,639 × scale patients (seed 004 Table I)."""
    from .papers.longitudinal import run
    with connect() as con:
        out = run("D50_pop", 5, max(20, int(27_639 * scale)), con=con)
        return {"seconds": out["seconds"], "rows": out["n"], "verified": out["verified"],
                "ilm": out["ilm_alg"], "alm": out["alm_alg"], **peak_then_digest(con, out["job"])}


def _counterfeit_adult_job(scale: float) -> Job:
    """``counterfeit_adult``'s job: Adult repeated ``round(scale)`` times with new ids (cached
    Parquet beyond 1), the paper's toy below scale 1."""
    import dataclasses

    from anon_duck.job import Source, load_job
    job = load_job(_jobs() / ("counterfeit_adult.toml" if scale >= 1 else "counterfeit_toy.toml"))
    factor = round(scale)
    if factor <= 1:
        return job
    data = DATA / f"adult_x{factor}.parquet"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        with duckdb.connect() as con:
            con.execute(render("bench/repeat_rows.sql.j2", id=job.dataset.id),
                        {"src": str(job.dataset.source.path), "dst": str(data), "factor": factor, "stride": 100_000})
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, source=Source(path=data)))


@case("counterfeit_adult", data=_counterfeit_adult_job)
def counterfeit_adult(scale: float) -> dict[str, Any]:
    """Counterfeit records (k = 5, h = 0.3): the lattice search (SQL frequency set + level maps,
    Algorithm 1 walk) on Adult repeated ``round(scale)`` times with new ids (40 = seed 002's
    ×40, 1.2M rows); below scale 1, the paper's toy."""
    from anon_duck.inputs import prepare
    from anon_duck.methods.counterfeit.method import METHOD, lattice_inputs
    from anon_duck.methods.counterfeit.search import Options, algorithm1
    job = _counterfeit_adult_job(scale)
    with connect() as con:
        backend = DuckDBBackend(con)
        params = METHOD.check_params(job)
        inputs = prepare(backend, job)
        t0 = time.perf_counter()
        freq, qis = lattice_inputs(backend, job, inputs, params)
        result = algorithm1(freq, qis, Options(params.k, params.h, params.tight, params.counterfeit_values,
                                               params.rce_mode, params.rce_counterfeit_term, job.release.seed),
                            lambda *a: None)
        return {"seconds": time.perf_counter() - t0, "rows": inputs.n_rows, "rce": round(result.best.rce, 2),
                "lm": round(result.best.lm, 4), "counterfeits": int(result.best.cf.sum()),
                "nodes_evaluated": result.nodes_evaluated}


@case("counterfeit_adult_run")
def counterfeit_adult_run(scale: float) -> dict[str, Any]:
    """Counterfeit records (k = 5, h = 0.3) end to end (lattice search, counterfeits, catalog,
    the independent verifier, publication) on Adult; below scale 1, the paper's toy."""
    from anon_duck.job import load_job
    out = _run_job(load_job(_jobs() / ("counterfeit_adult.toml" if scale >= 1 else "counterfeit_toy.toml")))
    return {"seconds": out["seconds"], "rows": out["published_rows"] - out["facts"]["n_counterfeits"],
            "verified": out["verified"], "counterfeits": out["facts"]["n_counterfeits"], "rce": round(out["facts"]["rce"], 2),
            "release": out["release"],
            "peak_rss_mb": out["peak_rss_mb"]}


@case("lkc_adult")
def lkc_adult(scale: float) -> dict[str, Any]:
    """PAIS (L = 4, K = 20, C = 100%) end to end on Adult blown up to 1,040,106 × scale records
    (alpha = 23 at scale 1: seed 003 §5.2's variations); below 0.1, the paper's toy."""
    import dataclasses

    from anon_duck.job import Source, load_job
    from .generators.adult_blowup import blow_up
    if scale < 0.1:
        out = _run_job(load_job(_jobs() / "lkc_toy.toml"))
        return {"seconds": out["seconds"], "rows": 10, "verified": out["verified"], "release": out["release"],
                "peak_rss_mb": out["peak_rss_mb"]}
    base = load_job(_jobs() / "lkc_adult_full.toml").with_params(L=4, K=20, C=1.0)
    alpha = max(1, round(23 * scale))
    from anon_duck import api
    # the blow-up (0.28 GB at scale 1) in the database file, not in memory: under the suite's
    # 1GB cap an in-memory copy held RAM beside the run's own work (1,066 MB peak RSS)
    with _file_database() as con:
        table = blow_up(DuckDBBackend(con), base, alpha, target=("main", "adult_big"))
        job = dataclasses.replace(base, dataset=dataclasses.replace(base.dataset, source=Source(table=table[-1])))
        t0 = time.perf_counter()
        result = api.run(con, job)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "rows": alpha * 45_222, "verified": result.verified,
                "specializations": result.facts.get("specializations"), **peak_then_digest(con, job)}


@case("verify_lkc", data=_synthetic)
def verify_lkc(scale: float) -> dict[str, Any]:
    """LKC-privacy verifier (L = 2 over 8 QIs: 28 grouping sets, K = 5, C = 0.5) on 1M rows × scale."""
    from anon_duck.verifiers import lkc_privacy
    con, n = _loaded(scale)
    seconds, res = _second_call(lambda: lkc_privacy(DuckDBBackend(con), relation="t", qis=QIS, sensitive="sens",
                                                    L=2, K=5, C=0.5))
    return {"seconds": seconds, "rows": n, "violations": res.n_violations}


@case("verify_lkc_floor", floor_of="verify_lkc", data=_synthetic)
def verify_lkc_floor(scale: float) -> dict[str, Any]:
    """``verify_lkc``'s floor: K and C = 1/2 over the 28 QI pairs in one GROUPING SETS query
    (value = violating cells)."""
    import itertools
    return _floor(scale, "bench/floor_lkc.sql.j2", columns=QIS, sets=[list(p) for p in itertools.combinations(QIS, 2)],
                  sensitive="sens", K=5, c_num=1, c_den=2)


def _synthetic_codes(scale: float) -> tuple[Path, int]:
    """1M (id, code) pairs at scale 1: ~250K records, Zipf-like codes over 2,000 values (cached)."""
    return _cached("synthetic_codes", int(1_000_000 * scale), "bench/synthetic_codes.sql.j2")


@case("verify_km", data=_synthetic_codes)
def verify_km(scale: float) -> dict[str, Any]:
    """k^m-anonymity verifier (k = 5, m = 2) on 1M (id, code) pairs × scale."""
    from anon_duck.verifiers import km_anonymity
    con, n = _loaded(scale, _synthetic_codes)
    seconds, res = _second_call(lambda: km_anonymity(DuckDBBackend(con), relation="t", id_col="id", code_col="code",
                                                     k=5, m=2))
    return {"seconds": seconds, "rows": n, "violations": res.n_violations}


@case("verify_km_floor", floor_of="verify_km", data=_synthetic_codes)
def verify_km_floor(scale: float) -> dict[str, Any]:
    """``verify_km``'s floor: rare codes and code pairs (k = 5) counted by one hand-written query."""
    return _floor(scale, "bench/floor_km.sql.j2", _synthetic_codes, id_col="id", code_col="code", k=5)


KKM_QIS = ["age", "gender", "region"]
KKM_MISSES = [5, 10, 15, 30, 40]   # percent of records without token t0 .. t4 (each record holds 4 of the 5)


def _kkm_records(scale: float) -> tuple[Path, int]:
    """250K ArtUC-shaped records at scale 1 (id + generalized age, gender, region; ~20 a class;
    cached)."""
    return _cached("synthetic_kkm_records", int(250_000 * scale), "bench/synthetic_kkm_records.sql.j2")


def _synthetic_kkm(scale: float) -> tuple[Path, int]:
    """The (k, k^m) cases' data: :func:`_kkm_records` (built here too) and their 1M (id, token)
    rows at scale 1 (cached); returns the tokens' file and row count."""
    _, n_records = _kkm_records(scale)
    path, _ = _cached("synthetic_kkm_tokens", n_records, "bench/synthetic_kkm_tokens.sql.j2", misses=KKM_MISSES)
    return path, (len(KKM_MISSES) - 1) * n_records


@case("verify_kkm", data=_synthetic_kkm)
def verify_kkm(scale: float) -> dict[str, Any]:
    """(k, k^m)-anonymity verifier (k = 5, m = 2) on 250K records × scale and their 1M × scale
    (id, token) rows."""
    from anon_duck.verifiers import kkm_anonymity
    con, n = _loaded(scale, _synthetic_kkm, records=_kkm_records)
    seconds, res = _second_call(lambda: kkm_anonymity(DuckDBBackend(con), relation="r", qis=KKM_QIS,
                                                      codes_relation="t", id_col="id", code_col="token", k=5, m=2))
    return {"seconds": seconds, "rows": n, "violations": res.n_violations}


@case("verify_kkm_floor", floor_of="verify_kkm", data=_synthetic_kkm)
def verify_kkm_floor(scale: float) -> dict[str, Any]:
    """``verify_kkm``'s floor: small classes, rare tokens and rare token pairs of a class (k = 5)
    counted by one hand-written query."""
    return _floor(scale, "bench/floor_kkm.sql.j2", _synthetic_kkm, records=_kkm_records, records_relation=("r",),
                  qis=KKM_QIS, id_col="id", code_col="token", k=5)


@case("artuc_informs")
def artuc_informs(scale: float) -> dict[str, Any]:
    """ArtUC end to end on INFORMS/MEPS (33,961 persons, UC1: 12-year age bands, ICD-9
    chapters), k = 10, m = 2, δ = 0.04, every merge partner scored (the paper's procedure),
    ε lifted so the run reports S instead of failing; below scale 1, the paper's toy."""
    import dataclasses

    from anon_duck.job import load_job
    if scale < 1:
        job = load_job(_jobs() / "artuc_toy.toml")
    else:
        job = load_job(_jobs() / "artuc_informs_uc1.toml")
        params = {k: v for k, v in job.params.items() if k != "epsilon_share"}
        params.update(k=10, m=2, delta=0.04, merge_candidates=0, epsilon=1e12)
        job = dataclasses.replace(job, params=params)
    return _artuc_figures(_run_job(job))


def _artuc_figures(out: dict[str, Any]) -> dict[str, Any]:
    f = out["facts"]
    return {"seconds": out["seconds"], "rows": f["published_records"], "verified": out["verified"],
            "ncp": round(f["ncp"], 4), "ul": round(f["ul"], 4), "suppressed_codes": f["suppressed_codes"],
            "clusters": f["clusters"], "merges": f["merges"], "release": out["release"],
            "peak_rss_mb": out["peak_rss_mb"]}


ARTUC_PARTITION_SIZES = (5_000, 10_000)
"""The fragment sizes at which ``artuc_partition`` compares partitioned ArtUC with the
unpartitioned run (issue #32, item 4: within 2 points at partition_size >= 5,000)."""


def _artuc_partition_job(scale: float) -> tuple[Job, tuple[int, ...]]:
    """``artuc_partition``'s job and fragment sizes: INFORMS UC1 with k = 5, m = 2 (the issue's
    retail set's), δ = 0.1 and 4 merge partners (the job file's), ε lifted; below scale 1
    (``--quick``), 1,000 INFORMS-like persons (δ = 0.5) cut at 500."""
    import dataclasses

    from anon_duck.job import load_job
    if scale < 1:
        from .artuc import informs_like_job
        return informs_like_job(1_000, k=5, delta=0.5), (500,)
    job = load_job(_jobs() / "artuc_informs_uc1.toml")
    params = {k: v for k, v in job.params.items() if k != "epsilon_share"}
    params.update(k=5, m=2, delta=0.1, merge_candidates=4, epsilon=1e12)
    return dataclasses.replace(job, params=params), ARTUC_PARTITION_SIZES


@case("artuc_partition", data=lambda scale: _artuc_partition_job(scale)[0])
def artuc_partition(scale: float) -> dict[str, Any]:
    """Partitioned ArtUC against the unpartitioned run of the same job (:func:`_artuc_partition_job`):
    the share of the input's (person, code) pairs each release dropped (suppressed codes and
    suppressed records, from its published retention table), unpartitioned and at each size of
    :data:`ARTUC_PARTITION_SIZES`, and ``gap_points``, the largest partitioned share minus the
    unpartitioned one (the suite's target: at most 2). ``seconds`` is every run's together."""
    import dataclasses

    from anon_duck.release.names import ReleaseNames
    job, sizes = _artuc_partition_job(scale)
    out: dict[str, Any] = {"seconds": 0.0, "verified": True}
    for size in (None, *sizes):
        sized = dataclasses.replace(job, settings=dataclasses.replace(job.settings, partition_size=size))
        with connect() as con:
            run = _timed_run(con, sized)
            pairs, _, pct = con.execute(render("bench/retention_dropped.sql.j2", relation=(
                ReleaseNames.of(job).table("retention"),))).fetchone()
        tag = "" if size is None else f"_{size}"
        out["seconds"] += run["seconds"]
        out["verified"] = out["verified"] and bool(run["verified"])
        out[f"suppressed_pct{tag}"] = round(float(pct), 2)
        if size is None:
            out["rows"], out["pairs"], out["release"] = run["facts"]["published_records"], int(pairs), run["release"]
        else:
            out[f"ncp{tag}"] = round(run["facts"]["ncp"], 4)
            out[f"fragments{tag}"] = run["facts"]["partition"]["fragments"]
    out["gap_points"] = round(max(out[f"suppressed_pct_{s}"] for s in sizes) - out["suppressed_pct"], 2)
    return out


def _ehrd_job(scale: float) -> Job:
    """``artuc_ehrd``'s job on 208,387 × scale EHRD-like records (cached Parquet); 1,000
    records at scale 0.01 and below (``--quick``)."""
    from .artuc import ehrd_job
    return ehrd_job(round(208_387 * scale) if scale > 0.01 else 1_000)


@case("artuc_ehrd", data=_ehrd_job)
def artuc_ehrd(scale: float) -> dict[str, Any]:
    """ArtUC on EHRD-like data (seed 000 Table 5 shape: 208,387 × scale records, Age + Gender,
    13,963 ICD-9 leaves, mean 16.21 codes; ``benchmarks.generators.ehrd_like``) with UC1
    (12-year Age bands, Gender All, ICD-9 chapters), k = 10, m = 2, δ = 0.04, Step 20 scoring
    the 4 partners of least NCP increase (spec §3.3 [rec]), ε lifted so S is reported. At
    scale 0.01 and below (``--quick``), 1,000 records."""
    return _artuc_figures(_run_job(_ehrd_job(scale)))


def _informs_like_job(scale: float) -> Job:
    """``artuc_informs_like``'s job on 33,961 × scale INFORMS-like persons (cached Parquet; at
    least 1,000), δ = 0.06 from scale 1 and 0.5 below (see the case)."""
    from .artuc import informs_like_job
    return informs_like_job(max(1_000, round(33_961 * scale)), delta=0.06 if scale >= 1 else 0.5)


@case("artuc_informs_like", data=_informs_like_job)
def artuc_informs_like(scale: float) -> dict[str, Any]:
    """ArtUC on INFORMS-like data (33,961 × scale persons, calibrated to fixtures/informs;
    ``benchmarks.generators.informs_like``) with the job of ``artuc_informs_uc1.toml``:
    UC1, k = 10, m = 2, δ = 0.06, 4 merge partners. For the scaling curve (×1…×8). Below scale
    1 (``--quick``) δ = 0.5: a small sample's clusters are coarser than δ = 0.06 admits (Step 16)."""
    return _artuc_figures(_run_job(_informs_like_job(scale)))
