"""The independent ArtUC verifier (anon_duck/verifiers/artuc.py) both ways: Figure 3 passes,
Figures 1b-1d of seed 000 fail exactly as spec rt_kkm §4.6 lists, and a published release
broken by hand is caught."""
from __future__ import annotations

import csv

import duckdb
import pytest

import anon_duck
from anon_duck.api import backend_for
from anon_duck.methods import get_method
from anon_duck.verifiers.artuc import verify_release

from conftest import FIXTURES


def load_figure(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, tuple[str, ...]]:
    """A figure CSV as the three release tables: classes are the distinct QI tuples, tokens the
    distinct token labels of a class."""
    with open(FIXTURES / "000" / name, newline="") as f:
        rows = list(csv.DictReader(f))
    classes: dict[tuple, int] = {}
    tokens: dict[tuple, int] = {}
    rel, tok, rtok = [], [], []
    for rec, r in enumerate(rows):
        key = (r["age_lo"], r["age_hi"], r["origin"], r["gender"])
        cls = classes.setdefault(key, len(classes))
        lo, hi = int(r["age_lo"]), int(r["age_hi"])
        rel.append((rec, cls, str(lo) if lo == hi else f"[{lo}:{hi}]", lo, hi, r["origin"], r["gender"]))
        for t in r["tokens"].split(";"):
            tid = tokens.get((cls, t))
            if tid is None:
                tid = tokens[(cls, t)] = len(tokens)
                tok.extend((cls, tid, c) for c in t.split("|"))
            rtok.append((rec, tid))
    con.execute("CREATE TABLE fig_release(record INT, class INT, age VARCHAR, age__lo DOUBLE, age__hi DOUBLE, "
                "origin VARCHAR, gender VARCHAR)")
    con.executemany("INSERT INTO fig_release VALUES (?, ?, ?, ?, ?, ?, ?)", rel)
    con.execute("CREATE TABLE fig_tokens(class INT, token INT, code VARCHAR)")
    con.executemany("INSERT INTO fig_tokens VALUES (?, ?, ?)", tok)
    con.execute("CREATE TABLE fig_record_tokens(record INT, token INT)")
    con.executemany("INSERT INTO fig_record_tokens VALUES (?, ?)", rtok)
    return {"release": ("fig_release",), "tokens": ("fig_tokens",), "record_tokens": ("fig_record_tokens",)}


def check(con, job, figure: str) -> dict:
    tables = load_figure(con, figure)
    params = get_method("artuc").check_params(job)
    res = verify_release(backend_for(con, job), job, tables, k=2, m=2, params=params)
    return {c.name: c for c in res}


@pytest.fixture
def toy(job_file):
    return job_file("artuc_toy.toml")


def test_figure3_passes_everything(con, toy):
    res = check(con, toy, "toy_expected_fig3.csv")
    assert all(c.passed for c in res.values()), res


def test_figure1b_fails_kkm_only(con, toy):
    res = check(con, toy, "toy_fig1b.csv")
    kkm = res["kkm_anonymity"]
    assert not kkm.passed and kkm.n_violations == 5
    got = sorted((v["tuple"], tuple(v["items"]), v["support"]) for v in kkm.violations)
    g1 = "053.20|053.71"
    assert got == sorted([
        ("[28:30] | Europe | Female", ("493.2",), 1), ("[28:30] | Europe | Female", ("493.2", "494.1"), 1),
        ("[28:30] | Europe | Female", (g1, "493.2"), 1),
        ("51 | Africa | Male", ("494.1",), 1), ("51 | Africa | Male", ("493.2", "494.1"), 1)])
    assert res["utility_constraints_demographics"].passed and res["utility_constraints_codes"].passed


def test_figure1c_fails_the_constraints(con, toy):
    res = check(con, toy, "toy_fig1c.csv")
    assert res["kkm_anonymity"].passed
    demo = res["utility_constraints_demographics"]
    assert demo.n_violations == 4 and sorted(v["record"] for v in demo.violations) == [0, 1, 2, 3]  # rec 0,1,4,5
    codes = res["utility_constraints_codes"]
    assert codes.n_violations == 1 and codes.violations[0]["codes"] == "493.2, 494.1"


def test_figure1d_fails_the_code_constraints(con, toy):
    res = check(con, toy, "toy_fig1d.csv")
    assert res["kkm_anonymity"].passed and res["utility_constraints_demographics"].passed
    assert res["utility_constraints_codes"].n_violations == 4     # one multi-block token per class


def test_published_release_rechecked_and_tampering_caught(con, toy):
    anon_duck.run(con, toy)
    assert all(c.passed for c in anon_duck.verify(con, toy))
    con.execute("UPDATE artuc_toy_release SET age__hi = 51, age = '[19:51]' WHERE age__lo = 19")
    res = {c.name: c for c in anon_duck.verify(con, toy)}
    assert res["utility_constraints_demographics"].n_violations == 4
    con.execute("DELETE FROM artuc_toy_release WHERE age__lo = 44 AND record = (SELECT min(record) FROM "
                "artuc_toy_release WHERE age__lo = 44)")
    res = {c.name: c for c in anon_duck.verify(con, toy)}
    assert not res["kkm_anonymity"].passed
    assert any(v["kind"] == "class" and v["class_size"] == 1 for v in res["kkm_anonymity"].violations)


def test_token_of_another_class_is_a_structure_violation(con, toy):
    anon_duck.run(con, toy)
    rec, cls = con.execute("SELECT record, class FROM artuc_toy_release ORDER BY record LIMIT 1").fetchone()
    other = con.execute("SELECT max(token) FROM artuc_toy_tokens WHERE class <> ?", [cls]).fetchone()[0]
    con.execute("INSERT INTO artuc_toy_record_tokens VALUES (?, ?)", [rec, other])
    res = {c.name: c for c in anon_duck.verify(con, toy)}
    assert not res["artuc_structure"].passed
