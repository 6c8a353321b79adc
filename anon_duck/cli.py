"""``anon-duck``: argparse → API → print. No logic lives here."""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, ContextManager, Sequence

import duckdb

from . import api, backend
from .version import __version__
from .errors import AnonDuckError, JobError, VerificationError
from .job import check_threshold, load_job
from .reports.risk_text import risk_summary
from . import progress as progress_lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except VerificationError as err:
        print(f"anon-duck: {err}", file=sys.stderr)
        _print_violations(err.violations)
        return 1
    except AnonDuckError as err:
        print(f"anon-duck: {err}", file=sys.stderr)
        return 2
    except (duckdb.Error, OSError) as err:     # e.g. --db is a folder, a file cannot be written
        print(f"anon-duck: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("anon-duck: interrupted; nothing was published", file=sys.stderr)
        return 130
    except Exception:                           # a bug: say so, keep the traceback, never exit 1
        traceback.print_exc()
        print("anon-duck: internal error (a bug in anon_duck; please report it with the traceback above)",
              file=sys.stderr)
        return 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="anon-duck", description="Anonymize health records inside DuckDB (or Spark).")
    p.add_argument("--version", action="version", version=f"anon-duck {__version__}")
    sub = p.add_subparsers(required=True, metavar="COMMAND")

    def job_cmd(name: str, help_: str, func) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help_, description=help_)
        c.add_argument("job", type=Path, help="job file (TOML)")
        if name in INPUT_ONLY:
            c.add_argument("--db", default=":memory:",
                           help="DuckDB database file holding input tables, if the job names any (default: "
                                "in-memory; a file that does not exist yet is not created: this command writes "
                                "nothing); with --engine spark a warehouse folder; with --engine postgres a "
                                "postgresql:// URI (default: libpq's environment variables)")
        else:   # a release in an in-memory database would vanish with the process
            c.add_argument("--db", required=True, help="DuckDB database file holding the input and the release; "
                                                       "with --engine spark, the Spark warehouse folder; with "
                                                       "--engine postgres, a postgresql:// URI")
        c.add_argument("--engine", choices=ENGINES, default="duckdb",
                       help="where the work runs (default: duckdb); spark needs the spark extra and Java 17+, "
                            "postgres the postgres extra and a server")
        c.add_argument("--spark-master", default=None, metavar="URL",
                       help="Spark master with --engine spark (default: local[*], or spark-submit's --master)")
        c.set_defaults(func=func, command=name)
        return c

    job_cmd("run", "anonymize, verify and publish the release into the database", _run)
    job_cmd("verify", "re-check a published release with the independent verifier (exit 1 on violations)", _verify)
    k = job_cmd("risk", "re-identification risk of the job's input, before any release (docs/risk.md)", _risk)
    k.add_argument("--json", action="store_true", help="print the nested JSON (schema in docs/risk.md)")
    k.add_argument("--population-size", type=_positive_int, default=None, metavar="N",
                   help="persons in the population the input was drawn from: journalist-style population "
                        "uniqueness estimates (Pitman, Zayatz); overrides risk.population_size")
    k.add_argument("--population-table", default=None, metavar="TABLE",
                   help="a table in --db holding the population with the input's QI columns: journalist and "
                        "marketer risk; overrides [risk.population]")
    k.add_argument("--threshold", type=_threshold, action="append", default=None, metavar="T",
                   help="a risk threshold in (0, 1] for records at risk (repeatable; replaces the defaults "
                        "0.5 0.2 0.1 0.05 and risk.thresholds)")
    k.add_argument("--html", type=Path, default=None, metavar="PATH",
                   help="also write one self-contained HTML page with figures (needs the report extra)")
    r = job_cmd("report", "summarize a published release: risk before/after, loss per attribute, the method's "
                          "measures (docs/report.md)", _report)
    r.add_argument("--json", action="store_true", help="print the report document as JSON (schema: docs/report.md)")
    r.add_argument("--html", type=Path, default=None, metavar="PATH",
                   help="also write one self-contained HTML page with figures (needs the report extra)")
    s = job_cmd("sweep", "run the job's method for several values of one parameter in scratch space (nothing is "
                         "published) and show its loss against the release's risk", _sweep)
    values = s.add_mutually_exclusive_group(required=True)
    for name, kind in SWEEP_PARAMS.items():
        values.add_argument(f"--{name}", dest="sweep", type=_sweep_values(name, kind), metavar="V1,V2,...",
                            help=f"values of method.{name} to try")
    s.add_argument("--json", action="store_true", help="print the sweep document as JSON")
    s.add_argument("--html", type=Path, default=None, metavar="PATH",
                   help="also write the trade-off curve as one self-contained HTML page (needs the report extra)")
    e = job_cmd("export", "write only the release tables (Parquet/CSV folder or a new .duckdb file)", _export)
    e.add_argument("--to", required=True, type=Path,
                   help="a new folder (PATH, PATH.parquet: Parquet files; PATH.csv: CSV files) or a new file.duckdb")
    e.add_argument("--no-views", dest="views", action="store_false",
                   help="the release tables only, not the analyst views (disassociation's support view of a "
                        "large dense release is billions of rows: docs/analyst.md)")
    i = job_cmd("inspect", "profile the input: rows, distinct values per QI, current k, codes", _inspect)
    i.add_argument("--json", action="store_true", help="print JSON")
    m = sub.add_parser("methods", help="list the methods a job's method.name can name")
    m.set_defaults(func=_methods)
    d = sub.add_parser("demo", help="run every method on bundled data and print a summary")
    d.set_defaults(func=_demo)
    return p


def _methods(args: argparse.Namespace) -> int:
    from .methods import get_method, method_names
    from .methods.papers import references
    for name in method_names():
        print(f"{name:<16} {get_method(name).summary}")
    print("\npapers:")
    for line in references():
        print(f"  {line}")
    return 0


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def _threshold(text: str) -> float:
    try:
        return check_threshold(float(text), "--threshold")
    except (ValueError, JobError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a risk threshold: a number in (0, 1], "
                                         "e.g. 0.2 for 1 in 5") from None


ENGINES = tuple(backend.ENGINES)
INPUT_ONLY = ("inspect", "risk", "sweep")
"""Commands that read only the job's input and publish nothing: --db is optional, and a database
that does not exist yet is an empty one."""
SWEEP_PARAMS: dict[str, type] = {"k": int, "m": int, "L": int, "K": int, "h": float, "C": float}
"""The parameters ``sweep`` can vary: k (most methods), m (ArtUC, disassociation, cba), L/K/C (lkc),
h (counterfeit). The method's own parameter check refuses one it does not have."""


def _sweep_values(name: str, kind: type):
    """``--k 2,5,10`` → ``("k", [2, 5, 10])``; a value that is not a number > 0 (whole for
    integer parameters, >= 1) is refused by name (exit 2)."""
    def parse(text: str) -> tuple[str, list]:
        values = []
        for item in text.split(","):
            item = item.strip()
            try:
                value = kind(item)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{item!r} is not a {'whole number' if kind is int else 'number'}"
                                                 ) from None
            if (kind is int and value < 1) or not value > 0:
                raise argparse.ArgumentTypeError(f"{item!r}: {name} must be {'>= 1' if kind is int else '> 0'}")
            values.append(value)
        return name, values
    return parse


def _connect(args: argparse.Namespace, *, read_only: bool = False) -> ContextManager[Any]:
    """The command's connection, of the engine ``--engine`` names, to ``--db`` (closed at the end).
    A command of :data:`INPUT_ONLY` reads a database that does not exist yet as an empty one, and
    creates nothing."""
    return backend.connect(args.engine, args.db, read_only=read_only, master=args.spark_master,
                           missing_ok=getattr(args, "command", None) in INPUT_ONLY)


def _run(args: argparse.Namespace) -> int:
    job = load_job(args.job)
    with _connect(args) as con:
        result = api.run(con, job, progress=progress_lines.for_stderr())
    _warn(result.warnings)
    print(f"release {result.release}: {', '.join(result.tables)} "
          f"(verified by {', '.join(c.name for c in result.checks)}; {result.seconds:.2f} s)")
    print(f"  {_headline(job.method, result.facts)}")
    for key, value in result.facts.items():
        print(f"  {key}: {value}")
    return 0


def _headline(method: str, facts: dict[str, Any]) -> str:
    """The method's headline loss, the one `report` leads with and `sweep` plots; from the
    facts when the run has it, else where to find it."""
    from .reports import catalog, text
    name, value = catalog.headline_of(method).measure, catalog.headline_value(method, facts, None)
    return (f"headline loss: {name} {text.number(value)} (lower is better)" if value is not None
            else f"headline loss: {name} (computed by `anon-duck report`)")


def _verify(args: argparse.Namespace) -> int:
    job = load_job(args.job)
    with _connect(args, read_only=True) as con:
        checks = api.verify(con, job)
    for c in checks:
        print(f"{c.name}: {'pass' if c.passed else f'FAIL ({c.n_violations} violations)'}")
        if not c.passed:
            _print_violations(c.violations)
    return 0 if all(c.passed for c in checks) else 1


def _report(args: argparse.Namespace) -> int:
    from .reports import html, text
    job = load_job(args.job)
    _html_first(args)
    with _connect(args, read_only=True) as con:
        doc = api.release_report(con, job)
    doc["provenance"]["job_file"] = str(Path(args.job).resolve())
    _emit(args, doc, text.summary, html.report_page)
    return 0


def _html_first(args: argparse.Namespace) -> None:
    """With ``--html``, refuse a bad path or a missing report extra before any work."""
    if args.html is not None:
        from .reports import html
        html.check_target(args.html)
        html.plots.require()


def _emit(args: argparse.Namespace, doc: dict[str, Any], summary: Callable[[dict[str, Any]], str],
          page: Callable[[dict[str, Any]], str]) -> None:
    """Print a document as JSON (``--json``) or its terminal summary, and with ``--html`` write
    its page (all or nothing)."""
    print(json.dumps(doc, indent=2, default=str) if args.json else summary(doc))
    if args.html is not None:
        from .reports import html
        html.write(args.html, page(doc))
        print(f"(written: {args.html})", file=sys.stderr)


def _sweep(args: argparse.Namespace) -> int:
    from .reports import html, text
    job = load_job(args.job)
    param, values = args.sweep
    _html_first(args)
    print(f"sweep: {job.method} with {param} = {', '.join(map(str, values))} ({len(values)} runs in scratch "
          "space; nothing is published)", file=sys.stderr)
    done = []

    def on_point(point: dict[str, Any]) -> None:
        done.append(point)
        risk = point["risk_after"] or {}
        print(f"  [{len(done)}/{len(values)}] {param} = {point['value']}: loss {text.number(point['loss'])}, "
              f"highest risk {text.number(risk.get('prosecutor_risk_max'))} ({point['seconds']:.1f} s)",
              file=sys.stderr)

    with _connect(args, read_only=True) as con:
        doc = api.sweep(con, job, param, values, progress=progress_lines.for_stderr(), on_point=on_point)
    _emit(args, doc, text.sweep_table, html.sweep_page)
    return 0


def _risk(args: argparse.Namespace) -> int:
    from .reports import html
    job = load_job(args.job)
    _html_first(args)
    with _connect(args, read_only=True) as con:
        out = api.risk(con, job, population_size=args.population_size, population_table=args.population_table,
                       thresholds=args.threshold)
    _emit(args, out, risk_summary, lambda doc: html.risk_page(doc, job.release.name))
    return 0


def _export(args: argparse.Namespace) -> int:
    job = load_job(args.job)
    with _connect(args, read_only=True) as con:
        written = api.export(con, job, args.to, views=args.views)
    for path in written:
        print(path)
    print(f"(export of release {job.release.name}: {len(written)} file(s) in {args.to})")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    job = load_job(args.job)
    with _connect(args, read_only=True) as con:
        out = api.inspect(con, job)
    _warn(out["warnings"])
    print(json.dumps(out, indent=2, default=str) if args.json else _flat({k: v for k, v in out.items() if k != "warnings"}))
    return 0


def _warn(warnings: list[str]) -> None:
    """What the input checks accepted but the user should know (a trimmed OMOP vocabulary):
    one line each, on stderr, so a release's listing on stdout stays as it is."""
    for line in warnings:
        print(f"anon-duck: warning: {line}", file=sys.stderr)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    return run_demo()


def _print_violations(violations: list[dict], limit: int = 20) -> None:
    for v in violations[:limit]:
        print("  " + ", ".join(f"{k}={val}" for k, val in v.items()), file=sys.stderr)
    if len(violations) > limit:
        print(f"  ... and {len(violations) - limit} more", file=sys.stderr)


def _flat(d: dict[str, Any], prefix: str = "") -> str:
    lines = []
    for k, v in d.items():
        if isinstance(v, dict):
            lines.append(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, list) and len(v) > 8:
            lines.append(f"{prefix}{k}: [{len(v)} items]")
        else:
            lines.append(f"{prefix}{k}: {v}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
