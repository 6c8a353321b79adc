"""Method `counterfeit` on real data: UCI Adult (ARX copy, 30,162 rows) with the ARX
hierarchies, occupation as the sensitive attribute (digest §5.1). The test suite uses 4 of
the 7 QIs to stay within the time budget; docs/counterfeit.md has the 7-QI numbers.

Asserted: every release passes the independent verifier; LM ≤ h; LM and RCE of the method
are at most those of the paper's comparator (full-domain k-anonymity at the min-LM node), and
that comparator is the node the `fulldomain` method picks; the report agrees with the run.
With all 7 QIs: no h-feasible node needs as few counterfeits as the paper reports (so no RCE
reading can reach its counts), and the catalog's weights are what make the least-RCE node ignore
h (docs/counterfeit.md, "Why the paper's Adult counts are out of reach"); the docs' five (k, h)
settings all verify, with RCE rising with k, RCE and LM below the comparator's and the node
unmoved by h; and the query error (Figs. 9-10) of the method is below the comparator's, both
measured by the same SQL."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

import anon_duck
import anon_duck.api  # anon_duck.api.* below: the package loads it lazily (PEP 562)
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.inputs import prepare
from anon_duck.methods.counterfeit.classes import node_classes
from anon_duck.methods.counterfeit.comparator import comparator_node, comparator_report
from anon_duck.methods.counterfeit.measures import catalog_weight, rce
from anon_duck.methods.counterfeit.method import METHOD, lattice_inputs
from anon_duck.methods.counterfeit.release import stage_release
from anon_duck.methods.counterfeit.report import qi_entries, query_error
from anon_duck.methods.counterfeit.search import Options, algorithm1, baseline, evaluate, lattice
from anon_duck.methods.lattice import children
from anon_duck.verifiers import counterfeit as verify_counterfeit

pytestmark = pytest.mark.slow

QIS = ("age", "education", "marital_status", "race")


@pytest.fixture(scope="module")
def adult_job():
    from anon_duck.job import load_job
    from conftest import JOBS
    job = load_job(JOBS / "counterfeit_adult.toml")
    return dataclasses.replace(job, dataset=dataclasses.replace(
        job.dataset, qis=tuple(q for q in job.dataset.qis if q.column in QIS)))


@pytest.fixture(scope="module")
def comparator(adult_job):
    """Baseline node, LM and RCE (w ≡ 1) for each k, from the same frequency set."""
    import duckdb
    con = duckdb.connect()
    backend = DuckDBBackend(con)
    freq, qis = lattice_inputs(backend, adult_job, prepare(backend, adult_job), METHOD.check_params(adult_job))

    def at(k: int) -> tuple[tuple[int, ...], float, float]:
        levels, lm = baseline(freq, qis, k, tight=False)
        c = node_classes(freq, qis, levels, tight=False)
        return levels, lm, rce(c, np.zeros_like(c.real), np.ones(c.real.shape), mode="per_attribute",
                               counterfeit_term=True)
    yield at
    con.close()


@pytest.mark.parametrize("k, h", [(3, 0.3), (10, 0.3), (5, 0.25)])
def test_adult_release_verifies_and_beats_the_comparator(con, adult_job, comparator, k, h):
    job = adult_job.with_params(k=k, h=h)
    result = anon_duck.api.run(con, job)
    assert result.verified, [c for c in result.checks if not c.passed]
    f = result.facts
    base_levels, base_lm, base_rce = comparator(k)
    assert f["found_h"] <= h and f["lm"] <= h + 1e-12
    assert f["lm"] <= base_lm and f["rce"] < base_rce
    assert f["n_counterfeits"] > 0
    published = con.execute("SELECT count(*), min(c) FROM (SELECT class_id, count(*) AS c FROM adult_counterfeit_release "
                            "GROUP BY class_id)").fetchone()
    catalogued = con.execute("SELECT sum(count) FROM adult_counterfeit_catalog").fetchone()[0]
    assert published[1] >= k and catalogued == f["n_counterfeits"]
    assert con.execute("SELECT count(*) FROM adult_counterfeit_release").fetchone()[0] == 30162 + catalogued
    assert con.execute("SELECT count(*) FROM adult_counterfeit_truthful").fetchone()[0] == 30162
    report = anon_duck.api.report(con, job)
    assert report["lm"] == pytest.approx(f["lm"]) and report["dm"] == f["dm"]
    assert report["n_counterfeits"] == f["n_counterfeits"] and report["min_class"] >= k
    # RCE and LM_real re-derived in SQL from the published tables and the input agree with the run
    assert report["rce"] == pytest.approx(f["rce"]) and report["lm_real"] == pytest.approx(f["lm_real"])
    assert report["unplaced_rows"] == 0
    # the catalog's weights bring the per-attribute query error below the raw one (Fig. 9's point)
    assert all(e["catalog"] <= e["raw"] for e in report["query_error"].values())


def test_comparator_is_the_fulldomain_method(con, adult_job, comparator):
    job = dataclasses.replace(adult_job, method="fulldomain", params={"k": 5},
                              release=dataclasses.replace(adult_job.release, name="adult_fd"))
    result = anon_duck.api.run(con, job)
    assert tuple(result.facts["levels"][q] for q in QIS) == comparator(5)[0]
    assert result.facts["lm"] == pytest.approx(comparator(5)[1])


def test_adult_seven_qis_paper_setting(con):
    """k = 5, h = 0.3 (the paper's Fig. 9 setting), all 7 QIs: the numbers in docs/counterfeit.md."""
    from anon_duck.job import load_job
    from conftest import JOBS
    result = anon_duck.api.run(con, load_job(JOBS / "counterfeit_adult.toml"))
    assert result.verified
    f = result.facts
    assert f["levels"] == {"age": 4, "workclass": 0, "education": 0, "marital_status": 0, "race": 0, "sex": 0,
                           "native_country": 0}
    assert f["n_counterfeits"] == 8137 and f["n_classes"] == 2814 and f["lm"] == pytest.approx(1 / 7)
    assert f["rce"] == pytest.approx(45154.33, abs=0.01)


# The paper's counterfeit counts on Adult (Figs. 5-6 text): (k, h) -> count.
PAPER_COUNTERFEITS = {(3, 0.3): 125, (5, 0.3): 132, (10, 0.3): 103, (5, 0.25): 138, (5, 0.35): 38}


@pytest.fixture(scope="module")
def adult7_env():
    """Adult with all 7 QIs (the paper's setting), prepared once for the module: the job, its
    connection, the prepared input, the parameters, and the frequency set and level maps that
    every 7-QI test (and every (k, h) of the sweep) shares."""
    import duckdb
    from anon_duck.job import load_job
    from conftest import JOBS
    job = load_job(JOBS / "counterfeit_adult.toml")
    with duckdb.connect() as c:
        backend = DuckDBBackend(c)
        params = METHOD.check_params(job)
        inputs = prepare(backend, job)
        freq, qis = lattice_inputs(backend, job, inputs, params)
        yield SimpleNamespace(job=job, backend=backend, inputs=inputs, params=params, freq=freq, qis=qis)


@pytest.fixture(scope="module")
def adult7(adult7_env):
    """Frequency set and level maps of Adult with all 7 QIs."""
    return adult7_env.freq, adult7_env.qis


def test_no_h_feasible_node_needs_as_few_counterfeits_as_the_paper(adult7):
    """Whatever rule picks the node (any RCE reading, fewest counterfeits, most generalization),
    it picks an h-feasible node, and none of them needs as few counterfeits as the paper reports
    with the ARX hierarchies. The count ``Σ_{|E|<k} (k − |E|)`` never grows along a lattice edge
    (merging classes a, b: ``max(0, k−a−b) ≤ max(0, k−a) + max(0, k−b)``), so its minimum over
    the h-feasible down-set is at the down-set's maximal nodes; the test checks that on a few
    edges and then takes the minimum there (docs/counterfeit.md, "Adult")."""
    freq, qis = adult7

    sizes = {}

    def needed(levels, k):
        if levels not in sizes:
            sizes[levels] = node_classes(freq, qis, levels, tight=False).size
        return int(np.maximum(k - sizes[levels], 0).sum())

    dmax = {lv: float((sum(q.degree(l) for q, l in zip(qis, lv)) / len(qis)).max()) for lv in lattice(qis)}
    for lv in [(1, 0, 1, 0, 0, 0, 0), (4, 1, 2, 0, 0, 0, 1), (2, 1, 3, 1, 0, 0, 1)]:
        for child in children(lv):
            assert needed(child, 5) >= needed(lv, 5)
    floor = {}
    for (k, h), paper in PAPER_COUNTERFEITS.items():
        feasible = {lv for lv, d in dmax.items() if d <= h + 1e-12}
        maximal = [lv for lv in feasible if not any(lv[:j] + (lv[j] + 1,) + lv[j + 1:] in feasible
                                                    for j in range(len(lv)))]
        floor[k, h] = min(needed(lv, k) for lv in maximal)
        assert floor[k, h] > 2 * paper
    assert floor == {(3, 0.3): 360, (5, 0.3): 895, (10, 0.3): 2478, (5, 0.25): 1593, (5, 0.35): 442}


def test_catalog_weights_decide_the_adult_node(adult7):
    """What separates the RCE readings on Adult (k = 5): with the catalog's weights (Fig. 4, the
    default) the node that suppresses age alone, D = 1/7, beats the node that also generalizes
    education (D = 2/7, 3.2× fewer counterfeits); with every weight 1 (the catalog ignored) the
    order flips. The default's optimum lies below h = 0.25, so h does not move it."""
    freq, qis = adult7
    opt = Options(5, 0.3, False, "random", "per_attribute", True, 2)
    age, age_edu = (evaluate(freq, qis, lv, opt) for lv in [(4, 0, 0, 0, 0, 0, 0), (4, 0, 3, 0, 0, 0, 0)])
    assert (int(age.cf.sum()), int(age_edu.cf.sum())) == (8137, 2524)
    assert age.rce < age_edu.rce
    assert age.rce == pytest.approx(rce(age.classes, age.cf, catalog_weight(age.classes, age.cf, age.catalog),
                                        mode="per_attribute", counterfeit_term=True))

    def unweighted(r):
        return rce(r.classes, r.cf, np.ones(r.cf.shape), mode="per_attribute", counterfeit_term=True)
    assert unweighted(age) > unweighted(age_edu)


# docs/counterfeit.md, "Real data: Adult" table (7 QIs, seed 2): (k, h) -> (counterfeits, RCE) of the
# method; k -> (LM, RCE) of the comparator (full-domain k-anonymity at the min-LM node, RCE at w = 1).
DOCS_METHOD = {(3, 0.3): (3676, 38802), (5, 0.3): (8137, 45154), (10, 0.3): (20268, 58133),
               (5, 0.25): (8137, 45154), (5, 0.35): (8137, 45154)}
DOCS_COMPARATOR = {3: (0.624, 135257), 5: (0.633, 133859), 10: (0.633, 133859)}


def _quiet(phase: str, done: int, total: int) -> None:
    return None


def test_adult_seven_qis_k_and_h_sweep(adult7_env):
    """The five (k, h) settings of the docs' Adult table (Figs. 5-8: k in {3, 5, 10} at h = 0.3,
    h in {0.25, 0.35} at k = 5), all 7 QIs, one shared frequency set: every release passes the
    independent verifier; LM and Dmax stay within h; RCE rises with k (Fig. 7); the method's RCE
    and LM are below the comparator's at every setting (Figs. 5, 7); and, under the digest's RCE
    (catalog weights), the chosen node is the same for every h (docs: "Why h does not move the
    chosen node"), unlike the paper's Figs. 6/8. The docs' numbers are pinned."""
    env = adult7_env
    chosen = {}
    for k, h in [setting for setting in DOCS_METHOD if setting != (5, 0.3)]:
        opt = Options(k, h, False, "random", "per_attribute", True, env.job.release.seed)
        best = algorithm1(env.freq, env.qis, opt, _quiet).best
        tables = stage_release(env.backend, env.job, env.inputs, env.freq, env.qis, best, tight=False)
        checks = verify_counterfeit.audit(env.backend, env.job, **tables, k=k, h=h, domain=dict(env.params.domain))
        assert all(c.passed for c in checks), (k, h, [(c.name, c.n_violations) for c in checks if not c.passed])
        assert best.classes.dmax <= h + 1e-12 and best.lm <= h + 1e-12
        assert best.lm == pytest.approx(1 / 7)                        # docs: LM 0.143 at every setting
        assert (best.catalog.n_counterfeits, round(best.rce)) == DOCS_METHOD[k, h]
        chosen[k, h] = best
    # k = 5, h = 0.3 needs no walk of its own (test_adult_seven_qis_paper_setting runs it end to
    # end): its h-feasible nodes hold those of h = 0.25 and lie among those of h = 0.35, whose walk
    # chose a node feasible at 0.25, the node the walk at 0.25 chose. Algorithm 1 takes the least
    # RCE over the h-feasible nodes (ties: the first visited), so the walk at 0.3 chooses it too
    assert chosen[5, 0.35].classes.levels == chosen[5, 0.25].classes.levels
    chosen[5, 0.3] = chosen[5, 0.25]
    comparator = {k: comparator_node(env.freq, env.qis, dataclasses.replace(env.params, k=k)) for k in (3, 5, 10)}
    for k, c in comparator.items():
        assert (round(c.lm, 3), round(c.rce)) == DOCS_COMPARATOR[k] and c.cf.sum() == 0
        assert c.classes.size.min() >= k
    assert chosen[3, 0.3].rce < chosen[5, 0.3].rce < chosen[10, 0.3].rce
    for (k, h), best in chosen.items():
        assert best.rce < comparator[k].rce and best.lm < comparator[k].lm
    assert {chosen[5, h].classes.levels for h in (0.25, 0.3, 0.35)} == {(4, 0, 0, 0, 0, 0, 0)}


def _staged_errors(env, job, params, freq, qis, best):
    """Stage ``best`` (scratch) and measure its per-QI query error with the report's SQL; the
    comparator at the same k with the same SQL on the same frequency set."""
    tables = stage_release(env.backend, job, env.inputs, freq, qis, best, tight=False)
    ours = {q["column"]: query_error(env.backend, env.inputs.person, job.dataset.sensitive, q, **tables)
            for q in qi_entries(env.backend, job, params.domain)}
    return ours, comparator_report(env.backend, job, env.inputs, params, freq, qis)


def test_adult_query_error_below_the_comparator_fig_9(adult7_env):
    """Fig. 9's setting (k = 5, h = 0.3, 7 QIs; the node the sweep test shows Algorithm 1
    picks): with the catalog's weights the mean query error over the QIs is far below the
    comparator's, and on marital status (the paper's example: ≈300% for k-anonymity, "reduced
    by half") it is less than half of it. Not reproduced: the paper's Sex error of 0. Sex and
    race are not generalized by either release, so the comparator's error there is 0, but the
    counterfeits spread over the values make ours positive (docs/counterfeit.md, "Query error")."""
    env = adult7_env
    opt = Options(5, 0.3, False, "random", "per_attribute", True, env.job.release.seed)
    best = evaluate(env.freq, env.qis, (4, 0, 0, 0, 0, 0, 0), opt)
    ours, comp = _staged_errors(env, env.job, env.params, env.freq, env.qis, best)
    theirs = comp.query_error
    assert comp.levels == (4, 2, 3, 1, 0, 0, 2)

    def mean(errors, key):
        return sum(e[key] for e in errors.values()) / len(errors)
    assert mean(ours, "catalog") < mean(ours, "truthful") < mean(ours, "raw") < mean(theirs, "raw")
    assert ours["marital_status"]["catalog"] < theirs["marital_status"]["raw"] / 2
    assert ours["marital_status"]["raw"] < theirs["marital_status"]["raw"] / 2
    # age is suppressed in both: the catalog's weights give each value its real total, spread alike
    assert ours["age"]["catalog"] == pytest.approx(theirs["age"]["raw"])
    assert theirs["sex"]["raw"] == theirs["race"]["raw"] == 0 < ours["sex"]["catalog"] < ours["sex"]["raw"]


def test_adult_query_error_below_the_comparator_fig_10(adult7_env):
    """Fig. 10: query error against the number of QIs (prefixes of the 7 in the job's order,
    k = 5, h = 0.3; the paper does not say which attributes it adds). Ours (catalog weights,
    mean over the QIs) stays below the comparator's; the docs list 3-7 QIs, the test checks 3
    and 5 (the walks there take seconds, the 6- and 7-QI ones tens of seconds)."""
    env = adult7_env
    for n in (3, 5):
        job = dataclasses.replace(env.job, dataset=dataclasses.replace(env.job.dataset, qis=env.job.dataset.qis[:n]))
        params = METHOD.check_params(job)
        freq, qis = lattice_inputs(env.backend, job, env.inputs, params)
        opt = Options(5, 0.3, False, "random", "per_attribute", True, job.release.seed)
        best = algorithm1(freq, qis, opt, _quiet).best
        ours, comp = _staged_errors(env, job, params, freq, qis, best)
        mean_ours = sum(e["catalog"] for e in ours.values()) / n
        mean_theirs = sum(e["raw"] for e in comp.query_error.values()) / n
        assert mean_ours < mean_theirs / 5, (n, mean_ours, mean_theirs)
