"""``anon-duck bench``: named benchmark cases, each run in fresh processes, several times.

A case is a function ``case(scale) -> dict`` registered in :mod:`anon_duck.bench.cases`,
with the builder of its data if it generates any (seeded, cached as Parquet under
``bench_out/data``); an untimed worker runs the builders before the repetitions, and the case
times only the work it names and returns its figures. Peers (pycanon, ...) are cases of their
own, run on the same data in the same invocation, so ratios are measured side by side.
"""
