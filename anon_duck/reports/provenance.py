"""Where a report comes from, for a steward to sign it: the job's sources (tables or files, with
their row counts as read now), when the report was made, the tool's and the engine's versions,
and the declared sensitive attribute. The job file itself is added by the CLI, which knows it."""
from __future__ import annotations

import datetime
from typing import Any

from typing import Mapping

from ..backend.base import Backend
from ..inputs import Inputs
from ..job import Job
from ..sqlrender import render
from ..version import __version__


# methods whose release is a generalized table with the sensitive column beside the QIs
DIVERSITY_METHODS = ("fulldomain", "lkc", "counterfeit")


def provenance(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The provenance section; ``sensitive`` also carries the release's l-diversity when the job
    declares a sensitive attribute and the method publishes it beside the QIs."""
    ds = job.dataset
    sources: list[dict[str, Any]] = []
    roles = (("persons", ds.source, inputs.person), ("codes", ds.codes.source if ds.codes else None, inputs.codes),
             ("events", ds.events.source if ds.events else None, inputs.events))
    for role, source, relation in roles:
        if relation is None:
            continue
        rows = backend.scalar(f"report: rows of {role}", render("util/count_rows.sql.j2", relation=relation))
        sources.append({"role": role, "source": source.describe() if source is not None else "derived from the "
                        "codes or events", "rows": int(rows)})
    if ds.omop is not None:
        sources.insert(0, {"role": "omop", "source": str(getattr(ds.omop, "path", None) or getattr(ds.omop, "schema", "")),
                           "rows": None})
    return {"made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "anon_duck_version": __version__, "engine": _engine(backend), "sources": sources,
            "persons": int(inputs.n_rows), "sensitive": ds.sensitive, "job_file": None,
            "l_diversity": l_diversity(backend, job, tables)}


def l_diversity(backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]]) -> dict[str, Any] | None:
    """Distinct and entropy l-diversity of the declared sensitive attribute on the published
    table (counterfeit: with its counterfeit rows, as an analyst sees it); None when the job
    declares none or the method does not publish one table of QIs and sensitive values."""
    ds = job.dataset
    if ds.sensitive is None or job.method not in DIVERSITY_METHODS or "release" not in tables or not ds.qis:
        return None
    classes, min_distinct, min_entropy_l, single = backend.rows("report: l-diversity", render(
        "report/l_diversity.sql.j2", relation=tables["release"], qis=[q.column for q in ds.qis],
        sensitive=ds.sensitive))[0]
    return {"classes": int(classes or 0), "distinct_l": int(min_distinct or 0),
            "entropy_l": float(min_entropy_l) if min_entropy_l is not None else None,
            "single_valued_classes": int(single or 0)}


def _engine(backend: Backend) -> str:
    spark = getattr(backend, "spark", None)
    if spark is not None:
        return f"Spark {spark.version}"
    import duckdb
    return f"DuckDB {duckdb.__version__}"
