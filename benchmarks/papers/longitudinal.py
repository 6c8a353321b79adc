"""Benchmark and Appendix-A-style sweep on synthetic Table I cohorts (run by hand, never in tests).

    python -m benchmarks.papers.longitudinal D50_pop 5 [n_patients] [ags|baseline]

prints one JSON line: cohort, n, k, alignment, seconds (whole ``api.run``), peak RSS in MiB,
ILM/ALM (Algorithm 3 and Definition 8), clusters and the verifier's verdict.
"""
from __future__ import annotations

import json
import resource
import sys
import time

import duckdb

from anon_duck import api
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import parse_job
from ..generators.cohort import TABLE_I, generate, job_text


def run(cohort: str, k: int, n: int | None = None, alignment: str = "ags", seed: int = 1,
        con: duckdb.DuckDBPyConnection | None = None) -> dict:
    """Anonymize a generated cohort on ``con`` (a new in-memory database if None); the result's
    ``job`` is the job that published the release there."""
    spec = TABLE_I[cohort]
    con = con or duckdb.connect()
    backend = DuckDBBackend(con)
    data = generate(spec, n_patients=n, seed=seed)
    backend.write_table("cohort_patients", data["patients"])
    backend.write_table("cohort_events", data["events"])
    job = parse_job(job_text(spec, k=k, alignment=alignment))
    t0 = time.perf_counter()
    res = api.run(con, job)
    seconds = time.perf_counter() - t0
    f = res.facts
    return {"cohort": cohort, "n": f["records"], "k": k, "alignment": alignment, "seconds": round(seconds, 2),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "ilm_alg": round(f["ilm_alg"], 4), "alm_alg": round(f["alm_alg"], 4),
            "ilm_def8": round(f["ilm_def8"], 4), "alm_def8": round(f["alm_def8"], 4),
            "clusters": f["clusters"], "verified": res.verified, "job": job}


if __name__ == "__main__":
    args = sys.argv[1:]
    out = run(args[0], int(args[1]), int(args[2]) if len(args) > 2 and args[2] != "all" else None,
              args[3] if len(args) > 3 else "ags")
    out.pop("job")
    print(json.dumps(out))
