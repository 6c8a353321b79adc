"""The OMOP-shaped generator (benchmarks/generators/omop_cdm.py): the shape issue #31 names,
the same tables for the same seed, and an export that anon_duck reads as it arrives."""
from __future__ import annotations

import dataclasses

import duckdb
import pytest

import anon_duck
from anon_duck.job import parse_job
from benchmarks.generators.omop_cdm import TABLES, Shape, generate

SMALL = Shape(persons=400, events=30, concepts=300, depth=4, poly=0.2, seed=3)


def _read(folder, table, suffix="parquet"):
    return duckdb.sql(f"SELECT * FROM '{folder / table}.{suffix}'")


def test_the_shape_is_the_one_asked_for(tmp_path):
    out = generate(tmp_path / "cdm", SMALL)
    events = _read(out, "condition_occurrence")
    per_person = duckdb.sql("SELECT count(*) AS n FROM events GROUP BY person_id").fetchall()
    assert len(per_person) == 400 and {n for (n,) in per_person} <= set(range(12, 49))   # 0.4-1.6 x 30
    assert 25 <= sum(n for (n,) in per_person) / 400 <= 35
    leaves = duckdb.sql("SELECT count(*) FROM (SELECT DISTINCT condition_concept_id FROM events)").fetchall()[0][0]
    assert 100 < leaves <= 300
    top = duckdb.sql("SELECT count(*) AS n FROM events GROUP BY condition_concept_id ORDER BY n DESC").fetchall()
    assert top[0][0] > 10 * top[len(top) // 2][0]                        # Zipf: a head and a long tail
    ancestors = _read(out, "concept_ancestor")
    depth = duckdb.sql("SELECT max(max_levels_of_separation) FROM ancestors").fetchall()[0][0]
    assert depth == SMALL.depth - 1
    two_parents = duckdb.sql("SELECT count(*) FROM (SELECT descendant_concept_id FROM ancestors "
                             "WHERE min_levels_of_separation = 1 GROUP BY 1 HAVING count(*) = 2)").fetchall()[0][0]
    assert 0.1 * 300 < two_parents < 0.3 * 300


def test_same_seed_same_tables(tmp_path):
    a, b = generate(tmp_path / "a", SMALL), generate(tmp_path / "b", SMALL)
    c = generate(tmp_path / "c", dataclasses.replace(SMALL, seed=4))
    rows = {name: [sorted(_read(f, t).fetchall()) for t in TABLES] for name, f in (("a", a), ("b", b), ("c", c))}
    assert rows["a"] == rows["b"] and rows["a"] != rows["c"]


@pytest.mark.parametrize("exported", [False, True])
def test_anon_duck_reads_it_as_generated_and_as_exported(tmp_path, exported):
    out = generate(tmp_path / "cdm", SMALL, exported=exported)
    if exported:
        assert (out / "person.csv").read_text().startswith("PERSON_ID,")
    job = parse_job(f'[input.omop]\npath = "{out}"\n[method]\nname = "fulldomain"\nk = 5\n'
                    '[release]\nname = "cdm"\nseed = 1\n', base_dir=tmp_path)
    result = anon_duck.run(duckdb.connect(), job)
    assert result.verified
