"""Method `counterfeit` (seed 002): the paper's worked example (Tables 1-9), the digest's
derived fixtures (§4.10-4.12), the independent verifier both ways, and bad input.

Expected numbers: seed 002 Tables 2, 5, 6, 8, 9 and the text around Eq. 3; derived values
(RCE, the grouping trace, the lattice scores) from spec counterfeit_records.md §4, each
checked by hand there (fractions in the comments)."""
from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import anon_duck
import anon_duck.api  # anon_duck.api.* below: the package loads it lazily (PEP 562)
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import InfeasibleError, InputError, JobError
from anon_duck.inputs import prepare
from anon_duck.methods.counterfeit.classes import node_classes
from anon_duck.methods.counterfeit.comparator import comparator_report
from anon_duck.methods.counterfeit.counterfeits import insert_counterfeits
from anon_duck.methods.counterfeit.grouping import Catalog, grouping, lemma1_attainable
from anon_duck.methods.counterfeit.measures import catalog_weight, discernibility, loss_metric, rce
from anon_duck.methods.counterfeit.method import METHOD, lattice_inputs
from anon_duck.methods.counterfeit.report import qi_entries, query_error
from anon_duck.methods.counterfeit.search import Options, algorithm1, baseline, evaluate, lattice
from anon_duck.verifiers import counterfeit as verify_counterfeit

from conftest import FIXTURES, table_fingerprint, user_tables

TOY = "counterfeit_toy.toml"
INTERVALS = "counterfeit_toy_intervals.toml"


def _quiet(phase: str, done: int, total: int) -> None:
    return None


@pytest.fixture
def toy(con, job_file):
    """Frequency set and level maps of Table 1 (tight intervals, declared domains)."""
    def load(name: str = TOY, **params):
        job = job_file(name).with_params(**params)
        backend = DuckDBBackend(con)
        p = METHOD.check_params(job)
        freq, qis = lattice_inputs(backend, job, prepare(backend, job), p)
        return job, p, freq, qis
    return load


def _options(p, **over) -> Options:
    base = dict(k=p.k, h=p.h, tight=p.tight, counterfeit_values=p.counterfeit_values, rce_mode=p.rce_mode,
                rce_counterfeit_term=p.rce_counterfeit_term, seed=2)
    return Options(**{**base, **over})


def _csv_rows(path: Path) -> list[tuple]:
    with open(path, newline="") as f:
        return [tuple(r.values()) for r in csv.DictReader(f)]


# ------------------------------------------------------------------------------------------
# Eqs. 1-3, Definition 1: Tables 2 and 6
# ------------------------------------------------------------------------------------------
def test_degree_of_generalization_table_2(toy):
    # Table 2 is the top node in tight mode: <[35-66], *, [22071-55324]> for all 7 rows.
    # D = (31/99 + 1 + 33253/99999) / 3 = 0.548555 (paper: 0.55), DM = 49.
    _, _, freq, qis = toy()
    top = tuple(q.height for q in qis)
    c = node_classes(freq, qis, top, tight=True)
    expected = float((Fraction(31, 99) + 1 + Fraction(33253, 99999)) / 3)
    assert c.real.shape[0] == 1 and c.size.tolist() == [7]
    assert c.da[0].tolist() == pytest.approx([31 / 99, 1.0, 33253 / 99999], abs=1e-12)
    assert c.dmax == pytest.approx(expected, abs=1e-12) and round(c.dmax, 6) == 0.548555
    no_cf = np.zeros_like(c.real)
    assert loss_metric(c, no_cf)[0] == pytest.approx(expected, abs=1e-12)
    assert discernibility(c, no_cf) == 49


def test_h_ceiling_table_6_with_corrected_degree(toy):
    # Table 6 (node (1,0,2)): class 1 D = (2/99 + 0 + 990/99999)/3 = 0.0100340, class 2
    # D = (5/99 + 0 + 225/99999)/3 = 0.0175850 (digest A6 corrects the paper's 6/99, 222/99999).
    _, _, freq, qis = toy()
    c = node_classes(freq, qis, (1, 0, 2), tight=True)
    assert c.size.tolist() == [3, 4]
    assert c.degree.tolist() == pytest.approx([float((Fraction(2, 99) + Fraction(990, 99999)) / 3),
                                               float((Fraction(5, 99) + Fraction(225, 99999)) / 3)], abs=1e-12)
    assert round(c.degree[0], 7) == 0.0100340 and round(c.degree[1], 7) == 0.0175850
    assert c.dmax <= 0.02
    assert c.box.tolist() == [[3, 1, 991], [6, 1, 226]]
    assert discernibility(c, np.zeros_like(c.real)) == 25
    # Tables 3 and 4 (context): class 2's rows keep D = 0.017585; 3 suppressed rows have D = 1,
    # so Table 3's LM over 7 rows is 0.438620
    assert round((3 * 1.0 + 4 * c.degree[1]) / 7, 6) == 0.438620


@pytest.mark.parametrize("name, tight", [(TOY, True), (TOY, False), (INTERVALS, False)])
def test_dmax_is_monotone_along_lattice_edges(toy, name, tight):
    """Algorithm 1 line 1 prunes by this monotonicity (digest §2.8, A27): both interval modes."""
    from anon_duck.methods.lattice import children
    _, _, freq, qis = toy(name)
    dmax = {levels: node_classes(freq, qis, levels, tight=tight).dmax for levels in lattice(qis)}
    assert all(dmax[child] <= dmax[levels] + 1e-15 for levels in dmax for child in children(levels))


# ------------------------------------------------------------------------------------------
# Definition 2, Definition 3, Lemma 1, Fig. 4, RCE: Tables 5 and 8 (digest §4.6-4.10)
# ------------------------------------------------------------------------------------------
def _table5(toy):
    job, p, freq, qis = toy()
    c = node_classes(freq, qis, (1, 0, 2), tight=True)
    cf = insert_counterfeits(c, 4, "concealable", seed=0)
    return freq, c, cf


def test_counterfeit_insertion_table_5(toy):
    # Class 1 has 3 < 4 rows: one counterfeit. Headroom: Pneumonia 2, Diabetes 2, Anemia 0;
    # the tie goes to the smallest value, Diabetes, as in Table 5's 4th row.
    freq, c, cf = _table5(toy)
    diabetes = list(freq.sensitive_values).index("Diabetes")
    assert cf.sum() == 1 and cf[0, diabetes] == 1
    lm, lm_real = loss_metric(c, cf)
    assert round(lm, 7) == 0.0138095 and round(lm_real, 7) == 0.0143489
    assert discernibility(c, cf) == 32


def test_catalog_table_8_and_weight(toy):
    freq, c, cf = _table5(toy)
    catalog = grouping(c.real, cf)
    diabetes = list(freq.sensitive_values).index("Diabetes")
    assert catalog.group.tolist() == [0, 0]                      # one group {1, 2}
    assert catalog.count.tolist() == [[1 if s == diabetes else 0 for s in range(3)]]
    w = catalog_weight(c, cf, catalog)
    expected = np.ones((2, 3))
    expected[:, diabetes] = 0.75                                  # 1 − 1/4 (Fig. 4)
    assert w.tolist() == expected.tolist()


def test_table_7_catalog_is_not_attainable_alone():
    # Table 7: class 1 alone, cf(Diabetes) = 1 and no other class -> Lemma 1 fails (o = 0 < 1).
    real, cf = np.array([[1, 1, 1]]), np.array([[0, 1, 0]])
    assert not lemma1_attainable(real, cf)
    assert grouping(real, cf) is None


def test_rce_section_4_10(toy):
    freq, c, cf = _table5(toy)
    catalog = grouping(c.real, cf)
    w = catalog_weight(c, cf, catalog)
    ones, none = np.ones_like(w), np.zeros_like(cf)
    # per_attribute 3145145/223966 = 14.0429574; real rows alone 12.7298898
    assert rce(c, cf, w, mode="per_attribute", counterfeit_term=True) == pytest.approx(3145145 / 223966, abs=1e-9)
    assert rce(c, cf, w, mode="per_attribute", counterfeit_term=False) == pytest.approx(12.7298898, abs=1e-7)
    assert rce(c, cf, w, mode="joint", counterfeit_term=True) == pytest.approx(6.9963435, abs=1e-7)
    assert rce(c, none, ones, mode="per_attribute", counterfeit_term=True) == pytest.approx(12.3126070, abs=1e-7)
    assert rce(c, none, ones, mode="joint", counterfeit_term=True) == pytest.approx(6.9960411, abs=1e-7)
    top = node_classes(freq, toy()[3], (2, 1, 3), tight=True)
    t_none, t_ones = np.zeros_like(top.real), np.ones(top.real.shape)
    assert rce(top, t_none, t_ones, mode="per_attribute", counterfeit_term=True) == pytest.approx(17.2810395, abs=1e-7)
    assert rce(top, t_none, t_ones, mode="joint", counterfeit_term=True) == pytest.approx(6.9999967, abs=1e-7)


def test_age_only_rce_figures_3_and_4(toy):
    # Alice's Age in class 1 = [35-37]: 2/3 without the catalog, 11/16 with w = 3/4.
    _, c, _ = _table5(toy)
    age = type(c)(c.levels, c.row_class, np.array([[1]]), c.da[:1, :1], np.array([[3.0]]), c.lo[:1, :1],
                  c.hi[:1, :1], c.node[:1, :1])
    none = np.zeros((1, 1), dtype=np.int64)
    assert rce(age, none, np.ones((1, 1)), mode="joint", counterfeit_term=True) == pytest.approx(2 / 3)
    assert rce(age, none, np.full((1, 1), 0.75), mode="joint", counterfeit_term=True) == pytest.approx(11 / 16)


# ------------------------------------------------------------------------------------------
# Algorithm 2 (digest §4.11): tie-break, repeated merges, NULL
# ------------------------------------------------------------------------------------------
def test_grouping_fixture_4_11():
    #          A  B  C
    real = np.array([[1, 0, 0], [0, 1, 1], [0, 1, 0], [2, 0, 1], [0, 3, 0]])
    cf = np.array([[0, 2, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]])
    catalog = grouping(real, cf)
    # i=1 joins 5 (tie with 2, last scanned wins), then 4 (max reset); i=2 joins 5's group.
    assert catalog.group.tolist() == [0, 0, -1, 0, 0]
    assert catalog.count.tolist() == [[1, 2, 1]]


def test_grouping_null_case():
    real, cf = np.array([[1, 0], [3, 0]]), np.array([[0, 1], [0, 0]])   # nobody has a real Z
    assert grouping(real, cf) is None and not lemma1_attainable(real, cf)


def _lemma1_holds(real: np.ndarray, cf: np.ndarray, catalog: Catalog) -> bool:
    for g in range(catalog.count.shape[0]):
        members = np.flatnonzero(catalog.group == g)
        others = real[members].sum(axis=0)[None, :] - real[members]
        if (others < cf[members]).any() or (cf[members].sum(axis=0) != catalog.count[g]).any():
            return False
    return not cf[catalog.group < 0].any()


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 9), st.integers(1, 4), st.data())
def test_grouping_null_iff_global_precheck_and_safe(m, n_s, data):
    real = np.array(data.draw(st.lists(st.lists(st.integers(0, 3), min_size=n_s, max_size=n_s),
                                       min_size=m, max_size=m)))
    cf = np.array(data.draw(st.lists(st.lists(st.integers(0, 2), min_size=n_s, max_size=n_s),
                                     min_size=m, max_size=m)))
    catalog = grouping(real, cf)
    assert (catalog is None) == (not lemma1_attainable(real, cf) and cf.any())
    if catalog is not None:
        assert _lemma1_holds(real, cf, catalog)
        listed = np.flatnonzero(catalog.group >= 0)
        firsts = [np.flatnonzero(catalog.group == g)[0] for g in range(catalog.count.shape[0])]
        assert firsts == sorted(firsts) and (listed.size == 0 or catalog.group[listed].min() == 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(20, 90), st.integers(2, 5), st.integers(0, 10_000))
def test_grouping_equals_literal_pseudocode(m, n_s, seed):
    """The latest-covering-group shortcut must give the literal pass-by-pass result."""
    rng = np.random.default_rng(seed)
    real = rng.integers(0, 4, size=(m, n_s))
    cf = np.where(rng.random((m, n_s)) < 0.3, rng.integers(0, 3, size=(m, n_s)), 0)
    assert _same_catalog(grouping(real, cf), _reference_grouping(real, cf))


def _reference_grouping(real, cf):
    """Digest §3.4 pseudocode, transcribed literally (O(m²·|S|)); the test oracle."""
    m = real.shape[0]
    order = sorted(range(m), key=lambda c: (-cf[c].sum(), c))
    group = {c: {c} for c in range(m)}
    for i in order:
        while True:
            deficit = np.maximum(cf[i] - sum((real[u] for u in group[i] if u != i), np.zeros_like(real[i])), 0)
            if deficit.sum() == 0:
                break
            best, pick = 0, None
            for j in order:
                if j == i:
                    continue
                cnt = 0 if j in group[i] else int(np.minimum(deficit, sum(real[u] for u in group[j])).sum())
                if cnt >= best:
                    pick, best = j, cnt
            if best == 0:
                return None
            merged = group[i] | group[pick]
            for u in merged:
                group[u] = merged
    return group


def _same_catalog(catalog, group) -> bool:
    """Same groups: the catalog's groups are exactly the reference's merged groups."""
    if catalog is None or group is None:
        return catalog is None and group is None
    ours = {frozenset(np.flatnonzero(catalog.group == g).tolist()) for g in range(catalog.count.shape[0])}
    return ours == {frozenset(g) for g in group.values() if len(g) > 1}


# ------------------------------------------------------------------------------------------
# Algorithm 1 on the toy lattice (digest §4.12)
# ------------------------------------------------------------------------------------------
def test_lattice_node_scores_tight(toy):
    _, p, freq, qis = toy()
    opt = _options(p)
    scores = {}
    for levels in lattice(qis):
        c = node_classes(freq, qis, levels, tight=True)
        if c.dmax <= 0.02:
            r = evaluate(freq, qis, levels, opt, c)
            scores[levels] = (round(r.rce, 7), r.catalog.n_counterfeits)
    assert all(levels[1] == 0 for levels in scores)              # Sex generalized: D >= 1/3, pruned
    assert scores == {**{n: (18.6593407, 21) for n in [(0, 0, 0), (0, 0, 1), (1, 0, 0), (0, 0, 2), (2, 0, 0),
                                                         (0, 0, 3)]},
                      **{n: (18.2142625, 5) for n in [(1, 0, 1), (2, 0, 1)]},
                      **{n: (14.0429574, 1) for n in [(1, 0, 2), (1, 0, 3), (2, 0, 2), (2, 0, 3)]}}
    found = algorithm1(freq, qis, opt, _quiet)
    assert found.best.classes.levels == (1, 0, 2)                  # first of the four ties
    assert found.nodes_evaluated == 12 and found.nodes_total == 24


def test_lattice_hierarchy_mode(toy):
    # Age [0-99] by decades, Zip [0-99999] by 1000s and 10000s (intervals over whole domains).
    _, p, freq, qis = toy(INTERVALS, h=0.1)
    best = algorithm1(freq, qis, _options(p), _quiet).best
    assert best.classes.levels == (1, 0, 2)                          # decade, sex, 10000-block
    assert best.rce == pytest.approx(23799 / 1600, abs=1e-9)
    assert round(best.classes.dmax, 7) == 0.0636334
    assert best.catalog.group.tolist() == [0, 0] and best.catalog.n_counterfeits == 1
    _, p, freq, qis = toy(INTERVALS, h=0.02)
    best = algorithm1(freq, qis, _options(p), _quiet).best
    names = list(freq.sensitive_values)
    assert best.classes.levels == (0, 0, 0) and best.rce == pytest.approx(1698 / 91, abs=1e-9)
    assert best.catalog.group.tolist() == [0] * 7
    assert dict(zip(names, best.catalog.count[0].tolist())) == {"Anemia": 0, "Diabetes": 11, "Pneumonia": 10}
    joint = algorithm1(freq, qis, _options(p, rce_mode="joint"), _quiet).best
    assert joint.classes.levels == (0, 0, 0) and joint.rce == pytest.approx(849 / 182, abs=1e-9)


def test_hierarchy_mode_release(con, job_file):
    # numeric QIs published as hierarchy intervals; domains from the hierarchies' top intervals
    result = anon_duck.api.run(con, job_file(INTERVALS))
    assert result.verified and result.facts["domain"] == {"age": [0.0, 99.0], "zipcode": [0.0, 99999.0]}
    rows = con.execute("SELECT class_id, age, age__lo, age__hi, sex, zipcode, count(*) FROM toy_counterfeit_intervals_release "
                       "GROUP BY ALL ORDER BY class_id").fetchall()
    assert rows == [(1, "[30-39]", 30.0, 39.0, "F", "[20000-29999]", 4), (2, "[60-69]", 60.0, 69.0, "M", "[50000-59999]", 4)]
    report = anon_duck.api.report(con, job_file(INTERVALS))
    assert report["rce"] == pytest.approx(23799 / 1600) == pytest.approx(result.facts["rce"])
    for mode in ("joint",):                      # the other reading, same release: SQL and numpy agree
        again = anon_duck.api.run(con, job_file(INTERVALS).with_params(rce_mode=mode, h=0.02))
        assert anon_duck.api.report(con, job_file(INTERVALS).with_params(rce_mode=mode, h=0.02))["rce"] \
            == pytest.approx(again.facts["rce"]) == pytest.approx(849 / 182)


def test_baseline_is_table_2(toy):
    # k = 4 without counterfeits: only the top node is 4-anonymous -> Table 2 (LM 0.548555).
    _, _, freq, qis = toy()
    levels, lm = baseline(freq, qis, 4, tight=True)
    assert levels == (2, 1, 3) and round(lm, 6) == 0.548555
    _, p, freq, qis = toy(INTERVALS, h=0.1)
    assert baseline(freq, qis, 4, tight=False) == ((2, 1, 3), 1.0)
    top = node_classes(freq, qis, (2, 1, 3), tight=False)
    assert rce(top, np.zeros_like(top.real), np.ones(top.real.shape), mode="per_attribute",
               counterfeit_term=True) == pytest.approx(17.42993, abs=1e-5)


# ------------------------------------------------------------------------------------------
# The pipeline: Tables 5, 8 and 9 published, verified, reported
# ------------------------------------------------------------------------------------------
def test_toy_release_tables_5_8_9(con, job_file):
    job = job_file(TOY)
    result = anon_duck.api.run(con, job)
    assert result.verified and [c.name for c in result.checks] == [
        "k_anonymity", "counterfeit_class_ids", "counterfeit_catalog", "counterfeit_lemma1",
        "counterfeit_h_ceiling", "counterfeit_truthfulness"]
    at = con.execute("SELECT CAST(class_id AS VARCHAR), age, sex, zipcode, disease FROM toy_counterfeit_release "
                     "ORDER BY ALL").fetchall()
    assert at == sorted(_csv_rows(FIXTURES / "002" / "table5_expected.csv"))          # Table 5 as a multiset
    catalog = con.execute("SELECT array_to_string(class_ids, ';'), disease, CAST(count AS VARCHAR) "
                          "FROM toy_counterfeit_catalog").fetchall()
    assert catalog == _csv_rows(FIXTURES / "002" / "table8_expected.csv")            # Table 8
    truthful = con.execute("SELECT class_id, age, sex, zipcode, disease FROM toy_counterfeit_truthful "
                           "ORDER BY class_id NULLS LAST, disease").fetchall()
    assert truthful == [(1, "[35-37]", "F", "[22071-23061]", "Anemia"), (1, "[35-37]", "F", "[22071-23061]", "Diabetes"),
                        (1, "[35-37]", "F", "[22071-23061]", "Pneumonia"), (2, "[61-66]", "M", "[55099-55324]", "Diabetes"),
                        (2, "[61-66]", "M", "[55099-55324]", "Pneumonia"), (2, "[61-66]", "M", "[55099-55324]", "Pneumonia"),
                        (None, "*", "*", "*", "Diabetes")]                            # Table 9
    f = result.facts
    assert f["levels"] == {"age": 1, "sex": 0, "zipcode": 2} and f["n_counterfeits"] == 1
    assert f["rce"] == pytest.approx(3145145 / 223966) and round(f["lm"], 7) == 0.0138095 and f["dm"] == 32
    report = anon_duck.api.report(con, job)
    assert report["lm"] == pytest.approx(f["lm"]) and report["dm"] == 32 and report["n_counterfeits"] == 1
    assert report["from_run"]["rce"] == pytest.approx(3145145 / 223966)
    # RCE and LM_real re-derived in SQL from the published tables and the input (§4.10 numbers)
    assert report["rce"] == pytest.approx(3145145 / 223966) and report["unplaced_rows"] == 0
    assert round(report["lm_real"], 7) == 0.0143489
    # digest §4.13 over every disease: Sex raw errors 1/5, catalog-weighted (0.5 + 0.25)/5
    assert report["query_error"]["sex"] == {"raw": pytest.approx(0.2), "catalog": pytest.approx(0.15),
                                            "truthful": pytest.approx(0.15), "groups": 5}
    assert all(c.passed for c in anon_duck.api.verify(con, job))


def test_query_error_fixture_4_13(con, job_file):
    """Digest §4.13: Disease = 'Diabetes' grouped by Sex and by decade FLOOR(Age/10)*10 (actual
    F 1, M 2; 30 → 1, 60 → 2). Table 5 raw: 2, 2 → 50%; with Table 8's weight 3/4: 1.5, 1.5 →
    37.5%; Table 9 (truthful): Sex 1.5, 1.5 → 37.5%, decades 1.1, 1.1 (the suppressed row adds
    0.1 to each of the 10 decades) → 27.5%; the comparator (Table 2, [35-66] over 32 ages):
    Sex 37.5%, decades 3·5/32 = 0.46875 and 3·7/32 = 0.65625 → 60.15625% (the 40s and 50s get
    estimates but have no actual row, so they are not in the mean)."""
    job = job_file(TOY)
    anon_duck.api.run(con, job)
    backend = DuckDBBackend(con)
    p = METHOD.check_params(job)
    inputs = prepare(backend, job)
    qis = {q["column"]: q for q in qi_entries(backend, job, p.domain)}
    tables = {s: ("main", f"toy_counterfeit_{s}") for s in ("release", "catalog", "truthful")}

    def errors(column: str, width: int = 1) -> dict:
        return query_error(backend, inputs.person, "disease", qis[column], **tables, sensitive_values=["Diabetes"],
                           width=width)
    approx = pytest.approx
    assert errors("sex") == {"raw": approx(0.5), "catalog": approx(0.375), "truthful": approx(0.375), "groups": 2}
    assert errors("age", 10) == {"raw": approx(0.5), "catalog": approx(0.375), "truthful": approx(0.275), "groups": 2}
    freq, levels = lattice_inputs(backend, job, inputs, p)
    comparator = comparator_report(backend, job, inputs, p, freq, levels, sensitive_values=["Diabetes"], width=10)
    assert comparator.levels == (2, 1, 3) and round(comparator.lm, 6) == 0.548555           # Table 2
    assert comparator.rce == approx(17.2810395)
    assert comparator.query_error["sex"] == {"raw": approx(0.375), "catalog": approx(0.375),
                                             "truthful": approx(0.375), "groups": 2}
    assert comparator.query_error["age"]["raw"] == approx(0.6015625)
    # the comparator's staged tables are dropped; the prepared input and the release are not
    assert {t for t in user_tables(con) if t.startswith("_ad_cf_")} == set()
    assert "_ad_input" in user_tables(con) and "toy_counterfeit_release" in user_tables(con)


def test_release_hides_counterfeits(con, job_file):
    job = job_file(TOY)
    anon_duck.api.run(con, job)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'toy_counterfeit_release' ORDER BY ordinal_position").fetchall()]
    assert cols == ["class_id", "age", "age__lo", "age__hi", "sex", "zipcode", "zipcode__lo", "zipcode__hi", "disease"]
    # the counterfeit Diabetes row of class 1 is identical to the real one: 2 copies, 1 distinct row
    assert con.execute("SELECT count(*), count(DISTINCT t) FROM toy_counterfeit_release t "
                       "WHERE class_id = 1 AND disease = 'Diabetes'").fetchone() == (2, 1)
    assert user_tables(con) == {"toy_counterfeit", "toy_counterfeit_release", "toy_counterfeit_catalog",
                                "toy_counterfeit_truthful", "toy_counterfeit_qi_retention", "toy_counterfeit_meta"}
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '\\_ad\\_%' ESCAPE '\\'").fetchone() == (0,)


def test_same_release_for_same_seed_and_any_input_order(con, tmp_path, job_file):
    rows = _csv_rows(FIXTURES / "002" / "table1.csv")
    path = tmp_path / "shuffled.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "age", "sex", "zipcode", "disease"])
        w.writerows(rows[::-1])
    job = job_file(TOY).with_params(counterfeit_values="random")
    anon_duck.api.run(con, job)
    first = con.execute("SELECT * FROM toy_counterfeit_release ORDER BY ALL").fetchall()
    import dataclasses
    shuffled = dataclasses.replace(job, dataset=dataclasses.replace(
        job.dataset, source=dataclasses.replace(job.dataset.source, path=path)))
    anon_duck.api.run(con, shuffled)
    assert con.execute("SELECT * FROM toy_counterfeit_release ORDER BY ALL").fetchall() == first


# ------------------------------------------------------------------------------------------
# The independent verifier, both ways
# ------------------------------------------------------------------------------------------
def _audit(con, job, **tables):
    names = {"release": ("main", "toy_counterfeit_release"), "catalog": ("main", "toy_counterfeit_catalog"),
             "truthful": ("main", "toy_counterfeit_truthful"), **tables}
    p = METHOD.check_params(job)
    return {c.name: c for c in verify_counterfeit.audit(DuckDBBackend(con), job, k=p.k, h=p.h,
                                                       domain=dict(p.domain), **names)}


def test_verifier_rejects_table_7_and_accepts_table_8(con, job_file):
    job = job_file(TOY)
    anon_duck.api.run(con, job)
    con.execute("CREATE TABLE table7 AS SELECT 1 AS group_id, [1] AS class_ids, 'Diabetes' AS disease, 1 AS count")
    checks = _audit(con, job, catalog=("main", "table7"))
    lemma = checks["counterfeit_lemma1"]
    assert not lemma.passed and lemma.violations == [
        {"group_id": 1, "class_id": 1, "sensitive_value": "Diabetes", "count": 1, "published_elsewhere": 0}]
    assert all(c.passed for c in _audit(con, job).values())


def test_verifier_catches_broken_releases(con, job_file):
    job = job_file(TOY)
    anon_duck.api.run(con, job)
    # a dropped row: class 2 has 3 < 4 rows, and the sensitive marginal no longer adds up
    con.execute("CREATE TABLE short AS SELECT * FROM toy_counterfeit_release "
                "WHERE NOT (class_id = 2 AND disease = 'Pneumonia') UNION ALL "
                "(SELECT * FROM toy_counterfeit_release WHERE class_id = 2 AND disease = 'Pneumonia' LIMIT 1)")
    checks = _audit(con, job, release=("main", "short"))
    assert checks["k_anonymity"].violations[0]["class_size"] == 3
    assert not checks["counterfeit_truthfulness"].passed
    # a class listed in two groups, and an uncatalogued counterfeit
    con.execute("CREATE TABLE twice AS SELECT * FROM toy_counterfeit_catalog UNION ALL "
                "SELECT 2, [1], 'Anemia', 1")
    assert {v["problem"] for v in _audit(con, job, catalog=("main", "twice"))["counterfeit_catalog"].violations} \
        == {"class in two groups"}
    # a group with two class lists, both naming a class the release lacks: each list's members
    # are reported (99 twice), and the two lists once
    con.execute("CREATE TABLE lists AS SELECT * FROM toy_counterfeit_catalog UNION ALL "
                "SELECT 5, [98, 99], 'Anemia', 1 UNION ALL SELECT 5, [99], 'Flu', 1")
    lists = _audit(con, job, catalog=("main", "lists"))["counterfeit_catalog"]
    assert [(v["problem"], v["group_id"], v["class_id"]) for v in lists.violations] == [
        ("class not in the release", 5, 98), ("class not in the release", 5, 99), ("class not in the release", 5, 99),
        ("group with two different class lists", 5, None)]
    con.execute("CREATE TABLE empty_catalog AS SELECT * FROM toy_counterfeit_catalog WHERE false")
    bad = _audit(con, job, catalog=("main", "empty_catalog"))["counterfeit_truthfulness"]
    assert bad.violations[0]["sensitive_value"] == "Diabetes" and bad.violations[0]["published"] == 4
    # a tighter ceiling: only class 2 (D = 0.0175850) is above 0.015
    ceiling = {c.name: c for c in verify_counterfeit.audit(
        DuckDBBackend(con), job, release=("main", "toy_counterfeit_release"), catalog=("main", "toy_counterfeit_catalog"),
        truthful=("main", "toy_counterfeit_truthful"), k=4, h=0.015,
        domain={"age": (0, 99), "zipcode": (0, 99999)})}["counterfeit_h_ceiling"]
    assert [v["class_id"] for v in ceiling.violations] == [2]
    # one class_id for every QI tuple: class 1 names them all
    con.execute("CREATE TABLE merged AS SELECT * REPLACE (1 AS class_id) FROM toy_counterfeit_release")
    n_tuples = con.execute("SELECT count(*) FROM (SELECT DISTINCT age, sex, zipcode FROM merged)").fetchone()[0]
    merged = _audit(con, job, release=("main", "merged"))["counterfeit_class_ids"]
    assert n_tuples > 1 and (merged.n_violations, merged.violations) == (1, [{"class_id": 1, "n_tuples": n_tuples}])
    # one QI tuple under two class_ids (class 2's rows again as class 99): reported under the smaller id
    con.execute("CREATE TABLE split AS SELECT * FROM toy_counterfeit_release UNION ALL "
                "SELECT * REPLACE (99 AS class_id) FROM toy_counterfeit_release WHERE class_id = 2")
    split = _audit(con, job, release=("main", "split"))["counterfeit_class_ids"]
    assert (split.n_violations, split.violations) == (1, [{"class_id": 2, "n_tuples": 2}])
    assert _audit(con, job)["counterfeit_class_ids"].passed


# ------------------------------------------------------------------------------------------
# Bad input: clear errors, nothing written, sources untouched
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("params, message", [
    ({"h": 0}, "method.h = 0.0: the h-ceiling must be in (0, 1]"),
    ({"h": 1.5}, "method.h = 1.5: the h-ceiling must be in (0, 1]"),
    ({"h": "high"}, "method.h = 'high'"),
    ({"k": 1}, "method.k = 1: must be >= 2"),
    ({"interval_mode": "loose"}, "method.interval_mode = 'loose': must be one of hierarchy, tight"),
    ({"domain": {"sex": [0, 1]}}, "method.domain.sex: 'sex' is not a numeric quasi-identifier"),
    ({"domain": {"age": [99, 0]}}, "method.domain.age = [99, 0]: expected [L, U]"),
    ({"ceiling": 0.3}, "unknown key 'ceiling' in [method]"),
])
def test_bad_params(con, job_file, params, message):
    with pytest.raises(JobError, match=_literal(message)):
        anon_duck.api.run(con, job_file(TOY).with_params(**params))
    assert user_tables(con) == set()


def _literal(text: str) -> str:
    import re
    return re.escape(text)


def _toy_table(con, rows=None, name="ehr"):
    con.execute(f'CREATE TABLE {name} (name VARCHAR, age INTEGER, sex VARCHAR, zipcode INTEGER, disease VARCHAR)')
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?, ?)",
                    rows or [(r[0], int(r[1]), r[2], int(r[3]), r[4]) for r in _csv_rows(FIXTURES / "002" / "table1.csv")])


def _from_table(job, table):
    import dataclasses
    from anon_duck.job import Source
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, source=Source(table=table)))


def test_bad_input_errors_leave_nothing(con, job_file):
    import dataclasses
    job = job_file(TOY)
    _toy_table(con)
    before = table_fingerprint(con, "ehr")
    con.execute("UPDATE ehr SET disease = NULL WHERE name = 'Tom'")
    with pytest.raises(InputError, match="column 'disease' has 1 NULL \\(rows"):
        anon_duck.api.run(con, _from_table(job, "ehr"))
    con.execute("UPDATE ehr SET disease = 'Diabetes' WHERE name = 'Tom'")
    assert table_fingerprint(con, "ehr") == before
    with pytest.raises(InputError, match="larger than the number of records"):
        anon_duck.api.run(con, _from_table(job, "ehr").with_params(k=8))
    no_sensitive = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, sensitive=None))
    with pytest.raises(JobError, match="needs input.sensitive"):
        anon_duck.api.run(con, no_sensitive)
    unknown = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, sensitive="diagnosis"))
    with pytest.raises(InputError, match="input.sensitive = 'diagnosis': no such column"):
        anon_duck.api.run(con, unknown)
    with_class = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, keep=("name",)))
    with pytest.raises(JobError, match="would reveal it"):
        anon_duck.api.run(con, with_class)
    con.execute("INSERT INTO ehr VALUES ('Zoe', 40, 'F', 22071, 'Anemia')")      # 40 is not in the age hierarchy
    with pytest.raises(InputError, match="age"):
        anon_duck.api.run(con, _from_table(job, "ehr"))
    assert user_tables(con) == {"ehr"}


def test_no_feasible_node_is_a_clear_error(con, job_file):
    # Two people, two diseases, k = 2, h = 1e-5 with hierarchy intervals: only the bottom node is
    # within h, and a random counterfeit that repeats its class's own disease cannot be hidden
    # (Lemma 1) -> the node is NULL and no node is left.
    con.execute("CREATE TABLE pair AS SELECT * FROM (VALUES ('a', 35, 'F', 22071, 'Anemia'), "
                "('b', 61, 'F', 22098, 'Diabetes')) t(name, age, sex, zipcode, disease)")
    job = _from_table(job_file(TOY), "pair").with_params(k=2, h=0.00001, counterfeit_values="random",
                                                             interval_mode="hierarchy")
    seeds = [s for s in range(20) if not _feasible(s)]
    assert seeds, "some seed must draw an unhideable counterfeit"
    import dataclasses
    job = dataclasses.replace(job, release=dataclasses.replace(job.release, seed=seeds[0]))
    with pytest.raises(InfeasibleError, match=r"1e-05-ceiling .* k = 2 .* 1 cannot hide their counterfeits"):
        anon_duck.api.run(con, job)
    assert user_tables(con) == {"pair"}


def _feasible(seed: int) -> bool:
    draws = np.random.default_rng([seed, 0, 0, 0]).integers(0, 2, size=2)
    return draws[0] == 1 and draws[1] == 0        # class 1 (Anemia) must get Diabetes and vice versa


def test_hostile_identifiers(con, tmp_path):
    evil = 'x"; DROP TABLE t; --'
    con.execute(f'CREATE TABLE "{evil.replace(chr(34), chr(34) * 2)}" AS SELECT name, age AS "{evil.replace(chr(34), chr(34) * 2)}", '
                'sex AS "se""x", zipcode, disease AS "dis ease" FROM read_csv(?)', [str(FIXTURES / "002" / "table1.csv")])
    from anon_duck.job import job_from_dict
    job = job_from_dict({
        "input": {"table": evil, "id": "name", "sensitive": "dis ease",
                  "qi": [{"column": evil, "kind": "numeric", "hierarchy": "age"},
                         {"column": 'se"x', "hierarchy": "sex"}]},
        "hierarchy": {"age": {"type": "arx", "path": str(FIXTURES / "002" / "hierarchy_age.csv")},
                      "sex": {"type": "arx", "path": str(FIXTURES / "002" / "hierarchy_sex.csv")}},
        "method": {"name": "counterfeit", "k": 3, "h": 0.2, "interval_mode": "tight"},
        "release": {"name": "evil", "seed": 1}})
    result = anon_duck.api.run(con, job)
    assert result.verified
    assert con.execute("SELECT count(*) FROM evil_release").fetchone()[0] >= 7
    assert "evil_release" in user_tables(con) and evil in user_tables(con)


def test_hierarchy_screen_equals_class_numbers(toy):
    """Hierarchy mode screens nodes (Dmax, RCE bound) from the frequency set; same numbers."""
    from anon_duck.methods.counterfeit.measures import rce_lower_bound
    from anon_duck.methods.counterfeit.search import _screen
    _, _, freq, qis = toy(INTERVALS)
    for levels in lattice(qis):
        c = node_classes(freq, qis, levels, tight=False)
        for mode in ("per_attribute", "joint"):
            assert _screen(freq, qis, levels, mode) == pytest.approx((c.dmax, rce_lower_bound(c, mode=mode)), abs=1e-9)
