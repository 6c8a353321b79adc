"""fulldomain with l-diversity and t-closeness (issue #32 part 2): the lattice search treats
them as further predicates on a node, as ARX does. The node it publishes is the one an
exhaustive search over every lattice node finds, with the models computed in plain Python
(tests/privacy_brute.py) on the raw rows, on the toy and on small random tables; the release
passes the verifiers and the brute-force checks."""
from __future__ import annotations

import itertools
import math
from collections import Counter

import duckdb
import numpy as np
import pytest

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import InfeasibleError, JobError
from anon_duck.inputs import prepare
from anon_duck.job import parse_job
from anon_duck.methods import fulldomain
from anon_duck.sqlrender import render

from privacy_brute import classes, l_violates, t_violates


def _exhaustive(job, k: int, limit: float, ld: dict | None, t: float | None, ordered: bool):
    """(LM, levels, suppressed) of the best acceptable node over the whole lattice: a class is
    acceptable with >= k rows and the models; a node when its unacceptable classes hold at most
    floor(limit * n) rows; least LM, then height, then level vector."""
    con = duckdb.connect()
    b = DuckDBBackend(con)
    inputs = prepare(b, job)
    qis = [q.column for q in job.dataset.qis]
    s_col = job.dataset.sensitive
    rows = con.execute(render("fulldomain/frequency_set.sql.j2", relation=inputs.person, qis=qis,
                              sensitive=s_col)).fetchall()
    maps = [fulldomain._level_map(b, q.hierarchy, np.array([r[i] for r in rows], dtype=object))
            for i, q in enumerate(job.dataset.qis)]
    records = [(i, r[len(qis)]) for i, r in enumerate(rows) for _ in range(r[-1])]    # (freq row, s) per record
    n = len(records)
    reference = Counter(s for _, s in records)
    budget = math.floor(limit * n + 1e-9)
    best = None
    for node in itertools.product(*(range(m.node_ids.shape[0]) for m in maps)):
        keyed = [{"key": tuple(int(m.node_ids[lvl][i]) for m, lvl in zip(maps, node)), "s": s} for i, s in records]
        groups = classes(keyed, ["key"], "s")
        bad = {key for key, counts in groups.items()
               if sum(counts.values()) < k
               or (ld and l_violates(counts, ld["kind"], ld["l"], ld.get("c")))
               or (t is not None and t_violates(counts, reference, t, ordered))}
        suppressed = sum(sum(groups[key].values()) for key in bad)
        if suppressed > budget:
            continue
        kept = [i for i, _ in records if (tuple(int(m.node_ids[lvl][i]) for m, lvl in zip(maps, node)),) not in bad]
        lm = float(np.mean([(sum(m.lm_terms[lvl][i] for i in kept) + suppressed) / n for m, lvl in zip(maps, node)]))
        cand = (round(lm, 12), sum(node), node, suppressed)
        if best is None or cand[:3] < best[:3]:
            best = cand
    con.close()
    return best


def _run_and_compare(con, job, want):
    """Run the job; its node, LM and suppressed count are the exhaustive search's ``want``
    (None: no node qualifies, and the run says so). Returns the run's result (or None)."""
    if want is None:
        with pytest.raises(InfeasibleError):
            anon_duck.run(con, job)
        return None
    result = anon_duck.run(con, job)
    levels = tuple(result.facts["levels"][q.column] for q in job.dataset.qis)
    assert (round(result.facts["lm"], 12), levels, result.facts.get("suppressed", 0)) == (want[0], want[2], want[3])
    assert result.verified
    return result


TOY_MODELS = [
    ({"kind": "distinct", "l": 2}, None, 0.0),
    ({"kind": "entropy", "l": 2}, None, 0.0),
    ({"kind": "recursive", "l": 2, "c": 2}, None, 0.0),
    (None, 0.3, 0.0),
    ({"kind": "distinct", "l": 3}, 0.25, 0.0),
    ({"kind": "entropy", "l": 2}, 0.2, 0.25),
    ({"kind": "recursive", "l": 3, "c": 1}, None, 0.34),
]


@pytest.mark.parametrize("ld, t, limit", TOY_MODELS)
def test_toy_node_is_the_exhaustive_searchs(job_file, ld, t, limit):
    params = {"k": 2, "suppression_limit": limit} | ({"l_diversity": ld} if ld else {}) | (
        {"t_closeness": t} if t is not None else {})
    job = job_file("toy_fulldomain.toml").with_params(**params)
    con = duckdb.connect()
    result = _run_and_compare(con, job, _exhaustive(job, 2, limit, ld, t, ordered=False))
    if result is None:
        return
    names = [c.name for c in result.checks]
    assert ("l_diversity" in names) == bool(ld) and ("t_closeness" in names) == (t is not None)
    release = [dict(zip(("disease", "age", "age_lo", "age_hi", "sex", "zip"), r))
               for r in con.execute("SELECT * FROM toy_k2_release").fetchall()]
    groups = classes(release, ["age", "sex", "zip"], "disease")
    reference = Counter(r[0] for r in con.execute(
        "SELECT disease FROM read_csv('fixtures/toy/patients.csv')").fetchall())
    for counts in groups.values():
        assert sum(counts.values()) >= 2
        assert not (ld and l_violates(counts, ld["kind"], ld["l"], ld.get("c")))
        assert not (t is not None and t_violates(counts, reference, t, ordered=False))


def _random_job(tmp_path, seed: int, numeric_sensitive: bool, method: str) -> str:
    rng = np.random.default_rng(seed)
    n = 36
    ages, zips = rng.integers(20, 60, n), rng.integers(100, 108, n)
    sexes = rng.choice(["F", "M"], n)
    sens = rng.choice([1, 2, 3, 5, 8], n, p=[.4, .2, .2, .1, .1]) if numeric_sensitive else \
        rng.choice(["flu", "hiv", "copd", "cancer"], n, p=[.4, .3, .2, .1])
    path = tmp_path / f"t{seed}.csv"
    path.write_text("pid,age,zip,sex,s\n" + "".join(f"{i},{a},{z},{x},{s}\n" for i, (a, z, x, s) in
                                                   enumerate(zip(ages, zips, sexes, sens))))
    return f"""
[input]
path = "{path}"
id = "pid"
sensitive = "s"
[[input.qi]]
column = "age"
kind = "numeric"
hierarchy = "age"
[[input.qi]]
column = "zip"
kind = "numeric"
hierarchy = "zip"
[[input.qi]]
column = "sex"
hierarchy = "sex"
[hierarchy.age]
type = "interval"
width = 5
dyadic = true
lo = 20
hi = 59
[hierarchy.zip]
type = "interval"
width = 2
dyadic = true
lo = 100
hi = 107
[hierarchy.sex]
type = "mask"
[method]
name = "{method}"
k = 3
[release]
name = "r"
"""


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ld, t, ordered, limit", [
    ({"kind": "entropy", "l": 2}, 0.3, False, 0.1),
    ({"kind": "recursive", "l": 2, "c": 3}, None, False, 0.0),
    ({"kind": "distinct", "l": 2}, 0.25, True, 0.15),
])
def test_random_tables_node_is_the_exhaustive_searchs(tmp_path, seed, ld, t, ordered, limit):
    job = parse_job(_random_job(tmp_path, seed, ordered, "fulldomain"))
    params = {"suppression_limit": limit, "l_diversity": ld} | ({"t_closeness": t, "t_distance": "ordered"
                                                                  if ordered else "equal"} if t is not None else {})
    job = job.with_params(**params)
    _run_and_compare(duckdb.connect(), job, _exhaustive(job, 3, limit, ld, t, ordered))


def test_model_keys_are_checked_naming_the_key(job_file):
    job = job_file("toy_fulldomain.toml")
    with pytest.raises(JobError, match=r"method.l_diversity.kind = 'alpha'"):
        fulldomain.METHOD.check_params(job.with_params(l_diversity={"kind": "alpha", "l": 2}))
    with pytest.raises(JobError, match=r"method.l_diversity.c = None: recursive"):
        fulldomain.METHOD.check_params(job.with_params(l_diversity={"kind": "recursive", "l": 2}))
    with pytest.raises(JobError, match=r"method.t_closeness = 1.5: must be <= 1"):
        fulldomain.METHOD.check_params(job.with_params(t_closeness=1.5))
    with pytest.raises(JobError, match=r"method.l_diversity.l = 0"):
        fulldomain.METHOD.check_params(job.with_params(l_diversity={"l": 0}))
