"""Bad input for ArtUC: malformed parameters and constraint sets, constraints that conflict or
do not cover the data (Definition 8 of seed 000), codes missing from the hierarchy, m or k too
large, hostile identifiers. Every error names the problem; nothing is written; sources stay."""
from __future__ import annotations

import copy
import tomllib

import pytest

import anon_duck
from anon_duck.errors import InputError, JobError
from anon_duck.job import job_from_dict

from conftest import FIXTURES, JOBS, table_fingerprint, user_tables

TOY = tomllib.loads((JOBS / "artuc_toy.toml").read_text())
HOSTILE = 'x"; DROP TABLE t; --'


def toy_doc() -> dict:
    return copy.deepcopy(TOY)


def job_of(doc: dict):
    return job_from_dict(doc, base_dir=JOBS)


def run_fails(con, doc, exc, match):
    before = user_tables(con)
    with pytest.raises(exc, match=match):
        anon_duck.run(con, job_of(doc))
    assert user_tables(con) == before


@pytest.mark.parametrize("change, match", [
    (lambda d: d["method"].pop("m"), "missing key 'm'"),
    (lambda d: d["method"].update(k=1), r"method.k = 1: must be >= 2"),
    (lambda d: d["method"].update(delta=1.5), r"method.delta = 1.5: must be <= 1"),
    (lambda d: d["method"].update(epsilon_share=0.06), "give one of them"),
    (lambda d: d["method"].update(constraint=[]), "non-empty list"),
    (lambda d: d["method"].pop("constraint"), "needs a utility constraint set"),
    (lambda d: d["method"]["constraint"][0].update(agee="[19:50]"), r"constraint\[0\].agee: not a quasi-identifier"),
    (lambda d: d["method"]["constraint"][1].update(age="[50:19]"), r"constraint\[1\].age = '\[50:19\]': empty range"),
    (lambda d: d["method"]["constraint"][1].update(age="19-50"), r"constraint\[1\].age = '19-50'"),
    (lambda d: d["method"]["constraint"][2].update(code_group="494"), r"constraint\[2\]: give the code set as exactly one"),
    (lambda d: d["method"]["constraint"][3].update(codes=[]), r"constraint\[3\].codes"),
    (lambda d: d["method"]["constraint"][3].update(origin=3), r"constraint\[3\].origin = 3"),
    (lambda d: d["method"].update(constraint_grid={"code_level": "chapter"}), "give one of them"),
])
def test_malformed_params(con, change, match):
    doc = toy_doc()
    change(doc)
    with pytest.raises(JobError, match=match):
        anon_duck.run(con, job_of(doc))


def test_table4_as_printed_names_the_unknown_code(con):
    """Table 4 prints u2 = {053.20, 053.70} (A15): 053.70 is not a code of the hierarchy."""
    doc = toy_doc()
    doc["method"]["constraint"][1]["codes"] = ["053.20", "053.70"]
    run_fails(con, doc, InputError, r"'053.70' is not a leaf code of the code hierarchy")


def test_uncovered_code_without_hierarchy(con):
    doc = toy_doc()
    del doc["input"]["codes"]["hierarchy"]
    doc["method"]["constraint"][1]["codes"] = ["053.20", "053.70"]
    run_fails(con, doc, InputError, r"do not cover the data.*1 value\(s\) of codes lie in no constraint, e.g. 053.71")


def test_uncovered_demographics(con):
    doc = toy_doc()
    doc["method"]["constraint"][3]["age"] = "[52:60]"
    run_fails(con, doc, InputError, r"do not cover the data.*value\(s\) of age lie in no constraint, e.g. 51")


def test_overlapping_boxes_conflict(con):
    """Table 3's u = {[40:50], Europe, All, ...} overlaps box ([19:50], All, All) on every attribute."""
    doc = toy_doc()
    doc["method"]["constraint"].append({"age": "[40:50]", "origin": "Europe", "gender": "All",
                                        "codes": ["458.1", "458.21"]})
    run_fails(con, doc, InputError, r"conflict.*boxes \(\[19.0:50.0\], All, All\) and \(\[40.0:50.0\], Europe, All\)")


def test_overlapping_code_sets_conflict(con):
    doc = toy_doc()
    doc["method"]["constraint"].append({"age": "[19:50]", "origin": "All", "gender": "All", "codes": ["053.20"]})
    run_fails(con, doc, InputError, r"conflict.*code sets \(053.20\) and \(053.20\|053.71\)")


def test_unknown_hierarchy_node(con):
    doc = toy_doc()
    doc["method"]["constraint"][3]["origin"] = "Asia"
    run_fails(con, doc, InputError, r"'Asia' is not a node of the hierarchy of 'origin'")


def test_m_larger_than_every_record(con):
    doc = toy_doc()
    doc["method"]["m"] = 4
    run_fails(con, doc, InputError, r"method.m = 4 is larger than every record's code set \(the longest has 3")


def test_k_larger_than_the_table(con):
    doc = toy_doc()
    doc["method"]["k"] = 9
    run_fails(con, doc, InputError, r"method.k = 9 is larger than the number of records \(8\)")


def _toy_tables(con, person: str, codes: str, extra_person=(), extra_codes=(), rename=None) -> None:
    cols = {"age": "age", "origin": "origin", "gender": "gender", **(rename or {})}
    con.execute(f"""CREATE TABLE "{person.replace('"', '""')}" AS SELECT rec_id, name,
        age AS "{cols['age'].replace('"', '""')}", origin AS "{cols['origin'].replace('"', '""')}",
        gender AS "{cols['gender'].replace('"', '""')}"
        FROM read_csv('{FIXTURES / '000' / 'toy_demographics.csv'}')""")
    for row in extra_person:
        con.execute(f'INSERT INTO "{person.replace(chr(34), chr(34) * 2)}" VALUES (?, ?, ?, ?, ?)', list(row))
    con.execute(f"""CREATE TABLE "{codes.replace('"', '""')}" AS SELECT rec_id, code
        FROM read_csv('{FIXTURES / '000' / 'toy_codes.csv'}', types={{'code': 'VARCHAR'}})""")
    for row in extra_codes:
        con.execute(f'INSERT INTO "{codes.replace(chr(34), chr(34) * 2)}" VALUES (?, ?)', list(row))


def _table_doc(person: str, codes: str) -> dict:
    doc = toy_doc()
    doc["input"].pop("path")
    doc["input"]["table"] = person
    doc["input"]["codes"].pop("path")
    doc["input"]["codes"]["table"] = codes
    return doc


def test_code_missing_from_hierarchy(con):
    _toy_tables(con, "p", "c", extra_codes=[(3, "999.9")])
    run_fails(con, _table_doc("p", "c"), InputError, r"input.codes: 1 distinct value\(s\) are not leaves.*999.9")


def test_record_in_no_box_is_suppressed_or_refused(con):
    """Spec §4.8 / A16: (51, Portugal, Male, {493.2}) is covered per attribute but lies in no box."""
    _toy_tables(con, "p", "c", extra_person=[(8, "Extra", 51, "Portugal", "Male")], extra_codes=[(8, "493.2")])
    doc = _table_doc("p", "c")
    result = anon_duck.run(con, job_of(doc))
    assert result.verified and result.facts["suppressed_records_no_box"] == 1
    assert result.facts["published_records"] == 8
    doc["method"]["strict_boxes"] = True
    run_fails(con, doc, InputError, r"1 record\(s\) lie in no constraint box.*ids 8")


def test_hostile_identifiers_and_untouched_sources(con):
    rename = {"age": 'age"; DROP TABLE p; --', "origin": "or'igin", "gender": "gen der"}
    person, codes = HOSTILE, HOSTILE + "codes"
    _toy_tables(con, person, codes, rename=rename)
    before = (table_fingerprint(con, person), table_fingerprint(con, codes))
    doc = _table_doc(person, codes)
    for q in doc["input"]["qi"]:
        q["column"] = rename[q["column"]]
    for u in doc["method"]["constraint"]:
        for old, new in rename.items():
            u[new] = u.pop(old)
    result = anon_duck.run(con, job_of(doc))
    assert result.verified
    assert (table_fingerprint(con, person), table_fingerprint(con, codes)) == before
    cols = [r[0] for r in con.execute("DESCRIBE artuc_toy_release").fetchall()]
    assert rename["age"] in cols and rename["age"] + "__lo" in cols and "or'igin" in cols
    rep = anon_duck.report(con, job_of(doc))
    assert abs(rep["ncp"] - 205 / 384) < 1e-12 and abs(rep["ul"] - 101 / 280) < 1e-12


def test_code_groups_give_the_same_release_as_explicit_sets(con):
    """Code sets as ICD-9 nodes (3-digit groups of Figure 6) instead of explicit lists."""
    doc = toy_doc()
    for u, group in zip(doc["method"]["constraint"], ["458", "053", "494", "493"]):
        del u["codes"]
        u["code_group"] = group
    result = anon_duck.run(con, job_of(doc))
    assert result.verified and result.facts["suppressed_codes"] == 1
    assert abs(result.facts["ul"] - 101 / 280) < 1e-12


def test_code_group_spanning_two_sets_conflicts(con):
    doc = toy_doc()
    doc["method"]["constraint"][0]["codes"] = ["458.1"]
    doc["method"]["constraint"].append({"age": "[19:50]", "origin": "All", "gender": "All", "code_group": "458"})
    run_fails(con, doc, InputError, r"conflict.*code sets \(458.1\) and \(458.1\|458.21\)")


def test_constraint_grid_on_the_toy(con):
    """Table 6 shape on the toy: Age bands of 32 years from 19 ([19:50], [51:82]), Origin and
    Gender unconstrained, code sets = 3-digit ICD-9 nodes (Figure 6): same blocks as Table 4."""
    doc = toy_doc()
    del doc["method"]["constraint"]
    doc["method"]["constraint_grid"] = {"age": {"lo": 19, "width": 32}, "code_level": "category"}
    result = anon_duck.run(con, job_of(doc))
    assert result.verified and result.facts["suppressed_codes"] >= 1
    ages = {r[0] for r in con.execute("SELECT age FROM artuc_toy_release").fetchall()}
    assert all(a == "51" or a.startswith("[") and int(a[1:-1].split("-")[1]) <= 50 for a in ages)
    doc["method"]["constraint_grid"]["age"] = {"lo": 20, "width": 32}
    run_fails(con, doc, InputError, r"1 value\(s\) of age lie in no constraint, e.g. 19")
