"""Job files: every malformed file gets a JobError naming the key at fault."""
from __future__ import annotations

import duckdb
import pytest

from anon_duck.errors import JobError
from anon_duck.job import parse_job

from conftest import JOBS

BASE = """
[input]
table = "patients"
id = "pid"
sensitive = "disease"

[[input.qi]]
column = "age"
kind = "numeric"
hierarchy = "age"

[hierarchy.age]
type = "interval"
width = 5

[method]
name = "fulldomain"
k = 2

[release]
name = "r1"
"""


def test_parses_roles_and_defaults():
    job = parse_job(BASE)
    assert job.dataset.source.table == "patients"
    assert job.dataset.qis[0].column == "age" and job.dataset.qis[0].kind == "numeric"
    assert job.hierarchies["age"].width == 5.0
    assert job.method == "fulldomain" and job.params == {"k": 2}
    assert job.release.seed == 0


@pytest.mark.parametrize("edit, message", [
    (lambda s: s + "\n[bogus]\nx = 1\n", "unknown key 'bogus'"),
    (lambda s: s.replace('table = "patients"', 'table = "patients"\npath = "x.csv"'), "exactly one of table"),
    (lambda s: s.replace('kind = "numeric"', 'kind = "float"'), "input.qi[0].kind"),
    (lambda s: s.replace('hierarchy = "age"\n', 'hierarchy = "agex"\n'), "no [hierarchy.agex]"),
    (lambda s: s.replace('width = 5', 'width = -1'), "hierarchy.age.width"),
    (lambda s: s.replace('name = "r1"', 'name = "r1; DROP TABLE x"'), "release.name"),
    (lambda s: s.replace('[method]\nname = "fulldomain"', '[method]'), "missing key 'name'"),
    (lambda s: s.replace('sensitive = "disease"', 'sensitive = "age"'), "input.sensitive = 'age' is also input.qi[0]"),
    (lambda s: s.replace('sensitive = "disease"', 'sensitive = "pid"'), "input.sensitive = 'pid' is also input.id"),
    (lambda s: s.replace('id = "pid"', 'id = "pid"\nkeep = ["pid"]'), "input.keep[0] = 'pid' is also input.id"),
    (lambda s: s.replace('id = "pid"', 'id = "pid"\ndrop = ["name"]\nkeep = ["name"]'),
     "input.keep[0] = 'name' is also input.drop[0]"),
    (lambda s: s.replace('id = "pid"', 'id = "pid"\nkeep = ["age"]'), "input.keep[0] = 'age' is also input.qi[0]"),
    (lambda s: s.replace('id = "pid"', 'id = "age"'), "input.qi[0].column = 'age' is also input.id"),
    (lambda s: s.replace('id = "pid"', 'id = "pid"\nclass = "disease"'), "input.class = 'disease' is also input.sensitive"),
    (lambda s: s.replace('[[input.qi]]', '[input.codes]\ncolumn = "pid"\n[[input.qi]]'),
     "input.codes.column = 'pid' is also input.id"),
    (lambda s: s.replace('[release]', '[settings]\nmemory_limit = "lots"\n[release]'), "settings.memory_limit"),
    (lambda s: s.replace('[release]', '[settings]\nthreads = 0\n[release]'), "settings.threads"),
    (lambda s: s.replace('[release]', '[settings]\nthreads = 1099511627776\n[release]'), "from 1 to 4096"),
    (lambda s: s + "\nseed = -3\n", "release.seed"),
    (lambda s: s.replace('type = "interval"', 'type = "magic"'), "hierarchy.age.type"),
    (lambda s: s.replace("[[input.qi]]", "[[input.qi]]\nweight = 2"), "input.qi[0].weight"),
    (lambda s: s.replace("[[input.qi]]", "[[input.qi]]\nweight = 0.5") + '[[input.qi]]\ncolumn = "sex"\n',
     "input.qi[1].weight: give a weight to every quasi-identifier or to none"),
    (lambda s: s.replace('table = "patients"', 'path = "data.xlsx"'), "must be a .csv"),
    (lambda s: s.replace('type = "interval"\nwidth = 5', 'type = "arx"\ntable = "h"'), "type 'arx' reads an ARX file"),
    (lambda s: s.replace('type = "interval"\nwidth = 5', 'type = "edges"'), "type 'edges' needs exactly one of"),
])
def test_bad_job_files_name_the_key(edit, message):
    with pytest.raises(JobError, match=re_escape(message)):
        parse_job(edit(BASE))


def test_malformed_toml():
    with pytest.raises(JobError, match="malformed TOML"):
        parse_job("[input\ntable = 1")


def test_list_column_of_codes_needs_a_person_table():
    with pytest.raises(JobError, match=re_escape("input.codes.column names a LIST column of the person table")):
        parse_job(BASE.replace('table = "patients"\nid = "pid"\nsensitive = "disease"\n', '[input.codes]\ncolumn = "dx"\n')
                  .replace('[[input.qi]]\ncolumn = "age"\nkind = "numeric"\nhierarchy = "age"\n', ''))


def test_codes_only_job_has_no_person_table():
    job = parse_job("""
[input]
[input.codes]
path = "t.parquet"
id = "tid"
code = "item"
[method]
name = "disassociation"
[release]
name = "r"
""")
    assert job.dataset.source is None and job.dataset.id == "id"


def test_codes_only_job_rejects_qis():
    with pytest.raises(JobError, match="input.qi needs a person table"):
        parse_job("""
[input]
[[input.qi]]
column = "age"
[input.codes]
path = "t.parquet"
id = "tid"
code = "item"
[method]
name = "x"
[release]
name = "r"
""")


def re_escape(s: str) -> str:
    import re
    return re.escape(s)


def test_input_tables_named_schema_dot_table_are_read_in_place(tmp_path):
    """``table = "cdm.patients"`` (and under [input.events], and an edges hierarchy's table) is
    table ``patients`` of schema ``cdm``: the release is the one the files give, byte for byte."""
    import anon_duck
    from schema_inputs import exported, file_job, tables_in_schema

    con = duckdb.connect()
    job = tables_in_schema(con, "cdm")
    assert job.dataset.source.relation == ("cdm", "patients")
    assert anon_duck.run(con, job).verified
    files = duckdb.connect()
    anon_duck.run(files, file_job())
    mine = exported(con, job, tmp_path / "tables")
    assert mine and mine == exported(files, file_job(), tmp_path / "files")
    n_events = len((JOBS / "../004/toy_events.csv").read_text().splitlines()) - 1
    assert con.execute("SELECT count(*) FROM cdm.events").fetchone() == (n_events,)   # read, not changed


@pytest.mark.parametrize("name", ["cdm.", ".person", "a.b.c.d", "cdm..person"])
def test_a_table_name_with_an_empty_or_fourth_part_is_refused(name):
    text = (JOBS / "toy_fulldomain.toml").read_text().replace('path = "../toy/patients.csv"', f'table = "{name}"')
    with pytest.raises(JobError, match=r"input.table = .*schema.table or catalog.schema.table"):
        parse_job(text, base_dir=JOBS)


@pytest.mark.parametrize("schema, expected", [("deid", "deid"), ("main", None)])
def test_release_schema_is_read(schema, expected):
    text = (JOBS / "toy_fulldomain.toml").read_text().replace('[release]\n', f'[release]\nschema = "{schema}"\n')
    job = parse_job(text, base_dir=JOBS)
    assert job.release.schema == expected
    assert job.release.where("toy_k2_meta") == (expected or "main", "toy_k2_meta")


@pytest.mark.parametrize("schema", ["de.id", "", "x y", 3])
def test_a_release_schema_that_is_not_one_plain_name_is_refused(schema):
    value = f'"{schema}"' if isinstance(schema, str) else str(schema)
    text = (JOBS / "toy_fulldomain.toml").read_text().replace('[release]\n', f'[release]\nschema = {value}\n')
    with pytest.raises(JobError, match=r"release.schema"):
        parse_job(text, base_dir=JOBS)
