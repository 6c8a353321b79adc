"""PAIS / LKC-privacy (seed 003) on the paper's toy: Table 1 + Figure 2.

Expected values come from the paper (Example 3) and from the spec digest
/work/shared/specs/lkc_privacy.md §4.5-4.9, whose traces two independent prototypes agree on.
The PAIS output is never compared with the paper's Table 2 (spec A7: Table 2 is an example
of a (2,2,50%)-private table, not PAIS's output).
"""
from __future__ import annotations

import csv
import dataclasses
import re
from fractions import Fraction

import duckdb
import pytest

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import InfeasibleError
from anon_duck.inputs import prepare
from anon_duck.methods.lkc import METHOD
from anon_duck.methods.lkc.infogain import best_threshold, entropy, info_gain
from anon_duck.methods.lkc.pais import PAISResult, pais
from anon_duck.methods.lkc.state import State
from anon_duck.verifiers import lkc_privacy

from conftest import FIXTURES

TOY = "lkc_toy.toml"


def run_pais(con: duckdb.DuckDBPyConnection, job) -> tuple[State, PAISResult]:
    """Lines 1-8 without publication, so tests can read every round's candidates."""
    backend = DuckDBBackend(con)
    params = METHOD.check_params(job)
    inputs = prepare(backend, job)
    state = State.build(backend, job, inputs, params)
    return state, pais(state, params, lambda *a: None)


def final_cuts(state: State, result: PAISResult, nonempty: bool = True) -> dict[str, set[str]]:
    return {t.column: {t.nodes[x].label for x in cut if not nonempty or t.size(x) > 0}
            for t, cut in zip(state.taxonomies, result.cuts)}


def expected_rows(name: str) -> list[tuple]:
    with open(FIXTURES / "003" / name, newline="") as f:
        return sorted((r["Job"], r["Sex"], r["Age"], r["Transfuse"], r["Surgery"]) for r in csv.DictReader(f))


def published(con, release: str) -> list[tuple]:
    return sorted(con.execute(f'SELECT "Job", "Sex", "Age", "Transfuse", "Surgery" FROM "{release}"').fetchall())


# ------------------------------------------------------------------------------------------
# Example 3 (Eq. 2-3): paper values (printed, 1e-3) and exact values (spec §4.5, 1e-6)
# ------------------------------------------------------------------------------------------
def test_example3_entropies_and_infogain():
    # classes (Y, N): ANY_Job 5Y 6N; Blue-collar {1,3,5,6,10,11} 5Y 1N; White-collar {2,4,7,8,9} 0Y 5N
    assert entropy([5, 6]) == pytest.approx(0.994030, abs=1e-6)
    assert entropy([5, 6]) == pytest.approx(0.994, abs=1e-3)
    assert entropy([5, 1]) == pytest.approx(0.650022, abs=1e-6)
    assert entropy([5, 1]) == pytest.approx(0.6499, abs=1e-3)
    assert entropy([0, 5]) == 0.0
    assert info_gain([[5, 1], [0, 5]]) == pytest.approx(0.639473, abs=1e-6)
    assert info_gain([[5, 1], [0, 5]]) == pytest.approx(0.6396, abs=1e-3)
    assert info_gain([[3, 0], [0, 0]]) == 0.0            # one non-empty child: a relabel, gain 0


# ------------------------------------------------------------------------------------------
# Algorithm 1, classification mode, L=2, K=2, C=0.5, S={Transgender} (spec §4.6)
# ------------------------------------------------------------------------------------------
# Expected: spec §4.6 table, (candidate, InfoGain, valid, min n, max conf); None = not given
TRACE_46 = [
    ("ANY_Job", [("ANY_Job", 0.639473, True, 5, 1 / 3), ("ANY_Sex", 0.003430, True, 4, 2 / 7),
                 ("[1-99)", 0.242697, True, 2, 2 / 9)]),
    ("[1-99)", [("ANY_Sex", 0.003430, True, 2, 0.5), ("Blue-collar", 0.109170, True, 2, 0.5),
                ("White-collar", 0.0, True, 5, 0.0), ("[1-99)", 0.242697, True, 2, 0.5)]),
    ("[1-60)", [("ANY_Sex", 0.003430, True, None, None), ("Blue-collar", 0.109170, True, None, None),
                ("White-collar", 0.0, True, None, None), ("[1-60)", 0.152007, True, 2, 0.5)]),
    ("Blue-collar", [("ANY_Sex", 0.003430, True, None, None), ("Blue-collar", 0.109170, True, None, None),
                     ("White-collar", 0.0, True, None, None)]),
    ("Non-Technical", [("ANY_Sex", 0.003430, True, None, None), ("Non-Technical", 0.311278, True, 2, 0.5),
                       ("Technical", 0.0, False, 1, None), ("White-collar", 0.0, True, None, None)]),
    ("ANY_Sex", [("ANY_Sex", 0.003430, True, None, None), ("White-collar", 0.0, True, None, None)]),
    ("White-collar", [("White-collar", 0.0, True, None, None)]),
    (None, [("Professional", 0.0, False, 1, None)]),
]


def test_pais_trace_matches_spec_4_6(con, job_file):
    state, result = run_pais(con, job_file(TOY))
    assert [s.value for s in result.trace] == [best for best, _ in TRACE_46 if best]
    assert len(result.rounds) == len(TRACE_46)
    for got, (_, want) in zip(result.rounds, TRACE_46):
        assert sorted(e.value for e in got) == sorted(w[0] for w in want)
        by = {e.value: e for e in got}
        for value, gain, valid, min_n, max_conf in want:
            e = by[value]
            assert e.info_gain == pytest.approx(gain, abs=1e-6), value
            assert e.valid is valid, value
            if min_n is not None:
                assert e.min_n == min_n, value
            if max_conf is not None:
                assert e.max_conf == pytest.approx(max_conf), value
    assert final_cuts(state, result, nonempty=False) == {
        "Job": {"Janitor", "Mover", "Technical", "Manager", "Professional"}, "Sex": {"M", "F"},
        "Age": {"[1-30)", "[30-60)", "[60-99)"}}


def test_toy_release_through_the_pipeline(con, job_file):
    job = job_file(TOY)
    res = anon_duck.run(con, job)
    assert res.verified and [c.name for c in res.checks] == ["lkc_privacy", "lkc_release_columns"]
    # Expected: spec §4.6 "Final released table" (fixtures/003/pais_L2_K2_C05_expected.csv)
    assert published(con, "lkc_toy_release") == expected_rows("pais_L2_K2_C05_expected.csv")
    assert published(con, "lkc_toy_release") != expected_rows("table2.csv")     # spec A7
    cols = [r[0] for r in con.execute("DESCRIBE lkc_toy_release").fetchall()]
    assert "ID" not in cols and sorted(cols) == ["Age", "Job", "Sex", "Surgery", "Transfuse"]
    trace = con.execute("SELECT value FROM lkc_toy_trace ORDER BY iteration").fetchall()
    assert [t[0] for t in trace] == [best for best, _ in TRACE_46 if best]
    rep = anon_duck.report(con, job)
    # DR = 21/121: classes {1,6}, {3,5}, {2}, {4,7}, {8,9}, {10,11} (spec §4.6)
    assert rep["discernibility"]["dc"] == 21
    assert rep["discernibility"]["dr"] == pytest.approx(21 / 121)
    assert all(c.passed for c in anon_duck.verify(con, job))


def test_verifier_catches_a_broken_release(con, job_file):
    job = job_file(TOY)
    anon_duck.run(con, job)
    # record 2 (Professional, M, [30-60)) relabelled to a value of its own: a size-1 group
    con.execute("""UPDATE lkc_toy_release SET "Job" = 'Doctor' WHERE "Job" = 'Professional' AND "Sex" = 'M' AND "Age" = '[30-60)'""")
    checks = anon_duck.verify(con, job)
    lkc = next(c for c in checks if c.name == "lkc_privacy")
    assert not lkc.passed and {v["reason"] for v in lkc.violations} == {"K"}
    assert all(v["qid"].get("Job") == "Doctor" for v in lkc.violations)


def test_table2_is_private_and_pais_refines_its_cut(con):
    """Table 2 satisfies (2,2,50%); PAIS's output is Table 2's cut plus one more valid
    specialization, Non-Technical → {Janitor, Mover} (spec §4.6)."""
    backend = DuckDBBackend(con)
    con.execute(f"CREATE TABLE t2 AS SELECT * FROM read_csv('{FIXTURES / '003' / 'table2.csv'}', all_varchar=true)")
    args = dict(relation="t2", qis=["Job", "Sex", "Age"], sensitive="Surgery", sensitive_values=["Transgender"])
    assert lkc_privacy(backend, **args, L=2, K=2, C=0.5).passed
    ours = {r[:3] for r in expected_rows("pais_L2_K2_C05_expected.csv")}
    theirs = {r[:3] for r in expected_rows("table2.csv")}
    assert {(j if j not in ("Janitor", "Mover") else "Non-Technical", s, a) for j, s, a in ours} == theirs


# ------------------------------------------------------------------------------------------
# Case 2: discernibility, ΔDC selection (spec §2.7 / A2, trace §4.7)
# ------------------------------------------------------------------------------------------
def test_discernibility_mode_trace(con, job_file):
    state, result = run_pais(con, job_file(TOY).with_params(score="discernibility"))
    first = {e.value: e for e in result.rounds[0]}
    # Example 3: Score(ANY Job) = 6² + 5² = 61 is dc_after; dc_before = 11² = 121
    assert (first["ANY_Job"].dc_before, first["ANY_Job"].dc_after) == (121, 61)
    assert (first["ANY_Sex"].dc_before, first["ANY_Sex"].dc_after) == (121, 65)
    assert (first["[1-99)"].dc_before, first["[1-99)"].dc_after) == (121, 85)
    assert [(s.value, s.dc_before, s.dc_after) for s in result.trace] == [
        ("ANY_Job", 121, 61), ("ANY_Sex", 61, 33), ("Blue-collar", 20, 20), ("Non-Technical", 16, 8),
        ("White-collar", 13, 13), ("[1-99)", 25, 25), ("[1-60)", 21, 17)]
    assert final_cuts(state, result) == {"Job": {"Janitor", "Mover", "Technical", "Professional"},
                                         "Sex": {"M", "F"}, "Age": {"[1-30)", "[30-60)", "[60-99)"}}


def test_discernibility_paper_after_differs_in_order_not_in_result(con, job_file):
    """dc_score = 'paper_after' maximizes Eq. 4 read literally, Σ|T[qid_v]|² after the split
    (spec A2, §4.7 note): the least discerning split first. Round 1 picks [1-99) (9² + 2² = 85)
    over ANY_Sex (65) and ANY_Job (61, the ΔDC winner); the final table is the same (§4.7)."""
    job = job_file(TOY).with_params(score="discernibility", dc_score="paper_after")
    state, result = run_pais(con, job)
    assert [(e.value, e.dc_after) for e in result.rounds[0]] == [("ANY_Job", 61), ("ANY_Sex", 65), ("[1-99)", 85)]
    assert [(s.value, s.score) for s in result.trace] == [
        ("[1-99)", 85), ("ANY_Sex", 57), ("ANY_Job", 33), ("[1-60)", 25), ("Blue-collar", 20),
        ("White-collar", 9), ("Non-Technical", 8)]
    assert final_cuts(state, result) == {"Job": {"Janitor", "Mover", "Technical", "Professional"},
                                         "Sex": {"M", "F"}, "Age": {"[1-30)", "[30-60)", "[60-99)"}}
    assert anon_duck.run(con, job).verified
    assert published(con, "lkc_toy_release") == expected_rows("pais_L2_K2_C05_expected.csv")


# ------------------------------------------------------------------------------------------
# More parameter settings (spec §4.8), including the K-anonymity comparator (L=|QID|, C=1)
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("L,K,C,cuts", [
    (3, 2, 1.0, ({"Janitor", "Mover", "Technical", "Professional"}, {"ANY_Sex"}, {"[1-30)", "[30-60)", "[60-99)"})),
    (3, 2, 0.5, ({"Janitor", "Mover", "Technical", "Professional"}, {"ANY_Sex"}, {"[1-30)", "[30-60)", "[60-99)"})),
    (1, 2, 0.5, ({"Janitor", "Mover", "Doctor", "Lawyer", "Technical"}, {"M", "F"},
                 {"[1-30)", "[30-60)", "[60-99)"})),
    (2, 3, 0.5, ({"Blue-collar", "Professional"}, {"ANY_Sex"}, {"[1-99)"})),
    (2, 2, 0.34, ({"Blue-collar", "Doctor", "Lawyer"}, {"ANY_Sex"}, {"[1-99)"})),
])
def test_parameter_fixtures(con, job_file, L, K, C, cuts):
    state, result = run_pais(con, job_file(TOY).with_params(L=L, K=K, C=C))
    assert final_cuts(state, result) == dict(zip(["Job", "Sex", "Age"], cuts))


def test_k_anonymity_comparator_is_k_anonymous(con, job_file):
    job = job_file(TOY).with_params(L=3, K=2, C=1.0)
    anon_duck.run(con, job)
    assert con.execute('SELECT min(n) FROM (SELECT count(*) AS n FROM lkc_toy_release '
                       'GROUP BY "Job", "Sex", "Age")').fetchone()[0] >= 2
    assert anon_duck.report(con, job)["discernibility"]["dc"] == 25      # DR = 25/121 (spec §4.8)


@pytest.mark.parametrize("params,message", [
    (dict(L=2, K=2, C=0.18), "'Transgender' in the whole table (2/11"),   # spec §4.8: root 2/11 > C
    (dict(L=2, K=12, C=0.5), "larger than the number of records (11)"),
])
def test_unsatisfiable_requirements_are_reported_first(con, job_file, params, message):
    with pytest.raises(InfeasibleError, match=re.escape(message)):
        anon_duck.run(con, job_file(TOY).with_params(**params))
    assert not [t for t in con.execute("SHOW ALL TABLES").fetchall() if not t[3].startswith("_ad_")]


# ------------------------------------------------------------------------------------------
# Numeric QIDs grown at run time (§3.2.1; rule of spec §2.6, fixture §4.9)
# ------------------------------------------------------------------------------------------
def test_best_threshold_on_table1_ages():
    # ages 24, 34, 44, 58, 63 with (Y, N) counts from Table 1
    counts = [[0, 2], [2, 0], [1, 1], [0, 3], [2, 0]]
    t, gain = best_threshold(counts)
    assert (t, round(gain, 6)) == (4, 0.242697)                  # threshold 63
    t, gain = best_threshold(counts[:4])                         # inside [1-63)
    assert (t, round(gain, 6)) == (3, 0.251629)                  # threshold 58
    assert best_threshold([[0, 0], [1, 2], [0, 0]]) is None      # one value present: a leaf


def dynamic_job(job_file):
    """The toy with Age numeric and no taxonomy: its intervals are grown (spec §4.9)."""
    job = job_file(TOY)
    ds = job.dataset
    qis = tuple(dataclasses.replace(q, hierarchy=None) if q.column == "Age" else q for q in ds.qis)
    return dataclasses.replace(job, dataset=dataclasses.replace(ds, qis=qis)).with_params(
        root_interval={"Age": [1, 99]})


def test_dynamic_split_trace_and_release(con, job_file):
    job = dynamic_job(job_file)
    state, result = run_pais(con, job)
    assert [s.value for s in result.trace] == ["ANY_Job", "[1-99)", "Blue-collar", "Non-Technical", "ANY_Sex",
                                               "White-collar"]
    assert result.trace[1].children == ("[1-63)", "[63-99)")
    seen = [e for r in result.rounds for e in r if e.value == "[1-63)"]
    assert not seen[-1].valid and seen[-1].min_n == 1                # ⟨Blue-collar, [58-63)⟩ = {5}
    con2 = duckdb.connect()
    res = anon_duck.run(con2, job)
    assert [c.name for c in res.checks] == ["lkc_privacy", "lkc_interval_cut[Age]", "lkc_release_columns"]
    ages = con2.execute('SELECT "Age", "Age__lo", "Age__hi", count(*) FROM lkc_toy_release GROUP BY ALL '
                        'ORDER BY 2').fetchall()
    assert ages == [("[1-63)", 1.0, 63.0, 9), ("[63-99)", 63.0, 99.0, 2)]


def test_best_valid_split_replaces_an_invalid_split(con, job_file):
    """numeric_split = 'best_valid' (spec A5's option): [1-63)'s InfoGain-best split at 58
    (0.251629, §4.9) is invalid (⟨Blue-collar, [58-63)⟩ = {5}), so it is re-split at the best
    valid threshold, 34 (0.152007; 44 gives 0.072780); the default drops [1-63) instead."""
    job = dynamic_job(job_file).with_params(numeric_split="best_valid")
    state, result = run_pais(con, job)
    assert [(s.value, s.children) for s in result.trace][:3] == [
        ("ANY_Job", ("Blue-collar", "White-collar")), ("[1-99)", ("[1-63)", "[63-99)")),
        ("[1-63)", ("[1-34)", "[34-63)"))]
    assert result.trace[2].info_gain == pytest.approx(0.152007, abs=1e-6)
    # [34-63)'s best split (0.521641) is invalid and so is every other: it stays
    last = [e for r in result.rounds for e in r if e.value == "[34-63)"][-1]
    assert not last.valid and last.info_gain == pytest.approx(0.521641, abs=1e-6)
    assert final_cuts(state, result)["Age"] == {"[1-34)", "[34-63)", "[63-99)"}
    assert [s.value for s in result.trace][3:] == ["Blue-collar", "Non-Technical", "ANY_Sex", "White-collar"]
    for job in (job, job_file("lkc_grown_toy.toml")):              # the example job file says the same
        res = anon_duck.run(con, job)
        assert res.verified and res.facts["cuts"]["Age"] == ["[1-34)", "[34-63)", "[63-99)"]


def test_best_valid_split_keeps_a_valid_best_split(con, job_file):
    """Where the InfoGain-best split is valid, best_valid changes nothing (the root [1-99)
    at 63 here; K = 6 makes every split of it invalid, so Age stays one interval both ways)."""
    for params in ({}, {"K": 6}):
        plain = run_pais(con, dynamic_job(job_file).with_params(**params))[1]
        best = run_pais(con, dynamic_job(job_file).with_params(numeric_split="best_valid", **params))[1]
        assert [(s.value, s.children) for s in best.trace][:2] == [(s.value, s.children) for s in plain.trace][:2]


def without(job, key: str):
    return dataclasses.replace(job, params={k: v for k, v in job.params.items() if k != key})


def test_dynamic_split_default_root(con, job_file):
    state, result = run_pais(con, without(dynamic_job(job_file), "root_interval"))
    assert result.trace[1].value == "[24-64)"                    # [min, max + 1)
    assert result.trace[1].children == ("[24-63)", "[63-64)")


# ------------------------------------------------------------------------------------------
# Exact confidence and S handling
# ------------------------------------------------------------------------------------------
def test_c_is_exact_and_s_defaults_to_every_value(con, job_file):
    job = job_file(TOY)
    params = METHOD.check_params(job.with_params(C="1/2"))
    assert params.c_fraction == Fraction(1, 2)
    state, result = run_pais(con, without(job, "sensitive_values"))
    assert state.sensitive == ("Plastic", "Transgender", "Urology", "Vascular")


def test_grown_qid_that_is_never_specialized(con, job_file):
    """K = 6: [1-99) → {[1-63) (9 records), [63-99) (2)} is invalid, so Age stays one interval."""
    job = dynamic_job(job_file).with_params(K=6)
    res = anon_duck.run(con, job)
    assert res.verified and res.facts["cuts"]["Age"] == ["[1-99)"]
    assert con.execute('SELECT DISTINCT "Age", "Age__lo", "Age__hi" FROM lkc_toy_release').fetchall() == [
        ("[1-99)", 1.0, 99.0)]


def test_report_without_scikit_learn_says_why(con, job_file, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    job = job_file(TOY)
    anon_duck.run(con, job)
    rep = anon_duck.report(con, job)
    assert "pip install scikit-learn" in rep["classification"]["skipped"]
    assert rep["discernibility"]["dc"] == 21
