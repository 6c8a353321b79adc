"""Utility of a disassociated release (seed 001 §3.3, §6; digest §2.6-2.9, §5.4-5.5).

Measures are taken on *reconstructed* datasets, from the published tables only:

* the analytic expected answer of every COUNT query over the random reconstructions (digest
  §2.9, :file:`sql/disassociation/expected_counts.sql.j2`): deterministic, no sampling;
* ``R`` seeded random reconstructions (:file:`sql/disassociation/reconstruct.sql.j2`, digest
  §2.6: an independent uniform bijection per chunk; each item-chunk code placed in one random
  row (``item_count = one``, the default; docs/disassociation.md "Reconstruction" says why),
  in 1..|P| rows (``uniform``, the digest's reading) or in 1..min(|P|, k-1) rows
  (``below_k``)).

Then ARE (Definition 2) of the COUNT workloads W1 (frequent itemsets of 1..4 codes) and W2
(random code sets of 1..4 codes) of :mod:`.workload`, per reconstruction (mean and standard
deviation) and of the expected answers; MRE (Definition 3) of every utility constraint, with
the digest's bins; the suppression rate (always 0). With ``baseline_release`` the queries use
only the codes a published ``cba`` release kept and that release's ARE on the same queries is
reported next to Dis's (seed 001 §6.3, Fig. 13).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ...backend.base import Backend
from ...errors import InputError
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .encoding import CODE, PAIR, Records, encode
from .params import DisParams
from .cba import generalized_are
from .policy import build_policy
from .workload import WORKLOAD, kept_codes, largest, mean_by_size, workloads, write_workload

RECON, POLICY = scratch("dis_recon"), scratch("dis_policy")
RECORD_CODES, SHARED_CODES = scratch("dis_record_codes"), scratch("dis_shared_codes")
RECON_CODES, RAREST = scratch("dis_recon_codes"), scratch("dis_rarest")
SHARED_FACTORS = scratch("dis_shared_factors")
MRE_BINS = ((-math.inf, -0.10), (-0.10, -0.05), (-0.05, -0.025), (-0.025, 0.0), (0.0, 0.025), (0.025, 0.05),
            (0.05, math.inf))
MRE_BIN_LABELS = ("(-inf,-10%)", "[-10%,-5%)", "[-5%,-2.5%)", "[-2.5%,0%]", "(0%,2.5%)", "[2.5%,5%)", "[5%,inf)")


def disassociation_report(backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
                          params: DisParams) -> dict[str, Any]:
    assert inputs.codes is not None
    rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
    baseline = _baseline_tables(backend, job, params.baseline_release) if params.baseline_release else None
    allowed = kept_codes(backend, rec, baseline["tokens"]) if baseline else np.ones(rec.n_codes, dtype=bool)
    w1, w2, sigma_w1 = workloads(rec, allowed, params.queries, params.w1_minsup_percent, job.release.seed)
    out: dict[str, Any] = {"reconstructions": params.reconstructions, "item_count": params.item_count,
                           "suppressed_codes": 0, "suppression_rate": 0.0}
    out["are"] = {"W1": {"minsup_records": sigma_w1}, "W2": {}}
    measured = (("W1", w1, True), ("W2", w2, False))
    written: dict[str, tuple[np.ndarray, np.ndarray]] = {}     # per workload: each query's qid, C_O per qid
    for name, queries, by_size in measured:
        if queries:
            qid = write_workload(backend, queries)
            c_o = original_counts(backend, queries, int(qid.max()) + 1)
            written[name] = qid, c_o
            out["are"][name]["expected"] = expected_are(backend, tables, rec, queries, qid, c_o,
                                                        mode=params.item_count, k=params.k, by_size=by_size)
        else:
            out["are"][name]["expected"] = {"queries": 0}
        if baseline:
            out["are"][name]["baseline"] = generalized_are(backend, baseline, queries, by_size=by_size)
    if params.reconstructions:
        policy = build_policy(backend, job, params, rec)
        read = {c for q in w1 + w2 for c in q} | set(np.flatnonzero(policy.constraint_of >= 0).tolist())
        backend.write_table(RECON_CODES, {"cid": np.asarray(sorted(read), dtype=np.int64)})
        counts, mre_values = reconstructed(backend, tables, rec, (w1, w2), policy.constraint_of,
                                           seed=job.release.seed, n=params.reconstructions, k=params.k,
                                           mode=params.item_count)
        for (name, queries, by_size), c_a in zip(measured, counts):
            if queries:
                qid, c_o = written[name]
                out["are"][name] |= are(c_a, c_o, qid, queries, by_size=by_size)
            else:
                out["are"][name]["queries"] = 0
        out["mre"] = mre(mre_values, policy.constraint_of)
    if baseline:
        out["baseline_release"] = params.baseline_release
        out["query_codes"] = int(allowed.sum())
    return out


def expected_are(backend: Backend, tables: Mapping[str, tuple[str, ...]], rec: Records,
                 queries: list[tuple[int, ...]], qid: np.ndarray, c_o: np.ndarray, *, mode: str, k: int,
                 by_size: bool) -> dict[str, Any]:
    """ARE (Definition 2) of the analytic expected answers E[C_A(q)] of digest §2.9 (no
    sampling; :file:`sql/disassociation/expected_counts.sql.j2`) of the written workload
    (``qid``: :func:`write_workload`; ``c_o``: :func:`original_counts`). This is the error of
    the mean reconstruction; by Jensen it is at most the mean error of single reconstructions."""
    err = _errors(expected_counts(backend, tables, rec, queries, qid, mode=mode, k=k), c_o, qid)
    return {"queries": len(queries), "are": float(err.mean())} | (mean_by_size(err, queries) if by_size else {})


def expected_counts(backend: Backend, tables: Mapping[str, tuple[str, ...]], rec: Records,
                    queries: list[tuple[int, ...]], qid: np.ndarray, *, mode: str, k: int) -> np.ndarray:
    """E[C_A(q)] per distinct query of the written workload (``qid``: :func:`write_workload`),
    summed one slice of clusters at a time (:func:`_slices`) over the subrecords unnested to
    the workload's codes once (:file:`sql/disassociation/query_subrecords.sql.j2`)."""
    n_uniq = int(qid.max()) + 1
    for target, chunks, shared in ((RECORD_CODES, tables["record_chunks"], False),
                                   (SHARED_CODES, tables["shared_chunks"], True)):
        backend.run("disassociation: query subrecords", render(
            "disassociation/query_subrecords.sql.j2", target=target, workload=WORKLOAD, code=CODE, chunks=chunks,
            shared=shared))
    backend.write_table(RAREST, {"qid": np.arange(n_uniq, dtype=np.int64), "cid": _rarest(rec, queries)})
    shared_factors(backend, tables)
    sql = render("disassociation/expected_counts.sql.j2", workload=WORKLOAD, code=CODE, clusters=tables["clusters"],
                 record_codes=RECORD_CODES, shared_factors=SHARED_FACTORS, shared_scope=tables["shared_scope"],
                 item_chunks=tables["item_chunks"], rarest=RAREST, mode=mode)
    bound = {"k": k} if mode == "below_k" else {}
    expected = np.zeros(n_uniq)
    sizes = backend.fetch("disassociation: cluster sizes", render("disassociation/cluster_sizes.sql.j2",
                                                                  clusters=tables["clusters"]))
    for lo, hi in _slices(sizes, _query_rows(rec, queries, qid, n_uniq), EXPECTED_SLICE_ROWS):
        part = backend.fetch("disassociation: expected counts", sql, {"lo": lo, "hi": hi, **bound})
        np.add.at(expected, part["qid"].astype(np.int64), part["e_count"].astype(float))
    return expected


def shared_factors(backend: Backend, tables: Mapping[str, tuple[str, ...]]) -> None:
    """Scratch ``dis_shared_factors`` (:file:`sql/disassociation/shared_factors.sql.j2`): every
    query's factor of every shared chunk, once, in ranges of chunk ids of at most
    :data:`EXPECTED_SLICE_ROWS` rows each (the chunk ids are spread evenly over the ranges)."""
    n_rows, lo, hi = backend.rows("disassociation: shared factor rows", render(
        "disassociation/shared_factor_rows.sql.j2", workload=WORKLOAD, shared_codes=SHARED_CODES))[0]
    lo, hi = int(lo or 0), int(hi or 0)
    n = min(max(1, -(-int(n_rows) // EXPECTED_SLICE_ROWS)), hi - lo + 1)
    cuts = np.linspace(lo, hi + 1, n + 1).astype(np.int64)
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        backend.run("disassociation: shared factors", render(
            "disassociation/shared_factors.sql.j2", target=SHARED_FACTORS, workload=WORKLOAD,
            shared_codes=SHARED_CODES, rarest=RAREST, shared_scope=tables["shared_scope"],
            clusters=tables["clusters"], first=i == 0), {"lo": int(a), "hi": int(b) - 1})


def _rarest(rec: Records, queries: list[tuple[int, ...]]) -> np.ndarray:
    """Per distinct query (:func:`write_workload`'s order) its code of least support in the
    input (ties: the smaller number): only the clusters holding that code can hold the whole
    query, and expected_counts.sql.j2 reads the other codes' subrecords in those clusters only."""
    support = rec.support()
    return np.asarray([q[int(np.argmin(support[list(q)]))] for q in dict.fromkeys(queries)], dtype=np.int64)


def _baseline_tables(backend: Backend, job: Job, name: str) -> dict[str, tuple[str, ...]]:
    """The tables of a published ``cba`` release (``method.baseline_release``), in the schema
    of this job's release."""
    meta = job.release.where(f"{name}_meta")
    if not backend.table_exists(meta[1], meta[0]):
        raise InputError(f"method.baseline_release = {name!r}: no release of that name in this database; "
                         "run the cba job first")
    method = backend.scalar("report: baseline method", render("disassociation/release_method.sql.j2", meta=meta))
    if method != "cba":
        raise InputError(f"method.baseline_release = {name!r} is a {method!r} release; the comparison needs a "
                         "release of method \"cba\"")
    return {s: job.release.where(f"{name}_{s}") for s in ("clusters", "record_tokens", "tokens")}


def reconstruct(backend: Backend, tables: Mapping[str, tuple[str, ...]], *, seed: int, n: int, k: int,
                mode: str, codes: tuple[str, ...] | None = None, first: int = 0) -> None:
    """Digest §2.6: reconstructions ``first`` to ``first + n - 1`` into scratch
    ``dis_recon(recon_id, cluster_id, row_no, code)`` (each drawn from its own keys, so a batch
    holds what all at once would),
    with ``codes`` (a table of code numbers ``cid``) only the rows of those codes, each where the
    whole reconstruction has it: the report's queries and constraints read a share of the
    codes, and on a dense CDM the query counts joined every code's rows (docs/scale.md)."""
    backend.run("disassociation: reconstructions", render(
        "disassociation/reconstruct.sql.j2", target=RECON, clusters=tables["clusters"],
        record_chunks=tables["record_chunks"], shared_chunks=tables["shared_chunks"],
        shared_scope=tables["shared_scope"], item_chunks=tables["item_chunks"], mode=mode, code=CODE,
        codes=codes),
        {"seed": str(seed), "first": first, "n": n, **({"k": k} if mode == "below_k" else {})})


EXPECTED_SLICE_ROWS = 2_000_000
"""Subrecord rows one slice of expected_counts.sql.j2 may join (its share of the queries'
codes' supports): 1,000 W1 queries on 100K persons of a dense CDM joined about 60M rows at
once and ran out of a 4 GB memory_limit."""


RECON_SLICE_ROWS = 20_000_000
"""Candidate rows (query_counts.sql.j2: a query's rows holding its rarest code, over all the
reconstructions) one slice of clusters may count: 10 reconstructions of 100K persons of a dense
CDM held 91M, and counted at once they took 26 s under a 4 GB memory_limit, against 11 s in
slices of a tenth."""


def _candidate_rows(rec: Records, queries: list[tuple[int, ...]]) -> int:
    """The rows query_counts.sql.j2 starts from in one reconstruction: per distinct query, the
    support of its rarest code in the input (a reconstruction's is at most that: record and
    shared chunks keep a code's support, an item-chunk code is placed at most in all rows)."""
    return int(rec.support()[_rarest(rec, queries)].sum())


def _query_rows(rec: Records, queries: list[tuple[int, ...]], qid: np.ndarray, n_uniq: int) -> int:
    """The rows expected_counts.sql.j2 joins for all clusters: per distinct query, the sum of
    its codes' supports in the input (at least the release's subrecords that hold one of them,
    as a record's code lies in one chunk)."""
    support = rec.support()
    rows = np.zeros(n_uniq, dtype=np.int64)
    for i, q in enumerate(queries):
        rows[qid[i]] = support[list(q)].sum()
    return int(rows.sum())


def _slices(clusters: Mapping[str, np.ndarray], rows: int, budget: int) -> list[tuple[int, int]]:
    """Ranges (lo, hi) of consecutive cluster ids, ``ceil(rows / budget)`` of them, each with
    about the same number of records: the joined rows of a cluster follow its records. One
    range when the whole fits the budget."""
    ids = np.asarray(clusters["cluster_id"], dtype=np.int64)
    if ids.size == 0:
        return []
    order = np.argsort(ids)
    ids, records = ids[order], np.asarray(clusters["n_records"], dtype=np.int64)[order]
    n = min(max(1, -(-rows // budget)), ids.size)
    # the first cluster of each slice: where the running count of records passes i/n of them
    cum = np.cumsum(records)
    starts = np.unique(np.searchsorted(cum, cum[-1] * np.arange(n) / n, side="right"))
    ends = np.append(starts[1:] - 1, ids.size - 1)
    return [(int(ids[a]), int(ids[b])) for a, b in zip(starts, ends)]


def reconstructed(backend: Backend, tables: Mapping[str, tuple[str, ...]], rec: Records,
                  workloads: Sequence[list[tuple[int, ...]]], constraint_of: np.ndarray, *, seed: int, n: int,
                  k: int, mode: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Digest §2.6's ``n`` reconstructions of the codes in scratch ``dis_recon_codes``, a batch
    of them at a time (:data:`RECON_BATCH_ROWS`), and in each: C_A of every distinct query of
    each workload (:func:`query_counts`) and the MRE of every constraint
    (:func:`constraint_errors`). Returns C_A per workload (reconstruction × distinct query) and
    the MRE values of all reconstructions."""
    per_recon = int(backend.scalar("disassociation: reconstruction rows", render(
        "disassociation/reconstruct_rows.sql.j2", record_chunks=tables["record_chunks"],
        shared_chunks=tables["shared_chunks"])))
    batch = max(1, min(n, RECON_BATCH_ROWS // max(1, per_recon)))
    sizes = backend.fetch("disassociation: cluster sizes", render("disassociation/cluster_sizes.sql.j2",
                                                                  clusters=tables["clusters"]))
    slices = _slices(sizes, batch * _candidate_rows(rec, [q for w in workloads for q in w]), RECON_SLICE_ROWS)
    counts = [np.zeros((n, len(dict.fromkeys(queries)))) for queries in workloads]
    values = []
    for first in range(0, n, batch):
        size = min(batch, n - first)
        reconstruct(backend, tables, seed=seed, first=first, n=size, k=k, mode=mode, codes=RECON_CODES)
        for c_a, queries in zip(counts, workloads):
            if queries:
                write_workload(backend, queries)
                c_a += query_counts(backend, queries, n, slices)
        values.append(constraint_errors(backend, constraint_of, first, size))
    return counts, np.concatenate(values)


RECON_BATCH_ROWS = 40_000_000
"""Subrecords one batch of reconstructions may rank (reconstruct.sql.j2 ranks every subrecord of
every chunk by its md5 key, the empty ones too, in each reconstruction): at 1M persons of a
dense CDM the shared chunks hold 74M subrecords, and ranking them for 10 reconstructions at once
ran out of a 4 GB memory_limit. 100K persons rank 7.4M per reconstruction, 5 per batch."""


def query_counts(backend: Backend, queries: list[tuple[int, ...]], n_recon: int,
                 slices: Sequence[tuple[int, int]]) -> np.ndarray:
    """C_A of every distinct query of the written workload in each reconstruction in scratch
    ``dis_recon`` (reconstruction × distinct query; the rows of the others are 0), summed over
    ``slices`` of clusters (:func:`_slices`; query_counts.sql.j2 says why)."""
    c_a = np.zeros((n_recon, len(dict.fromkeys(queries))))
    sql = render("disassociation/query_counts.sql.j2", workload=WORKLOAD, recon=RECON, code=CODE,
                 max_size=largest(queries))
    for lo, hi in slices:
        part = backend.fetch("disassociation: query counts", sql, {"lo": lo, "hi": hi})
        np.add.at(c_a, (part["recon_id"].astype(np.int64), part["qid"].astype(np.int64)), part["c_a"].astype(float))
    return c_a


def are(c_a: np.ndarray, c_o: np.ndarray, qid: np.ndarray, queries: list[tuple[int, ...]], *,
        by_size: bool) -> dict[str, Any]:
    """Definition 2 per reconstruction: mean over queries of |C_A - C_O| / C_O (``c_a``:
    reconstruction × distinct query; ``qid``: each query's distinct number)."""
    err = _errors(c_a, c_o, qid)
    per_recon = err.mean(axis=1)
    return {"queries": len(queries), "are_mean": float(per_recon.mean()),
            "are_std": float(per_recon.std(ddof=1)) if len(c_a) > 1 else 0.0} | \
        (mean_by_size(err, queries) if by_size else {})


def _errors(counts: np.ndarray, c_o: np.ndarray, qid: np.ndarray) -> np.ndarray:
    """|C - C_O| / C_O of each query (the last axis: distinct queries, taken per query by ``qid``)."""
    return (np.abs(counts - c_o) / c_o)[..., qid]


def original_counts(backend: Backend, queries: list[tuple[int, ...]], n_uniq: int) -> np.ndarray:
    """C_O of every distinct query of the written workload (> 0: the workload draws queries
    that occur, digest §5.4)."""
    c_o = backend.fetch("disassociation: original counts", render(
        "disassociation/original_counts.sql.j2", workload=WORKLOAD, pair=PAIR, max_size=largest(queries)))
    out = np.zeros(n_uniq)
    out[c_o["qid"].astype(np.int64)] = c_o["c_o"]
    return out


def constraint_errors(backend: Backend, constraint_of: np.ndarray, first: int, n: int) -> np.ndarray:
    """Definition 3's MRE(u) = (M_O(u) - M_A(u)) / M_O(u) of every constraint u in
    reconstructions ``first`` to ``first + n - 1`` of scratch ``dis_recon``, a record matching u
    when it holds at least one code of u (digest A13)."""
    covered = np.flatnonzero(constraint_of >= 0)
    if covered.size == 0:
        return np.zeros(0)
    backend.write_table(POLICY, {"cid": covered.astype(np.int64), "uid": constraint_of[covered].astype(np.int64)})
    r = backend.fetch("disassociation: constraint matches", render(
        "disassociation/constraint_errors.sql.j2", policy=POLICY, pair=PAIR, recon=RECON, code=CODE),
        {"first": first, "n": n})
    return r["mre"].astype(float)


def mre(values: np.ndarray, constraint_of: np.ndarray) -> dict[str, Any]:
    """The MRE values of the constraints (:func:`constraint_errors`), pooled over the
    reconstructions and binned as digest §5.5."""
    covered = np.flatnonzero(constraint_of >= 0)
    if covered.size == 0:
        return {"constraints": 0}
    shares = {label: float(((values >= lo) & (values < hi) if label != "[-2.5%,0%]" else
                            (values >= lo) & (values <= hi)).mean())
              for label, (lo, hi) in zip(MRE_BIN_LABELS, MRE_BINS)}
    shares["(0%,2.5%)"] = float(((values > 0) & (values < 0.025)).mean())
    return {"constraints": int(np.unique(constraint_of[covered]).size), "bins": shares,
            "within_2_5": float(((values >= -0.025) & (values < 0.025)).mean()),
            "within_5": float(((values >= -0.05) & (values < 0.05)).mean()),
            "min": float(values.min()), "max": float(values.max()), "mean": float(values.mean())}
