"""``anon-duck demo``: run every available method on bundled data and print a summary.

The demo jobs are ordinary job files (``fixtures/jobs/``); in a wheel they ship inside the
package (``anon_duck/fixtures``), in a checkout they are read from the repository.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

import duckdb

from . import api
from .errors import AnonDuckError
from .job import load_job
from .methods.papers import references
from .reports import catalog

_PKG = Path(__file__).resolve().parent
FIXTURES = _PKG / "fixtures" if (_PKG / "fixtures").is_dir() else _PKG.parent / "fixtures"

# One representative job per method, on real data where the method's paper used it.
DEMO_JOBS = [
    ("artuc", "artuc_informs_uc1.toml"),
    ("fulldomain", "adult_fulldomain.toml"),
    ("mondrian", "mondrian_adult.toml"),
    ("lkc", "lkc_adult_full.toml"),
    ("counterfeit", "counterfeit_adult.toml"),
    ("disassociation", "disassociation_bms.toml"),
    ("longitudinal", "longitudinal_mimic.toml"),
    # the same methods on an OMOP CDM database (the MIMIC demo in OMOP shape): [input.omop] only
    ("artuc-omop", "omop_artuc.toml"),
    ("disassociation-omop", "omop_disassociation.toml"),
    ("longitudinal-omop", "omop_longitudinal.toml"),
    ("fulldomain-omop", "omop_fulldomain.toml"),
    ("lkc-omop", "omop_lkc.toml"),
]


# A method whose report has no random count-query workload says why its ARE cell is empty.
NO_ARE = {
    "lkc": "n/a: Mohammed et al. measure an LKC release by discernibility and classification error; "
           "they define no count-query workload",
    "counterfeit": "n/a: Lee et al.'s query error counts one QI's values with the catalog subtracted "
                   "(shown by `anon-duck report`), not a random multi-QI workload",
}
ARE_MEANING = ("average relative error of count queries answered from the release instead of the input "
               "(a random query workload)")

# What to try after the demo: the same steps on a database file, with the bundled toy job.
NEXT_STEPS = (("run", "publish the release into a database file"),
              ("report", "its risk before and after, and its loss"),
              ("verify", "check the published release again"))


def next_steps() -> list[str]:
    """The commands to try next, with the toy job's path as this installation has it (relative
    to the working directory when it is below it)."""
    job = FIXTURES / "jobs" / "toy_fulldomain.toml"
    try:
        shown = str(job.relative_to(Path.cwd()))
    except ValueError:
        shown = str(job)
    commands = [f"anon-duck {cmd} {shown} --db my.duckdb" for cmd, _ in NEXT_STEPS]
    width = max(map(len, commands))
    return [f"{c:<{width}}   # {why}" for c, (_, why) in zip(commands, NEXT_STEPS)]


def run_demo(*, out: TextIO | None = None) -> int:
    """Run each demo job in a fresh in-memory database; exit 1 if any job failed or any
    release failed to verify (a missing demo job is a failure, not a skip)."""
    out = out or sys.stdout      # looked up per call: a default bound at import misses redirection
    rows, methods, notes = [], [], []
    ok = True
    for label, file in DEMO_JOBS:
        t0 = time.perf_counter()
        try:
            job = load_job(FIXTURES / "jobs" / file)
            with duckdb.connect() as con:
                result = api.run(con, job)
                checks = api.verify(con, job)
                report = api.report(con, job)
            verified = result.verified and all(c.passed for c in checks)
        except AnonDuckError as err:
            print(f"{label}: FAILED: {err}", file=sys.stderr)
            ok = False
            continue
        ok &= verified
        methods.append(job.method)
        headline = catalog.headline_of(job.method).measure
        loss = catalog.headline_value(job.method, result.facts, report)
        are = report.get("summary", {}).get("are")
        if are is None and job.method in NO_ARE:
            if NO_ARE[job.method] not in notes:
                notes.append(NO_ARE[job.method])
            are_cell = f"n/a ({notes.index(NO_ARE[job.method]) + 1})"
        else:
            are_cell = _fmt(are)
        rows.append((label, job.release.name, "yes" if verified else "NO", headline, _fmt(loss), are_cell,
                     f"{time.perf_counter() - t0:.2f}"))
    header = ("method", "release", "verified", "loss measure", "loss", "ARE", "seconds")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip(), file=out)
    for i, note in enumerate(notes, 1):
        print(f"  ({i}) {note}", file=out)
    print("\nWhat the numbers are (lower is better for each):", file=out)
    for name in dict.fromkeys(r[3] for r in rows):
        print(f"  {name:<16} {_meaning(name)}", file=out)
    if any(r[5] != "-" and not r[5].startswith("n/a") for r in rows):
        print(f"  {'ARE':<16} {ARE_MEANING}", file=out)
    print("\nThe papers the methods follow:", file=out)
    for line in references(methods):
        print(f"  {line}", file=out)
    print("\nNext: the same steps on a database file, then on a job of your own (README.md):", file=out)
    for step in next_steps():
        print(f"  {step}", file=out)
    return 0 if ok and rows else 1


def _meaning(measure: str) -> str:
    """A headline measure's meaning and source, from the report's catalog (one text for both)."""
    m = catalog.MEASURES.get(measure)
    return f"{m.meaning}; {m.source}" if m else "(a plug-in method's measure)"


def _fmt(v: object) -> str:
    return "-" if v is None else f"{v:.4f}"
