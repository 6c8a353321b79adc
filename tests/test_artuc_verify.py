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


def kkm_oracle(release: list[tuple], tokens: list[tuple], rtok: list[tuple], k: int, m: int) -> list[tuple]:
    """Conditions 1-2 of Definition 1 written out in Python from the three tables: a class is a
    QI tuple (age, origin, gender), a token its sorted code set joined by '|'."""
    from itertools import combinations
    label = {}
    for _cls, tok, code in tokens:
        label.setdefault(tok, []).append(code)
    label = {t: "|".join(sorted(c)) for t, c in label.items()}
    tuple_of = {rec: (age, origin, gender) for rec, _cls, age, _lo, _hi, origin, gender in release}
    members: dict[tuple, list[int]] = {}
    for rec, key in tuple_of.items():
        members.setdefault(key, []).append(rec)
    held: dict[int, set[str]] = {rec: set() for rec in tuple_of}
    for rec, tok in rtok:
        if rec in held and tok in label:
            held[rec].add(label[tok])
    out = []
    for key, recs in members.items():
        text = " | ".join(v for v in key if v is not None)
        if len(recs) < k:
            out.append(("class", text, len(recs), None, None))
        support: dict[tuple, int] = {}
        for rec in recs:
            for size in range(1, m + 1):
                for items in combinations(sorted(held[rec]), size):
                    support[items] = support.get(items, 0) + 1
        out += [("itemset", text, len(recs), list(items), n) for items, n in support.items() if n < k]
    return out


def test_kkm_matches_the_oracle_on_random_releases(con, toy, monkeypatch):
    """The integer-keyed (k, k^m) query against the oracle on random releases with what the
    keys must get right: published classes sharing a QI tuple (A31), equal code sets in several
    classes and tuples, a token listed twice for a record, records with no token, violations of
    every kind and size."""
    import random

    import anon_duck.verifiers.artuc as verifier
    monkeypatch.setattr(verifier, "LIMIT", 100_000)
    params = get_method("artuc").check_params(toy)
    backend = backend_for(con, toy)
    con.execute("CREATE TABLE r_release(record INT, class INT, age VARCHAR, age__lo DOUBLE, age__hi DOUBLE, "
                "origin VARCHAR, gender VARCHAR)")
    con.execute("CREATE TABLE r_tokens(class INT, token INT, code VARCHAR)")
    con.execute("CREATE TABLE r_record_tokens(record INT, token INT)")
    tables = {"release": ("r_release",), "tokens": ("r_tokens",), "record_tokens": ("r_record_tokens",)}
    seen = set()
    for seed in range(40):
        rnd = random.Random(seed)
        k, m = rnd.randint(1, 4), rnd.randint(1, 3)
        n_classes = rnd.randint(1, 6)
        tuples = [(str(rnd.randint(20, 21)), rnd.choice(["Europe", "Africa"]), rnd.choice(["Male", "All"]))
                  for _ in range(n_classes)]
        release, tokens, rtok, next_tok = [], [], [], 0
        for cls in range(n_classes):
            alphabet = rnd.sample([f"c{i}" for i in range(8)], rnd.randint(1, 8))
            mine = []
            while alphabet:
                size = rnd.randint(1, min(3, len(alphabet)))
                codes, alphabet = alphabet[:size], alphabet[size:]
                tokens += [(cls, next_tok, c) for c in codes]
                mine.append(next_tok)
                next_tok += 1
            for _ in range(rnd.randint(1, 6)):
                rec = len(release)
                age, origin, gender = tuples[cls]
                release.append((rec, cls, age, int(age), int(age), origin, gender))
                holds = rnd.sample(mine, rnd.randint(0, len(mine)))
                rtok += [(rec, t) for t in holds + holds[:rnd.randint(0, 1)]]
        for name, rows in (("r_release", release), ("r_tokens", tokens), ("r_record_tokens", rtok)):
            con.execute(f"DELETE FROM {name}")
            if rows:
                con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        kkm = {c.name: c for c in verify_release(backend, toy, tables, k=k, m=m, params=params)}["kkm_anonymity"]
        want = kkm_oracle(release, tokens, rtok, k, m)
        got = [(v["kind"], v["tuple"], v["class_size"], v["items"], None if v["kind"] == "class" else v["support"])
               for v in kkm.violations]    # a column with NULLs arrives as float (NaN for NULL)
        assert kkm.n_violations == len(want) and sorted(got, key=repr) == sorted(want, key=repr), seed
        assert [g[:2] + (g[3],) for g in got] == sorted((g[:2] + (g[3],) for g in got),
                                                        key=lambda g: (g[0], g[1], g[2] or [])), seed
        seen |= {(v[0], len(v[3] or [])) for v in want}
    assert seen >= {("class", 0), ("itemset", 1), ("itemset", 2), ("itemset", 3)}
