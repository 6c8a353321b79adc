"""Where a longitudinal release's ``*`` events come from (issue #32, item 4, second bullet).

Runs the longitudinal method (A-GS + MDAV', seed 004) on the utility benchmark's generated CDM
(:mod:`benchmarks.utility.cases`, any number of persons, any k, any ``[method]`` keys, any
vocabulary depth) or on a job file, and splits the released events by what they show of their
code, from the release and the input's code tree: the code itself, a node above some codes, or
a node above every code the input uses (the root ``*``, or a top concept that stands for all of
them: for Definition 4's LM, over the observed domain, that is the same loss as the root). With
the CDM it also gives the utility benchmark's retention shares and ARE
(:func:`benchmarks.utility.cases.measure`), so every variant is measured on the same figures.

``--scan`` swaps MDAV''s record choice for a diagnostic one (not job options: neither keeps more
codes; docs/longitudinal.md, "Where the ``*`` events come from"):

* ``paper``: Algorithm 3/4 as published (farthest and nearest by the A-GS total);
* ``per_pair``: farthest and nearest by the A-GS total divided by the pairs of both
  trajectories, so that long trajectories are not "far" for their length alone;
* ``random``: formCluster adds a seeded random record instead of the nearest (a clustering that
  ignores similarity, the baseline a similarity-driven one has to beat).

    python -m benchmarks.utility.stars --persons 1000 --k 5 --set w_icd=0.9
    python -m benchmarks.utility.stars --job fixtures/jobs/longitudinal_mimic.toml
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import tomllib
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from anon_duck import api, release
from anon_duck.hierarchy import CLOSURE, NODES
from anon_duck.inputs import prepare
from anon_duck.job import Job, load_job
from anon_duck.methods.longitudinal.align import XTables
from anon_duck.retention import event_codes
from anon_duck.session import session
from anon_duck.sqlrender import render

from ..cases import connect
from ..generators import DATA
from ..generators.omop_cdm import Shape, cached
from ..omop_cases import PERSONS
from . import cases

# the module, not the function the package re-exports under the same name
MDAV = importlib.import_module("anon_duck.methods.longitudinal.mdav")
SCANS = ("paper", "per_pair", "random")
KINDS = ("exact", "internal", "star")


def event_kinds(con: Any, job: Job) -> dict[str, Any]:
    """Released events by kind (``events_<kind>``: shares of the released events, ``g_<kind>``:
    mean used codes under the shown node, ``age_width_<kind>``: mean years of the shown age),
    the released and input event counts, and the code tree's shape over the used codes."""
    events = job.dataset.events
    assert events is not None
    with session(con, job) as backend:
        inputs = prepare(backend, job)
        codes = event_codes(backend, inputs)
        tables = release.release_tables(backend, job)
        context = {"codes": codes, "closure": CLOSURE, "nodes": NODES, "hierarchy": events.code_hierarchy}
        rows = backend.rows("stars: released events", render("bench/utility/longitudinal_stars.sql.j2",
                                                             events=tables["events"], **context))
        shape = backend.rows("stars: code tree", render("bench/utility/code_tree_shape.sql.j2", **context))
        facts = json.loads(backend.scalar("stars: facts", render("release/meta_value.sql.j2",
                                                                 meta=job.release.where(f"{job.release.name}_meta")),
                                          {"key": "facts"}) or "{}")
    released = sum(int(r[1]) for r in rows)
    out: dict[str, Any] = {"input_events": facts.get("pairs"), "released_events": released,
                           "ilm_def8": facts.get("ilm_def8"), "alm_def8": facts.get("alm_def8")}
    for kind in KINDS:
        row = next((r for r in rows if r[0] == kind), None)
        out[f"events_{kind}"] = int(row[1]) / released if row and released else 0.0
        out[f"g_{kind}"] = float(row[2]) if row else None
        out[f"age_width_{kind}"] = float(row[4]) if row else None
    out["tree"] = [{"depth": int(d), "nodes": int(n), "used_codes": int(u), "mean_g": float(g), "max_g": int(m)}
                   for d, n, u, g, m in shape]
    return out


def _all_costs(pool: Any, codes: np.ndarray, ages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value ids, A-GS totals with X) for every value still in D: the unpruned scan."""
    pool._live_layout()
    cand = pool.cand
    cost = XTables.create(pool.model, pool.pairs, codes, ages).costs(cand, pool.sup_y)
    alive = pool.count[cand.ids] > 0
    return cand.ids[alive], cost[alive]


def _per_pair(pick: Callable[[np.ndarray], np.ndarray]) -> Callable[..., int]:
    def scan(pool: Any, codes: np.ndarray, ages: np.ndarray) -> int:
        ids, cost = _all_costs(pool, codes, ages)
        d = cost / (len(codes) + pool.trajs.length[ids])
        return pool._first(ids[d == pick(d)])
    return scan


@contextlib.contextmanager
def scan_variant(scan: str, seed: int = 32) -> Iterator[None]:
    """MDAV''s Pool with the record choice of ``scan`` (module docstring), for the ``with`` block."""
    if scan not in SCANS:
        raise ValueError(f"--scan {scan!r}: one of {', '.join(SCANS)}")
    saved = MDAV.Pool.farthest, MDAV.Pool.nearest
    rng = np.random.default_rng(seed)
    if scan == "per_pair":
        MDAV.Pool.farthest, MDAV.Pool.nearest = _per_pair(np.max), _per_pair(np.min)
    elif scan == "random":
        MDAV.Pool.nearest = lambda pool, codes, ages: int(rng.choice(np.flatnonzero(pool.count > 0)))
    try:
        yield
    finally:
        MDAV.Pool.farthest, MDAV.Pool.nearest = saved


def on_cdm(persons: int, k: int, params: dict[str, Any], depth: int = Shape.depth,
           scan: str = "paper") -> dict[str, Any]:
    """The longitudinal utility case on a CDM of ``persons`` (vocabulary of ``depth`` levels),
    with ``params`` added to ``[method]``: the utility figures and the events by kind."""
    shape = Shape(persons=persons, depth=depth)
    folder = cached(DATA / (f"omop_cdm_{persons}" if depth == Shape.depth else f"omop_cdm_{persons}_d{depth}"), shape)
    job = cases.utility_job("longitudinal", k, persons / PERSONS, folder)
    job = dataclasses.replace(job, params={**job.params, **params})
    with connect() as con, scan_variant(scan):
        figures = cases.measure(con, job, folder)
        kinds = event_kinds(con, job)
    return {"persons": persons, "k": k, "depth": depth, "scan": scan, "params": params, **figures, **kinds}


def on_job(path: Path, params: dict[str, Any], scan: str = "paper") -> dict[str, Any]:
    """The events by kind of a longitudinal job file's release (``params`` added to ``[method]``)."""
    job = load_job(path)
    job = dataclasses.replace(job, params={**job.params, **params})
    with connect() as con, scan_variant(scan):
        result = api.run(con, job)
        return {"job": str(path), "scan": scan, "params": params, "verified": result.verified,
                **event_kinds(con, job)}


def _setting(text: str) -> tuple[str, Any]:
    """``key=value`` with a TOML value (``w_icd=0.9``, ``lm_convention="literal"``; bare words are strings)."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--set {text!r}: write key=value")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.utility.stars", description=__doc__.split("\n\n")[0])
    ap.add_argument("--persons", type=int, default=1000, help="persons of the generated CDM")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--depth", type=int, default=Shape.depth, help="levels of the generated vocabulary, leaves included")
    ap.add_argument("--set", type=_setting, action="append", default=[], metavar="KEY=VALUE",
                    help="a [method] key of the longitudinal job (repeatable)")
    ap.add_argument("--scan", choices=SCANS, default="paper", help="MDAV''s record choice (diagnostic)")
    ap.add_argument("--job", type=Path, help="a longitudinal job file instead of the generated CDM")
    args = ap.parse_args(argv)
    params = dict(args.set)
    out = on_job(args.job, params, args.scan) if args.job else on_cdm(args.persons, args.k, params, args.depth, args.scan)
    print(json.dumps(out))


if __name__ == "__main__":  # pragma: no cover
    main()
