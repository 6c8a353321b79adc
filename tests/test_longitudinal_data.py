"""Seed 004 method on real and synthetic data: the release verifies, utility numbers are
pinned, and the Appendix A trends hold on Table-I-shaped cohorts (docs/longitudinal.md)."""
from __future__ import annotations

import duckdb
import pytest

from anon_duck import api
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import parse_job
from anon_duck.methods.longitudinal.cohort import TABLE_I, generate, job_text

MIMIC = "longitudinal_mimic.toml"


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 5])
def test_mimic_demo_release_verifies(con, job_file, k):
    job = job_file(MIMIC).with_params(k=k).with_release(f"mimic_k{k}")
    res = api.run(con, job)
    assert res.verified and [c.name for c in res.checks] == ["longitudinal_columns", "longitudinal_consistency",
                                                            "k_anonymity"]
    # independent re-check by hand: every released trajectory (pairs from the events table,
    # empty included) is shared by at least k patients, and every patient is released once
    smallest, n = con.execute(f"""
        WITH t AS (SELECT p.release_id, coalesce(string_agg(e.code || '@' || e.age, ';' ORDER BY e.pos), '') AS tr
                   FROM mimic_k{k}_patients p LEFT JOIN mimic_k{k}_events e USING (release_id) GROUP BY ALL)
        SELECT min(c), sum(c) FROM (SELECT count(*) AS c FROM t GROUP BY tr)""").fetchone()
    assert smallest >= k and n == 100
    rep = api.report(con, job)
    assert rep["icd_domain"] == 325 and rep["pairs"] == 2022
    assert 0 < rep["ilm_alg"] < 1 and 0 < rep["alm_alg"] < 1
    assert rep["queries"] == 1000 and 0 < rep["avg_re"] <= 1
    assert rep["min_cluster"] >= k


@pytest.mark.slow
def test_mimic_loss_rises_with_k(con, job_file):
    losses = []
    for k in (2, 5):
        job = job_file(MIMIC).with_params(k=k).with_release(f"mimic_k{k}")
        f = api.run(con, job).facts
        losses.append((f["ilm_alg"], f["alm_alg"], f["ilm_def8"], f["alm_def8"]))
    assert all(b > a for a, b in zip(*losses))


def _cohort(con, name, n, k, alignment="ags"):
    spec = TABLE_I[name]
    data = generate(spec, n_patients=n, seed=1)
    backend = DuckDBBackend(con)
    backend.write_table("cohort_patients", data["patients"])
    backend.write_table("cohort_events", data["events"])
    res = api.run(con, parse_job(job_text(spec, k=k, alignment=alignment)))
    assert res.verified
    return res.facts


def test_cohort_matches_table_i():
    con = duckdb.connect()
    data = generate(TABLE_I["D50_pop"], n_patients=3000, seed=1)
    DuckDBBackend(con).write_table("e", data["events"])
    codes, ages, n_codes, lo, hi = con.execute("""
        SELECT avg(nc), avg(na), (SELECT count(DISTINCT code) FROM e), (SELECT min(age) FROM e), (SELECT max(age) FROM e)
        FROM (SELECT id, count(DISTINCT code) AS nc, count(DISTINCT age) AS na FROM e GROUP BY id)""").fetchone()
    assert codes == pytest.approx(5.88, abs=0.1) and ages == pytest.approx(3.10, abs=0.1)
    assert n_codes == 50 and (lo, hi) == (0, 101)


@pytest.mark.slow
def test_appendix_a_trends_on_synthetic_cohorts():
    """ILM/ALM rise with k; A-GS loses less than Baseline; 4-code cohorts lose less. (On these
    synthetic cohorts Baseline is worse by ~10% at k = 2, not the paper's "far"; docs/longitudinal.md.)"""
    d50 = {k: _cohort(duckdb.connect(), "D50_pop", 600, k) for k in (2, 5)}
    d4 = {k: _cohort(duckdb.connect(), "D4_pop", 600, k) for k in (2, 5)}
    base = _cohort(duckdb.connect(), "D50_pop", 600, 2, "baseline")
    for f in (d50, d4):
        assert f[5]["ilm_alg"] > f[2]["ilm_alg"] and f[5]["alm_alg"] > f[2]["alm_alg"]
    assert base["ilm_alg"] + base["alm_alg"] > d50[2]["ilm_alg"] + d50[2]["alm_alg"]
    assert base["ilm_def8"] + base["alm_def8"] > d50[2]["ilm_def8"] + d50[2]["alm_def8"]
    for k in (2, 5):
        assert d4[k]["ilm_alg"] + d4[k]["alm_alg"] < d50[k]["ilm_alg"] + d50[k]["alm_alg"]
