"""The workload answered from a release the way an analyst would: one estimator per release
shape, each reading only the release's analyst views (and the public vocabulary).

* ``tokens`` (ArtUC): a record shows codes or groups of codes (tokens); a group of g codes
  holds a given one with probability 1/g; the record's year-of-birth interval is spread
  uniformly over its years (the band's share of them).
* ``events`` (longitudinal): each event shows a code or a node of the vocabulary; a node
  standing for g leaves (concept_ancestor; the root ``*`` for all) is a given leaf with
  probability 1/g. The release shows ages at events, not births: no band queries.
* ``chunks`` (disassociation): the ``<release>_support`` view, the paper's expected count over
  its reconstructions. No demographics: no band queries.
* ``demographics`` (fulldomain, mondrian, lkc, counterfeit): no codes, no query answered.

Within a record, tokens and events are taken as independent: p(x and y) = p(x) * p(y)."""
from __future__ import annotations

from anon_duck.backend.base import Backend
from anon_duck.columns import hi_column, lo_column
from anon_duck.job import Job
from anon_duck.omop import ROOT
from anon_duck.sqlrender import render

from .workload import WORKLOAD, Input

SHAPES = {"fulldomain": "demographics", "mondrian": "demographics", "lkc": "demographics",
          "counterfeit": "demographics", "artuc": "tokens", "longitudinal": "events", "disassociation": "chunks"}
BIRTH = "year_of_birth"          # the OMOP person QI the band queries are about
COVERS, BIRTHS = ("utility_covers",), ("utility_births",)


def answers(backend: Backend, job: Job, cdm: Input, workload: tuple[str, ...] = WORKLOAD) -> dict[int, float]:
    """query_id -> estimate, for the queries the release's shape can answer (none for
    demographic releases)."""
    shape, name = SHAPES[job.method], job.release.name
    if shape == "demographics":
        return {}
    if shape == "chunks":
        codes = sorted({c for row in backend.rows("utility: workload codes", render(
            "bench/select_all.sql.j2", relation=workload)) for c in (row[2], row[3]) if c is not None})
        sql = render("bench/utility/support.sql.j2", workload=workload, support=(f"{name}_support",), codes=codes)
        return _read(backend, sql)
    births = None
    if shape == "tokens":
        backend.run("utility: tokens shown", render("bench/utility/artuc_covers.sql.j2", target=COVERS,
                                                    records=(name,), codes=(f"{name}_codes",), workload=workload))
        if any(q.column == BIRTH for q in job.dataset.qis):
            backend.run("utility: births shown", render("bench/utility/artuc_births.sql.j2", target=BIRTHS,
                                                        records=(name,), lo=lo_column(BIRTH), hi=hi_column(BIRTH)))
            births = BIRTHS
    else:
        backend.run("utility: events shown", render("bench/utility/longitudinal_covers.sql.j2", target=COVERS,
                                                    events=(name,), ancestors=cdm.ancestors, workload=workload,
                                                    root=ROOT))
    return _read(backend, render("bench/utility/spread.sql.j2", workload=workload, covers=COVERS, births=births))


def _read(backend: Backend, sql: str) -> dict[int, float]:
    return {int(q): float(e) for q, e in backend.rows("utility: estimates", sql)}
