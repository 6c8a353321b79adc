"""The paper's comparator "[16]" (full-domain k-anonymity at the minimum-LM node, digest §3.6)
measured the way the method is measured, for Figs. 5-10's side-by-side numbers.

The comparator's node is a release with no counterfeits and an empty catalog, so it can be
staged in AT's shape by the method's own release templates and its query error computed by
the same SQL (``counterfeit/query_error.sql.j2``): no second estimator that could drift from
the method's. Its RCE is the method's RCE with every weight 1 (no catalog). Nothing here is
published: the staged tables are scratch and are dropped before returning.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...backend.base import Backend
from ...inputs import Inputs
from ...job import Job
from ...scratch import drop_scratch
from .classes import FrequencySet, node_classes
from .grouping import Catalog
from .levels import QILevels
from .measures import discernibility, rce
from .method import CounterfeitParams
from .release import stage_release
from .report import qi_entries, query_error
from .search import NodeResult, baseline


@dataclass(frozen=True)
class ComparatorResult:
    """The comparator's node and its measures (query errors per QI, as in the report)."""

    levels: tuple[int, ...]
    lm: float
    rce: float
    dm: int
    query_error: dict[str, dict[str, Any]]


def comparator_node(freq: FrequencySet, qis: list[QILevels], params: CounterfeitParams) -> NodeResult:
    """The minimum-LM k-anonymous node as a NodeResult with no counterfeits and an empty
    catalog (every class already has k rows), RCE at weight 1."""
    levels, lm = baseline(freq, qis, params.k, tight=params.tight)
    classes = node_classes(freq, qis, levels, tight=params.tight)
    none = np.zeros_like(classes.real)
    empty = Catalog(np.full(classes.real.shape[0], -1, dtype=np.int64),
                    np.zeros((0, classes.real.shape[1]), dtype=np.int64))
    score = rce(classes, none, np.ones(classes.real.shape), mode=params.rce_mode,
                counterfeit_term=params.rce_counterfeit_term)
    return NodeResult(classes, none, empty, score, lm, lm, discernibility(classes, none))


def comparator_report(backend: Backend, job: Job, inputs: Inputs, params: CounterfeitParams,
                      freq: FrequencySet, qis: list[QILevels], *, sensitive_values: Sequence[str] | None = None,
                      width: int = 1) -> ComparatorResult:
    """Stage the comparator's release (scratch only), measure its query error per QI with the
    method's SQL, drop the staged tables. ``freq`` and ``qis`` are ``lattice_inputs``' output,
    so one frequency set serves the method and its comparator."""
    node = comparator_node(freq, qis, params)
    tables = stage_release(backend, job, inputs, freq, qis, node, params.tight)
    try:
        errors = {q["column"]: query_error(backend, inputs.person, job.dataset.sensitive, q,
                                           release=tables["release"], catalog=tables["catalog"],
                                           truthful=tables["truthful"], sensitive_values=sensitive_values,
                                           width=width)
                  for q in qi_entries(backend, job, params.domain)}
    finally:
        drop_scratch(backend, group="cf_")   # stage_release's tables, not the prepared input
    return ComparatorResult(node.classes.levels, node.lm, node.rce, node.dm, errors)
