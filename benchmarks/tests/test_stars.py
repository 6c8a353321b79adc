"""benchmarks/utility/stars.py: the released events by kind recomputed by brute force in Python
(from the release's events, the input's codes and the code tree), a top concept above every
code counted as ``*``, and the diagnostic scans doing what they claim on a constructed pool."""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from statistics import fmean

import duckdb
import numpy as np
import pytest

from anon_duck import api
from anon_duck.hierarchy import read_builtin_rows
from anon_duck.job import load_job
from anon_duck.methods.longitudinal.costs import CostModel, build_dgh
from anon_duck.methods.longitudinal.mdav import Pool, Trajectories
from benchmarks.cases import connect
from benchmarks.generators.omop_cdm import Shape, generate
from benchmarks.utility import cases as utility
from benchmarks.utility import stars

REPO = Path(__file__).resolve().parents[2]
TINY = Shape(persons=200, events=10, concepts=60, depth=3, poly=0.2, seed=7)


def _events(con, job):
    return con.execute(f'SELECT code, age_lo, age_hi FROM "{job.release.name}_events"').fetchall()


def _brute_kinds(events, used, parent):
    """(kind, g, depth, age width) of each released event, walking ``parent`` up from the used codes."""
    under = defaultdict(set)
    for code in used:
        node = code
        while node:
            under[node].add(code)
            node = parent.get(node)

    def depth(node):
        return 0 if not parent.get(node) else 1 + depth(parent[node])

    out = []
    for code, lo, hi in events:
        g = len(under[code])
        kind = "star" if g == len(used) else "exact" if code in used else "internal"
        out.append((kind, g, depth(code), hi - lo + 1))
    return out


def _check(kinds, rows):
    assert kinds["released_events"] == len(rows)
    for kind in stars.KINDS:
        mine = [r for r in rows if r[0] == kind]
        assert kinds[f"events_{kind}"] == pytest.approx(len(mine) / len(rows))
        assert kinds[f"g_{kind}"] == (pytest.approx(fmean(r[1] for r in mine)) if mine else None)
        assert kinds[f"age_width_{kind}"] == (pytest.approx(fmean(r[3] for r in mine)) if mine else None)


def test_event_kinds_by_brute_force_on_mimic():
    """The MIMIC demo job (ICD-9 categories, 17 chapters under the root): every share, mean g and
    age width from the release's events and the built-in tree."""
    job = load_job(REPO / "fixtures" / "jobs" / "longitudinal_mimic.toml")
    con = connect()
    assert api.run(con, job).verified
    kinds = stars.event_kinds(con, job)
    used = {c for (c,) in duckdb.sql(f"SELECT DISTINCT code FROM '{REPO / 'fixtures' / 'mimic_demo' / 'events.parquet'}'"
                                     ).fetchall()}
    parent = {r["node"]: r["parent"] for r in read_builtin_rows("icd9cm")}
    rows = _brute_kinds(_events(con, job), used, parent)
    _check(kinds, rows)
    assert {r[0] for r in rows} >= {"star", "internal"}
    assert kinds["input_events"] == 2022
    tree = {t["depth"]: t for t in kinds["tree"]}
    assert tree[0]["mean_g"] == len(used) and tree[1]["nodes"] == 17


def test_a_top_concept_above_every_code_is_a_star(tmp_path):
    """On the generated CDM the derived tree has one top concept under ``*``: an event shown as
    that concept says no more than ``*`` and is counted with it."""
    cdm = generate(tmp_path / "cdm", TINY)
    con = connect()
    job = utility.utility_job("longitudinal", 5, 1.0, folder=cdm)
    assert api.run(con, job).verified
    kinds = stars.event_kinds(con, job)
    ancestors = duckdb.sql(f"SELECT ancestor_concept_id, descendant_concept_id, min_levels_of_separation "
                           f"FROM '{cdm / 'concept_ancestor.parquet'}'").fetchall()
    children = {str(d) for _, d, lvl in ancestors if lvl >= 1}
    tops = {str(a) for a, _, _ in ancestors} - children
    assert len(tops) == 1
    events = _events(con, job)
    as_root = [code for code, _, _ in events if code in tops or code == "*"]
    assert as_root and kinds["events_star"] == pytest.approx(len(as_root) / len(events))
    tree = {t["depth"]: t for t in kinds["tree"]}
    assert tree[1]["nodes"] == 1 and tree[1]["mean_g"] == tree[0]["mean_g"]


def _pool() -> tuple[Pool, np.ndarray, np.ndarray]:
    """Codes: root 0 -> A 1, B 2; A -> a1 3, a2 4; B -> b1 5, b2 6. Ages: root 0 -> 1, 2.
    X = (a1, 1). Value 0 = (b1, 2): A-GS total 2 (one GEN to both roots), 1 per pair;
    value 1 = (a1, 1) (a2, 1) (a2, 1) (a2, 1): total 3 (three suppressions), 0.6 per pair."""
    code_parent = np.array([-1, 0, 0, 1, 1, 2, 2])
    code_leaf = np.array([False, False, False, True, True, True, True])
    code_n = np.array([4, 2, 2, 1, 1, 1, 1])
    icd = build_dgh(np.arange(7), code_parent, code_n, code_leaf, "c0")
    age = build_dgh(np.arange(3), np.array([-1, 0, 0]), np.array([2, 1, 1]), np.array([False, True, True]), "c0")
    model = CostModel.create(icd, age, Fraction(1, 2), Fraction(1, 2))
    traj = np.array([0, 1, 1, 1, 1])
    seq = np.array([0, 0, 1, 2, 3])
    trajs = Trajectories.from_pairs(traj, seq, np.array([5, 3, 4, 4, 4]), np.array([2, 1, 1, 1, 1]), np.array([0, 1]))
    return Pool(model, trajs, "ags"), np.array([3]), np.array([1])


def test_per_pair_scan_reverses_the_papers_choice_on_a_constructed_pool():
    pool, xc, xa = _pool()
    assert pool.farthest(xc, xa) == 1 and pool.nearest(xc, xa) == 0          # by the total (3 > 2)
    with stars.scan_variant("per_pair"):
        assert pool.farthest(xc, xa) == 0 and pool.nearest(xc, xa) == 1      # by the total per pair (1 > 0.6)
    assert pool.farthest(xc, xa) == 1 and pool.nearest(xc, xa) == 0          # restored


@pytest.mark.parametrize("scan", stars.SCANS)
def test_every_scan_releases_a_verified_release(scan):
    """k-anonymity holds by construction whatever MDAV' picks; ``paper`` is the method's own run."""
    job = load_job(REPO / "fixtures" / "jobs" / "longitudinal_toy.toml")
    plain = connect()
    api.run(plain, job)
    con = connect()
    with stars.scan_variant(scan):
        assert api.run(con, job).verified
    if scan == "paper":
        assert sorted(_events(con, job)) == sorted(_events(plain, job))


def test_retention_counts_a_code_shown_only_as_the_top_concept_as_dropped(tmp_path):
    """``<release>_retention``: a person whose code the release shows only as the single top
    concept (above every code, so as little as ``*``) is dropped, not generalized. Checked per
    code from the release alone: a code with no shown ancestor below the top (by
    concept_ancestor, a superset of the derived tree's ancestors) has persons_generalized = 0."""
    cdm = generate(tmp_path / "cdm", TINY)
    con = connect()
    job = utility.utility_job("longitudinal", 5, 1.0, folder=cdm)
    job = dataclasses.replace(job, release=dataclasses.replace(job.release, retention_min_persons=1))
    assert api.run(con, job).verified
    ancestors = duckdb.sql(f"SELECT ancestor_concept_id, descendant_concept_id, min_levels_of_separation "
                           f"FROM '{cdm / 'concept_ancestor.parquet'}'").fetchall()
    children = {str(d) for _, d, lvl in ancestors if lvl >= 1}
    tops = {str(a) for a, _, _ in ancestors} - children
    above = defaultdict(set)
    for a, d, lvl in ancestors:
        if lvl >= 1 and str(a) not in tops:
            above[str(d)].add(str(a))
    shown = {code for code, _, _ in _events(con, job)}
    rows = con.execute(f'SELECT code, persons_input, persons_exact, persons_generalized, persons_dropped '
                       f'FROM "{job.release.name}_retention" WHERE code IS NOT NULL').fetchall()
    only_top = [r for r in rows if not above[r[0]] & shown and r[1] > r[2]]
    assert only_top                                   # the case the rule is about occurs
    for code, n, exact, generalized, dropped in only_top:
        assert generalized == 0 and dropped == n - exact, code
    assert all((exact > 0) <= (code in shown) for code, _, exact, _, _ in rows)
