"""``[input.omop] parent_rule = "cooccurrence"`` (#32 item 4): the parent each concept of a
polyhierarchy keeps, recomputed by brute force in Python on small random DAGs and conditions;
a release with the rule verifies; a bad value is refused by name."""
from __future__ import annotations

import csv
import random
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck.api import backend_for
from anon_duck.errors import JobError
from anon_duck.inputs import prepare
from anon_duck.job import job_from_dict

from conftest import FIXTURES

DAG = FIXTURES / "omop_dag"


def _write(folder: Path, table: str, rows: list[dict]) -> None:
    with open(folder / f"{table}.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def random_cdm(folder: Path, seed: int) -> tuple[dict[int, dict[int, tuple[int, int]]], dict[int, set[int]]]:
    """A random polyhierarchy (levels of concepts, each below 1-3 concepts of the levels above)
    with its concept_ancestor closure, and random condition sets; returns the closure
    (descendant -> ancestor -> (min, max) levels, self included) and each person's codes."""
    rng = random.Random(seed)
    levels = [[1000 + i for i in range(rng.randint(1, 3))]]
    for depth in range(1, rng.randint(3, 5)):
        levels.append([1000 + 100 * depth + i for i in range(rng.randint(3, 7))])
    parents: dict[int, list[int]] = {c: [] for c in levels[0]}
    for depth, level in enumerate(levels[1:], 1):
        above = [c for lv in levels[:depth] for c in lv]
        for c in level:
            parents[c] = rng.sample(above, min(len(above), rng.choice((1, 2, 2, 3))))
    closure: dict[int, dict[int, tuple[int, int]]] = {}
    for c in (c for lv in levels for c in lv):          # top-down: parents' closures are known
        up = {c: (0, 0)}
        for p in parents[c]:
            for a, (lo, hi) in closure[p].items():
                old = up.get(a)
                up[a] = (lo + 1, hi + 1) if old is None else (min(old[0], lo + 1), max(old[1], hi + 1))
        closure[c] = up
    concepts = [c for lv in levels for c in lv]
    held = {pid: set(rng.sample(concepts, rng.randint(1, 5))) for pid in range(1, rng.randint(8, 20))}
    _write(folder, "person", [{"person_id": pid, "gender_concept_id": 8507, "year_of_birth": 1950 + pid,
                               "race_concept_id": 8527, "ethnicity_concept_id": 38003564, "location_id": ""}
                              for pid in held])
    _write(folder, "concept", [{"concept_id": c, "concept_name": f"c{c}", "domain_id": "Condition",
                                "vocabulary_id": "X"} for c in concepts])
    _write(folder, "concept_ancestor", [{"ancestor_concept_id": a, "descendant_concept_id": d,
                                         "min_levels_of_separation": lo, "max_levels_of_separation": hi}
                                        for d, up in closure.items() for a, (lo, hi) in up.items()])
    _write(folder, "condition_occurrence", [
        {"condition_occurrence_id": i, "person_id": pid, "condition_concept_id": c,
         "condition_start_date": f"2020-01-{i % 28 + 1:02d}"}
        for i, (pid, c) in enumerate(((pid, c) for pid, codes in held.items() for c in sorted(codes)), 1)])
    return closure, held


def brute_force_parents(closure: dict[int, dict[int, tuple[int, int]]], held: dict[int, set[int]],
                        rule: str = "cooccurrence") -> dict[int, tuple[int | None, str | None]]:
    """The rule, computed directly: for each concept of the tree (used codes and their ancestors)
    with several direct parents, the parent P maximizing the number of (person, code) pairs with
    the code at or below P but not at or below the concept, and (``cooccurrence``) the person
    holding a code at or below the concept, or (``frequency``) any person; then the deeper P
    (longest path from the top); then the smaller id. And which of the three decided (None: one
    parent or none; a decision by the score is named ``cooccurrence`` for both rules)."""
    below = {a: {d for d, up in closure.items() if a in up} for a in closure}
    used = set().union(*held.values())
    nodes = {a for c in used for a in closure[c]}
    depth = {c: max(hi for _, hi in closure[c].values()) for c in closure}
    out: dict[int, tuple[int | None, str | None]] = {}
    for c in nodes:
        direct = [a for a, (lo, _) in closure[c].items() if lo == 1]
        if not direct:
            out[c] = (None, None)
            continue
        holders = [codes for codes in held.values() if rule == "frequency" or codes & below[c]]
        score = {p: sum(len(codes & (below[p] - below[c])) for codes in holders) for p in direct}
        ranked = sorted(direct, key=lambda p: (-score[p], -depth[p], p))
        first = ranked[0]
        if len(ranked) == 1:
            out[c] = (first, None)
        else:
            second = ranked[1]
            out[c] = (first, "cooccurrence" if score[first] > score[second] else
                      "depth" if depth[first] > depth[second] else "concept_id")
    return out


def omop_job(folder: Path, method: str = "disassociation", **omop):
    params = {"disassociation": {"k": 2, "m": 2}, "longitudinal": {"k": 2}}[method]
    return job_from_dict({"input": {"omop": {"path": str(folder), **omop}}, "method": {"name": method, **params},
                          "release": {"name": "r"}})


@pytest.mark.parametrize("rule", ["cooccurrence", "frequency"])
def test_the_kept_parent_is_the_brute_force_one_on_random_dags(tmp_path, rule):
    decided_by: dict[str, int] = defaultdict(int)
    for seed in range(12):
        folder = tmp_path / str(seed)
        folder.mkdir()
        closure, held = random_cdm(folder, seed)
        con = duckdb.connect()
        job = omop_job(folder, parent_rule=rule)
        inputs = prepare(backend_for(con, job), job)
        got = {int(node): (int(parent) if parent is not None else None, why) for node, parent, why in con.execute(
            "SELECT node, parent, tie_break FROM temp.main._ad_omop_parent").fetchall()}
        expected = brute_force_parents(closure, held, rule)
        assert got == expected, seed
        # inspect counts the concepts of the code tree: the used codes and their kept parents' chains
        tree, todo = set(), set().union(*held.values())
        while todo:
            tree |= todo
            todo = {expected[c][0] for c in todo if expected[c][0] is not None} - tree
        deciders = [expected[c][1] for c in tree]
        for why in deciders:
            decided_by[why or "one parent"] += 1
        assert inputs.omop["several_parents_decided_by"] == {
            "cooccurrence": deciders.count("cooccurrence"), "depth": deciders.count("depth"),
            "smallest_concept_id": deciders.count("concept_id")}, seed
    # the random DAGs exercise each deciding rule, so a rule the SQL ignored would fail above
    assert min(decided_by[r] for r in ("cooccurrence", "depth", "concept_id")) >= 1, dict(decided_by)


def test_the_rule_moves_hypertensive_heart_disease_on_the_fixture():
    """fixtures/omop_dag: four persons hold Hypertensive heart disease; two also hold its parent
    Hypertensive disorder, none a Heart disease code beside it: co-occurrence keeps Hypertensive
    disorder where depth (a tie) kept the smaller id, Heart disease."""
    con = duckdb.connect()
    job = omop_job(DAG, parent_rule="cooccurrence")
    inputs = prepare(backend_for(con, job), job)
    parent = dict(con.execute("SELECT node, parent FROM temp.main._ad_omop_parent").fetchall())
    assert parent["4000012"] == "4000013" and parent["4000008"] == "4000004" and parent["4000007"] == "4000006"
    assert inputs.omop["several_parents_decided_by"] == {"cooccurrence": 3, "depth": 1, "smallest_concept_id": 0}


def test_a_release_with_the_rule_verifies():
    with duckdb.connect() as con:
        result = anon_duck.run(con, omop_job(DAG, "longitudinal", parent_rule="cooccurrence"))
    assert result.verified and result.checks


@pytest.mark.parametrize("value", ["deepest", "", 1, ["depth"]])
def test_a_bad_rule_is_refused_by_name(value):
    with pytest.raises(JobError, match=r"input\.omop\.parent_rule = .*: one of 'depth', 'cooccurrence'"):
        omop_job(DAG, parent_rule=value)
