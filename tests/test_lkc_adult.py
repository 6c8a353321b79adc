"""PAIS on real data: UCI Adult as seed 003 §5.1 uses it (45,222 records, 13 QIDs,
fixtures/003/adult_full.parquet) and the repository's 9-attribute fixture (7 QIDs).

Every run below passes the independent verifier before publication (``anon_duck.run`` raises
otherwise). The shape assertions are the paper's claims for Figs. 5a-5d (spec §5.3); the
numbers next to the paper's are in docs/lkc.md.

Run as a script for the Fig. 5 sweep and the Fig. 6 scalability benchmark:

    python tests/test_lkc_adult.py sweep          # the table in docs/lkc.md
    python tests/test_lkc_adult.py scale [alpha..] # 200K..1M records, L=4, K=20, C=100%
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anon_duck  # noqa: E402
from anon_duck.backend.duckdb import DuckDBBackend  # noqa: E402
from benchmarks.generators.adult_blowup import blow_up  # noqa: E402
from anon_duck.errors import InfeasibleError  # noqa: E402
from anon_duck.job import Source, load_job  # noqa: E402
from anon_duck.methods.lkc import measures  # noqa: E402

from conftest import JOBS, table_fingerprint  # noqa: E402

FULL = JOBS / "lkc_adult_full.toml"
SMALL = JOBS / "lkc_adult.toml"


def dr(con: duckdb.DuckDBPyConnection, job) -> float:
    return measures.discernibility_ratio(DuckDBBackend(con), ("main", f"{job.release.name}_release"),
                                         [q.column for q in job.dataset.qis])["dr"]


@pytest.fixture(scope="module")
def full_runs():
    """DR of a few (L, K, C) settings on the full Adult, each release verified."""
    con = duckdb.connect()
    base = load_job(FULL)
    out = {}
    for L, K, C in [(2, 20, 0.2), (4, 20, 0.2), (6, 20, 0.2), (6, 20, 1.0), (13, 20, 1.0)]:
        job = base.with_params(L=L, K=K, C=C)
        res = anon_duck.run(con, job)
        assert res.verified and all(c.passed for c in anon_duck.verify(con, job))
        out[(L, K, C)] = (dr(con, job), res)
    yield con, out
    con.close()


@pytest.mark.slow
def test_full_adult_dr_shapes(full_runs):
    _, runs = full_runs
    d = {k: v[0] for k, v in runs.items()}
    assert d[(2, 20, 0.2)] < 0.05                                   # Fig. 5c: L=2 stays close to 0
    assert d[(2, 20, 0.2)] < d[(4, 20, 0.2)] <= d[(6, 20, 0.2)]     # Fig. 5c/5d: DR rises with L
    # Fig. 5c: at L=6 DR equals K-anonymity's; K-anonymity = PAIS(L=|QID|=13, C=1) (spec A16)
    assert d[(6, 20, 1.0)] == pytest.approx(d[(13, 20, 1.0)])


@pytest.mark.slow
def test_full_adult_classification_error_at_L2(full_runs):
    pytest.importorskip("sklearn")
    con, _ = full_runs
    job = load_job(FULL).with_params(L=2, K=20, C=0.2)
    anon_duck.run(con, job)
    ce = anon_duck.report(con, job)["classification"]
    # Fig. 5a (paper: BE 14.7%, UE 24.5%, CE - BE < 1% and UE - CE 8.9..9.5% at L=2)
    assert 13.5 < ce["BE"] < 16 and 23.5 < ce["UE"] < 25.5
    assert ce["BE"] < ce["CE"] < ce["UE"]
    assert ce["CE-BE"] < 1.5 and ce["UE-CE"] > 8


@pytest.mark.slow
def test_c_below_the_divorced_share_is_reported_before_any_work():
    con = duckdb.connect()
    with pytest.raises(InfeasibleError, match=r"'Divorced' in the whole table \(6297/45222 = 0.1392\)"):
        anon_duck.run(con, load_job(FULL).with_params(C=0.1))


@pytest.mark.slow
def test_repository_fixture_job_runs_verifies_and_reports():
    """fixtures/jobs/lkc_adult.toml: the 30,162-row, 7-QID Adult of the repository."""
    con = duckdb.connect()
    job = load_job(SMALL)
    res = anon_duck.run(con, job)
    assert res.verified and all(c.passed for c in anon_duck.verify(con, job))
    rep = anon_duck.report(con, job)
    assert rep["discernibility"]["rows"] == 30_162 and rep["discernibility"]["min_class"] >= 20
    cols = {r[0] for r in con.execute("DESCRIBE lkc_adult_release").fetchall()}
    assert "id" not in cols and "age" in cols and "age__lo" in cols


@pytest.mark.slow
def test_blow_up_is_seeded_and_keeps_each_record_a_variation():
    """The Fig. 6 data (docs/lkc.md A20) on the repository fixture, alpha = 3: alpha × n rows
    with distinct ids; copy 0 is the source; a variation keeps its record's class and
    sensitive value and gives each QID, with probability 0.2, a value drawn uniformly from the
    QID's observed domain, so a QID cell differs from the original with probability
    0.2 · (1 − 1/|domain|). The same seed gives the same rows, another seed other rows, and a
    table of the database (the bench's lkc_adult) the scratch table's rows."""
    con = duckdb.connect()
    backend = DuckDBBackend(con)
    job = load_job(SMALL)
    alpha, n = 3, 30_162
    qis = [q.column for q in job.dataset.qis]
    blow_up(backend, job, alpha)
    first = table_fingerprint(con, "_ad_adult_big")
    blow_up(backend, job, alpha)
    assert table_fingerprint(con, "_ad_adult_big") == first
    assert blow_up(backend, job, alpha, target=("main", "adult_big")) == ("main", "adult_big")
    assert table_fingerprint(con, "adult_big") == first
    assert con.execute("SELECT temporary FROM duckdb_tables() WHERE table_name = 'adult_big'").fetchall() == [(False,)]
    blow_up(backend, job, alpha, seed=1)
    assert table_fingerprint(con, "_ad_adult_big") != first
    rows, ids = con.execute("SELECT count(*), count(DISTINCT id) FROM _ad_adult_big").fetchone()
    assert rows == ids == alpha * n
    # b.id = copy · max(id) + original id (source ids 1..n): every row joins its original
    joined = f"FROM _ad_adult_big b JOIN _ad_adult_src s ON s.id = (b.id - 1) % {n} + 1"
    copy = f"(b.id - 1) // {n}"
    other = "b.salary_class IS DISTINCT FROM s.salary_class OR b.marital_status IS DISTINCT FROM s.marital_status"
    assert con.execute(f"SELECT count(*), count(*) FILTER ({other}) {joined}").fetchone() == (alpha * n, 0)
    qid_changed = " OR ".join(f"b.{q} IS DISTINCT FROM s.{q}" for q in qis)
    assert con.execute(f"SELECT count(*) FILTER ({qid_changed}) {joined} WHERE {copy} = 0").fetchone()[0] == 0
    for q in qis:
        domain = con.execute(f"SELECT count(DISTINCT {q}) FROM _ad_adult_src").fetchone()[0]
        outside = con.execute(f"SELECT count(*) FROM _ad_adult_big WHERE {q} NOT IN (SELECT {q} FROM _ad_adult_src)")
        assert outside.fetchone()[0] == 0, q
        share = con.execute(f"SELECT avg(CAST(b.{q} IS DISTINCT FROM s.{q} AS INT)) {joined} WHERE {copy} > 0")
        assert share.fetchone()[0] == pytest.approx(0.2 * (1 - 1 / domain), abs=0.01), q


# ------------------------------------------------------------------------------------------
# scripts: the Fig. 5 sweep and the Fig. 6 scalability benchmark
# ------------------------------------------------------------------------------------------
def sweep() -> None:
    """Markdown rows: L, K, C, specializations, DR, classes, CE, BE, UE, CE-BE, UE-CE, seconds."""
    con = duckdb.connect()
    base = load_job(FULL)
    grid = [(L, K, 0.2) for L in (2, 4, 6) for K in (20, 40, 60, 80, 100)] + \
           [(13, K, 1.0) for K in (20, 60, 100)] + [(L, 100, C) for C in (0.15, 0.25, 0.3) for L in (2, 4, 6)]
    for L, K, C in grid:
        job = base.with_params(L=L, K=K, C=C)
        t = time.perf_counter()
        res = anon_duck.run(con, job)
        seconds = time.perf_counter() - t
        rep = anon_duck.report(con, job)
        d, c = rep["discernibility"], rep["classification"]
        print(f"| {L} | {K} | {C:.0%} | {res.facts['specializations']} | {d['dr']:.4f} | {d['classes']} | "
              f"{c['CE']:.2f} | {c['BE']:.2f} | {c['UE']:.2f} | {c['CE-BE']:+.2f} | {c['UE-CE']:+.2f} | "
              f"{seconds:.1f} |", flush=True)


def scale(*alphas: str) -> None:
    """Fig. 6: L=4, K=20, C=100% on 200K..1M records; end-to-end = anon_duck.run (inputs
    checked, PAIS, verifier, publication), the table already in DuckDB. Prints rows, wall
    seconds, CPU seconds of the process (all threads; robust to a loaded machine), the wall
    seconds per phase, specializations, verified."""
    base = load_job(FULL).with_params(L=4, K=20, C=1.0)
    for alpha in [int(a) for a in alphas] or (5, 9, 14, 18, 23):
        con = duckdb.connect()
        table = blow_up(DuckDBBackend(con), base, alpha)
        rows = alpha * 45_222
        job = dataclasses.replace(base, dataset=dataclasses.replace(base.dataset, source=Source(table=table[-1])))
        t, cpu = time.perf_counter(), time.process_time()
        res = anon_duck.run(con, job)
        total, cpu = time.perf_counter() - t, time.process_time() - cpu
        by = {}
        for stage, sec in res.stages:
            key = ("pais" if stage.startswith("lkc") or "_ad_lkc" in stage else "verify" if stage.startswith("verify")
                   else "publish" if stage.startswith("publish") else "inputs")
            by[key] = by.get(key, 0.0) + sec
        print(f"| {rows:,} | {total:.1f} | {cpu:.1f} | " + " | ".join(f"{by.get(k, 0):.1f}" for k in
                                                       ("inputs", "pais", "verify", "publish")) +
              f" | {res.facts['specializations']} | {res.verified} |", flush=True)
        con.close()


if __name__ == "__main__":
    {"sweep": sweep, "scale": scale}[sys.argv[1]](*sys.argv[2:])
