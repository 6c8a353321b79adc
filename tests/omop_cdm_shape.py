#!/usr/bin/env python3
"""A synthetic OMOP CDM shaped like a health system's (issue #31), for scale tests and benches.

The fixtures (``fixtures/omop``: 100 MIMIC demo patients, ~15 events each) are too sparse to
show how the methods behave on a real CDM, where a person has 20–80 condition events drawn from
thousands of concepts, a few of them very common. This module writes such a CDM at any size with
a fixed seed, so a slow step can be reproduced and a fix measured on the same bytes:

* ``person``: year_of_birth uniform in 1930–2005, gender (F/M), race (3 values), ethnicity (2);
* ``condition_occurrence``: per person a Poisson(``events_per_person``) number of events (at
  least one), dated uniformly over 2010-01-01 .. 2019-12-31, each a leaf concept drawn from a
  Zipf law (weight of the r-th most frequent leaf ∝ r^-``zipf``; ranks are a seeded permutation
  of the leaves, so frequent leaves are spread over the tree);
* ``concept`` / ``concept_ancestor``: a tree of ``depth`` levels whose last level has
  ``concepts`` leaves (about the same fan-out at every level), plus a ``polyhierarchy`` share of
  the non-top concepts with a second parent on the level above (the DAG the OMOP reader turns
  into a tree, docs/omop.md), and the person concepts.

It reads like ``[input.omop] path = <out_dir>``. Only numpy and duckdb are used (the CSVs are
written by DuckDB, so a million persons take seconds, not minutes). Usage::

    python tests/omop_cdm_shape.py OUT_DIR --persons 10000
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import duckdb
import numpy as np

LOCAL_IDS = 2_000_000_000   # OMOP: concept ids above 2 billion are a site's own
GENDERS = [(8532, "FEMALE"), (8507, "MALE")]
RACES = [(8527, "White"), (8516, "Black or African American"), (8515, "Asian")]
ETHNICITIES = [(38003564, "Not Hispanic or Latino"), (38003563, "Hispanic or Latino")]
EHR = 32817                 # condition_type_concept_id: EHR
FIRST_DAY = np.datetime64("2010-01-01", "D")
DAYS = int((np.datetime64("2020-01-01", "D") - FIRST_DAY).astype(np.int64))   # ten years of event dates
CHUNK = 200_000             # persons per batch of events (bounds the generator's memory)


def level_sizes(concepts: int, depth: int) -> list[int]:
    """Number of concepts on each level, top first, the last level holding ``concepts`` leaves:
    each level has ~concepts**(1/depth) times fewer concepts than the one below it."""
    if depth < 1 or concepts < 1:
        raise ValueError(f"depth = {depth}, concepts = {concepts}: both must be >= 1")
    fanout = max(2.0, concepts ** (1.0 / depth))
    sizes = [concepts]
    for _ in range(depth - 1):
        sizes.append(max(1, math.ceil(sizes[-1] / fanout)))
    return sizes[::-1]


def concept_dag(concepts: int, depth: int, polyhierarchy: float,
                rng: np.random.Generator) -> tuple[list[np.ndarray], dict[int, list[int]]]:
    """The concept ids of each level (top first) and each concept's direct parents (the first
    one its tree parent, contiguous blocks; a ``polyhierarchy`` share gets a second one)."""
    sizes = level_sizes(concepts, depth)
    levels, start = [], LOCAL_IDS + 1
    for n in sizes:
        levels.append(np.arange(start, start + n, dtype=np.int64))
        start += n
    parents: dict[int, list[int]] = {int(c): [] for c in levels[0]}
    for upper, lower in zip(levels, levels[1:]):
        first = upper[(np.arange(len(lower)) * len(upper)) // len(lower)]
        second = upper[rng.integers(0, len(upper), len(lower))]
        extra = rng.random(len(lower)) < polyhierarchy
        for c, p, q, e in zip(lower.tolist(), first.tolist(), second.tolist(), extra.tolist()):
            parents[c] = [p] + ([q] if e and q != p else [])
    return levels, parents


def ancestor_rows(levels: list[np.ndarray], parents: dict[int, list[int]]) -> list[tuple[int, int, int, int]]:
    """concept_ancestor of the DAG: each (ancestor, descendant) with the shortest and the longest
    path between them (0 for a concept and itself)."""
    up: dict[int, dict[int, tuple[int, int]]] = {}
    for level in levels:                      # parents before children
        for c in level.tolist():
            out = {c: (0, 0)}
            for p in parents[c]:
                for a, (lo, hi) in up[p].items():
                    old = out.get(a)
                    out[a] = (lo + 1, hi + 1) if old is None else (min(old[0], lo + 1), max(old[1], hi + 1))
            up[c] = out
    return [(a, d, lo, hi) for d, anc in up.items() for a, (lo, hi) in anc.items()]


def zipf_weights(n: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """Probabilities of n leaves: the r-th most frequent ∝ r^-exponent, ranks a seeded permutation."""
    w = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    w = w[rng.permutation(n)]
    return w / w.sum()


def _copy(con: duckdb.DuckDBPyConnection, frame: object, path: Path, header: bool = True) -> None:
    """Write a registered frame as CSV (DuckDB's writer: fast at 50M rows)."""
    con.register("frame", frame)
    cols = con.execute("SELECT * FROM frame LIMIT 0").description
    select = ", ".join(f'CAST("{c[0]}" AS DATE) AS "{c[0]}"' if c[0].endswith("_date") else f'"{c[0]}"'
                       for c in cols)
    con.execute(f"COPY (SELECT {select} FROM frame) TO '{path}' (FORMAT csv, HEADER {str(header).lower()})")
    con.unregister("frame")


def generate_omop_cdm(out_dir: str | Path, persons: int, events_per_person: int = 50, concepts: int = 2000,
                      depth: int = 4, polyhierarchy: float = 0.1, zipf: float = 1.1, seed: int = 0) -> Path:
    """Write an OMOP CDM folder (person, condition_occurrence, concept, concept_ancestor as CSV)
    with ``persons`` persons, ~``events_per_person`` condition events each over ten years, on
    ``concepts`` Zipf-distributed leaves of a ``depth``-level concept DAG. Same arguments, same
    bytes. Returns the folder."""
    import pandas as pd

    if persons < 1:
        raise ValueError(f"persons = {persons}: must be >= 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    levels, parents = concept_dag(concepts, depth, polyhierarchy, rng)
    leaves = levels[-1]
    weights = zipf_weights(len(leaves), zipf, rng)
    con = duckdb.connect()

    pid = np.arange(1, persons + 1, dtype=np.int64)
    person = pd.DataFrame({
        "person_id": pid,
        "gender_concept_id": np.array([g for g, _ in GENDERS])[rng.integers(0, len(GENDERS), persons)],
        "year_of_birth": rng.integers(1930, 2006, persons),
        "month_of_birth": rng.integers(1, 13, persons),
        "day_of_birth": rng.integers(1, 29, persons),
        "race_concept_id": np.array([r for r, _ in RACES])[rng.choice(len(RACES), persons, p=[0.7, 0.2, 0.1])],
        "ethnicity_concept_id": np.array([e for e, _ in ETHNICITIES])[rng.choice(2, persons, p=[0.85, 0.15])],
        "gender_source_value": None})
    person["gender_source_value"] = np.where(person["gender_concept_id"] == GENDERS[0][0], "F", "M")
    _copy(con, person, out / "person.csv")

    counts = np.maximum(1, rng.poisson(events_per_person, persons))
    path = out / "condition_occurrence.csv"
    next_id = 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("condition_occurrence_id,person_id,condition_concept_id,condition_start_date,"
                "condition_type_concept_id,condition_source_value,condition_source_concept_id\n")
    for lo in range(0, persons, CHUNK):
        c = counts[lo:lo + CHUNK]
        n = int(c.sum())
        code = leaves[rng.choice(len(leaves), n, p=weights)]
        day = FIRST_DAY + rng.integers(0, DAYS, n).astype("timedelta64[D]")
        chunk = pd.DataFrame({
            "condition_occurrence_id": np.arange(next_id, next_id + n, dtype=np.int64),
            "person_id": np.repeat(pid[lo:lo + CHUNK], c),
            "condition_concept_id": code,
            "condition_start_date": day,
            "condition_type_concept_id": EHR,
            "condition_source_value": code.astype(str),
            "condition_source_concept_id": code})
        next_id += n
        part = out / "condition_occurrence.part.csv"
        _copy(con, chunk, part, header=False)
        with open(path, "a", encoding="utf-8") as f, open(part, encoding="utf-8") as g:
            while block := g.read(1 << 24):
                f.write(block)
        part.unlink()

    rows = [(i, n, d, d, d, "S", n[0] if d == "Gender" else str(i), "1970-01-01", "2099-12-31", None)
            for d, values in (("Gender", GENDERS), ("Race", RACES), ("Ethnicity", ETHNICITIES))
            for i, n in values]
    for depth_i, level in enumerate(levels, 1):
        rows += [(c, f"Condition L{depth_i} {c - LOCAL_IDS}", "Condition", "SYNTH", f"Level {depth_i}", "S",
                  f"L{depth_i}-{c - LOCAL_IDS}", "1970-01-01", "2099-12-31", None) for c in level.tolist()]
    concept = pd.DataFrame(rows, columns=["concept_id", "concept_name", "domain_id", "vocabulary_id",
                                          "concept_class_id", "standard_concept", "concept_code",
                                          "valid_start_date", "valid_end_date", "invalid_reason"])
    _copy(con, concept.sort_values("concept_id"), out / "concept.csv")
    ancestors = pd.DataFrame(sorted(ancestor_rows(levels, parents)),
                             columns=["ancestor_concept_id", "descendant_concept_id",
                                      "min_levels_of_separation", "max_levels_of_separation"])
    _copy(con, ancestors, out / "concept_ancestor.csv")
    con.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--persons", type=int, required=True)
    ap.add_argument("--events-per-person", type=int, default=50)
    ap.add_argument("--concepts", type=int, default=2000)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--polyhierarchy", type=float, default=0.1)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(generate_omop_cdm(a.out_dir, a.persons, a.events_per_person, a.concepts, a.depth, a.polyhierarchy,
                            a.zipf, a.seed))


if __name__ == "__main__":
    main()
