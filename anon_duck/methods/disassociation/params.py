"""Parameters of the disassociation method (seed 001 §3.1, §5; digest §1.1, §3.1, §5)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ...errors import JobError
from ...job import Job
from ..base import Param, parse_params, require_roles
from .verpart import UNCONSTRAINED_ORDERS

POLICIES = ("none", "explicit", "level1", "level2", "level3", "sim", "sup")
ITEM_COUNT_MODES = ("uniform", "one", "below_k")

# The keys disassociation and its CBA baseline (cba.py) share, checked by check_shared: the
# attacker's m, the utility policy and the report's workloads.
SHARED_PARAMS = (
    Param("m", int, lo=1, doc="attacker knowledge: number of codes of a record the attacker knows"),
    Param("policy", str, "none", choices=POLICIES, doc="utility policy U (paper §6.1, digest A15)"),
    Param("constraints", dict, None, doc="explicit policy: {constraint id = [codes]} (disjoint)"),
    Param("sim_size", int, 10, lo=1, doc="policy sim: codes per constraint"),
    Param("sup_percent", float, 0.625, lo=0.0, hi=100.0, doc="policy sup: minimum support of itemsets, % of records"),
    Param("queries", int, 1000, lo=1, hi=100_000, doc="report: COUNT queries per workload (and per size in W1)"),
    Param("w1_minsup_percent", float, 0.625, lo=0.0, hi=100.0, doc="report: W1 minimum support, % of records"),
)

PARAMS = (
    Param("k", int, lo=2, doc="anonymity level: every known set of <= m codes matches >= k records"),
    Param("max_cluster_size", int, None, lo=2, doc="HORPART stops below this size (default 2k, paper footnote 3)"),
    Param("refine", bool, True, doc="build shared chunks over joint clusters (Fig. 6 line 4)"),
    Param("merge_small", bool, True, doc="merge HORPART clusters below k (digest A7); off = paper-literal"),
    Param("unconstrained_order", str, "after", choices=UNCONSTRAINED_ORDERS,
          doc="where VERPART puts codes without a utility constraint (digest A4)"),
    *SHARED_PARAMS,
    Param("reconstructions", int, 10, lo=0, hi=1000,
          doc="report: seeded random reconstructions (digest A11); 0 = only the analytic expected counts (§2.9)"),
    Param("item_count", str, "one", choices=ITEM_COUNT_MODES,
          doc="report: how often an item-chunk code is placed in a reconstruction: once (one, the default), "
              "1..|P| rows (uniform, digest A11) or 1..min(|P|, k-1) rows (below_k); "
              "docs/disassociation.md 'Reconstruction'"),
    Param("baseline_release", str, "", doc="report: a published cba release; queries use only the codes it kept "
                                           "and its ARE on the same queries is reported (seed 001 §6.3)"),
)


@dataclass(frozen=True)
class DisParams:
    k: int
    m: int
    max_cluster_size: int
    refine: bool
    merge_small: bool
    unconstrained_order: str
    policy: str
    constraints: tuple[tuple[str, tuple[str, ...]], ...]
    sim_size: int
    sup_percent: float
    reconstructions: int
    queries: int
    w1_minsup_percent: float
    item_count: str
    baseline_release: str


def check_shared(job: Job, spec: Sequence[Param]) -> dict[str, Any]:
    """The parameter check disassociation and cba share: the codes role, ``spec`` (types,
    ranges, unknown keys), and the consistency rules of their common keys, with one wording for
    both. Returns the parsed keys with ``max_cluster_size`` defaulted to 2k and ``constraints``
    parsed (``()`` without an explicit policy)."""
    require_roles(job, codes=True)
    p = parse_params(job, spec)
    k = p["k"]
    p["max_cluster_size"] = p["max_cluster_size"] if p["max_cluster_size"] is not None else 2 * k
    if p["max_cluster_size"] < k:
        raise JobError(f"method.max_cluster_size = {p['max_cluster_size']}: must be >= k = {k} "
                       "(HORPART's clusters hold at least k records; Loukides et al., 2014, footnote 3)")
    if p["policy"] in ("level1", "level2", "level3") and not job.dataset.codes.hierarchy:
        raise JobError(f"method.policy = {p['policy']!r} groups codes by their hierarchy: "
                       "set input.codes.hierarchy (e.g. the built-in icd9cm tree)")
    if (p["constraints"] is not None) != (p["policy"] == "explicit"):
        raise JobError("method.constraints is used exactly when method.policy = \"explicit\"; "
                       f"got policy = {p['policy']!r} with{'' if p['constraints'] is not None else 'out'} constraints")
    if p["policy"] == "sup" and p["sup_percent"] <= 0:
        raise JobError("method.sup_percent must be > 0 with method.policy = \"sup\"")
    p["constraints"] = parse_constraints(p["constraints"]) if p["constraints"] is not None else ()
    return p


def check_params(job: Job) -> DisParams:
    """Types, ranges and consistency of ``[method]``; errors name ``method.<key>``."""
    p = check_shared(job, PARAMS)
    return DisParams(p["k"], p["m"], p["max_cluster_size"], p["refine"], p["merge_small"], p["unconstrained_order"],
                     p["policy"], p["constraints"], p["sim_size"], p["sup_percent"], p["reconstructions"],
                     p["queries"], p["w1_minsup_percent"], p["item_count"], p["baseline_release"])


def parse_constraints(table: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``[method.constraints]``: each key a constraint id, each value a non-empty list of code
    strings; constraints must be pairwise disjoint (seed 001 §3.1)."""
    if not table:
        raise JobError("method.constraints is empty: give at least one constraint or use policy = \"none\"")
    owner: dict[str, str] = {}
    out = []
    for uid, codes in table.items():
        key = f"method.constraints.{uid}"
        if not isinstance(codes, list) or not codes:
            raise JobError(f"{key}: expected a non-empty list of code strings, got {codes!r}")
        for c in codes:
            if not isinstance(c, str) or not c.strip():
                raise JobError(f"{key}: codes are strings (write \"401.0\", not 401.0); got {c!r}")
            if c in owner:
                raise JobError(f"{key}: code {c!r} is also in method.constraints.{owner[c]}; "
                               "utility constraints must be disjoint (seed 001 §3.1)")
            owner[c] = uid
        out.append((uid, tuple(codes)))
    return tuple(out)
