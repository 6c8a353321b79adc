"""Parameters of the longitudinal method (seed 004) and their checks.

Every choice the paper leaves open is a parameter with the digest's recommended default
(spec ``longitudinal.md`` §6); ``docs/longitudinal.md`` says why each default was taken.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ...errors import JobError
from ...job import Job
from ..base import Param, parse_params, require_roles

ALIGNMENTS = ("ags", "baseline")
LM_CONVENTIONS = ("c0", "literal")
FINAL_PICKS = ("random", "lowest_id")
DOMAINS = ("observed", "hierarchy")

PARAMS = (
    Param("k", int, lo=2, doc="every released trajectory occurs at least k times (Definition 1)"),
    Param("alignment", str, "ags", choices=ALIGNMENTS,
          doc="A-GS (Algorithm 2) or the position-by-position Baseline (Algorithm 1)"),
    Param("w_icd", float, 0.5, lo=0.0, hi=1.0, doc="weight of ICD loss; w_age = 1 - w_icd"),
    Param("w_age", float, -1.0, doc="optional; must equal 1 - w_icd when given"),
    Param("lm_convention", str, "c0", choices=LM_CONVENTIONS,
          doc="leaf count of a leaf in LM: 0 (reproduces Fig. 5) or 1 (the literal Definition 4)"),
    Param("final_pick", str, "random", choices=FINAL_PICKS,
          doc="seed record R of the last cluster (Algorithm 3 step 17): seeded random or lowest id"),
    Param("code_domain", str, "observed", choices=DOMAINS,
          doc="|ICD| counts the observed codes (Table I) or every leaf of the code hierarchy"),
    Param("age_domain", str, "hierarchy", choices=DOMAINS,
          doc="|Age| counts every leaf of the age hierarchy (Fig. 3: 33..40) or the observed ages"),
    Param("query_size", int, 2, lo=1, hi=2, doc="AvgRE workload: largest number of (ICD, Age) pairs per query"),
    Param("query_support", float, 0.01, lo=0.0, hi=1.0,
          doc="AvgRE workload: a query's pairs co-occur in at least this share of trajectories"),
    Param("max_queries", int, 1000, lo=1, doc="AvgRE workload: seeded sample of at most this many queries"),
)


@dataclass(frozen=True)
class LongitudinalParams:
    k: int
    alignment: str
    w_icd: Fraction
    w_age: Fraction
    lm_convention: str
    final_pick: str
    code_domain: str
    age_domain: str
    query_size: int
    query_support: float
    max_queries: int


def _rational(value: float, key: str) -> Fraction:
    """Weights become exact rationals so that every cost is an integer (spec §3.6, A6)."""
    frac = Fraction(value).limit_denominator(1000)
    if abs(float(frac) - value) > 1e-9:
        raise JobError(f"{key} = {value!r}: give the weight as a fraction with a denominator "
                       "of at most 1000 (e.g. 0.25 or \"1/3\")")
    return frac


def check_params(job: Job) -> LongitudinalParams:
    """Validate ``[method]`` and the roles: events with a code and an age hierarchy, no QIs."""
    require_roles(job, events=True)
    events = job.dataset.events
    assert events is not None
    if not events.code_hierarchy:
        raise JobError("method 'longitudinal' needs input.events.code_hierarchy (the ICD DGH of Definition 2)")
    if not events.age_hierarchy:
        raise JobError("method 'longitudinal' needs input.events.age_hierarchy (the Age DGH, Fig. 3)")
    if job.dataset.qis:
        raise JobError("method 'longitudinal' anonymizes (code, age) trajectories only; the paper has no "
                       "other quasi-identifier: remove the [[input.qi]] entries (or drop those columns)")
    if job.dataset.id is None:
        raise JobError("method 'longitudinal' needs input.id to tie events to persons")
    raw = parse_params(job, PARAMS)
    w_icd = _rational(raw["w_icd"], "method.w_icd")
    w_age = 1 - w_icd
    if "w_age" in job.params:
        given = _rational(raw["w_age"], "method.w_age")
        if given != w_age:
            raise JobError(f"method.w_age = {raw['w_age']!r}: w_icd + w_age must be 1 (w_icd = {float(w_icd):g})")
    return LongitudinalParams(raw["k"], raw["alignment"], w_icd, w_age, raw["lm_convention"], raw["final_pick"],
                              raw["code_domain"], raw["age_domain"], raw["query_size"], raw["query_support"],
                              raw["max_queries"])
