"""Bad input for method lkc: every problem is a clear error naming the key, column or value;
source tables are never modified and a failed run publishes nothing."""
from __future__ import annotations

import dataclasses
import re

import pytest

import anon_duck
from anon_duck.errors import InfeasibleError, InputError, JobError
from anon_duck.job import Source
from anon_duck.methods.lkc import METHOD

from conftest import FIXTURES, table_fingerprint, user_tables

TOY = "lkc_toy.toml"


def from_table(job, table: str):
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, source=Source(table=table)))


def load_table1(con, name: str = "patients") -> None:
    con.execute(f"""CREATE TABLE "{name}" AS SELECT * FROM read_csv('{FIXTURES / "003" / "table1.csv"}')""")


@pytest.mark.parametrize("params,message", [
    (dict(C=0), "method.C = 0.0: the confidence threshold must satisfy 0 < C <= 1"),
    (dict(C=1.5), "method.C = 1.5: the confidence threshold must satisfy 0 < C <= 1"),
    (dict(L=0), "method.L = 0: must be >= 1"),
    (dict(K=0), "method.K = 0: must be >= 1"),
    (dict(K="two"), "method.K = 'two': expected int"),
    (dict(score="gain"), "method.score = 'gain': must be one of infogain, discernibility"),
    (dict(sensitive_values="Transgender"), "method.sensitive_values = 'Transgender': expected list"),
    (dict(sensitive_values=[]), "method.sensitive_values = []: expected a non-empty list of strings"),
    (dict(sensitive_values=["A", "A"]), "a value is listed twice"),
    (dict(root_interval={"Job": [1, 2]}), "method.root_interval.Job: 'Job' is not a numeric QID without a hierarchy"),
    (dict(max_grouping_sets=0), "method.max_grouping_sets = 0: must be >= 1"),
    (dict(dc_score="after"), "method.dc_score = 'after': must be one of delta, paper_after"),
    (dict(dc_score="paper_after"), "method.dc_score = 'paper_after' chooses the discernibility score; it needs "
                                   "method.score = 'discernibility'"),
    (dict(numeric_split="valid"), "method.numeric_split = 'valid': must be one of infogain, best_valid"),
    (dict(numeric_split="best_valid"), "method.numeric_split = 'best_valid' applies to numeric QIDs without a "
                                       "hierarchy (intervals grown at run time), and this job has none"),
    (dict(Kay=3), "unknown key 'Kay' in [method]"),
])
def test_malformed_params(job_file, params, message):
    with pytest.raises(JobError, match=re.escape(message)):
        METHOD.check_params(job_file(TOY).with_params(**params))


def test_roles_the_method_needs(job_file):
    job = job_file(TOY)
    no_class = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, class_=None))
    with pytest.raises(JobError, match=re.escape("method.score = 'infogain' (Case 1, classification) needs input.class")):
        METHOD.check_params(no_class)
    METHOD.check_params(no_class.with_params(score="discernibility"))      # Case 2 needs no class
    no_sens = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, sensitive=None))
    with pytest.raises(JobError, match="name the sensitive column in input.sensitive"):
        METHOD.check_params(no_sens)
    grown = dataclasses.replace(no_class, dataset=dataclasses.replace(no_class.dataset, qis=tuple(
        dataclasses.replace(q, hierarchy=None) for q in no_class.dataset.qis)))
    with pytest.raises(JobError, match=re.escape("input.qi[0] ('Job'): a categorical QID needs a taxonomy")):
        METHOD.check_params(grown.with_params(score="discernibility"))


def test_unknown_column(con, job_file):
    job = job_file(TOY)
    qis = (dataclasses.replace(job.dataset.qis[0], column="Jobb"),) + job.dataset.qis[1:]
    with pytest.raises(InputError, match="'Jobb': no such column"):
        anon_duck.run(con, dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, qis=qis)))


def test_null_and_uncovered_values_name_the_column(con, job_file):
    load_table1(con)
    con.execute("""UPDATE patients SET "Sex" = NULL WHERE "ID" = 4""")
    with pytest.raises(InputError, match="column 'Sex' has 1 NULL \\(rows"):
        anon_duck.run(con, from_table(job_file(TOY), "patients"))
    con.execute("""UPDATE patients SET "Sex" = 'M', "Job" = 'Astronaut' WHERE "ID" = 4""")
    with pytest.raises(InputError, match="'Astronaut'"):
        anon_duck.run(con, from_table(job_file(TOY), "patients"))


def test_sensitive_value_that_does_not_occur(con, job_file):
    with pytest.raises(InputError, match="method.sensitive_values: 'Transgendr' does not occur in column 'Surgery'"):
        anon_duck.run(con, job_file(TOY).with_params(sensitive_values=["Transgendr"]))


def test_root_interval_must_cover_the_values(con, job_file):
    job = job_file(TOY)
    qis = tuple(dataclasses.replace(q, hierarchy=None) if q.column == "Age" else q for q in job.dataset.qis)
    job = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, qis=qis))
    with pytest.raises(InputError, match=re.escape("method.root_interval.Age = [30, 99): column 'Age' has values 24..63")):
        anon_duck.run(con, job.with_params(root_interval={"Age": [30, 99]}))


def test_failed_run_publishes_nothing_and_keeps_the_source(con, job_file):
    load_table1(con)
    job = from_table(job_file(TOY), "patients")
    before = table_fingerprint(con, "patients")
    anon_duck.run(con, job)                                              # a good release first
    good = con.execute("SELECT count(*) FROM lkc_toy_release").fetchone()
    with pytest.raises(InfeasibleError):
        anon_duck.run(con, job.with_params(K=12))
    assert con.execute("SELECT count(*) FROM lkc_toy_release").fetchone() == good   # old release intact
    assert table_fingerprint(con, "patients") == before
    assert user_tables(con) == {"patients", "lkc_toy", "lkc_toy_release", "lkc_toy_cut", "lkc_toy_trace",
                                "lkc_toy_qi_retention", "lkc_toy_meta"}


def test_hostile_identifiers(con, job_file):
    bad = 'x"; DROP TABLE patients; --'
    con.execute(f"""CREATE TABLE "{bad.replace('"', '""')}" AS SELECT "ID" AS "{bad.replace('"', '""')}",
                    "Job" AS "j'ob", "Sex" AS "se""x", "Age" AS "a ge", "Transfuse" AS "class;", "Surgery" AS "s--"
                    FROM read_csv('{FIXTURES / "003" / "table1.csv"}')""")
    load_table1(con)
    job = job_file(TOY)
    names = {"Job": "j'ob", "Sex": 'se"x', "Age": "a ge"}
    ds = dataclasses.replace(job.dataset, source=Source(table=bad), id=bad, class_="class;", sensitive="s--",
                             qis=tuple(dataclasses.replace(q, column=names[q.column]) for q in job.dataset.qis))
    job = dataclasses.replace(job, dataset=ds)
    res = anon_duck.run(con, job)
    assert res.verified
    cols = [r[0] for r in con.execute("DESCRIBE lkc_toy_release").fetchall()]
    assert sorted(cols) == sorted(["j'ob", 'se"x', "a ge", "s--", "class;"])
    assert "patients" in user_tables(con)
    assert con.execute('SELECT count(*) FROM lkc_toy_release').fetchone() == (11,)
