"""The CBA-style k^m generalization baseline of seed 001 §6.3 (method ``cba``).

Seed 001 compares disassociation (Dis) with CBA [34], a generalization-plus-suppression
anonymizer of diagnosis codes under a utility policy. CBA's internals are not in seed 001
(digest §5.6); the team's shared adaptation of CBA to k^m-anonymity is GenDiag (seed 000,
Appendix A; :mod:`anon_duck.methods.gendiag`), which this method applies:

1. encode the records (the same integer encoding as Dis, :mod:`.encoding`);
2. build the utility policy U exactly as Dis does (:mod:`.policy`); two codes may share a
   generalized code only when they are in the same constraint (seed 000 Definition 8); a
   code outside every constraint is its own block (it can only stay or be suppressed), and
   with ``policy = "none"`` every code is in one block (plain CBA);
3. ``partition = "global"`` (default): GenDiag on the whole dataset as one cluster, the
   global recoding of CBA and of seed 001 Fig. 3a; ``partition = "horpart"``: GenDiag on
   every cluster of Dis's HORPART + MERGE_SMALL (local recoding, the ArtUC usage);
4. publish the generalized records as (record, token) rows with a keyed random record id,
   and the meaning of every token (its codes: "any non-empty subset of them", seed 001 §1.1).

The release is audited by the foundation's generic ``verifiers.km_anonymity`` (tokens are the
items; per cluster) plus cluster sizes and token consistency
(:func:`anon_duck.verifiers.disassociation.audit_cba`). The report counts suppressed codes and
measures ARE of the digest's W1/W2 workloads restricted to the codes CBA kept (seed 001
§6.3: "the diagnosis codes retrieved by all queries are among those that are not suppressed
by CBA"), with the expected-count estimator on generalized data (spec rt_kkm §2.5, A25).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...errors import JobError
from ...inputs import Inputs
from ...job import Job
from ...retention import OUTCOMES, code_retention
from ...scratch import scratch
from ...sqlrender import render
from ...verifiers import CheckResult
from ...verifiers.disassociation import audit_cba
from ..base import AnalystView, Param, Progress, ReleaseTable, Staged, check_k
from ..gendiag import gendiag
from ..papers import cite
from .encoding import CODE, PAIR, RECORD, Records, encode
from .horpart import horpart, merge_small
from .params import SHARED_PARAMS, check_shared
from .policy import build_policy
from .workload import WORKLOAD, kept_codes, largest, mean_by_size, workloads, write_workload

PARTITIONS = ("global", "horpart")
PARAMS = (
    Param("k", int, lo=2, doc="every generalized itemset of <= m tokens is in >= k records (of its cluster)"),
    Param("partition", str, "global", choices=PARTITIONS,
          doc="global = GenDiag on the whole dataset (CBA's global recoding); horpart = on Dis's clusters"),
    Param("max_cluster_size", int, None, lo=2, doc="partition = horpart: HORPART's maxClusterSize (default 2k)"),
    *SHARED_PARAMS,
)
ASSIGN, TOKEN_CODES, RECORD_TOKENS = scratch("cba_assign"), scratch("cba_token_codes"), scratch("cba_record_tokens")


@dataclass(frozen=True)
class CbaParams:
    k: int
    m: int
    partition: str
    max_cluster_size: int
    policy: str
    constraints: tuple[tuple[str, tuple[str, ...]], ...]
    sim_size: int
    sup_percent: float
    queries: int
    w1_minsup_percent: float


def check_params(job: Job) -> CbaParams:
    """Disassociation's shared check (:func:`.params.check_shared`), plus cba's own rule:
    ``max_cluster_size`` only with HORPART's clusters."""
    p = check_shared(job, PARAMS)
    if job.params.get("max_cluster_size") is not None and p["partition"] != "horpart":
        raise JobError("method.max_cluster_size is used only with method.partition = \"horpart\"")
    return CbaParams(p["k"], p["m"], p["partition"], p["max_cluster_size"], p["policy"], p["constraints"],
                     p["sim_size"], p["sup_percent"], p["queries"], p["w1_minsup_percent"])


def code_blocks(constraint_of: np.ndarray, policy: str) -> np.ndarray:
    """GenDiag's ``block`` per code id: the code's constraint; an uncovered code alone in its
    block (seed 000 Definition 8); with no policy, one block for all codes (plain CBA)."""
    if policy == "none":
        return np.zeros(constraint_of.size, dtype=np.int64)
    lone = constraint_of < 0
    out = constraint_of.copy()
    out[lone] = constraint_of.max(initial=-1) + 1 + np.arange(int(lone.sum()))
    return out


@dataclass(frozen=True)
class Generalized:
    """GenDiag's output over all clusters: per (record, token) rows, token code lists."""

    label: np.ndarray              # cluster of each record
    rt_rid: np.ndarray             # record of each (record, token) row
    rt_token: np.ndarray           # global token number of each row
    tokens: list[tuple[int, ...]]  # code ids of each global token
    suppressed_codes: int          # distinct codes that occur in no published token
    suppressed_occurrences: int


def generalize(rec: Records, label: np.ndarray, n_clusters: int, block: np.ndarray, k: int, m: int,
               progress: Progress) -> Generalized:
    """GenDiag (seed 000 Appendix A) on every cluster; tokens are numbered globally by their
    code set (the same set in two clusters is the same published token)."""
    order = np.lexsort((rec.rid, label[rec.rid]))
    rid_sorted = rec.rid[order]
    cid_sorted = rec.cid[order]
    members = np.argsort(label, kind="stable")
    bounds = np.searchsorted(label[members], np.arange(n_clusters + 1))
    pair_bounds = np.searchsorted(label[rid_sorted], np.arange(n_clusters + 1))
    number: dict[tuple[int, ...], int] = {}
    out_rid: list[np.ndarray] = []
    out_tok: list[np.ndarray] = []
    occurrences = 0
    for p in range(n_clusters):
        if p % 256 == 0:
            progress("GenDiag", p, n_clusters)
        rids = members[bounds[p]:bounds[p + 1]]
        lo, hi = pair_bounds[p], pair_bounds[p + 1]
        local = np.searchsorted(rids, rid_sorted[lo:hi])
        cuts = np.searchsorted(local, np.arange(1, rids.size))
        records = [c.tolist() for c in np.split(cid_sorted[lo:hi], cuts)]
        res = gendiag(records, block, k, m)
        gids = np.asarray([number.setdefault(t, len(number)) for t in res.tokens], dtype=np.int64)
        lengths = np.fromiter((len(t) for t in res.record_tokens), dtype=np.int64, count=len(res.record_tokens))
        flat = np.fromiter((t for toks in res.record_tokens for t in toks), dtype=np.int64, count=int(lengths.sum()))
        out_rid.append(np.repeat(rids, lengths))
        out_tok.append(gids[flat] if flat.size else flat)
        occurrences += int(sum(res.record_suppressed))
    progress("GenDiag", n_clusters, n_clusters)
    tokens = sorted(number, key=number.get)
    kept = np.zeros(rec.n_codes, dtype=bool)
    for t in tokens:
        kept[list(t)] = True
    return Generalized(label, np.concatenate(out_rid) if out_rid else np.zeros(0, np.int64),
                       np.concatenate(out_tok) if out_tok else np.zeros(0, np.int64), tokens,
                       int(rec.n_codes - kept.sum()), occurrences)


def stage(backend: Backend, g: Generalized, seed: int) -> list[ReleaseTable]:
    """Release tables: ``clusters(cluster_id, n_records)``, ``record_tokens(record_id,
    cluster_id, token)`` (record_id = keyed random number, never the input order) and
    ``tokens(token, code)`` (the meaning of each generalized code)."""
    backend.write_table(ASSIGN, {"rid": np.arange(g.label.size, dtype=np.int64), "cluster_id": g.label})
    backend.write_table(TOKEN_CODES, {
        "token_no": np.repeat(np.arange(len(g.tokens), dtype=np.int64), [len(t) for t in g.tokens]),
        "cid": np.asarray([c for t in g.tokens for c in t], dtype=np.int64)})
    backend.write_table(RECORD_TOKENS, {"rid": g.rt_rid, "token_no": g.rt_token})
    key = backend.scalar("cba: record_id key", render("disassociation/sub_id_key.sql.j2", pair=PAIR),
                         {"seed": str(seed)})
    tables = []
    for suffix, bound in (("clusters", None), ("record_tokens", {"key": key}), ("tokens", None)):
        target = scratch(f"cba_release_{suffix}")
        backend.run(f"cba: stage {suffix}", render(
            f"disassociation/cba_release_{suffix}.sql.j2", target=target, assign=ASSIGN, token_codes=TOKEN_CODES,
            record_tokens=RECORD_TOKENS, code=CODE), bound)
        tables.append(ReleaseTable(suffix, target, shuffle=True))
    return tables


class CBA:
    name = "cba"
    summary = f"CBA-style k^m generalization + suppression of set-valued codes (GenDiag; the baseline in §6.3 of {cite('disassociation')})"
    views = (AnalystView("", "views/cba_records.sql.j2"), AnalystView("codes", "views/cba_codes.sql.j2"))

    def check_params(self, job: Job) -> CbaParams:
        return check_params(job)

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: CbaParams, progress: Progress) -> Staged:
        assert inputs.codes is not None
        rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
        check_k(params.k, rec.n, "records (persons)")
        policy = build_policy(backend, job, params, rec)
        if params.partition == "global":
            label, n_clusters = np.zeros(rec.n, dtype=np.int64), 1
        else:
            h = merge_small(horpart(rec, policy.constraint_of, params.max_cluster_size, progress),
                            params.k, params.max_cluster_size)
            label, n_clusters = h.label, h.n_clusters
        g = generalize(rec, label, n_clusters, code_blocks(policy.constraint_of, params.policy), params.k,
                       params.m, progress)
        facts = {"records": rec.n, "codes": rec.n_codes, "policy": params.policy, "partition": params.partition,
                 "clusters": n_clusters, "tokens": len(g.tokens),
                 "generalized_tokens": sum(len(t) > 1 for t in g.tokens),
                 "codes_suppressed": g.suppressed_codes, "suppressed_occurrences": g.suppressed_occurrences}
        tables = stage(backend, g, job.release.seed)
        backend.run("cba: retention outcomes", render(
            "disassociation/cba_retention_outcomes.sql.j2", target=OUTCOMES, record=RECORD, code=CODE, pair=PAIR,
            record_tokens=RECORD_TOKENS, token_codes=TOKEN_CODES))
        return Staged(tables + [code_retention(backend, job, inputs)], facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: CbaParams) -> list[CheckResult]:
        return audit_cba(backend, tables, k=params.k, m=params.m)

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: CbaParams) -> dict[str, Any]:
        """Suppression (seed 001 Fig. 14) and ARE of W1/W2 over the kept codes (Fig. 13)."""
        assert inputs.codes is not None
        rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
        allowed = kept_codes(backend, rec, tables["tokens"])
        w1, w2, sigma = workloads(rec, allowed, params.queries, params.w1_minsup_percent, job.release.seed)
        suppressed = rec.n_codes - int(allowed.sum())
        return {"suppressed_codes": suppressed, "distinct_codes": rec.n_codes,
                "suppression_rate": suppressed / rec.n_codes if rec.n_codes else 0.0,
                "are": {"W1": generalized_are(backend, tables, w1, by_size=True) | {"minsup_records": sigma},
                        "W2": generalized_are(backend, tables, w2, by_size=False)}}


def generalized_are(backend: Backend, tables: Mapping[str, tuple[str, ...]], queries: list[tuple[int, ...]], *,
                    by_size: bool) -> dict[str, Any]:
    """Definition 2 of seed 001 on a generalized release: C_A is the expected count under the
    "any non-empty subset" reading of a token (spec rt_kkm §2.5): a record counts
    Π over its tokens ũ holding j >= 1 query codes of 2^(|ũ|-j) / (2^|ũ| - 1)."""
    if not queries:
        return {"queries": 0}
    qid = write_workload(backend, queries)
    r = backend.fetch("cba: query counts", render(
        "disassociation/cba_query_errors.sql.j2", workload=WORKLOAD, pair=PAIR, code=CODE, max_size=largest(queries),
        record_tokens=tables["record_tokens"], tokens=tables["tokens"]))
    err = np.zeros(int(qid.max()) + 1)
    err[r["qid"].astype(int)] = r["rel_error"]
    err = err[qid]
    return {"queries": len(queries), "are_mean": float(err.mean())} | (mean_by_size(err, queries) if by_size else {})


METHOD = CBA()
