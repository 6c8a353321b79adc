"""``python -m benchmarks``: named benchmark cases, each run in fresh processes, several times.

A case is a function ``case(scale) -> dict`` registered in :mod:`benchmarks.cases`,
with the builder of its data if it generates any (seeded, cached as Parquet under
``bench_out/data``); an untimed worker runs the builders before the repetitions, and the case
times only the work it names and returns its figures. Peers (pycanon, ...) are cases of their
own, run on the same data in the same invocation, so ratios are measured side by side.

The benchmarks live beside the product, not in it: nothing under ``anon_duck/`` imports them.
Their own SQL templates are under ``benchmarks/sql/bench/`` (rendered as ``bench/<name>``).
"""
from __future__ import annotations

import os
from pathlib import Path

from anon_duck.sqlrender import add_template_dir

ROOT = Path(__file__).resolve().parent.parent
"""The checkout holding this package: the workers run ``python -m benchmarks...`` from any folder."""

add_template_dir(Path(__file__).resolve().parent / "sql")


def child_env() -> dict[str, str]:
    """The environment of a worker process: this one's, with the checkout importable."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), path) if p)}
