"""The LKC-privacy requirement and the PAIS options of a job (Definition 3.1 of seed 003).

``L`` bounds the adversary's prior knowledge (number of QID values), ``K`` the smallest
group over any ``L`` QID values, ``C`` the largest confidence ``P(s|qid)`` of a sensitive
value ``s ∈ S``. K-anonymity is the special case ``L = |QID|, C = 1`` (§3.1), so the
K-anonymity comparator of the paper's Fig. 5 is a parameter setting, not separate code.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ...errors import InfeasibleError, JobError
from ...job import Job
from ..base import Param, parse_params

SCORES = ("infogain", "discernibility")
DC_SCORES = ("delta", "paper_after")
NUMERIC_SPLITS = ("infogain", "best_valid")

PARAMS = (
    Param("L", int, lo=1, doc="most QID values an adversary knows (Definition 3.1)"),
    Param("K", int, lo=1, doc="smallest group size over any L QID values"),
    Param("C", float, default=1.0, doc="largest confidence P(s|qid), 0 < C <= 1 (a number or 'a/b')"),
    Param("sensitive_values", list, default=None,
          doc="S: the protected values of input.sensitive; all of its values when omitted (spec A8)"),
    Param("score", str, default="infogain", choices=SCORES,
          doc="infogain (Case 1, Eq. 1-3) or discernibility (Case 2, ΔDC as spec §2.7 resolves Eq. 4)"),
    Param("dc_score", str, default="delta", choices=DC_SCORES,
          doc="score = 'discernibility' only: maximize the reduction dc_before - dc_after (delta, spec A2) "
              "or the paper-literal Σ|T[qid_v]|² after the split (paper_after)"),
    Param("numeric_split", str, default="infogain", choices=NUMERIC_SPLITS,
          doc="numeric QIs without a hierarchy: the InfoGain-optimal split, fixed when the interval enters "
              "the cut (infogain, spec A5), or the InfoGain-best split that is still valid (best_valid)"),
    Param("root_interval", dict, default=None,
          doc="numeric QIs without a hierarchy: {column = [lo, hi]}, the root interval [lo, hi) (§2.6)"),
    Param("max_grouping_sets", int, default=256, lo=1,
          doc="grouping sets per split-validity query of numeric_split = 'best_valid' (DuckDB memory "
              "grows per set, spec §7.3)"),
)


@dataclass(frozen=True)
class LKCParams:
    """A checked LKC-privacy requirement plus PAIS options.

    ``C`` is kept both as the number the user wrote and as an exact fraction read from its
    decimal text (0.3 is 3/10, the same reading as the verifier): the validity test is
    ``n_s * C.den <= C.num * n`` in integers (spec A17), never a float division.
    """

    L: int
    K: int
    C: float
    sensitive_values: tuple[str, ...] | None
    score: str
    dc_score: str
    numeric_split: str
    root_interval: tuple[tuple[str, float, float], ...]
    max_grouping_sets: int

    @property
    def c_fraction(self) -> Fraction:
        return Fraction(str(self.C))

    def root_for(self, column: str) -> tuple[float, float] | None:
        for col, lo, hi in self.root_interval:
            if col == column:
                return lo, hi
        return None


def check(job: Job) -> LKCParams:
    """Validate ``[method]`` against the job's roles; raise :class:`JobError` naming the key."""
    raw = parse_params(job, PARAMS)
    ds = job.dataset
    if not ds.qis:
        raise JobError("method 'lkc' needs quasi-identifiers: add [[input.qi]] entries")
    if not 0 < raw["C"] <= 1:
        raise JobError(f"method.C = {raw['C']!r}: the confidence threshold must satisfy 0 < C <= 1")
    if raw["C"] < 1 and ds.sensitive is None:
        raise JobError(f"method.C = {raw['C']!r} bounds the confidence of sensitive values: "
                       "name the sensitive column in input.sensitive (or use C = 1)")
    values = raw["sensitive_values"]
    if values is not None:
        if ds.sensitive is None:
            raise JobError("method.sensitive_values needs input.sensitive")
        if not values or not all(isinstance(v, str) and v for v in values):
            raise JobError(f"method.sensitive_values = {values!r}: expected a non-empty list of strings")
        if len(set(values)) != len(values):
            raise JobError(f"method.sensitive_values = {values!r}: a value is listed twice")
        values = tuple(values)
    if raw["score"] == "infogain" and ds.class_ is None:
        raise JobError("method.score = 'infogain' (Case 1, classification) needs input.class")
    if raw["dc_score"] != "delta" and raw["score"] != "discernibility":
        raise JobError(f"method.dc_score = {raw['dc_score']!r} chooses the discernibility score; it needs "
                       "method.score = 'discernibility'")
    if raw["numeric_split"] != "infogain" and not any(q.kind == "numeric" and q.hierarchy is None for q in ds.qis):
        raise JobError(f"method.numeric_split = {raw['numeric_split']!r} applies to numeric QIDs without a "
                       "hierarchy (intervals grown at run time), and this job has none")
    roots = _root_intervals(raw["root_interval"], job)
    for i, q in enumerate(ds.qis):
        if q.hierarchy is None and q.kind != "numeric":
            raise JobError(f"input.qi[{i}] ({q.column!r}): a categorical QID needs a taxonomy "
                           "(hierarchy); only numeric QIDs may grow their intervals at run time")
        if q.hierarchy is None and ds.class_ is None:
            raise JobError(f"input.qi[{i}] ({q.column!r}): a numeric QID without a hierarchy is split by "
                           "information gain on the class (§3.2.1), so it needs input.class (spec A19)")
    return LKCParams(raw["L"], raw["K"], raw["C"], values, raw["score"], raw["dc_score"], raw["numeric_split"], roots,
                     raw["max_grouping_sets"])


def _root_intervals(spec: Any, job: Job) -> tuple[tuple[str, float, float], ...]:
    if spec is None:
        return ()
    out = []
    for column, bounds in spec.items():
        key = f"method.root_interval.{column}"
        q = next((q for q in job.dataset.qis if q.column == column), None)
        if q is None or q.kind != "numeric" or q.hierarchy is not None:
            raise JobError(f"{key}: {column!r} is not a numeric QID without a hierarchy")
        if (not isinstance(bounds, list) or len(bounds) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                or not bounds[0] < bounds[1]):
            raise JobError(f"{key} = {bounds!r}: expected [lo, hi] with lo < hi (the root interval [lo, hi))")
        out.append((column, float(bounds[0]), float(bounds[1])))
    return tuple(out)


def check_root(params: LKCParams, n: int, s_counts: dict[str, int]) -> None:
    """Spec A9: the root (every record in one group) is the most general table and every
    specialization only shrinks groups and raises the largest confidence (anti-monotonicity),
    so if the root violates LKC-privacy no release can satisfy it. Checked before any work."""
    if n < params.K:
        raise InfeasibleError(f"method.K = {params.K} is larger than the number of records ({n}); "
                              "no release can satisfy LKC-privacy")
    frac = params.c_fraction
    for s, n_s in s_counts.items():
        if n_s * frac.denominator > frac.numerator * n:
            raise InfeasibleError(
                f"method.C = {params.C:g} is below the share of sensitive value {s!r} in the whole table "
                f"({n_s}/{n} = {n_s / n:.4f}); even the fully generalized table has P(s|qid) = "
                f"{n_s / n:.4f} > C, so no release can satisfy LKC-privacy")
