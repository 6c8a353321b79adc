"""Issue #16 item 5: ARX's masking hierarchy and a date hierarchy, built in SQL from the column's
values, checked by the level validator and usable end to end."""
from __future__ import annotations

import duckdb
import pytest

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import InputError, JobError
from anon_duck.hierarchy import build
from anon_duck.job import HierarchySpec, load_job

from test_hierarchy_levels import _levels, assert_levels_partition


def _built(values: dict[str, list], *specs: HierarchySpec) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES " + ", ".join(
        "(" + ", ".join(repr(v) for v in row) + ")" for row in zip(*values.values())) + ") t(" + ", ".join(values) + ")")
    build(DuckDBBackend(con), list(specs), values_for={s.name: [("p", c)] for s, c in zip(specs, values)})
    return con


def test_mask_pads_then_masks_one_more_character_per_level():
    con = _built({"zip": ["13053", "13068", "2134"]}, HierarchySpec("zip", "mask", length=5))
    assert_levels_partition(con, "zip")
    levels = _levels(con, "zip")
    assert levels[1] == {"13053": "1305*", "13068": "1306*", "2134": "0213*"}
    assert set(levels[2].values()) == {"130**", "021**"} and set(levels[5].values()) == {"*****"}


def test_mask_without_length_aligns_on_the_longest_value_and_takes_other_characters():
    con = _built({"code": ["AB1", "AB22"]}, HierarchySpec("code", "mask", padding="_", mask="#"))
    assert _levels(con, "code")[1] == {"AB1": "_AB#", "AB22": "AB2#"}
    assert_levels_partition(con, "code")


def test_mask_aligned_left_pads_on_the_right_as_arx_default():
    """ARX's wizard aligns left (LEFT_TO_RIGHT): a short value is padded after its last character."""
    con = _built({"code": ["AB1", "AB22"]}, HierarchySpec("code", "mask", padding="_", align="left"))
    levels = _levels(con, "code")
    assert levels[1] == {"AB1": "AB1*", "AB22": "AB2*"} and levels[2] == {"AB1": "AB**", "AB22": "AB**"}
    assert_levels_partition(con, "code")


def test_a_value_longer_than_the_mask_length_is_named():
    with pytest.raises(InputError, match=r"hierarchy.zip.length = 4: column 'zip' holds 2 longer value\(s\) "
                                         r"\('13053', '14850'; the longest has 5 characters\)"):
        _built({"zip": ["13053", "2134", "14850"]}, HierarchySpec("zip", "mask", length=4))


def test_a_value_holding_the_mask_character_is_named():
    """'12*' would be both a leaf and the level-1 node of '123' (it used to fail as a node
    'being its own parent', naming neither the column nor the values)."""
    with pytest.raises(InputError, match=r"hierarchy.z: column 'z' holds 2 value\(s\) with the mask character "
                                         r"'\*' \('1\*\*', '12\*'\); set mask"):
        _built({"z": ["123", "12*", "1**"]}, HierarchySpec("z", "mask"))
    con = _built({"z": ["123", "12*", "1**"]}, HierarchySpec("z", "mask", mask="#"))
    assert _levels(con, "z")[1] == {"123": "12#", "12*": "12#", "1**": "1*#"}
    assert_levels_partition(con, "z")


def test_dates_generalize_to_month_year_decade():
    con = _built({"d": ["2019-03-04", "2021-11-30", "2021-11-02"]}, HierarchySpec("d", "date"))
    assert_levels_partition(con, "d")
    levels = _levels(con, "d")
    assert [levels[i]["2021-11-30"] for i in range(5)] == ["2021-11-30", "2021-11", "2021", "2020s", "*"]
    con2 = _built({"d": ["2019-03-04", "2021-11-30"]}, HierarchySpec("d", "date", units=("year",)))
    assert [_levels(con2, "d")[i]["2019-03-04"] for i in range(3)] == ["2019-03-04", "2019", "*"]


def test_timestamps_get_a_day_level():
    con = duckdb.connect()
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES (TIMESTAMP '2019-03-04 10:30:00'), "
                "(TIMESTAMP '2019-03-04 00:00:00'), (TIMESTAMP '2019-03-05 23:59:59')) t(seen)")
    build(DuckDBBackend(con), [HierarchySpec("seen", "date")], values_for={"seen": [("p", "seen")]})
    assert_levels_partition(con, "seen")
    levels = _levels(con, "seen")
    assert [levels[i]["2019-03-04 10:30:00"] for i in range(6)] == [
        "2019-03-04 10:30:00", "2019-03-04", "2019-03", "2019", "2010s", "*"]
    assert levels[1]["2019-03-04 00:00:00"] == "2019-03-04" and levels[1]["2019-03-05 23:59:59"] == "2019-03-05"


def test_values_that_are_not_dates_are_named():
    with pytest.raises(InputError, match=r"hierarchy.d: column 'd' holds 2 value\(s\) that are not dates "
                                         r"\('03/04/2019', 'soon'\); a date hierarchy needs a DATE"):
        _built({"d": ["2019-03-04", "03/04/2019", "soon"]}, HierarchySpec("d", "date"))


def test_a_date_hierarchy_for_a_qi_that_is_not_a_date_is_a_job_error(tmp_path):
    job = tmp_path / "job.toml"
    job.write_text('[input]\ntable = "p"\nid = "id"\n[[input.qi]]\ncolumn = "born"\nhierarchy = "h"\n'
                   '[hierarchy.h]\ntype = "date"\n[method]\nname = "fulldomain"\nk = 2\n[release]\nname = "r"\n')
    with pytest.raises(JobError, match=r"input.qi\[0\].hierarchy = 'h' is a date hierarchy: use it for a "
                                       r'quasi-identifier with kind = "date"'):
        load_job(job)


@pytest.mark.parametrize("spec, message", [
    ('type = "date"\nunits = ["year", "month"]', "units .*bottom up"),
    ('type = "date"\nunits = ["week"]', "units"),
    ('type = "mask"\nlength = 0', "length = 0"),
    ('type = "mask"\npadding = "00"', "padding = '00': must be one character"),
    ('type = "mask"\npadding = "*"', "padding = '\\*' is also the mask character"),
    ('type = "mask"\nalign = "centre"', "align = 'centre': must be one of right, left"),
    ('type = "date"\nalign = "left"', "align only applies to type 'mask'"),
    ('type = "edges"\npath = "x.csv"\nmask = "#"', "mask only applies to type 'mask'"),
])
def test_bad_builder_keys_are_job_errors(tmp_path, spec, message):
    job = tmp_path / "job.toml"
    job.write_text('[input]\ntable = "p"\nid = "id"\n[[input.qi]]\ncolumn = "zip"\nhierarchy = "h"\n'
                   f'[hierarchy.h]\n{spec}\n[method]\nname = "fulldomain"\nk = 2\n[release]\nname = "r"\n')
    with pytest.raises(JobError, match=message):
        load_job(job)


@pytest.mark.parametrize("born_type", ["DATE", "TIMESTAMP"])
def test_fulldomain_on_a_masked_zip_and_a_date_of_birth(tmp_path, born_type):
    con = duckdb.connect()
    con.execute(f"""CREATE TABLE people AS SELECT id, zip, CAST(born AS {born_type}) AS born, disease FROM (VALUES
        (1, '13053', DATE '1961-03-04', 'flu'), (2, '13068', DATE '1962-11-30', 'flu'),
        (3, '13053', DATE '1968-07-01', 'hiv'), (4, '13022', DATE '1975-01-09', 'flu'),
        (5, '13021', DATE '1977-05-05', 'cancer'), (6, '14850', DATE '1979-12-31', 'flu'),
        (7, '14853', DATE '1983-02-02', 'hiv'), (8, '14853', DATE '1988-08-08', 'flu')) t(id, zip, born, disease)""")
    job_file = tmp_path / "job.toml"
    job_file.write_text('[input]\ntable = "people"\nid = "id"\nsensitive = "disease"\n'
                        '[[input.qi]]\ncolumn = "zip"\nhierarchy = "zip"\n'
                        '[[input.qi]]\ncolumn = "born"\nkind = "date"\nhierarchy = "born"\n'
                        '[hierarchy.zip]\ntype = "mask"\n[hierarchy.born]\ntype = "date"\n'
                        '[method]\nname = "fulldomain"\nk = 2\n[release]\nname = "r"\nseed = 1\n')
    job = load_job(job_file)
    result = anon_duck.run(con, job)
    assert result.verified
    rows = con.execute("SELECT zip, born FROM r_release").fetchall()
    assert all(z.endswith("*") for z, _ in rows) and len(rows) == 8
    assert all(c.passed for c in anon_duck.verify(con, job))


@pytest.mark.parametrize("kind, hierarchy, values", [
    ("categorical", 'type = "mask"', ("13053", "13068", "14850", "14853")),
    ("numeric", 'type = "interval"\nwidth = 10\nlevels = 3', (31, 38, 52, 57)),
])
def test_two_columns_share_a_hierarchy_built_from_both(tmp_path, kind, hierarchy, values):
    """A hierarchy built from the data (mask, date, interval) holds the values of every column
    that uses it: home and work zip codes share one masking hierarchy, two ages one interval
    hierarchy, though some work values never occur at home."""
    a, b, c, d = values
    con = duckdb.connect()
    con.execute("CREATE TABLE people (id INTEGER, home " + ("VARCHAR" if kind == "categorical" else "INTEGER") +
                ", work " + ("VARCHAR" if kind == "categorical" else "INTEGER") + ")")
    con.executemany("INSERT INTO people VALUES (?, ?, ?)", [(1, a, c), (2, b, d), (3, a, d), (4, b, c)])
    job_file = tmp_path / "job.toml"
    job_file.write_text('[input]\ntable = "people"\nid = "id"\n'
                        f'[[input.qi]]\ncolumn = "home"\nkind = "{kind}"\nhierarchy = "shared"\n'
                        f'[[input.qi]]\ncolumn = "work"\nkind = "{kind}"\nhierarchy = "shared"\n'
                        f'[hierarchy.shared]\n{hierarchy}\n'
                        '[method]\nname = "fulldomain"\nk = 2\n[release]\nname = "r"\nseed = 1\n')
    job = load_job(job_file)
    result = anon_duck.run(con, job)
    assert result.verified
    assert con.execute("SELECT count(*) FROM r_release").fetchone() == (4,)
    assert all(c.passed for c in anon_duck.verify(con, job))
