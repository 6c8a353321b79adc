"""The ArtUC bench data generators (benchmarks.generators) and the jobs of the
``artuc_ehrd`` / ``artuc_informs_like`` cases, at small sizes."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import duckdb
import numpy as np
import pytest

import anon_duck
from benchmarks import artuc as bench_artuc
from benchmarks.generators import ehrd_like, informs_like
from anon_duck.job import Settings
from anon_duck.sqlrender import render

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _rows(path):
    return duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchnumpy()


def test_ehrd_like_shape_and_seed(tmp_path):
    """Table 5 shape: seeded, real ICD-9 leaves, mean ~16.2 and max 185 codes per record."""
    data = ehrd_like.generate(tmp_path / "a", n=3000, seed=5)
    codes = _rows(data.codes)
    pid, per = np.unique(codes["pid"], return_counts=True)
    assert pid.size == 3000 and 15.0 < per.mean() < 17.5 and per.max() == 185
    assert np.unique(codes["code"].astype(str)).size <= 13_963
    assert len({(p, c) for p, c in zip(codes["pid"], codes["code"])}) == codes["pid"].size   # distinct per record
    persons = _rows(data.persons)
    assert persons["pid"].size == 3000 and set(persons["gender"]) == {"M", "F"}
    assert 0 <= persons["age"].min() and persons["age"].max() <= 110
    again = ehrd_like.generate(tmp_path / "b", n=3000, seed=5)
    assert np.array_equal(_rows(again.codes)["code"], codes["code"])


def test_informs_like_is_calibrated_to_the_fixture(tmp_path):
    """Marginals, code-set sizes and code frequencies follow fixtures/informs."""
    data = informs_like.generate(tmp_path / "a", n=20_000, seed=3)
    real_p = _rows(FIXTURES / "informs" / "demographics.parquet")
    real_c = _rows(FIXTURES / "informs" / "diagnoses.parquet")
    persons = _rows(data.persons)
    codes = _rows(data.codes)
    assert persons["pid"].size == 20_000 and set(persons) == set(real_p)
    for column in ("sex", "racex", "dobyy"):
        assert abs(persons[column].mean() - real_p[column].mean()) < 0.02 * abs(real_p[column].mean())
    assert set(codes["code"].astype(str)) <= set(real_c["code"].astype(str))
    assert len({(p, c) for p, c in zip(codes["pid"], codes["code"])}) == codes["pid"].size
    per_real = real_c["pid"].size / real_p["pid"].size
    assert abs(codes["pid"].size / 20_000 - per_real) < 0.05 * per_real
    labels, freq = np.unique(real_c["code"].astype(str), return_counts=True)
    top = labels[np.argmax(freq)]                          # the most frequent code keeps its share
    share = (codes["code"].astype(str) == top).mean()
    assert abs(share - freq.max() / freq.sum()) < 0.2 * freq.max() / freq.sum()
    again = informs_like.generate(tmp_path / "b", n=20_000, seed=3)
    assert np.array_equal(_rows(again.codes)["code"], codes["code"])


@pytest.mark.parametrize("make", [lambda: bench_artuc.ehrd_job(1000, merge_candidates=1),
                                  lambda: bench_artuc.informs_like_job(1500, delta=0.5, merge_candidates=1)])
def test_bench_jobs_run_and_verify(tmp_path, monkeypatch, make):
    monkeypatch.setattr(bench_artuc, "DATA", tmp_path)
    result = anon_duck.run(duckdb.connect(), make())
    assert result.verified and result.facts["published_records"] > 0


def test_two_threads_make_the_same_release(tmp_path, monkeypatch):
    """GenDiags of Step 20's partners (and of the initial and final clusters) run on DuckDB's
    ``threads`` threads; the release is the one a single thread makes, table by table."""
    monkeypatch.setattr(bench_artuc, "DATA", tmp_path)
    job = bench_artuc.informs_like_job(1500, delta=0.5, merge_candidates=0)
    releases = []
    for threads in (1, 2):
        con = duckdb.connect()
        result = anon_duck.run(con, dataclasses.replace(job, settings=Settings(None, threads)))
        assert result.verified and result.facts["merges"] > 0
        releases.append({t: con.execute(render("util/fingerprint.sql.j2", relation=(t,))).fetchone()
                         for t in result.tables})
    assert releases[0] == releases[1]
