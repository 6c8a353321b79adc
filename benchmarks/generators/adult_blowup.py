"""Seed 003 §5.2's scalability data (Fig. 6): Adult blown up to alpha × 45,222 records, each
record plus alpha − 1 seeded variations (used by ``python -m benchmarks lkc_adult`` and the docs).
Benchmark data, not part of the LKC method: it lives with the other generators."""
from __future__ import annotations

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import Job
from anon_duck.scratch import scratch
from anon_duck.sqlrender import render


def blow_up(backend: DuckDBBackend, job: Job, alpha: int, seed: int = 2009, p: float = 0.2, *,
            target: tuple[str, ...] = scratch("adult_big")) -> tuple[str, ...]:
    """Write table ``target`` (by default the scratch table ``adult_big``) and return its name."""
    source = scratch("adult_src")
    backend.run("bench: load", render("engines/duckdb/load_file.sql.j2", target=source, format="parquet"),
                {"path": str(job.dataset.source.path)})
    others = [c for c in (job.dataset.class_, job.dataset.sensitive) if c]   # a full-domain job has no sensitive
    backend.run("bench: blow up", render("lkc/blow_up.sql.j2", target=target, relation=source, id="id",
                                         qis=[q.column for q in job.dataset.qis], others=others),
                {"alpha": alpha, "p": p, "seed": seed})
    return target
