"""LKC-privacy by top-down specialization: PAIS (Algorithm 1 of seed 003).

Mohammed, Fung, Hung, Lee, "Anonymizing healthcare data: a case study on the blood
transfusion service", KDD 2009 (seed 003_27f232e02d958571). Module map:

* :mod:`.params` — the (L, K, C, S) requirement and options (Definition 3.1);
* :mod:`.taxonomy` — taxonomy trees, grown numeric intervals, InfoGain inputs (§3.2);
* :mod:`.infogain` — Eq. 1-3 and the optimal binary split (§3.2.1);
* :mod:`.state` — the TIPS as a SQL cells table, validity from each round's partition counts (§4.2-4.3);
* :mod:`.pais` — Algorithm 1 itself;
* :mod:`.release` — line 8: T', the cut and the trace;
* :mod:`.measures` — DR and CE/BE/UE (§5.1).

The K-anonymity comparator of Fig. 5 is PAIS with ``L = |QID|`` and ``C = 1``.
"""
from __future__ import annotations

from typing import Any, Mapping

from ...backend.base import Backend
from ...inputs import Inputs
from ...job import Job
from ...retention import qi_retention
from ...verifiers import CheckResult, lkc_privacy
from ...verifiers.lkc import interval_cut, release_columns
from ..base import Progress, Staged, release_view
from . import measures, release
from ..papers import cite
from .pais import pais
from .params import LKCParams, check
from .state import State


class LKC:
    name = "lkc"
    summary = f"LKC-privacy by top-down specialization (PAIS; {cite('lkc')}): classification or discernibility score"
    views = release_view("release")

    def check_params(self, job: Job) -> LKCParams:
        return check(job)

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: LKCParams,
                  progress: Progress) -> Staged:
        state = State.build(backend, job, inputs, params)
        result = pais(state, params, progress)
        tables = release.stage(backend, job, inputs, state, result, with_dc=params.score == "discernibility")
        tables.append(qi_retention(backend, job, inputs, tables[0].staged))
        facts = {"L": params.L, "L_effective": result.l_effective, "K": params.K, "C": params.C,
                 "S": list(state.sensitive), "score": params.score, "specializations": len(result.trace),
                 "cuts": {t.column: [t.nodes[x].label for x in sorted(c, key=lambda x: t.nodes[x].r0)]
                          for t, c in zip(state.taxonomies, result.cuts)}}
        if params.L > len(job.dataset.qis):
            facts["warning"] = (f"method.L = {params.L} exceeds the {len(job.dataset.qis)} QIDs; "
                                f"L = {result.l_effective} was used (spec A10)")
        return Staged(tables, facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: LKCParams) -> list[CheckResult]:
        """Definition 3.1 on the release (foundation verifier; S = every sensitive value
        unless the job lists them), plus the interval-cut and column audits."""
        ds = job.dataset
        grown = [q.column for q in ds.qis if q.kind == "numeric" and q.hierarchy is None]
        checks = [lkc_privacy(backend, relation=tables["release"], qis=[q.column for q in ds.qis],
                              sensitive=ds.sensitive if params.C < 1 else None,
                              sensitive_values=params.sensitive_values, L=params.L, K=params.K, C=params.C,
                              max_sets=params.max_grouping_sets)]
        checks += [interval_cut(backend, relation=tables["release"], column=c) for c in grown]
        allowed = [q.column for q in ds.qis] + [f"{c}__{b}" for c in grown for b in ("lo", "hi")] + \
                  [c for c in (ds.sensitive, ds.class_, *ds.keep) if c]
        checks.append(release_columns(backend, relation=tables["release"], allowed=allowed))
        return checks

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: LKCParams) -> dict[str, Any]:
        qis = [q.column for q in job.dataset.qis]
        out: dict[str, Any] = {"discernibility": measures.discernibility_ratio(backend, tables["release"], qis)}
        out["classification"] = measures.classification_errors(backend, job, inputs, tables["release"],
                                                               job.release.seed)
        # the demo's one-line summary: the paper's two utility measures (ARE is not one, spec §2.8)
        out["summary"] = {"info_loss": ("DR", out["discernibility"]["dr"]), "are": None}
        if "CE" in out["classification"]:
            out["summary"]["CE"] = out["classification"]["CE"]
        return out


METHOD = LKC()
