"""The CDM-shaped generator of issue #31 (tests/omop_cdm_shape.py): same arguments, same bytes;
the shape it promises; and a folder that ``[input.omop]`` reads."""
from __future__ import annotations

import csv
from collections import Counter

import duckdb

import anon_duck
from anon_duck.job import parse_job

from omop_cdm_shape import LOCAL_IDS, generate_omop_cdm, level_sizes


def _rows(folder, table):
    with open(folder / f"{table}.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_same_seed_same_bytes_other_seed_other_events(tmp_path):
    a = generate_omop_cdm(tmp_path / "a", 50, events_per_person=20, concepts=120, seed=3)
    b = generate_omop_cdm(tmp_path / "b", 50, events_per_person=20, concepts=120, seed=3)
    c = generate_omop_cdm(tmp_path / "c", 50, events_per_person=20, concepts=120, seed=4)
    names = sorted(p.name for p in a.iterdir())
    assert names == ["concept.csv", "concept_ancestor.csv", "condition_occurrence.csv", "person.csv"]
    assert all((a / n).read_bytes() == (b / n).read_bytes() for n in names)
    assert (a / "condition_occurrence.csv").read_bytes() != (c / "condition_occurrence.csv").read_bytes()


def test_the_shape(tmp_path):
    out = generate_omop_cdm(tmp_path / "cdm", 400, events_per_person=30, concepts=300, depth=4,
                            polyhierarchy=0.2, zipf=1.1, seed=1)
    assert level_sizes(300, 4) == [5, 18, 73, 300]          # fan-out 300 ** (1/4) ~ 4.16, rounded up
    persons, events = _rows(out, "person"), _rows(out, "condition_occurrence")
    assert len(persons) == 400 and all(1930 <= int(p["year_of_birth"]) <= 2005 for p in persons)
    per_person = Counter(e["person_id"] for e in events)
    assert len(per_person) == 400 and 28 <= len(events) / 400 <= 32
    assert all("2010-01-01" <= e["condition_start_date"] <= "2019-12-31" for e in events)
    leaves = {int(c["concept_id"]) for c in _rows(out, "concept") if c["concept_class_id"] == "Level 4"}
    assert len(leaves) == 300 and {int(e["condition_concept_id"]) for e in events} <= leaves
    ranked = [n for _, n in Counter(e["condition_concept_id"] for e in events).most_common()]
    assert ranked[0] > 10 * ranked[len(ranked) // 2]          # Zipf: a few codes are very common
    ancestors = _rows(out, "concept_ancestor")
    parents = Counter(int(r["descendant_concept_id"]) for r in ancestors if r["min_levels_of_separation"] == "1")
    non_top = sum(level_sizes(300, 4)[1:])
    assert len(parents) == non_top and 0.1 < sum(n == 2 for n in parents.values()) / non_top < 0.3
    assert all(int(r["max_levels_of_separation"]) <= 3 for r in ancestors)
    assert min(leaves) > LOCAL_IDS


def test_input_omop_reads_it(tmp_path):
    generate_omop_cdm(tmp_path / "cdm", 60, events_per_person=10, concepts=50, seed=2)
    job = parse_job(f"""
[input.omop]
path = "{tmp_path / 'cdm'}"
[method]
name = "disassociation"
k = 3
m = 2
[release]
name = "cdm_dis"
""", base_dir=tmp_path)
    con = duckdb.connect()
    result = anon_duck.run(con, job)
    assert result.facts["records"] == 60 and anon_duck.verify(con, job)[-1].passed
