"""ArtUC on the toy example of seed 000 (Figure 1a, Figure 4 hierarchies, Table 4 constraints).

Expected values: spec rt_kkm_utility_constraints.md §4.4-4.7 (recomputed with fractions; the
paper prints NCP 4.28 = 205/48 rounded, and UL 0.441, which contradicts its Example 4, A12).
"""
from __future__ import annotations

import csv
import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import anon_duck
from anon_duck.api import backend_for
from anon_duck.scratch import drop_scratch
from anon_duck.errors import InfeasibleError
from anon_duck.inputs import prepare
from anon_duck.job import load_job
from anon_duck.methods.artuc import constraints as uc
from anon_duck.methods.artuc.algorithm import ArtUC
from anon_duck.methods.artuc.report import QUERIES, are_counts
from anon_duck.methods.artuc.staging import load_problem

from conftest import FIXTURES, JOBS


def frac(x: float, den: int = 100_000) -> Fraction:
    return Fraction(x).limit_denominator(den)


def release_rows(con, name: str = "artuc_toy") -> list[tuple]:
    rows = con.execute(f'SELECT age__lo, age__hi, origin, gender, codes FROM "{name}_release"').fetchall()
    return sorted((int(a), int(b), o, g, c) for a, b, o, g, c in rows)


def expected_fig3() -> list[tuple]:
    with open(FIXTURES / "000" / "toy_expected_fig3.csv", newline="") as f:
        out = []
        for r in csv.DictReader(f):
            tokens = sorted(t if "|" not in t else "(" + t.replace("|", ", ") + ")" for t in r["tokens"].split(";"))
            out.append((int(r["age_lo"]), int(r["age_hi"]), r["origin"], r["gender"], ", ".join(tokens)))
        return sorted(out)


@pytest.fixture
def toy(job_file):
    return job_file("artuc_toy.toml")


def test_toy_reproduces_figure3(con, toy):
    result = anon_duck.run(con, toy)
    assert result.verified and [c.name for c in result.checks] == [
        "artuc_structure", "kkm_anonymity", "utility_constraints_demographics", "utility_constraints_codes", "min_count"]
    assert release_rows(con) == expected_fig3()
    f = result.facts
    assert frac(f["ncp"]) == Fraction(205, 384)          # Σ NCP(r) = 205/48 (paper: 4.28)
    assert frac(f["ul"]) == Fraction(101, 280)           # not the paper's 0.441 (A12)
    assert frac(f["ul_gen"]) == Fraction(33, 140) and frac(f["ul_sup"]) == Fraction(1, 8)
    assert (f["suppressed_codes"], f["merges"], f["clusters"]) == (1, 1, 3)


def test_release_holds_no_person_data(con, toy):
    anon_duck.run(con, toy)
    cols = [r[0] for r in con.execute("DESCRIBE artuc_toy_release").fetchall()]
    assert cols == ["record", "class", "age", "age__lo", "age__hi", "origin", "gender", "codes"]
    records = sorted(r[0] for r in con.execute("SELECT record FROM artuc_toy_release").fetchall())
    assert records == list(range(8))
    names = con.execute("SELECT count(*) FROM artuc_toy_release WHERE list_contains("
                        "['John','Steve','Mary','Zoe','Luke','Jim','Nicky','Chris'], origin)").fetchone()[0]
    assert names == 0
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()}
    assert tables == {f"artuc_toy_{s}" for s in ("release", "records", "classes", "tokens", "record_tokens",
                                                     "retention", "qi_retention", "meta")}


def _toy_algorithm(con, job, **overrides) -> tuple[ArtUC, object]:
    method = anon_duck.methods.get_method(job.method)
    params = method.check_params(job)
    backend = backend_for(con, job)
    inputs = prepare(backend, job)
    qis = uc.qi_infos(backend, job, inputs)
    uc.build(backend, job, inputs, params, qis)
    uc.group_records(backend, job, inputs, params, qis)
    problem = load_problem(backend, job, inputs, qis)
    kw = dict(k=params.k, m=params.m, delta=params.delta, epsilon=params.epsilon_for(problem.labels.size))
    kw.update(overrides)
    return ArtUC(problem.demo, problem.box, problem.codes, problem.block, **kw), problem


def test_toy_trace_matches_section_4_2(con, toy):
    """Spec §4.4: formation gives C1..C4 with NCP(D~) = 31/96; one merge C1+C2; Figure 3's UL per record."""
    alg, problem = _toy_algorithm(con, toy)
    groups, dropped = alg.record_grouping()
    assert [g.tolist() for g in groups] == [[0, 1, 2, 3, 6, 7], [4, 5]] and dropped.size == 0
    clusters = alg.cluster_formation(groups)
    assert [c.members.tolist() for c in clusters] == [[0, 1], [2, 3], [6, 7], [4, 5]]
    assert [frac(c.ncp_rec) for c in clusters] == [Fraction(23, 96), Fraction(11, 48), Fraction(67, 96),
                                                   Fraction(1, 8)]
    assert frac(alg.dataset_ncp(clusters)) == Fraction(31, 96)
    assert [frac(alg._ul(c)) for c in clusters] == [Fraction(2, 5), Fraction(13, 7), Fraction(6, 7), Fraction(1)]
    merged, merges = alg.cluster_merging(alg.identical_merge(clusters))
    assert merges == 1 and sorted(c.members.tolist() for c in merged) == [[0, 1, 2, 3], [4, 5], [6, 7]]
    results, s = alg.anonymization(merged)
    ul = {int(r): frac(u) for c, res in zip(merged, results) for r, u in zip(c.members, res.record_ul())}
    assert ul == {0: Fraction(1, 5), 1: Fraction(1, 5), 2: Fraction(3, 7), 3: Fraction(1, 5), 6: Fraction(3, 7),
                  7: Fraction(3, 7), 4: Fraction(0), 5: Fraction(1)}
    assert s == 1


def test_cross_group_merge_would_break_the_constraints(con, toy):
    """Spec §4.4 step 7 / A5: C1 ∪ C4 has lower UL than C1 ∪ C2 and NCP 217/384 <= δ, but it is
    in another group, so it is never a candidate."""
    alg, _ = _toy_algorithm(con, toy)
    clusters = alg.cluster_formation(alg.record_grouping()[0])
    c1, c2, c4 = clusters[0], clusters[1], clusters[3]
    u14 = alg._gendiag(np.concatenate([c1.members, c4.members])).ul()
    u12 = alg._gendiag(np.concatenate([c1.members, c2.members])).ul()
    assert frac(u14) == Fraction(2, 5) < frac(u12) == Fraction(36, 35)
    merged, _ = alg.cluster_merging(alg.identical_merge(clusters))
    assert [4, 5] in [c.members.tolist() for c in merged]


def test_seed_policy_changes_formation(con, toy):
    """Spec §4.9: seeding G1 at record 6 pairs it with 3 (per-record NCP 49/96), not 7."""
    alg, _ = _toy_algorithm(con, toy)
    c = alg._singleton(6)
    cost = alg._ncp_with_records(c, np.array([0, 1, 2, 3, 7]))
    assert frac(cost.min()) == Fraction(49, 96) and int(np.argmin(cost)) == 3
    assert frac(cost[4]) == Fraction(67, 96)


def test_delta_too_small_is_ncp_exceeded(con, toy):
    with pytest.raises(InfeasibleError, match=r"ncp_exceeded.*0\.322917"):
        anon_duck.run(con, toy.with_params(delta=0.3))
    assert not [r for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]


def test_epsilon_zero_is_suppression_exceeded(con, toy):
    with pytest.raises(InfeasibleError, match=r"suppression_exceeded: GenDiag suppressed S = 1 "):
        anon_duck.run(con, toy.with_params(epsilon=0))


def test_k3_suppresses_group_g2_and_fails_epsilon(con, toy):
    """Spec §7.4 item 6: k = 3 drops G2 = {4, 5} (Step 2); clusters {0,1,7} and {2,3,6};
    NCP 1/2; no merge (23/24 > δ); S = 9 > ε = 2; with ε = 9 the release has UL 10/6."""
    with pytest.raises(InfeasibleError, match=r"S = 9 codes"):
        anon_duck.run(con, toy.with_params(k=3))
    alg, _ = _toy_algorithm(con, toy, k=3, epsilon=9)
    groups, dropped = alg.record_grouping()
    assert sorted(dropped.tolist()) == [4, 5]
    clusters = alg.cluster_formation(groups)
    assert [c.members.tolist() for c in clusters] == [[0, 1, 7], [2, 3, 6]]
    assert frac(alg.dataset_ncp(clusters)) == Fraction(1, 2)
    result = anon_duck.run(con, toy.with_params(k=3, epsilon=9))
    assert result.verified and result.facts["merges"] == 0
    assert result.facts["suppressed_records_step2"] == 2 and frac(result.facts["ul"]) == Fraction(10, 6)
    assert sorted(release_rows(con)) == sorted([(19, 44, "Europe", "Male", "494.1")] * 3
                                               + [(28, 47, "All", "Female", "494.1")] * 3)


def test_anytime_variant_reaches_figure3(con, toy):
    """Algorithm 2 with acceptance NCP <= 0.6: merges C1+C2, then C3's best merge breaks δ and
    S = 1 <= ε, so it returns Figure 3."""
    result = anon_duck.run(con, toy.with_params(anytime=True))
    assert result.verified and release_rows(con) == expected_fig3()


def test_same_seed_same_release(con, toy):
    anon_duck.run(con, toy)
    first = con.execute("SELECT * FROM artuc_toy_release ORDER BY record").fetchall()
    anon_duck.run(con, toy)
    assert con.execute("SELECT * FROM artuc_toy_release ORDER BY record").fetchall() == first


def test_report_recomputes_ncp_and_ul_from_the_release(con, toy):
    anon_duck.run(con, toy)
    rep = anon_duck.report(con, toy)
    assert frac(rep["ncp"]) == Fraction(205, 384) and frac(rep["ul"]) == Fraction(101, 280)
    assert frac(rep["ul_gen"]) == Fraction(33, 140) and rep["suppressed_codes"] == 1
    assert set(rep["are"]) == {"W1", "W2", "W3"} and all(v is not None and v >= 0 for v in rep["are"].values())


def test_are_estimator_on_section_4_7_queries(con, toy):
    """Spec §4.7 (the [rec] expected-count estimator): C_A on Figure 3 and ARE = 13/32."""
    anon_duck.run(con, toy)
    backend = backend_for(con, toy)
    inputs = prepare(backend, toy)
    qis = uc.qi_infos(backend, toy, inputs)
    nan = np.nan
    backend.write_table(QUERIES, {
        "q": np.arange(6),
        "lo0": np.array([0, 22, nan, nan, nan, 44]), "hi0": np.array([50, 22, nan, nan, nan, 44]),
        "n1": np.array([None, None, None, None, None, "Europe"], dtype=object),
        "n2": np.array([None, "Male", "Female", None, None, None], dtype=object),
        "c1": np.array(["494.1", None, "053.20", "493.2", "458.1", None], dtype=object),
        "c2": np.array([None, None, None, "494.1", "458.21", None], dtype=object)})
    tables = {s: ("main", f"artuc_toy_{s}") for s in ("release", "tokens", "record_tokens")}
    counts = are_counts(backend, toy, inputs, tables, qis)
    assert counts["c_o"].tolist() == [6, 1, 1, 4, 1, 1]
    assert [frac(x) for x in counts["c_a"]] == [6, Fraction(1, 6), Fraction(4, 3), 3, Fraction(2, 3),
                                                Fraction(5, 16)]
    are = np.mean(np.abs(counts["c_a"] - counts["c_o"]) / counts["c_o"])
    assert frac(are) == Fraction(13, 32)
    drop_scratch(backend)


def test_baseline_pre_generalizes_to_the_boxes(con, toy):
    job = dataclasses.replace(toy, method="artuc_baseline")
    result = anon_duck.run(con, job)
    assert result.verified
    assert frac(result.facts["ncp"]) == Fraction(99, 128)     # (6 · 95/96 + 2 · 1/8) / 8
    rows = release_rows(con)
    assert {r[:4] for r in rows} == {(19, 50, "All", "All"), (51, 51, "Africa", "Male")}


def test_rmr_approximation_ignores_constraints(con, toy):
    job = dataclasses.replace(toy, method="artuc_rmr",
                              params={k: v for k, v in toy.params.items() if k != "constraint"})
    result = anon_duck.run(con, job)
    assert result.verified and [c.name for c in result.checks] == ["artuc_structure", "kkm_anonymity", "min_count"]
    assert "approximation" in result.facts["variant"]
    assert "approximation" in anon_duck.report(con, job)["note"]


# ------------------------------------------------------------------------------------------
# Issue #16 item 11a: the merge loop's shortcuts change nothing. A merged cluster's cached code
# supports are the sum of its parts' (an element-wise max would lower the UL floor's input and
# let pruning skip the best partner while the release still verified).
# ------------------------------------------------------------------------------------------
def _random_problem(con, tmp_path, seed: int, n: int = 400, k: int = 5, code_level: str = "chapter"):
    """ArtUC on an INFORMS-like sample of ``n`` records; ``code_level`` is the code constraint's
    level, so the code blocks GenDiag may generalize within (a category block holds one code)."""
    from benchmarks.generators import informs_like
    data = informs_like.generate(tmp_path / f"informs_like_{seed}", n, seed=seed)
    job = load_job(JOBS / "artuc_informs_uc1.toml")
    params = {key: v for key, v in job.params.items() if key != "epsilon_share"}
    params.update(k=k, m=2, delta=0.4, epsilon=1e12, merge_candidates=0,
                  constraint_grid={**job.params["constraint_grid"], "code_level": code_level})
    codes = dataclasses.replace(job.dataset.codes, source=dataclasses.replace(job.dataset.codes.source,
                                                                               path=data.codes))
    dataset = dataclasses.replace(job.dataset, source=dataclasses.replace(job.dataset.source, path=data.persons))
    return _toy_algorithm(con, dataclasses.replace(job, dataset=dataclasses.replace(dataset, codes=codes),
                                                   params=params))


class _CheckedSupports(dict):
    """The support cache, checking every value stored against a fresh count of the cluster's
    members' codes (clusters are looked up in ``clusters``, filled as the algorithm makes them)."""

    def __init__(self, alg: ArtUC, clusters: dict) -> None:
        super().__init__()
        self.alg, self.clusters, self.checked = alg, clusters, 0

    def __setitem__(self, cid, supports) -> None:
        if cid in self.clusters:
            members = self.clusters[cid].members
            fresh = np.bincount(np.concatenate([self.alg.codes[r] for r in members]), minlength=self.alg.block.size)
            assert np.array_equal(supports, fresh), f"cluster {cid}: cached supports differ from a fresh count"
            self.checked += 1
        super().__setitem__(cid, supports)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cached_code_supports_equal_a_fresh_count_after_every_merge(con, tmp_path, seed, monkeypatch):
    alg, _ = _random_problem(con, tmp_path, seed)
    merged: dict = {}
    real_union = alg._union

    def union(a, b):
        c = real_union(a, b)
        merged[c.cid] = c
        return c
    monkeypatch.setattr(alg, "_union", union)
    alg._support_cache = _CheckedSupports(alg, merged)
    alg.run()
    assert merged and alg._support_cache.checked >= len(merged)


@pytest.mark.parametrize("code_level", ["chapter", "category"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pruned_partner_choice_equals_a_full_scan(con, tmp_path, seed, code_level):
    """Step 20 skips partners whose UL floor exceeds the best UL found: with a floor of 0 every
    partner is scored (a full scan), and the merges must be the same ones. One-code blocks
    (category) make the floor bind: there the pruned run scores fewer unions, and the issue's
    element-wise-max mutant of the cached supports picks other partners (seeds 1 and 3)."""
    pruned, _ = _random_problem(con, tmp_path, seed, k=3, code_level=code_level)
    full, _ = _random_problem(con, tmp_path, seed, k=3, code_level=code_level)
    full._ul_floor = lambda a, b: 0
    scored = {}
    for name, alg in (("pruned", pruned), ("full", full)):
        real = alg._gendiag_many

        def counting(members, real=real, name=name):
            scored[name] = scored.get(name, 0) + len(members)
            return real(members)
        alg._gendiag_many = counting
        alg.run()
    merges = [t for t in pruned.trace if t.startswith("merge")]
    assert merges and merges == [t for t in full.trace if t.startswith("merge")]
    if code_level == "category":
        assert scored["pruned"] < scored["full"], "the floor never pruned a partner: the comparison proves nothing"
