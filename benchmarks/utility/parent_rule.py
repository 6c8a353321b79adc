"""The OMOP DAG→tree parent rule measured (issue #32, item 4, third bullet): each method that
generalizes codes along the derived code tree (longitudinal: ILM, ``*`` events, generalized
pairs; ArtUC: its chapter constraints, UL, NCP), run once per ``[input.omop] parent_rule``, on
the polyhierarchy fixture ``fixtures/omop_dag`` and on the generated CDM
(benchmarks/generators/omop_cdm.py), with the utility benchmark's measures (retention shares,
workload ARE). docs/omop.md shows the numbers this prints::

    python -m benchmarks.utility.parent_rule --persons 2000
    python -m benchmarks.utility.parent_rule --persons 2000 --seed 1 --methods longitudinal

(``--k`` sets k on the CDM, ``--dag-k`` on the fixture, ``--seed`` the generator's seed.)
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterator

from anon_duck import api, release
from anon_duck.job import Job, job_from_dict
from anon_duck.omop import PARENT_RULES, ROOT
from anon_duck.session import session
from anon_duck.sqlrender import render

from ..cases import _jobs, connect
from ..generators import DATA
from ..generators.omop_cdm import Shape, cached
from ..omop_cases import PERSONS, cdm, persons as persons_at
from . import cases as utility

FACTS = {"longitudinal": ("ilm_alg", "ilm_def8"), "artuc": ("ncp", "ul", "ul_sup", "ul_gen")}
"""The run's own loss measures shown per method (longitudinal's ILM; ArtUC's NCP and UL)."""
DAG = Path("fixtures/omop_dag")
DAG_PARAMS = {"longitudinal": {}, "artuc": {"m": 2, "delta": 0.6, "epsilon": 1000000,
                                            "constraint_grid": {"code_level": 1}}}
"""The methods' parameters on the 24-person fixture beside k (ArtUC's as in its fixture job)."""


def dag_job(method: str, rule: str, k: int = 2) -> Job:
    """``method`` on fixtures/omop_dag with ``parent_rule = rule``."""
    return job_from_dict({"input": {"omop": {"path": str(DAG.resolve()), "parent_rule": rule}},
                          "method": {"name": method, **DAG_PARAMS[method], "k": k},
                          "release": {"name": f"dag_{method}", "seed": 1}}, base_dir=_jobs())


def star_share(con: Any, job: Job) -> float | None:
    """The share of a longitudinal release's events that show only the root ``*``."""
    with session(con, job) as backend:
        events = release.release_tables(backend, job).get("events")
        if events is None:
            return None
        n, stars = backend.rows("parent rule: * events", render("bench/utility/star_share.sql.j2", events=events,
                                                                root=ROOT))[0]
    return float(stars or 0) / float(n) if n else None


def on_dag(method: str, rule: str, k: int = 2) -> dict[str, Any]:
    """The fixture's run: the method's facts, the retention shares and the ``*`` share (its
    CSV folder has no Parquet files for the workload)."""
    job = dag_job(method, rule, k)
    with connect() as con:
        result = api.run(con, job)
        return {"verified": result.verified, **{f: result.facts.get(f) for f in FACTS[method]},
                **utility.retention_shares(con, job), "stars": star_share(con, job)}


def on_cdm(method: str, rule: str, k: int, persons: int, seed: int = 0) -> dict[str, Any]:
    """The generated CDM's run (at most the utility benchmark's persons for the method):
    everything the utility table shows, the facts and the ``*`` share."""
    scale = persons / PERSONS
    at = utility.method_scale(method, scale)
    folder = cdm(at) if seed == 0 else cached(DATA / f"omop_cdm_{persons_at(at)}_seed{seed}",
                                              Shape(persons=persons_at(at), seed=seed))
    job = utility.utility_job(method, k, scale, folder, omop_keys={"parent_rule": rule})
    with connect() as con:
        out = utility.measure(con, job, folder, facts=FACTS[method])
        return {"persons": persons_at(at), **out, "stars": star_share(con, job)}


def rows(persons: int, k: int, methods: tuple[str, ...], dag_k: int = 2, seed: int = 0) -> Iterator[dict[str, Any]]:
    """One row per data set, method and rule."""
    for method in methods:
        for rule in PARENT_RULES:
            yield {"data": "omop_dag", "method": method, "rule": rule, "k": dag_k, **on_dag(method, rule, dag_k)}
        for rule in PARENT_RULES:
            yield {"data": f"cdm seed {seed}", "method": method, "rule": rule, "k": k,
                   **on_cdm(method, rule, k, persons, seed)}


def main() -> None:  # pragma: no cover
    ap = argparse.ArgumentParser(prog="python -m benchmarks.utility.parent_rule", description=__doc__)
    ap.add_argument("--persons", type=int, default=2000, help="persons of the generated CDM")
    ap.add_argument("--k", type=int, default=5, help="k on the generated CDM")
    ap.add_argument("--dag-k", type=int, default=2, help="k on fixtures/omop_dag (24 persons)")
    ap.add_argument("--seed", type=int, default=0, help="the generator's seed")
    ap.add_argument("--methods", nargs="+", default=list(FACTS), choices=list(FACTS))
    args = ap.parse_args()
    for row in rows(args.persons, args.k, tuple(args.methods), args.dag_k, args.seed):
        print({key: round(v, 4) if isinstance(v, float) else v for key, v in row.items()}, flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
