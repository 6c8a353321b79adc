"""An OMOP CDM shaped like a health system's (issues #31 and #32): persons with year and month
of birth, gender, race, ethnicity and a location; 20-80 condition events per person (mean
``events``) over 10 years, Zipf-distributed over ``concepts`` leaf concepts of a vocabulary
tree of ``depth`` levels with a polyhierarchy; concept and concept_ancestor as OMOP has them.

Generated inside DuckDB (benchmarks/sql/bench/omop_cdm/), every draw a hash of the seed and the
row, so 10^6 persons and 5·10^7 events take seconds and the same parameters give the same
tables. Written as Parquet files that ``[input.omop] path =`` reads, or with ``exported=True``
as an export arrives from SQL Server or Oracle: CSV with UPPER-CASE headers and a concept
table trimmed to the conditions in use (no person concepts)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

from anon_duck.sqlrender import render

TABLES = ("concept", "concept_ancestor", "person", "location", "condition_occurrence")


@dataclass(frozen=True)
class Shape:
    """What the generated CDM looks like; the defaults are issue #31's."""

    persons: int = 10_000
    events: int = 50            # mean condition events per person (each person: 0.4 to 1.6 times it)
    concepts: int = 2_000       # leaf condition concepts
    depth: int = 4              # levels of the condition tree, leaves included
    poly: float = 0.1           # share of leaves with a second parent
    zipf: float = 1.1           # exponent of the concepts' frequencies (not 1)
    locations: int = 50
    seed: int = 0

    def __post_init__(self) -> None:
        if self.persons < 1 or self.events < 1 or self.concepts < 2 or self.depth < 2 or self.zipf == 1:
            raise ValueError(f"omop_cdm: not a shape: {self}")

    @property
    def branching(self) -> int:
        """Children per inner concept: the leaves spread over ``depth - 1`` levels above them."""
        return max(2, math.ceil(self.concepts ** (1 / (self.depth - 1))))


def generate(out_dir: Path, shape: Shape = Shape(), *, exported: bool = False) -> Path:
    """Write the CDM's tables into ``out_dir`` (created) and return it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    context = {**asdict(shape), "branching": shape.branching}
    with duckdb.connect() as con:
        con.execute(render("bench/omop_cdm/nodes.sql.j2", target=("nodes",), **context))
        for table in TABLES:
            con.execute(render(f"bench/omop_cdm/{table}.sql.j2", target=(table,), nodes=("nodes",),
                               person=("person",), **context))
        if exported:
            con.execute(render("bench/omop_cdm/trim_concepts.sql.j2", target=("concept",)))
        for table in TABLES:
            path = out_dir / (f"{table}.csv" if exported else f"{table}.parquet")
            con.execute(render("bench/omop_cdm/write.sql.j2", source=(table,), path=str(path), exported=exported,
                               columns=[r[0] for r in con.execute(render("bench/omop_cdm/columns.sql.j2"),
                                                                  {"table": table}).fetchall()]))
    return out_dir


def cached(out_dir: Path, shape: Shape = Shape(), *, exported: bool = False) -> Path:
    """The CDM in ``out_dir``, generated on first use."""
    suffix = ".csv" if exported else ".parquet"
    if all((out_dir / f"{t}{suffix}").exists() for t in TABLES):
        return out_dir
    return generate(out_dir, shape, exported=exported)


if __name__ == "__main__":  # pragma: no cover
    import argparse
    ap = argparse.ArgumentParser(prog="python -m benchmarks.generators.omop_cdm",
                                 description="write an OMOP CDM shaped like a health system's")
    ap.add_argument("out", type=Path)
    ap.add_argument("--exported", action="store_true", help="CSV, UPPER-CASE headers, trimmed concept table")
    for name, default in asdict(Shape()).items():
        ap.add_argument(f"--{name}", type=type(default), default=default)
    args = vars(ap.parse_args())
    print(generate(args.pop("out"), exported=args.pop("exported"), shape=Shape(**args)))
