"""Utility of a disassociated release (seed 001 §3.3, §6; digest §2.6-2.8, §5.4-5.5).

Measures are taken on *reconstructed* datasets: ``R`` seeded random reconstructions built in
SQL from the published tables only (:file:`sql/disassociation/reconstruct.sql.j2`, digest
§2.6: an independent uniform bijection per chunk, each item-chunk code placed in a random
1..|P| rows). Then

* ARE (Definition 2) of COUNT workloads W1 (frequent itemsets of 1..4 codes) and W2 (random
  code sets of 1..4 codes), generated from the original data as the digest's GEN (§5.4);
* MRE (Definition 3) of every utility constraint of the policy, with the digest's bins;
* the suppression rate (always 0: disassociation publishes every code).

ARE and MRE are computed per reconstruction and reported as mean and standard deviation.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ...backend.base import Backend
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .encoding import CODE, PAIR, RECORD, Records, encode
from .params import DisParams
from .policy import build_policy

RECON, WORKLOAD, POLICY = scratch("dis_recon"), scratch("dis_workload"), scratch("dis_policy")
MRE_BINS = ((-math.inf, -0.10), (-0.10, -0.05), (-0.05, -0.025), (-0.025, 0.0), (0.0, 0.025), (0.025, 0.05),
            (0.05, math.inf))
MRE_BIN_LABELS = ("(-inf,-10%)", "[-10%,-5%)", "[-5%,-2.5%)", "[-2.5%,0%]", "(0%,2.5%)", "[2.5%,5%)", "[5%,inf)")


def disassociation_report(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                          params: DisParams) -> dict[str, Any]:
    assert inputs.codes is not None
    rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
    reconstruct(backend, tables, seed=job.release.seed, n=params.reconstructions, k=params.k,
                mode=params.item_count)
    rng = np.random.default_rng(job.release.seed)
    sigma_w1 = max(1, math.ceil(params.w1_minsup_percent / 100.0 * rec.n))
    w1 = [q for c in (1, 2, 3, 4) for q in generate_queries(rec, c, sigma_w1, params.queries, rng)]
    w2 = [q for q in (generate_queries(rec, int(c), 1, 1, rng) for c in rng.integers(1, 5, params.queries)) for q in q]
    out: dict[str, Any] = {"reconstructions": params.reconstructions, "item_count": params.item_count,
                           "suppressed_codes": 0, "suppression_rate": 0.0}
    out["are"] = {"W1": are(backend, w1, params.reconstructions, by_size=True) | {"minsup_records": sigma_w1},
                  "W2": are(backend, w2, params.reconstructions, by_size=False)}
    policy = build_policy(backend, job, params, rec)
    out["mre"] = mre(backend, rec, policy.constraint_of, params.reconstructions)
    return out


def reconstruct(backend: Backend, tables: Mapping[str, tuple[str, ...]], *, seed: int, n: int, k: int,
                mode: str) -> None:
    """Digest §2.6: ``n`` reconstructions into scratch ``dis_recon(recon_id, cluster_id, row_no, code)``."""
    backend.run("disassociation: reconstructions", render(
        "disassociation/reconstruct.sql.j2", target=RECON, clusters=tables["clusters"],
        record_chunks=tables["record_chunks"], shared_chunks=tables["shared_chunks"],
        shared_scope=tables["shared_scope"], item_chunks=tables["item_chunks"], mode=mode),
        {"seed": str(seed), "n": n, **({"k": k} if mode == "below_k" else {})})


def generate_queries(rec: Records, c: int, sigma: int, n: int, rng: np.random.Generator,
                     tries: int = 100) -> list[tuple[int, ...]]:
    """Digest §5.4 GEN: a c-code query starts from a random code of support >= sigma and
    extends by a random code keeping the support >= sigma; a dead end restarts (at most
    ``tries`` times per query, then the query is skipped). Supports come from the pairs in
    numpy (record lists per code, code lists per record)."""
    by_code = np.argsort(rec.cid, kind="stable")
    code_start = np.searchsorted(rec.cid[by_code], np.arange(rec.n_codes + 1))
    rec_start = np.searchsorted(rec.rid, np.arange(rec.n + 1))
    support = np.diff(code_start)
    seeds = np.flatnonzero(support >= sigma)
    out: list[tuple[int, ...]] = []
    if seeds.size == 0:
        return out
    for _ in range(n):
        for _ in range(tries):
            q = [int(rng.choice(seeds))]
            rows = rec.rid[by_code[code_start[q[0]]:code_start[q[0] + 1]]]
            while len(q) < c:
                starts, ends = rec_start[rows], rec_start[rows + 1]
                idx = np.repeat(ends - (ends - starts).cumsum(), ends - starts) + np.arange((ends - starts).sum())
                counts = np.bincount(rec.cid[idx], minlength=rec.n_codes)
                counts[q] = 0
                cand = np.flatnonzero(counts >= sigma)
                if cand.size == 0:
                    break
                b = int(rng.choice(cand))
                q.append(b)
                rows = np.intersect1d(rows, rec.rid[by_code[code_start[b]:code_start[b + 1]]], assume_unique=True)
            if len(q) == c:
                out.append(tuple(sorted(q)))
                break
    return out


def are(backend: Backend, queries: list[tuple[int, ...]], n_recon: int, *, by_size: bool) -> dict[str, Any]:
    """Definition 2 per reconstruction: mean over queries of |C_A - C_O| / C_O."""
    if not queries:
        return {"queries": 0}
    qid = np.repeat(np.arange(len(queries)), [len(q) for q in queries])
    backend.write_table(WORKLOAD, {"qid": qid.astype(np.int64),
                                   "cid": np.concatenate([np.asarray(q, dtype=np.int64) for q in queries]),
                                   "qsize": np.repeat([len(q) for q in queries], [len(q) for q in queries]).astype(np.int64)})
    r = backend.fetch("disassociation: query counts", render(
        "disassociation/query_errors.sql.j2", workload=WORKLOAD, pair=PAIR, recon=RECON, code=CODE),
        {"n": n_recon})
    err = np.zeros((n_recon, len(queries)))
    err[r["recon_id"].astype(int), r["qid"].astype(int)] = r["rel_error"]
    per_recon = err.mean(axis=1)
    out: dict[str, Any] = {"queries": len(queries), "are_mean": float(per_recon.mean()),
                           "are_std": float(per_recon.std(ddof=1)) if n_recon > 1 else 0.0}
    if by_size:
        sizes = np.asarray([len(q) for q in queries])
        out["by_size"] = {int(s): float(err[:, sizes == s].mean()) for s in np.unique(sizes)}
    return out


def mre(backend: Backend, rec: Records, constraint_of: np.ndarray, n_recon: int) -> dict[str, Any]:
    """Definition 3: MRE(u) = (M_O(u) - M_A(u)) / M_O(u), a record matching u when it holds at
    least one code of u (digest A13); binned as digest §5.5, pooled over reconstructions."""
    covered = np.flatnonzero(constraint_of >= 0)
    if covered.size == 0:
        return {"constraints": 0}
    backend.write_table(POLICY, {"cid": covered.astype(np.int64), "uid": constraint_of[covered].astype(np.int64)})
    r = backend.fetch("disassociation: constraint matches", render(
        "disassociation/constraint_errors.sql.j2", policy=POLICY, pair=PAIR, recon=RECON, code=CODE), {"n": n_recon})
    values = r["mre"].astype(float)
    shares = {label: float(((values >= lo) & (values < hi) if label != "[-2.5%,0%]" else
                            (values >= lo) & (values <= hi)).mean())
              for label, (lo, hi) in zip(MRE_BIN_LABELS, MRE_BINS)}
    shares["(0%,2.5%)"] = float(((values > 0) & (values < 0.025)).mean())
    return {"constraints": int(np.unique(constraint_of[covered]).size), "bins": shares,
            "within_2_5": float(((values >= -0.025) & (values < 0.025)).mean()),
            "within_5": float(((values >= -0.05) & (values < 0.05)).mean()),
            "min": float(values.min()), "max": float(values.max()), "mean": float(values.mean())}
