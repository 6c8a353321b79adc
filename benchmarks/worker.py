"""One benchmark repetition in a fresh process: ``python -m benchmarks.worker CASE SCALE``.
Prints one JSON line: the case's figures, peak RSS of this process, and ``data_built``: the
files the repetition added to the data cache (the runner rejects a timed repetition that built
any, since generating data would count in its peak RSS).

``--memory-limit 1GB`` caps DuckDB in every connection the case opens (:data:`cases.MEMORY_LIMIT`).

``python -m benchmarks.worker --prepare CASE [CASE ...] SCALE`` only runs the cases' data
builders (untimed; the runner calls it once before the repetitions), so the repetitions find
their data cached whether the cache was cold or warm."""
from __future__ import annotations

import argparse
import json
import resource
from pathlib import Path

from . import cases, omop_cases, postgres_cases, spark_cases  # noqa: F401  (they register their cases in CASES)
from .utility import cases as utility_cases  # noqa: F401
from .cases import CASES, PREPARE
from .generators import DATA


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    parser.add_argument("--prepare", action="store_true", help="build and cache the cases' data; time nothing")
    parser.add_argument("cases", nargs="+", choices=sorted(CASES), metavar="CASE")
    parser.add_argument("scale", type=float)
    parser.add_argument("--memory-limit", help="DuckDB's memory_limit for every connection the case opens")
    args = parser.parse_args(argv)
    cases.MEMORY_LIMIT = args.memory_limit
    if args.prepare:
        for name in args.cases:
            if name in PREPARE:
                PREPARE[name](args.scale)
        return
    if len(args.cases) != 1:
        parser.error("a timed repetition runs one case")
    before = _cache_files()
    out = CASES[args.cases[0]](args.scale)
    out.setdefault("peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)   # or the case's own
    out["data_built"] = sorted(str(p) for p in _cache_files() - before)
    print("\n" + json.dumps(out, default=str))   # on a line of its own, whatever the case printed


def _cache_files() -> set[Path]:
    """Every file under the data cache: what a repetition adds to it, it generated."""
    return {p for p in DATA.rglob("*") if p.is_file()}


if __name__ == "__main__":
    main()
