"""Utility-preserving k-anonymity with h-ceiling, counterfeit records and a catalog
(seed 002: Lee, Kim, Kim, Chung, BMC Med. Inform. Decis. Mak. 17:104, 2017).

The plug-in: parameters (§7.5 of the digest), the anonymization (Algorithm 1 over the
full-domain lattice, then materialization), the independent verifier
(:mod:`anon_duck.verifiers.counterfeit`) and the report. Paper-to-code map and resolutions of
the paper's ambiguities: docs/counterfeit.md.

References
----------
.. [1] Lee, Kim, Kim, Chung. Utility-preserving anonymization for health data publishing.
   BMC Medical Informatics and Decision Making 17:104 (2017). Seed 002_1fab88f2a74314af.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...errors import JobError
from ...inputs import Inputs
from ...job import Job
from ...retention import qi_retention_levels
from ...sqlrender import render
from ...verifiers import CheckResult
from ...verifiers import counterfeit as verify_counterfeit
from ..base import Param, Progress, ReleaseTable, Staged, check_k, parse_params, release_view, require_roles
from ..papers import cite
from .classes import FrequencySet
from .levels import QILevels, qi_levels
from .release import stage_release
from .report import counterfeit_report
from .search import Options, algorithm1

PARAMS = (
    Param("k", int, lo=2, doc="minimum number of published rows per class, counterfeits included"),
    Param("h", float, default=1.0, doc="h-ceiling: max degree of generalization D(r), in (0, 1]; 1 = search all"),
    Param("interval_mode", str, default="hierarchy", choices=("hierarchy", "tight"),
          doc="numeric QIs as hierarchy intervals or as each class's min-max range (paper's tables)"),
    Param("counterfeit_values", str, default="random", choices=("random", "concealable"),
          doc="sensitive values of counterfeits: uniform random (paper) or deterministic greedy"),
    Param("rce_mode", str, default="per_attribute", choices=("per_attribute", "joint"),
          doc="RCE over each attribute's pdf (default) or over the joint pdf"),
    Param("rce_counterfeit_term", bool, default=True, doc="count counterfeits (original pdf 0) in RCE"),
    Param("domain", dict, default=None, doc="declared [L, U] per numeric QI (Eq. 1); default the hierarchy's top"),
)
RESERVED = ("class_id", "group_id", "class_ids", "count")
"""Column names of the release tables that a QI or the sensitive column must not take."""


@dataclass(frozen=True)
class CounterfeitParams:
    k: int
    h: float
    interval_mode: str
    counterfeit_values: str
    rce_mode: str
    rce_counterfeit_term: bool
    domain: Mapping[str, tuple[float, float]]

    @property
    def tight(self) -> bool:
        return self.interval_mode == "tight"


class Counterfeit:
    name = "counterfeit"
    summary = f"k-anonymity with an h-ceiling, counterfeit records and a catalog ({cite('counterfeit')})"
    views = release_view("release")      # the catalog is a table beside it

    def check_params(self, job: Job) -> CounterfeitParams:
        require_roles(job, qis=True, hierarchies=True, sensitive=True)
        ds = job.dataset
        if ds.class_ is not None or ds.keep:
            raise JobError("method 'counterfeit' publishes only the QIs and input.sensitive: a counterfeit row has "
                           "no value for input.class or input.keep columns, so they would reveal it; remove them")
        for col in [q.column for q in ds.qis] + [ds.sensitive]:
            if col in RESERVED:
                raise JobError(f"column {col!r} has the name of a release column of method 'counterfeit' "
                               f"({', '.join(RESERVED)}); rename it")
        p = parse_params(job, PARAMS)
        if not 0 < p["h"] <= 1:
            raise JobError(f"method.h = {p['h']!r}: the h-ceiling must be in (0, 1]")
        p["domain"] = _domains(job, p["domain"])
        return CounterfeitParams(**p)

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: CounterfeitParams,
                  progress: Progress) -> Staged:
        check_k(params.k, inputs.n_rows)
        freq, qis = lattice_inputs(backend, job, inputs, params)
        opt = Options(params.k, params.h, params.tight, params.counterfeit_values, params.rce_mode,
                      params.rce_counterfeit_term, job.release.seed)
        found = algorithm1(freq, qis, opt, progress)
        best = found.best
        staged = stage_release(backend, job, inputs, freq, qis, best, params.tight)
        facts = {"levels": dict(zip((q.column for q in qis), best.classes.levels)),
                 "found_h": best.classes.dmax, "rce": best.rce, "lm": best.lm, "lm_real": best.lm_real,
                 "dm": best.dm, "n_classes": int(best.classes.real.shape[0]),
                 "n_counterfeits": best.catalog.n_counterfeits, "n_catalog_rows": int(np.count_nonzero(best.catalog.count)),
                 "lattice_size": found.nodes_total, "nodes_evaluated": found.nodes_evaluated,
                 "nodes_h_infeasible": found.nodes_h_infeasible, "nodes_null": found.nodes_null,
                 "nodes_bounded": found.nodes_bounded,
                 "interval_mode": params.interval_mode, "counterfeit_values": params.counterfeit_values,
                 "rce_mode": params.rce_mode, "rce_counterfeit_term": params.rce_counterfeit_term,
                 "domain": {q.column: list(q.domain) for q in qis if q.numeric}}
        tables = [ReleaseTable(suffix, name, shuffle=True) for suffix, name in staged.items()]
        tables.append(qi_retention_levels(backend, job, inputs, staged["release"], facts["levels"], staged["catalog"]))
        return Staged(tables, facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: CounterfeitParams) -> list[CheckResult]:
        return verify_counterfeit.audit(
            backend, job, release=tables["release"], catalog=tables["catalog"], truthful=tables["truthful"],
            k=params.k, h=params.h,
            domain=dict(params.domain))

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: CounterfeitParams) -> dict[str, Any]:
        out = counterfeit_report(backend, job, inputs, tables["release"], tables["catalog"], params.domain,
                                 rce_mode=params.rce_mode, rce_counterfeit_term=params.rce_counterfeit_term,
                                 truthful=tables.get("truthful"))
        out["summary"] = {"info_loss": ("LM", out["lm"]), "are": None, "counterfeits": out["n_counterfeits"]}
        return out


def _domains(job: Job, given: Any) -> dict[str, tuple[float, float]]:
    """``method.domain = { age = [0, 99] }``: declared (L, U) of numeric QIs (digest A23)."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise JobError(f"method.domain = {given!r}: expected a table like {{ age = [0, 99] }}")
    numeric = {q.column for q in job.dataset.qis if q.kind == "numeric"}
    out = {}
    for col, bounds in given.items():
        key = f"method.domain.{col}"
        if col not in numeric:
            raise JobError(f"{key}: {col!r} is not a numeric quasi-identifier of this job "
                           f"(numeric QIs: {', '.join(sorted(numeric)) or 'none'})")
        if (not isinstance(bounds, list) or len(bounds) != 2
                or any(isinstance(b, bool) or not isinstance(b, (int, float)) for b in bounds)
                or not bounds[0] < bounds[1]):
            raise JobError(f"{key} = {bounds!r}: expected [L, U] with two numbers, L < U")
        out[col] = (float(bounds[0]), float(bounds[1]))
    return out


def lattice_inputs(backend: Backend, job: Job, inputs: Inputs,
                    params: CounterfeitParams) -> tuple[FrequencySet, list[QILevels]]:
    """The frequency set (SQL, Algorithm 1 line 5's only input) and each QI's level map."""
    ds = job.dataset
    raw = backend.fetch("counterfeit: frequency set", render(
        "counterfeit/frequency_set.sql.j2", relation=inputs.person, qis=[q.column for q in ds.qis],
        sensitive=ds.sensitive))
    values, s = np.unique(raw["s"].astype(str), return_inverse=True)
    leaves = tuple(raw[f"q{i}"].astype(str) for i in range(len(ds.qis)))
    freq = FrequencySet(raw["cnt"].astype(np.int64), s.astype(np.int64), values, leaves)
    qis = [qi_levels(backend, q.column, q.hierarchy, q.kind == "numeric", leaves[i], params.domain.get(q.column))
           for i, q in enumerate(ds.qis)]
    return freq, qis
METHOD = Counterfeit()
