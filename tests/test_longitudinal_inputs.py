"""Seed 004 method: bad input gets a clear error naming the problem, sources stay unchanged,
and a failed run publishes nothing."""
from __future__ import annotations

import dataclasses

import pytest

from anon_duck import api
from anon_duck.errors import InputError, JobError
from anon_duck.job import parse_job
from tests.conftest import FIXTURES, table_fingerprint, user_tables

HOSTILE = 'x"; DROP TABLE t; --'


def _job(con, *, events_sql: str | None = None, patients_sql: str | None = None, method: str = "k = 2",
         extra_input: str = "", id_col: str = "id", code_col: str = "code") -> object:
    """The toy job over user tables (so tests can break the data)."""
    con.execute(f"CREATE OR REPLACE TABLE pat AS {patients_sql or 'SELECT * FROM read_csv($p, header=true)'}",
                {"p": str(FIXTURES / "004" / "toy_patients.csv")} if patients_sql is None else None)
    con.execute(f"CREATE OR REPLACE TABLE ev AS {events_sql or 'SELECT * FROM read_csv($p, header=true, all_varchar=true)'}",
                {"p": str(FIXTURES / "004" / "toy_events.csv")} if events_sql is None else None)
    text = f"""
[input]
table = "pat"
id = {id_col!r}
keep = ["dna"]
{extra_input}
[input.events]
table = "ev"
id = {id_col!r}
position = "position"
code = {code_col!r}
age = "age"
code_hierarchy = "icd"
age_hierarchy = "age"
[hierarchy.icd]
type = "edges"
path = "{FIXTURES / '004' / 'icd_hypertension.csv'}"
[hierarchy.age]
type = "interval"
width = 2
dyadic = true
[method]
name = "longitudinal"
{method}
[release]
name = "r"
"""
    return parse_job(text)


def _fails(con, job, err, *words):
    before = {t: table_fingerprint(con, t) for t in user_tables(con)}
    with pytest.raises(err) as info:
        api.run(con, job)
    msg = str(info.value)
    for w in words:
        assert w in msg, msg
    assert {t: table_fingerprint(con, t) for t in user_tables(con)} == before   # no output, sources unchanged
    return msg


def test_good_run_leaves_sources_unchanged(con):
    job = _job(con)
    before = {t: table_fingerprint(con, t) for t in ("pat", "ev")}
    assert api.run(con, job).verified
    assert {t: table_fingerprint(con, t) for t in ("pat", "ev")} == before
    assert {"r_patients", "r_events", "r_meta"} <= user_tables(con)


@pytest.mark.parametrize("method, words", [
    ("k = 1", ["method.k", ">= 2"]),
    ("k = 'two'", ["method.k", "int"]),
    ("k = 2\nalignment = 'nw'", ["method.alignment", "ags"]),
    ("k = 2\nw_icd = 1.5", ["method.w_icd", "<= 1"]),
    ("k = 2\nw_icd = 0.3\nw_age = 0.6", ["method.w_age", "must be 1"]),
    ("k = 2\nw_icd = 0.123456789", ["method.w_icd", "fraction"]),
    ("k = 2\nlm_convention = 'c2'", ["method.lm_convention"]),
    ("k = 2\nfoo = 1", ["foo", "allowed"]),
])
def test_malformed_params(con, method, words):
    _fails(con, _job(con, method=method), JobError, *words)


def test_k_larger_than_the_table(con):
    _fails(con, _job(con, method="k = 7"), InputError, "method.k = 7", "6")


def test_unknown_column(con):
    _fails(con, _job(con, code_col="icd"), InputError, "input.events.code", "'icd'")


def test_null_in_events(con):
    job = _job(con, events_sql="SELECT id, position, CASE WHEN id = '3' THEN NULL ELSE code END AS code, age "
                                "FROM read_csv('" + str(FIXTURES / "004" / "toy_events.csv") + "', all_varchar=true)")
    _fails(con, job, InputError, "NULL", "code")


def test_code_missing_from_hierarchy(con):
    job = _job(con, events_sql="SELECT id, position, CASE WHEN id = '3' THEN '402.0' ELSE code END AS code, age "
                                "FROM read_csv('" + str(FIXTURES / "004" / "toy_events.csv") + "', all_varchar=true)")
    _fails(con, job, InputError, "input.events code", "402.0")


def test_decreasing_age_and_duplicate_position(con):
    src = "read_csv('" + str(FIXTURES / "004" / "toy_events.csv") + "', all_varchar=true)"
    job = _job(con, events_sql=f"SELECT id, position, code, CASE WHEN id = '1' AND position = '3' THEN '33' "
                               f"WHEN id = '1' AND position = '1' THEN '35' ELSE age END AS age FROM {src}")
    _fails(con, job, InputError, "decreases", "id 1")
    job = _job(con, events_sql=f"SELECT id, CASE WHEN id = '2' THEN '1' ELSE position END AS position, code, age "
                               f"FROM {src}")
    _fails(con, job, InputError, "same position", "id 2")


def test_needs_events_hierarchies_and_no_qis(con):
    job = _job(con)
    ev = dataclasses.replace(job.dataset.events, age_hierarchy=None)
    with pytest.raises(JobError, match="age_hierarchy"):
        api.run(con, dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, events=ev)))
    with pytest.raises(JobError, match="needs longitudinal events"):
        api.run(con, dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, events=None)))
    src = str(FIXTURES / "004" / "toy_patients.csv")
    job_qi = _job(con, patients_sql=f"SELECT *, 'f' AS sex FROM read_csv('{src}', header=true)",
                  extra_input='[[input.qi]]\ncolumn = "sex"\n')
    with pytest.raises(JobError, match="input.qi"):
        api.run(con, job_qi)


def test_hostile_identifiers(con):
    """A person id and a payload column named like an injection go through every template."""
    src = str(FIXTURES / "004")
    job = _job(con, id_col=HOSTILE,
               patients_sql=f"SELECT id AS \"{HOSTILE.replace(chr(34), chr(34) * 2)}\", dna FROM read_csv('{src}/toy_patients.csv')",
               events_sql=f"SELECT id AS \"{HOSTILE.replace(chr(34), chr(34) * 2)}\", position, code, age "
                          f"FROM read_csv('{src}/toy_events.csv', all_varchar=true)")
    res = api.run(con, job)
    assert res.verified
    assert sorted(r[0] for r in con.execute("SELECT trajectory FROM r_patients").fetchall())[0] == \
        "(401,38) (401.1,40)"
    assert HOSTILE not in [r[0] for r in con.execute("DESCRIBE r_patients").fetchall()]


def test_person_without_events_is_an_empty_trajectory(con):
    job = _job(con, patients_sql=f"SELECT * FROM read_csv('{FIXTURES / '004' / 'toy_patients.csv'}') "
                                 "UNION ALL SELECT 7, 'AA..A' UNION ALL SELECT 8, 'TT..T'")
    assert api.run(con, job).verified
    rows = con.execute("SELECT trajectory, n_pairs FROM r_patients WHERE dna IN ('AA..A', 'TT..T')").fetchall()
    assert rows == [("", 0), ("", 0)]
