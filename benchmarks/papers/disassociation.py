"""Reruns of seed 001's experiments that the docs quote (docs/disassociation.md, "Measured").

* ``compare``: Dis vs the CBA-style baseline (§6.3, Figs. 13-14) on INFORMS: for each policy,
  publish the ``cba`` release, then the Dis release, and report, for each reconstruction mode
  (``item_count``), both ARE numbers on the same W1/W2 queries (codes CBA kept), Dis's MRE
  shares over the policy's constraints (Figs. 18-20) and CBA's suppressed codes;
* ``pairs``: where the (record, code) pairs go (record, shared or item chunks) for a job with
  changed parameters (:func:`where_pairs_go`). A private diagnostic on the unpublished
  structure: item-chunk supports are hidden in a release, so their sum is never a run fact;
* ``growth``: the benchmark case (BMS-WebView-1, k=5, m=2) on seeded 2x/4x/8x blow-ups
  (:func:`blow_up`), one fresh process per size, time and peak RSS;
* ``sweep``: the real-data audit sweep (:func:`sweep`): BMS-WebView-1 and INFORMS, k in
  {2, 5, 10, 25}, m in {1, 2, 3}, each release through ``anon_duck.run`` (anonymize,
  independent audit, publish), verified / clusters / seconds per setting.

Run ``python -m benchmarks.papers.disassociation compare``, ``... pairs``, ``... growth``
or ``... sweep``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import duckdb
import numpy as np

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.inputs import prepare
from anon_duck.job import Job, load_job
from anon_duck.sqlrender import render
from anon_duck.methods.disassociation import disassociate
from anon_duck.methods.disassociation.encoding import Records, encode
from anon_duck.methods.disassociation.params import check_params
from anon_duck.methods.disassociation.policy import build_policy
from anon_duck.methods.disassociation.release import Structure
from .. import ROOT, child_env

JOBS = ROOT / "fixtures" / "jobs"
POLICY_ARGS = {"level1": {}, "level2": {}, "sim": {"sim_size": 10}, "sup": {"sup_percent": 1.25}}
SWEEP_JOBS = {"bms": "disassociation_bms.toml", "informs": "disassociation_informs.toml"}
SWEEP_K = (2, 5, 10, 25)
SWEEP_M = (1, 2, 3)


def blow_up(source: Path, factor: int, seed: int, target: Path, noise: float = 0.1) -> int:
    """A seeded ``factor``-times larger (tid, item) dataset: copy 0 is the original; in every
    further copy each item of a transaction is, with probability ``noise``, replaced by an
    item drawn from the items' frequency distribution (duplicates collapse). Record lengths and
    item popularity stay those of the source, and copies are not identical (identical copies
    would make HORPART's job trivial). Returns the number of transactions written."""
    con = duckdb.connect()
    src = con.execute(render("disassociation/blow_up_source.sql.j2"), {"p": str(source)}).fetchnumpy()
    items, item_idx = np.unique(src["item"], return_inverse=True)
    tids, tid_idx = np.unique(src["tid"], return_inverse=True)
    freq = np.bincount(item_idx, minlength=items.size) / item_idx.size
    rng = np.random.default_rng(seed)
    parts_t, parts_i = [tid_idx], [item_idx]
    for copy in range(1, factor):
        swap = rng.random(item_idx.size) < noise
        new = item_idx.copy()
        new[swap] = rng.choice(items.size, size=int(swap.sum()), p=freq)
        parts_t.append(tid_idx + copy * tids.size)
        parts_i.append(new)
    t, i = np.concatenate(parts_t), np.concatenate(parts_i)
    con.register("blown", {"tid": t.astype(np.int64), "item": items[i].astype(str)})
    con.execute(render("disassociation/blow_up_write.sql.j2", source=("blown",)), {"p": str(target)})
    return int(tids.size * factor)


def compare(policies: list[str], k: int, m: int, reconstructions: int, queries: int,
            item_counts: list[str]) -> list[dict]:
    """Seed 001 Figs. 13-14 and 18-20 on INFORMS: one row per policy and reconstruction mode."""
    import anon_duck
    rows = []
    for policy in policies:
        con = duckdb.connect()
        extra = POLICY_ARGS[policy]
        cba = load_job(JOBS / "disassociation_cba_informs.toml").with_params(policy=policy, k=k, m=m,
                                                                               queries=queries, **extra)
        run = anon_duck.run(con, cba)
        dis = load_job(JOBS / "disassociation_informs.toml").with_params(
            policy=policy, k=k, m=m, baseline_release=cba.release.name, reconstructions=reconstructions,
            queries=queries, **extra)
        anon_duck.run(con, dis)
        for mode in item_counts:
            t0 = time.perf_counter()
            rep = anon_duck.report(con, dis.with_params(item_count=mode))
            seconds = time.perf_counter() - t0
            row = {"policy": policy, "item_count": mode, "k": k, "m": m,
                   "cba_suppressed": run.facts["codes_suppressed"], "codes": run.facts["codes"],
                   "cba_tokens": run.facts["generalized_tokens"], "query_codes": rep["query_codes"],
                   "dis_report_seconds": round(seconds, 1)}
            for w in ("W1", "W2"):
                a = rep["are"][w]
                row[f"{w}_dis_expected"] = a["expected"]["are"]
                row[f"{w}_dis_mc"] = a.get("are_mean")
                row[f"{w}_cba"] = a["baseline"].get("are_mean")
            if "mre" in rep:
                row |= {f"mre_{key}": rep["mre"][key] for key in ("constraints", "within_2_5", "within_5", "min", "max")}
            rows.append(row)
        con.close()
    return rows


def pair_shares(rec: Records, s: Structure) -> dict[str, float]:
    """Shares of the (record, code) pairs whose code sits, in the record's cluster, in a record
    chunk, a shared chunk or the item chunk (the three partition the pairs)."""
    n_codes = rec.n_codes
    key = s.label[rec.rid] * n_codes + rec.cid

    def share(keys: list[int]) -> float:
        return round(float(np.isin(key, np.asarray(keys, dtype=np.int64)).mean()), 4)

    return {"record_chunks": share([p * n_codes + t for c in s.record_chunks for p, ts in c.take.items() for t in ts]),
            "shared_chunks": share([p * n_codes + t for c in s.shared_chunks for p, ts in c.take.items() for t in ts]),
            "item_chunks": share([p * n_codes + t for p, ts in enumerate(s.items) for t in ts])}


def where_pairs_go(job: Job) -> dict:
    """Disassociate the job's data (nothing published) and report the pair shares."""
    backend = DuckDBBackend(duckdb.connect())
    params = check_params(job)
    inputs = prepare(backend, job)
    rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
    structure, facts = disassociate(rec, build_policy(backend, job, params, rec), params, lambda *_: None)
    return {"pairs": int(rec.rid.size), "clusters": facts["clusters"], "horpart_clusters": facts["horpart_clusters"],
            **pair_shares(rec, structure)}


def _run_once(job_path: str, data: str) -> dict:
    """One benchmark run in this process (called through a fresh ``python -m``)."""
    import anon_duck
    job = load_job(job_path)
    codes = job.dataset.codes
    job = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, codes=dataclasses.replace(
        codes, source=dataclasses.replace(codes.source, path=Path(data)))))
    con = duckdb.connect()
    t0 = time.perf_counter()
    result = anon_duck.run(con, job)
    return {"seconds": round(time.perf_counter() - t0, 2), "verified": result.verified,
            "records": result.facts["records"], "clusters": result.facts["clusters"],
            "shared_chunks": result.facts["shared_chunks"],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def growth(factors: list[int], seed: int, workdir: Path) -> list[dict]:
    source = ROOT / "fixtures" / "bms_webview1" / "transactions.parquet"
    rows = []
    for f in factors:
        data = workdir / f"bms_x{f}.parquet"
        n = blow_up(source, f, seed, data) if f > 1 else None
        out = subprocess.run([sys.executable, "-m", "benchmarks.papers.disassociation", "_once",
                              str(JOBS / "disassociation_bms.toml"), str(data if f > 1 else source)],
                             capture_output=True, text=True, check=True, env=child_env())
        rows.append({"factor": f, **json.loads(out.stdout.strip().splitlines()[-1])})
        assert n is None or rows[-1]["records"] == n
    return rows


def sweep_one(dataset: str, k: int, m: int) -> dict:
    """One setting of the sweep: the dataset's job (``SWEEP_JOBS``) with ``k`` and ``m`` run end
    to end on a fresh in-memory database. ``anon_duck.run`` raises when the audit fails, so a
    returned row is a verified release; ``verified`` is still reported so the table says it."""
    import anon_duck
    con = duckdb.connect()
    t0 = time.perf_counter()
    result = anon_duck.run(con, load_job(JOBS / SWEEP_JOBS[dataset]).with_params(k=k, m=m))
    seconds = time.perf_counter() - t0
    con.close()
    return {"dataset": dataset, "k": k, "m": m, "verified": result.verified, "clusters": result.facts["clusters"],
            "codes_suppressed": result.facts["codes_suppressed"], "seconds": round(seconds, 1)}


def sweep(datasets: list[str], ks: list[int], ms: list[int]) -> Iterator[dict]:
    """The docs' sweep table ("Every release of the sweep passes the audit"): every
    (dataset, k, m) in turn, yielded as it finishes so a long run shows progress."""
    for dataset in datasets:
        for k in ks:
            for m in ms:
                yield sweep_one(dataset, k, m)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.papers.disassociation")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--policies", default="level1,level2,sim,sup")
    c.add_argument("--k", type=int, default=5)
    c.add_argument("--m", type=int, default=2)
    c.add_argument("--reconstructions", type=int, default=10)
    c.add_argument("--queries", type=int, default=1000)
    c.add_argument("--item-counts", default="one", help="comma-separated reconstruction modes (item_count)")
    p = sub.add_parser("pairs")
    p.add_argument("--job", default="disassociation_informs.toml", help="a job in fixtures/jobs")
    p.add_argument("--set", default="{}", help='method parameters to change, JSON, e.g. \'{"merge_small": false}\'')
    g = sub.add_parser("growth")
    g.add_argument("--factors", default="1,2,4,8")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--workdir", default="/tmp")
    w = sub.add_parser("sweep")
    w.add_argument("--datasets", default=",".join(SWEEP_JOBS), help="comma-separated, of: " + ", ".join(SWEEP_JOBS))
    w.add_argument("--k", default=",".join(map(str, SWEEP_K)), help="comma-separated k values")
    w.add_argument("--m", default=",".join(map(str, SWEEP_M)), help="comma-separated m values")
    o = sub.add_parser("_once")
    o.add_argument("job")
    o.add_argument("data")
    a = ap.parse_args(argv)
    if a.cmd == "compare":
        rows = compare(a.policies.split(","), a.k, a.m, a.reconstructions, a.queries, a.item_counts.split(","))
    elif a.cmd == "pairs":
        rows = [where_pairs_go(load_job(JOBS / a.job).with_params(**json.loads(a.set)))]
    elif a.cmd == "growth":
        rows = growth([int(x) for x in a.factors.split(",")], a.seed, Path(a.workdir))
    elif a.cmd == "sweep":
        for row in sweep(a.datasets.split(","), [int(x) for x in a.k.split(",")], [int(x) for x in a.m.split(",")]):
            print(json.dumps(row), flush=True)
        return
    else:
        print(json.dumps(_run_once(a.job, a.data)))
        return
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
