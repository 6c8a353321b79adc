"""Load the problem from the database once, and write a clustering back as release tables.

Pull: the clustered records (position, box, QI values) and their (position, code, block) rows.
Write: ``records(record, class)``, ``classes(class, q<i>_lo, q<i>_hi, q<i>_node)``,
``tokens(class, token, code)``, ``record_tokens(record, token)``; record and class numbers are
seeded random permutations, so they say nothing about the person ids or the input order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend.base import Backend
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from ..gendiag import GenDiagResult
from .algorithm import Cluster
from .constraints import BLOCKS, RECORD_BOX
from .qis import QIInfo
from .generalize import Demographics, Tree, load_tree

RECORDS = scratch("artuc_records")
OUT_RECORDS, OUT_CLASSES, OUT_TOKENS, OUT_RECORD_TOKENS, OUT_RELEASE = (
    scratch("artuc_out_records"), scratch("artuc_out_classes"), scratch("artuc_out_tokens"),
    scratch("artuc_out_record_tokens"), scratch("artuc_release"))
# published record -> record position (scratch only: the retention counts need to know which
# person a published record is; the link itself is never published)
LINK = scratch("artuc_link")


@dataclass
class Problem:
    """Everything the greedy phases need, pulled once."""

    demo: Demographics
    box: np.ndarray               # box per record position
    codes: list[np.ndarray]       # code ids per record position
    block: np.ndarray             # block per code id
    labels: np.ndarray            # code label per code id (sorted: id order = label order)


def load_problem(backend: Backend, job: Job, inputs: Inputs, qis: list[QIInfo]) -> Problem:
    ctx = [q.ctx() for q in qis]
    backend.run("artuc: records", render("artuc/records.sql.j2", target=RECORDS, relation=inputs.person,
                                         id=job.dataset.id, record_box=RECORD_BOX, qis=ctx))
    rec = backend.fetch("artuc: record values", render("artuc/record_values.sql.j2", source=RECORDS, qis=ctx))
    trees: dict[int, Tree] = {q.i: load_tree(backend, q.hierarchy) for q in qis if not q.numeric and q.hierarchy}
    values = []
    for q in qis:
        col = rec[f"q{q.i}"]
        values.append(col.astype(float) if q.numeric else trees[q.i].index(col.astype(object)))
    n = rec["pos"].size
    assert inputs.codes is not None
    join = {"records": RECORDS, "codes": inputs.codes, "blocks": BLOCKS}
    cod = backend.fetch("artuc: record codes", render("artuc/record_codes.sql.j2", **join))
    labels = backend.fetch("artuc: code labels", render("artuc/code_labels.sql.j2", **join))["code"].astype(object)
    code_ids = cod["code_id"].astype(np.int64)
    block = np.zeros(labels.size, dtype=np.int64)
    block[code_ids] = cod["block"]
    bounds = np.searchsorted(cod["pos"], np.arange(n + 1))
    codes = [code_ids[bounds[i]:bounds[i + 1]] for i in range(n)]
    return Problem(Demographics(qis, values, trees), rec["box"].astype(np.int64), codes, block, labels)


def stage(backend: Backend, problem: Problem, qis: list[QIInfo], clusters: list[Cluster],
          results: list[GenDiagResult], seed: int) -> None:
    """Write the clustering as the four structured tables and the readable release.

    The rows are built with numpy from GenDiag's arrays (token sizes and codes, record token
    positions; one ``np.repeat`` per column) rather than per-row Python loops: at EHRD scale that
    is 3M record-token pairs and 0.5M token codes. Token numbers are consecutive over the
    clusters in order; records take ``record_no`` in cluster order."""
    rng = np.random.default_rng(seed)
    class_no = rng.permutation(len(clusters))
    n_rec = sum(c.size for c in clusters)
    record_no = rng.permutation(n_rec)
    held = [res.held for res in results]
    tokens_per_cluster = np.array([res.token_sizes.size for res in results], dtype=np.int64)
    records_per_cluster = np.array([bounds.size - 1 for _, bounds in held], dtype=np.int64)
    token_size = _cat([res.token_sizes for res in results])
    record_len = _cat([np.diff(bounds) for _, bounds in held])
    first_token = np.cumsum(tokens_per_cluster) - tokens_per_cluster
    records = record_no[:record_len.size]
    backend.write_table(OUT_RECORDS, {"record": records, "class": np.repeat(class_no, records_per_cluster)})
    # GenDiag's record i of a cluster is its i-th member in position order (_gendiag sorts them)
    backend.write_table(LINK, {"record": records, "pos": _cat([np.sort(c.members) for c in clusters])})
    cls: dict[str, np.ndarray] = {"class": class_no.astype(np.int64)}
    for q in qis:
        if q.numeric:
            cls[f"q{q.i}_lo"] = np.array([c.lo[q.i] for c in clusters], dtype=float)
            cls[f"q{q.i}_hi"] = np.array([c.hi[q.i] for c in clusters], dtype=float)
        else:
            cls[f"q{q.i}_node"] = problem.demo.trees[q.i].nodes[[c.node[q.i] for c in clusters]].astype(object)
    backend.write_table(OUT_CLASSES, cls)
    backend.write_table(OUT_TOKENS, {
        "class": np.repeat(np.repeat(class_no, tokens_per_cluster), token_size),
        "token": np.repeat(np.arange(token_size.size, dtype=np.int64), token_size),
        "code": problem.labels[_cat([res.token_codes for res in results])]})
    backend.write_table(OUT_RECORD_TOKENS, {
        "record": np.repeat(records, record_len),
        "token": _cat([flat for flat, _ in held]) + np.repeat(np.repeat(first_token, records_per_cluster), record_len)})
    backend.run("artuc: release", render("artuc/release.sql.j2", target=OUT_RELEASE, records=OUT_RECORDS,
                                         classes=OUT_CLASSES, tokens=OUT_TOKENS, record_tokens=OUT_RECORD_TOKENS,
                                         qis=[q.ctx() for q in qis]))


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    """The int64 arrays of the clusters end to end (empty for no cluster)."""
    return np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, dtype=np.int64)
