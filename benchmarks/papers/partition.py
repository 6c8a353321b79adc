"""The price and the memory of partitioned runs (docs/scale.md; run by hand, never in tests).

    python -m benchmarks.papers.partition curve [out.png]
    python -m benchmarks.papers.partition memory CASE SIZE SCALE...
    python -m benchmarks.papers.partition memory-partitioned CASE SIZE SCALE...
    python -m benchmarks.papers.partition one CASE SCALE SIZE

``curve``: the utility of ArtUC on INFORMS (fixtures/jobs/artuc_informs_uc1.toml: NCP, ARE of
W1-W3, UL) and of disassociation on BMS-WebView-1 (fixtures/jobs/disassociation_bms.toml: ARE of
W1/W2, expected and over 10 reconstructions) at the same k against ``partition_size``
(:data:`SIZES`, then unpartitioned), as measured by ``api.report``; one JSON line per point,
then a markdown table, and a PNG of the curves when matplotlib is installed. ``memory``: the
peak RSS of a bench case (``disassociation_bms``: BMS-WebView-1 blown up SCALE times;
``artuc_ehrd``: 208,387 × SCALE EHRD-like records; benchmarks.cases), one fresh process
per run (``one``, a database file, DuckDB's memory_limit 100MB or 1GB), with ``partition_size`` = SIZE
and unpartitioned (``memory-partitioned``: partitioned only).
"""
from __future__ import annotations

import dataclasses
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import duckdb

from anon_duck import api
from anon_duck.job import Job, load_job
from ..cases import _bms_job, _ehrd_job
from .. import ROOT, child_env

JOBS = ROOT / "fixtures" / "jobs"
SIZES = (1000, 2000, 5000, 10000, 20000)
# bench cases (benchmarks.cases) by name: scale -> job, and DuckDB's memory_limit for it
# (ArtUC's readable release aggregates each record's code text, which does not spill below ~1GB)
CASES = {"disassociation_bms": _bms_job, "artuc_ehrd": _ehrd_job}
DUCKDB_MEMORY = {"disassociation_bms": "100MB", "artuc_ehrd": "1GB"}


def sized(job: Job, size: int | None) -> Job:
    return dataclasses.replace(job, settings=dataclasses.replace(job.settings, partition_size=size))


def point(job: Job, size: int | None) -> dict[str, Any]:
    """One run and report of ``job`` at ``partition_size`` = ``size`` (None: unpartitioned)."""
    con = duckdb.connect()
    t0 = time.perf_counter()
    result = api.run(con, sized(job, size))
    seconds = time.perf_counter() - t0
    rep = api.report(con, sized(job, size))
    part = result.facts.get("partition", {})
    out: dict[str, Any] = {"job": job.release.name, "partition_size": size or "none",
                           "fragments": part.get("fragments", 1), "seconds": round(seconds, 2),
                           "verified": result.verified}
    if job.method == "artuc":
        out |= {"ncp": rep["ncp"], "ul": rep["ul"], **{f"are_{w}": rep["are"][w] for w in ("W1", "W2", "W3")}}
    else:
        for w in ("W1", "W2"):
            out[f"are_{w}_expected"] = rep["are"][w]["expected"]["are"]
            out[f"are_{w}_reconstructed"] = rep["are"][w]["are_mean"]
    return out


def curve(png: Path | None) -> list[dict[str, Any]]:
    points = []
    for name in ("artuc_informs_uc1", "disassociation_bms"):
        job = load_job(JOBS / f"{name}.toml")
        for size in (*SIZES, None):
            points.append(point(job, size))
            print(json.dumps(points[-1]), flush=True)
    print(markdown(points))
    if png is not None:
        plot(points, png)
    return points


def markdown(points: list[dict[str, Any]]) -> str:
    lines = []
    for name in dict.fromkeys(p["job"] for p in points):
        rows = [p for p in points if p["job"] == name]
        keys = [k for k in rows[0] if k not in ("job", "verified")]
        lines += ["", f"**{name}**", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        lines += ["| " + " | ".join(f"{p[k]:.4f}" if isinstance(p[k], float) else f"{p[k]}" for k in keys) + " |"
                  for p in rows]
    return "\n".join(lines)


def plot(points: list[dict[str, Any]], png: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    measures = {"artuc_informs_uc1": ("ncp", "ul", "are_W1", "are_W2", "are_W3"),
                "bms_dis": ("are_W1_expected", "are_W2_expected", "are_W1_reconstructed", "are_W2_reconstructed")}
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, (name, keys) in zip(axes, measures.items()):
        rows = [p for p in points if p["job"] == name]
        whole = max(p["fragments"] for p in rows) * max(s for s in SIZES)   # the unpartitioned point, right of the rest
        xs = [p["partition_size"] if p["partition_size"] != "none" else whole for p in rows]
        for key in keys:
            ax.plot(xs, [p[key] for p in rows], marker="o", label=key)
        ax.set_xscale("log")
        ax.set_xticks(xs, [str(p["partition_size"]) for p in rows], rotation=45)
        ax.set_xlabel("partition_size (persons)")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def one(case: str, scale: float, size: int | None) -> dict[str, Any]:
    """The bench ``case`` (:data:`CASES`) at ``scale``, in this process: seconds and peak RSS.
    The database is a file and DuckDB's memory_limit is the case's :data:`DUCKDB_MEMORY`, so
    DuckDB keeps the inputs and scratch tables within it (spilling the rest) and what grows is
    Python's part. Besides the process's peak RSS (DuckDB's buffers included), the peak of
    Python's own allocations, numpy arrays included (tracemalloc), which is what partitioning
    bounds."""
    job = sized(CASES[case](scale), size)
    job = dataclasses.replace(job, settings=dataclasses.replace(job.settings, memory_limit=DUCKDB_MEMORY[case]))
    with tempfile.TemporaryDirectory() as folder:
        con = duckdb.connect(str(Path(folder) / "bench.duckdb"))
        tracemalloc.start()
        t0 = time.perf_counter()
        result = api.run(con, job)
        seconds = time.perf_counter() - t0
        python_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        con.close()
    records = result.facts.get("records", result.facts.get("published_records"))
    return {"case": case, "scale": scale, "records": records, "partition_size": size or "none",
            "fragments": result.facts.get("partition", {}).get("fragments", 1), "seconds": round(seconds, 2),
            "verified": result.verified, "duckdb_memory_limit": DUCKDB_MEMORY[case],
            "python_peak_mib": round(python_peak / 2 ** 20, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def memory(case: str, size: int, scales: list[float], whole: bool) -> None:
    """``one`` in a fresh process per point: partitioned at every scale, and unpartitioned too
    when ``whole``."""
    for scale in scales:
        for s in (size, None) if whole else (size,):
            out = subprocess.run([sys.executable, "-m", "benchmarks.papers.partition", "one", case, str(scale),
                                  str(s or 0)], check=True, capture_output=True, text=True, env=child_env())
            print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "curve":
        curve(Path(args[0]) if args else None)
    elif command in ("memory", "memory-partitioned"):
        memory(args[0], int(args[1]), [float(a) for a in args[2:]], command == "memory")
    else:
        print(json.dumps(one(args[0], float(args[1]), int(args[2]) or None)))
