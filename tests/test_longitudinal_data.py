"""Seed 004 method on real and synthetic data: the release verifies, utility numbers are
pinned, and the Appendix A trends hold on Table-I-shaped cohorts (docs/longitudinal.md)."""
from __future__ import annotations

import duckdb
import pytest

from anon_duck import api
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import parse_job
from benchmarks.generators.cohort import D4_CODES, TABLE_I, generate, job_text

MIMIC = "longitudinal_mimic.toml"


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 5])
def test_mimic_demo_release_verifies(con, job_file, k):
    job = job_file(MIMIC).with_params(k=k).with_release(f"mimic_k{k}")
    res = api.run(con, job)
    assert res.verified and [c.name for c in res.checks] == ["longitudinal_columns", "longitudinal_consistency",
                                                            "k_anonymity", "min_count"]
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


def _table_i_stats(data, codes=None):
    """Table I's columns of a generated cohort (optionally restricted to ``codes``, the way
    D4^Pop is D50^Pop restricted to four codes): share of patients kept, mean distinct codes
    and ages per trajectory, mean length, distinct codes, age range, least code frequency."""
    con = duckdb.connect()
    DuckDBBackend(con).write_table("e", data["events"])
    where = "" if codes is None else "WHERE code IN (" + ", ".join(f"'{c}'" for c in codes) + ")"
    n = data["patients"]["id"].size
    return con.execute(f"""
        WITH r AS (SELECT * FROM e {where})
        SELECT count(*) / {n}, avg(nc), avg(na), avg(len), (SELECT count(DISTINCT code) FROM r),
               (SELECT min(age) FROM r), (SELECT max(age) FROM r),
               (SELECT min(f) FROM (SELECT count(DISTINCT id) / {n} AS f FROM r GROUP BY code))
        FROM (SELECT id, count(DISTINCT code) AS nc, count(DISTINCT age) AS na, count(*) AS len FROM r GROUP BY id)
        """).fetchone()


def test_cohort_matches_table_i():
    """Every cohort has Table I's distinct codes and ages per trajectory over its |ICD| codes
    and |Age| ages; D50^Pop's 50 codes each occur in >= 5% of the trajectories (Section V-A);
    restricted to the four D4 codes, D50^Pop keeps about D4^Pop's 2.78 distinct ages with
    about its 1.65 codes — which only recurring codes allow: trajectories are far longer
    than max(codes, ages)."""
    for name, spec in TABLE_I.items():
        kept, codes, ages, length, n_codes, lo, hi, _ = _table_i_stats(generate(spec, n_patients=3000, seed=1))
        assert kept == 1 and n_codes == spec.n_codes and (lo, hi) == (0, spec.n_ages - 1)
        assert codes == pytest.approx(spec.mean_codes, abs=0.1) and ages == pytest.approx(spec.mean_ages, abs=0.1)
    d50 = generate(TABLE_I["D50_pop"], n_patients=3000, seed=1)
    *_, length, _, _, _, least = _table_i_stats(d50)
    assert least >= 0.05 and length > 2 * 5.88
    kept, codes, ages, *_ = _table_i_stats(d50, D4_CODES)
    assert ages == pytest.approx(2.78, abs=0.1) and codes == pytest.approx(1.65, abs=0.15)
    assert 0.5 < kept < 0.8          # paper: 16,052 of 27,639 = 0.58


@pytest.mark.slow
def test_appendix_a_trends_on_synthetic_cohorts():
    """ILM/ALM rise with k; Baseline loses more than A-GS in total and at least 0.1 more ILM;
    4-code cohorts lose less. Not asserted because it does not hold on these cohorts:
    Baseline's ALM is not above A-GS's on D50 (docs/longitudinal.md, "Baseline vs A-GS")."""
    d50 = {k: _cohort(duckdb.connect(), "D50_pop", 600, k) for k in (2, 5)}
    d4 = {k: _cohort(duckdb.connect(), "D4_pop", 600, k) for k in (2, 5)}
    base = {k: _cohort(duckdb.connect(), "D50_pop", 600, k, "baseline") for k in (2, 5)}
    for f in (d50, d4, base):
        assert f[5]["ilm_alg"] > f[2]["ilm_alg"] and f[5]["alm_alg"] > f[2]["alm_alg"]
    for k in (2, 5):
        for norm in ("alg", "def8"):
            assert base[k][f"ilm_{norm}"] > d50[k][f"ilm_{norm}"] + 0.1
            assert base[k][f"ilm_{norm}"] + base[k][f"alm_{norm}"] > d50[k][f"ilm_{norm}"] + d50[k][f"alm_{norm}"]
        assert d4[k]["ilm_alg"] + d4[k]["alm_alg"] < d50[k]["ilm_alg"] + d50[k]["alm_alg"]
