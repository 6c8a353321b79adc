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


# What each number in the demo's table is: the information-loss measure a method reports (its
# paper's), and ARE. Lower is better for every one of them.
MEASURES = {
    "NCP": "normalized certainty penalty: the share of each QI's domain a published value covers, "
           "averaged (0 = exact values, 1 = everything generalized to the root); Xu et al. 2006",
    "DR": "discernibility ratio: sum over equivalence classes of size^2, divided by rows^2 "
          "(small when classes are small); seed 003 §5.1",
    "LM": "loss metric: per published value, (leaves covered - 1) / (leaves of the domain - 1), "
          "averaged over rows and QIs; Iyengar 2002, seed 002",
    "suppressed": "diagnosis codes that appear in no published chunk (removed to reach k^m); seed 001",
    "ILM": "information loss of the trajectories: how far codes and ages were generalized, 0 to 1 "
           "(Algorithm 3 of seed 004)",
    "ARE": "average relative error of count queries answered from the release instead of the input "
           "(a random query workload)",
}


def run_demo(*, out: TextIO | None = None) -> int:
    """Run each demo job in a fresh in-memory database; exit 1 if any job failed or any
    release failed to verify (a missing demo job is a failure, not a skip)."""
    out = out or sys.stdout      # looked up per call: a default bound at import misses redirection
    rows = []
    ok = True
    for method, file in DEMO_JOBS:
        t0 = time.perf_counter()
        try:
            job = load_job(FIXTURES / "jobs" / file)
            with duckdb.connect() as con:
                result = api.run(con, job)
                checks = api.verify(con, job)
                summary = api.report(con, job).get("summary", {})
            verified = result.verified and all(c.passed for c in checks)
        except AnonDuckError as err:
            print(f"{method}: FAILED: {err}", file=sys.stderr)
            ok = False
            continue
        ok &= verified
        rows.append((method, job.release.name, "yes" if verified else "NO",
                     _fmt(summary.get("info_loss")), _fmt(summary.get("are")), f"{time.perf_counter() - t0:.2f}"))
    header = ("method", "release", "verified", "info loss", "ARE", "seconds")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)), file=out)
    shown = {str(r[3]).split("=")[0] for r in rows} | ({"ARE"} if any(r[4] != "-" for r in rows) else set())
    print("\nWhat the numbers are (lower is better for each):", file=out)
    for name, meaning in MEASURES.items():
        if name in shown:
            print(f"  {name:<10} {meaning}", file=out)
    return 0 if ok and rows else 1


def _fmt(v: object) -> str:
    if isinstance(v, tuple):
        name, value = v
        return f"{name}={value:.4f}"
    return "-" if v is None else f"{v:.4f}"
