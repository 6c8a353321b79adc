"""The ``artuc`` method and its comparators as anon_duck plug-ins (seed 000).

* ``artuc``: Algorithm 1 (or Algorithm 2 with ``anytime = true``) under the job's utility
  constraints.
* ``artuc_baseline``: the paper's Baseline (§5): one cluster per constraint box, the
  demographics replaced by the box's elements, codes by GenDiag; δ is ignored.
* ``artuc_rmr``: an *approximation* of RmR [61] (its internals are not in the paper; spec
  §3.5): ArtUC with one box (all records) and one code block (all codes), i.e. (k, k^m)-
  anonymity without utility constraints. Every report labels it as an approximation.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...columns import is_bound
from ...errors import InfeasibleError, InputError, JobError
from ...inputs import Inputs
from ...job import Job
from ...sqlrender import render
from ...verifiers import CheckResult
from ...verifiers import artuc as verify_artuc
from ..base import AnalystView, Partitioning, Progress, ReleaseTable, Staged, check_k
from . import constraints as uc
from ..papers import cite
from .algorithm import ArtUC, Outcome
from .params import ArtUCParams, check_artuc_params
from .report import artuc_report
from ...retention import OUTCOMES, code_retention, qi_retention
from .staging import (LINK, OUT_CLASSES, OUT_RECORD_TOKENS, OUT_RECORDS, OUT_RELEASE, OUT_TOKENS, RECORDS,
                      Problem, load_problem, stage)

_RESERVED = ("record", "class", "codes")


def _boxes_of_persons(method: "ArtUCMethod", backend: Backend, job: Job, inputs: Inputs,
                      params: ArtUCParams) -> tuple[tuple[str, ...], str]:
    """The leading key of ArtUC's fragments: each person's constraint box (Step 1 on the whole
    input, by the job's own variant). ArtUC forms and merges clusters only inside a box, so a
    fragment holding whole boxes, or long runs of one, keeps the merge partners the
    unpartitioned run had, but for those across its two cuts; cut by the QIs alone (birth
    month first on INFORMS, which UC1 leaves at "*"), every fragment held a sliver of every box,
    and a box with one cluster in a fragment ended that fragment's merging (docs/scale.md:
    91.0 % of the (person, code) pairs suppressed at 5,000 against 63.5 % unpartitioned)."""
    method._prepare_constraints(backend, job, inputs, params, uc.qi_infos(backend, job, inputs))
    return uc.RECORD_BOX, "box"


class ArtUCMethod:
    name = "artuc"
    summary = f"(k, k^m)-anonymity of demographics + diagnosis codes under utility constraints (ArtUC; {cite('artuc')})"
    views = (AnalystView("", "views/artuc_records.sql.j2"), AnalystView("codes", "views/artuc_codes.sql.j2"))
    variant = "artuc"
    # (k, k^m)-anonymity holds per class, so releases of disjoint fragments union into one
    # (docs/scale.md)
    partitioning = Partitioning(
        "sort",
        {"record": (("records", "record"), ("record_tokens", "record"), ("release", "record")),
         "class": (("records", "class"), ("classes", "class"), ("tokens", "class"), ("release", "class")),
         "token": (("tokens", "token"), ("record_tokens", "token"))},
        {"published_records": "sum", "suppressed_records_step2": "sum", "suppressed_records_no_box": "sum",
         "clusters": "sum", "merges": "sum", "suppressed_codes": "sum", "suppressed_occurrences": "sum",
         "ncp": "mean", "formation_ncp": "mean", "ul": "mean", "ul_sup": "mean", "ul_gen": "mean"},
        lead=_boxes_of_persons)

    def check_params(self, job: Job) -> ArtUCParams:
        params = check_artuc_params(job, constraints_required=self.variant != "rmr")
        for i, q in enumerate(job.dataset.qis):
            if q.column in _RESERVED or is_bound(q.column):
                raise JobError(f"input.qi[{i}].column = {q.column!r}: the release uses this name; rename the column")
        if self.variant == "rmr" and (params.constraints or params.grid):
            raise JobError("method artuc_rmr ignores utility constraints (RmR has none): remove method.constraint")
        return params

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: ArtUCParams,
                  progress: Progress) -> Staged:
        check_k(params.k, inputs.n_rows)
        qis = uc.qi_infos(backend, job, inputs)
        no_box = self._prepare_constraints(backend, job, inputs, params, qis)
        problem = load_problem(backend, job, inputs, qis)
        n_codes = int(problem.labels.size)
        longest = max((c.size for c in problem.codes), default=0)
        if params.m > longest:
            raise InputError(f"method.m = {params.m} is larger than every record's code set (the longest has "
                             f"{longest} code(s)); choose m <= {longest}")
        epsilon = params.epsilon_for(n_codes)
        outcome, dropped = self._run(backend, problem, params, epsilon, progress)
        stage(backend, problem, qis, outcome.clusters, outcome.anonymized, job.release.seed)
        ul = np.concatenate([r.record_ul() for r in outcome.anonymized]) if outcome.anonymized else np.zeros(0)
        sup_occ = int(sum(sum(r.record_suppressed) for r in outcome.anonymized))
        n_pub = int(ul.size)
        facts = {
            "variant": self.variant + (" (approximation of RmR [61], spec rt_kkm §3.5)" if self.variant == "rmr" else ""),
            "status": "ok", "k": params.k, "m": params.m, "delta": params.delta, "epsilon": epsilon,
            "published_records": n_pub, "suppressed_records_step2": int(dropped.size),
            "suppressed_records_no_box": no_box, "clusters": len(outcome.clusters), "merges": outcome.merges,
            "ncp": outcome.ncp, "formation_ncp": outcome.formation_ncp, "ul": float(ul.mean()) if n_pub else 0.0,
            "ul_sup": sup_occ / n_pub if n_pub else 0.0, "suppressed_codes": outcome.suppressed_codes,
            "suppressed_occurrences": sup_occ, "distinct_codes": n_codes,
        }   # no timings: the metadata of a re-run with the same seed must be identical
        facts["ul_gen"] = facts["ul"] - facts["ul_sup"]
        backend.run("artuc: retention outcomes", render(
            "artuc/retention_outcomes.sql.j2", target=OUTCOMES, records=RECORDS, link=LINK, out_records=OUT_RECORDS,
            record_tokens=OUT_RECORD_TOKENS, tokens=OUT_TOKENS))
        return Staged([ReleaseTable("release", OUT_RELEASE), ReleaseTable("records", OUT_RECORDS),
                       ReleaseTable("classes", OUT_CLASSES), ReleaseTable("tokens", OUT_TOKENS),
                       ReleaseTable("record_tokens", OUT_RECORD_TOKENS),
                       code_retention(backend, job, inputs),
                       qi_retention(backend, job, inputs, OUT_RELEASE, intervals=True)], facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: ArtUCParams) -> list[CheckResult]:
        return verify_artuc.verify_release(backend, job, tables, k=params.k, m=params.m, params=params,
                                           constraints=self.variant != "rmr")

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: ArtUCParams) -> dict[str, Any]:
        out = artuc_report(backend, job, inputs, tables)
        out["summary"] = {"info_loss": ("NCP", out["ncp"]), "are": out["are"]["W1"], "ul": out["ul"]}
        if self.variant == "rmr":
            out["note"] = "artuc_rmr is an approximation of RmR [61] (spec rt_kkm §3.5), not the original algorithm"
        return out

    # -- variant hooks -------------------------------------------------------------------
    def _prepare_constraints(self, backend: Backend, job: Job, inputs: Inputs, params: ArtUCParams,
                             qis: list[uc.QIInfo]) -> int:
        """Boxes and blocks of U, validated, and Step 1; returns the records in no box."""
        uc.build(backend, job, inputs, params, qis)
        return uc.group_records(backend, job, inputs, params, qis)

    def _run(self, backend: Backend, problem: Problem, params: ArtUCParams, epsilon: float,
             progress: Progress) -> tuple[Outcome, np.ndarray]:
        alg = ArtUC(problem.demo, problem.box, problem.codes, problem.block, k=params.k, m=params.m,
                    delta=params.delta, epsilon=epsilon, exhaustive_merge=params.exhaustive_merge,
                    merge_candidates=params.merge_candidates, workers=_workers(backend), progress=progress)
        return alg.run(anytime=params.anytime)


class BaselineMethod(ArtUCMethod):
    """Baseline of §5: group by box (Steps 1-2), one cluster per group generalized to the box's
    own elements (Age -> [0:12), Gender -> All), codes anonymized by GenDiag (Steps 24-26).
    δ is ignored; a group below k records is suppressed (spec A24)."""

    name = "artuc_baseline"
    summary = f"the paper's Baseline (§5 of {cite('artuc')}): records pre-generalized to their utility-constraint box, GenDiag on codes"
    variant = "baseline"

    def _run(self, backend: Backend, problem: Problem, params: ArtUCParams, epsilon: float,
             progress: Progress) -> tuple[Outcome, np.ndarray]:
        alg = ArtUC(problem.demo, problem.box, problem.codes, problem.block, k=params.k, m=params.m,
                    delta=1.0, epsilon=epsilon, workers=_workers(backend), progress=progress)
        groups, dropped = alg.record_grouping()
        states = uc.box_states(backend, problem.demo)
        clusters = []
        for g in groups:
            lo, hi, node = states[int(problem.box[g[0]])]
            clusters.append(alg.fixed_cluster(int(problem.box[g[0]]), g, lo, hi, node))
        results, s_total = alg.anonymization(clusters)
        if s_total > epsilon:
            raise InfeasibleError(f"status suppression_exceeded: GenDiag suppressed S = {s_total} codes > "
                                  f"method.epsilon = {epsilon:g} (Baseline, Steps 24-26)")
        ncp = alg.dataset_ncp(clusters)
        return Outcome(clusters, results, ncp, s_total, 0, ncp), dropped


class RmRMethod(ArtUCMethod):
    """Approximation of RmR [61] (spec §3.5): ArtUC with a single group (all records) and a
    single code block (all codes): (k, k^m)-anonymity without utility constraints, merge
    partner chosen by the smallest NCP increase under the δ bound (most similar demographics)."""

    name = "artuc_rmr"
    summary = f"approximation of RmR (ref. [61] of {cite('artuc')}): ArtUC with no utility constraints (one box, one code block)"
    variant = "rmr"

    def _prepare_constraints(self, backend: Backend, job: Job, inputs: Inputs, params: ArtUCParams,
                             qis: list[uc.QIInfo]) -> int:
        uc.unconstrained(backend, job, inputs)
        return 0

    def _run(self, backend: Backend, problem: Problem, params: ArtUCParams, epsilon: float,
             progress: Progress) -> tuple[Outcome, np.ndarray]:
        alg = ArtUC(problem.demo, problem.box, problem.codes, problem.block, k=params.k, m=params.m,
                    delta=params.delta, epsilon=epsilon, exhaustive_merge=params.exhaustive_merge,
                    merge_candidates=params.merge_candidates, partner_rule="ncp", workers=_workers(backend),
                    progress=progress)
        return alg.run(anytime=params.anytime)


def _workers(backend: Backend) -> int:
    """Threads for GenDiag: the engine's (DuckDB's ``threads`` setting, i.e. the job's
    ``[settings] threads`` when given), so one knob bounds the CPU a run takes."""
    return backend.threads()


METHOD = ArtUCMethod()
BASELINE = BaselineMethod()
RMR = RmRMethod()
