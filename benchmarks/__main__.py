"""``python -m benchmarks``: run benchmark cases in fresh processes and write JSON + markdown.

Run from a checkout with the ``bench`` extra (``pip install -e ".[bench]"``); the product's CLI
keeps no benchmark code. ``--suite`` regenerates BENCHMARKS.md's generated section.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from anon_duck.errors import AnonDuckError

from .runner import curves_markdown, quick_cases, run_cases, run_curves, to_markdown, write, write_curves


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _bench(args)
    except AnonDuckError as err:
        print(f"benchmarks: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchmarks: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    b = argparse.ArgumentParser(prog="python -m benchmarks",
                                description="run benchmark cases in fresh processes and write JSON + markdown")
    b.add_argument("cases", nargs="*", help="case names (default: all)")
    b.add_argument("--scale", type=float, default=1.0, help="data size factor (1 = the sizes the issues name)")
    b.add_argument("--reps", type=_positive_int, default=3, help="repetitions per case")
    b.add_argument("--quick", action="store_true",
                   help="scale 0.01, one repetition: checks every case completes (but the Spark cases)")
    b.add_argument("--out", type=Path, default=Path("bench_out/results.json"), help="JSON output (markdown beside it)")
    b.add_argument("--curve", type=_scales, default=None, metavar="S1,S2,...",
                   help="scaling curve: run the cases at each scale (e.g. 1,2,4,8); PNG plots with the bench extra")
    b.add_argument("--suite", action="store_true",
                   help="the whole suite behind BENCHMARKS.md (benchmarks/suite.py): JSON beside --out, and "
                        "BENCHMARKS.md's generated section")
    b.add_argument("--steps", type=_names, default=(), metavar="STEP,...",
                   help="with --suite: re-measure only these steps; the section is rebuilt from every step's JSON")
    b.add_argument("--benchmarks", type=Path, default=Path("BENCHMARKS.md"),
                   help="with --suite: the file whose generated section is rewritten (default: BENCHMARKS.md)")
    b.add_argument("--memory-limit", default=None, metavar="SIZE",
                   help="DuckDB's memory_limit for every connection a case opens, e.g. 1GB (the suite uses 1GB)")
    return b


def _bench(args: argparse.Namespace) -> int:
    if args.suite:
        from .suite import run_suite
        suite = run_suite(args.out.parent, steps=args.steps, benchmarks=args.benchmarks, progress=_stderr)
        print(f"(written: {suite}, {args.benchmarks})")
        return 0
    if args.curve:
        result = run_curves(args.cases, scales=args.curve, reps=args.reps, out_dir=args.out.parent, progress=_stderr,
                            memory_limit=args.memory_limit)
        md = write_curves(result, args.out)
        print(curves_markdown(result))
        print(f"\n(written: {md})")
        return 0
    scale, reps = (0.01, 1) if args.quick else (args.scale, args.reps)
    names = args.cases or (quick_cases() if args.quick else ())
    report = run_cases(names, scale=scale, reps=reps, progress=_stderr, memory_limit=args.memory_limit)
    md = write(report, args.out)
    print(to_markdown(report))
    print(f"\n(written: {args.out}, {md})")
    return 0


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def _scales(text: str) -> list[float]:
    try:
        scales = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated numbers, e.g. 1,2,4,8") from None
    if any(s <= 0 for s in scales):
        raise argparse.ArgumentTypeError(f"{text!r}: scales must be > 0")
    return scales


def _names(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated names")
    return names


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
