"""``anon-duck bench``: named benchmark cases, each run in fresh processes, several times.

A case is a function ``case(scale) -> dict`` registered in :mod:`anon_duck.bench.cases`;
it prepares its data (seeded, cached as Parquet under ``bench_out/data``), times only the
work it names, and returns its figures. Peers (pycanon, ...) are cases of their own, run on
the same data in the same invocation, so ratios are measured side by side.
"""
