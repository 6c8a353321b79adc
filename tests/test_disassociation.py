"""Disassociation (seed 001): the paper's worked example, the digest's variants and
counter-example, the independent audit, metrics on fixed reconstructions, bad input."""
from __future__ import annotations

import itertools
import json
from collections import Counter

import duckdb
import numpy as np
import pytest

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import InfeasibleError, InputError, JobError, VerificationError
from anon_duck.inputs import prepare
from anon_duck.job import job_from_dict, load_job
from anon_duck.methods.disassociation import disassociate
from anon_duck.methods.disassociation.chunks import cluster_masks
from anon_duck.methods.disassociation.encoding import Records, encode
from benchmarks.papers.disassociation import sweep_one
from anon_duck.methods.disassociation.horpart import horpart
from anon_duck.methods.disassociation.params import check_params
from anon_duck.methods.disassociation.policy import Policy, build_policy
from anon_duck.methods.disassociation.report import (RECON, are, constraint_errors, mre, original_counts,
                                                     query_counts)
from anon_duck.methods.disassociation.verpart import km_ok, verpart
from anon_duck.methods.disassociation.workload import write_workload
from anon_duck.verifiers.disassociation import audit

from conftest import FIXTURES, JOBS, table_fingerprint, user_tables

EXPECTED = json.loads((FIXTURES / "001" / "toy_expected.json").read_text())
TOY = EXPECTED["params"]


def _quiet(*_: object) -> None:
    return None


def _records(rows: dict[str, list[str]]) -> Records:
    """A Records object straight from Python (ids sorted as text, like encode_records)."""
    ids = sorted(rows)
    codes = np.asarray(sorted({c for cs in rows.values() for c in cs}), dtype=object)
    index = {c: i for i, c in enumerate(codes)}
    pairs = sorted((ids.index(r), index[c]) for r in rows for c in set(rows[r]))
    rid, cid = (np.asarray(x, dtype=np.int64) for x in zip(*pairs)) if pairs else (np.zeros(0, np.int64),) * 2
    return Records(len(ids), codes, rid, cid)


def _toy_records() -> dict[str, list[str]]:
    con = duckdb.connect()
    rows = con.execute(f"SELECT pid, list(code) FROM '{FIXTURES / '001' / 'toy_records.parquet'}' GROUP BY pid").fetchall()
    return dict(rows)


def _policy(rec: Records, constraints: dict[str, list[str]]) -> Policy:
    index = rec.index_of()
    c = np.full(rec.n_codes, -1, dtype=np.int64)
    for u, codes in enumerate(constraints.values()):
        c[[index[x] for x in codes if x in index]] = u
    return Policy(c, list(constraints))


def _params(**kw):
    job = job_from_dict({"input": {"codes": {"path": "x.parquet", "id": "pid", "code": "code"}},
                         "method": {"name": "disassociation", "k": kw.pop("k", 3), "m": kw.pop("m", 2), **kw},
                         "release": {"name": "t"}})
    return check_params(job)


def _names(rec: Records, cids) -> list[str]:
    return sorted(rec.codes[list(cids)].tolist())


def _private_view(rec: Records, structure) -> dict:
    """Clusters as sets of record ids, chunk domains and private subrecords per record."""
    ids = sorted(_toy_records()) if rec.n == 10 else [str(i) for i in range(rec.n)]
    out = {"clusters": [], "record_chunks": [], "items": [], "shared": []}
    for p in range(len(structure.items)):
        out["clusters"].append(sorted(ids[r] for r in np.flatnonzero(structure.label == p)))
        out["record_chunks"].append([_names(rec, c.take[p]) for c in structure.record_chunks if c.scope == [p]])
        out["items"].append(_names(rec, structure.items[p]))
    out["shared"] = [(c.scope, _names(rec, c.domain)) for c in structure.shared_chunks]
    return out


# ------------------------------------------------------------------------------------------
# the worked example (Figs. 1, 3b, 4, 8-11; digest F1-F8)
# ------------------------------------------------------------------------------------------
def test_toy_horpart_splits_on_296_00_into_fig4_clusters():
    rec = _records(_toy_records())
    pol = _policy(rec, EXPECTED["utility_constraints"])
    h = horpart(rec, pol.constraint_of, TOY["max_cluster_size"], _quiet)
    ids = sorted(_toy_records())
    assert rec.codes[h.trace[0][1]] == EXPECTED["expected_horpart"]["split_code"]
    clusters = [sorted(ids[r] for r in np.flatnonzero(h.label == p)) for p in range(h.n_clusters)]
    assert clusters == [sorted(c) for c in EXPECTED["expected_horpart"]["clusters"]]


@pytest.mark.parametrize("refine", [False, True])
def test_toy_disassociation_reproduces_fig4_and_fig10(refine):
    rec = _records(_toy_records())
    pol = _policy(rec, EXPECTED["utility_constraints"])
    structure, facts = disassociate(rec, pol, _params(max_cluster_size=6, refine=refine), _quiet)
    view = _private_view(rec, structure)
    v = EXPECTED["expected_verpart"]
    assert view["record_chunks"] == [sorted(map(sorted, v["P1"]["record_chunks"])), v["P2"]["record_chunks"]]
    if not refine:
        assert view["items"] == [v["P1"]["item_chunk"], v["P2"]["item_chunk"]]
        assert view["shared"] == []
    else:
        r = EXPECTED["expected_refined"]
        assert view["items"] == [r["item_chunks"]["P1"], r["item_chunks"]["P2"]]
        assert view["shared"] == [([0, 1], r["shared_chunks"][0])]
    assert facts["codes_suppressed"] == 0 and facts["root_split"] == "296.00"


def test_toy_verpart_trace_rejects_695_10_then_drops_692_71():
    """§5: 695.10 is rejected because {296.01, 695.10} has support 2 < 3; the drop rule then
    removes 692.71 (u2 only partly in T_cur); round 2 takes u2 whole (digest F5)."""
    rec = _records({k: v for k, v in _toy_records().items() if k in ("r1", "r2", "r3", "r4", "r5")})
    idx = rec.index_of()
    masks = {int(t): 0 for t in np.unique(rec.cid)}
    for r, t in zip(rec.rid.tolist(), rec.cid.tolist()):
        masks[t] |= 1 << r
    cur = [idx["296.00"], idx["296.01"], idx["296.02"], idx["692.71"]]
    assert (masks[idx["296.01"]] & masks[idx["695.10"]]).bit_count() == 2
    assert not km_ok(masks, cur, idx["695.10"], 3, 2)
    assert km_ok(masks, cur[:3], idx["692.71"], 3, 2)
    out = verpart(masks, 3, 2, _policy(rec, EXPECTED["utility_constraints"]).constraint_of)
    assert [_names(rec, d) for d in out] == [["296.00", "296.01", "296.02"], ["692.71", "695.10"]]
    assert _names(rec, _item_domain(masks, out)) == ["401.0", "834.0", "944.01"]


# digest F11 variant table: (constraints?, k, m) -> (P1 chunks, P1 items, P2 chunks, P2 items)
VARIANTS = [
    (False, 3, 2, [["296.00", "296.01", "296.02", "692.71"], ["695.10"]], ["401.0", "834.0", "944.01"],
     [["294.10", "295.04", "296.03"]], ["404.00", "480.1", "834.0", "944.01"]),
    (True, 3, 1, [["296.00", "296.01", "296.02", "692.71", "695.10"]], ["401.0", "834.0", "944.01"],
     [["294.10", "295.04", "296.03"]], ["404.00", "480.1", "834.0", "944.01"]),
    (True, 3, 3, [["296.00", "296.01", "296.02"], ["692.71", "695.10"]], ["401.0", "834.0", "944.01"],
     [["294.10", "295.04"], ["296.03"]], ["404.00", "480.1", "834.0", "944.01"]),
    (True, 4, 2, [["296.00", "296.01"], ["296.02"], ["692.71"]], ["401.0", "695.10", "834.0", "944.01"],
     [["294.10"], ["295.04"], ["296.03"]], ["404.00", "480.1", "834.0", "944.01"]),
    (True, 2, 2, [["296.00", "296.01", "296.02", "692.71", "695.10"], ["401.0"], ["834.0"], ["944.01"]], [],
     [["294.10", "295.04", "296.03"], ["404.00", "834.0", "944.01"], ["480.1"]], []),
]


@pytest.mark.parametrize("constrained,k,m,p1,i1,p2,i2", VARIANTS)
def test_toy_variants_of_digest_f11(constrained, k, m, p1, i1, p2, i2):
    """Same HORPART clusters (P1 = r1-r5, P2 = r6-r10), VERPART under other k, m, U. The
    U = ∅ row is also the regression for the prose reading of the drop rule (A1)."""
    rows = _toy_records()
    rec = _records(rows)
    pol = _policy(rec, EXPECTED["utility_constraints"] if constrained else {})
    label = np.asarray([0 if i in ("r1", "r2", "r3", "r4", "r5") else 1 for i in sorted(rows)])
    masks = cluster_masks(rec, label, 2)
    got = [verpart(mk, k, m, pol.constraint_of) for mk in masks]
    assert [sorted(_names(rec, d)) for d in got[0]] == [sorted(d) for d in p1]
    assert [sorted(_names(rec, d)) for d in got[1]] == [sorted(d) for d in p2]
    assert (_names(rec, _item_domain(masks[0], got[0])), _names(rec, _item_domain(masks[1], got[1]))) == (i1, i2)


def _maxsup_min(rows: dict[str, list[str]], rec: Records, structure, m: int) -> int:
    """Digest §2.5 exhaustive audit: min over records r and S ⊆ r, |S| <= m, of the most rows
    of r's cluster that can hold S in some reconstruction."""
    ids = sorted(rows)
    sizes = np.bincount(structure.label)
    chunks = structure.record_chunks + structure.shared_chunks
    best = None
    for r, rid in enumerate(ids):
        p = int(structure.label[r])
        mine = set(rows[rid])
        for size in range(1, m + 1):
            for s in itertools.combinations(sorted(mine), size):
                bound = int(sizes[p])
                for c in chunks:
                    if p not in c.scope:
                        continue
                    dom = set(rec.codes[c.domain].tolist())
                    part = set(s) & dom
                    if part:
                        scope_rows = [ids[x] for x in range(len(ids)) if int(structure.label[x]) in c.scope]
                        take = {q: set(rec.codes[c.take[q]].tolist()) for q in c.scope}
                        support = sum(1 for x in scope_rows
                                      if part <= (set(rows[x]) & take[int(structure.label[ids.index(x)])]))
                        bound = min(bound, support)
                best = bound if best is None else min(best, bound)
    return best


@pytest.mark.parametrize("refine", [False, True])
def test_toy_exhaustive_maxsup_is_three(refine):
    rows = _toy_records()
    rec = _records(rows)
    structure, _ = disassociate(rec, _policy(rec, EXPECTED["utility_constraints"]),
                                _params(max_cluster_size=6, refine=refine), _quiet)
    assert _maxsup_min(rows, rec, structure, 2) == 3


# ------------------------------------------------------------------------------------------
# the pipeline: run, verify, report on the toy job
# ------------------------------------------------------------------------------------------
def test_toy_pipeline_release_is_fig10(con):
    job = load_job(JOBS / "disassociation_toy.toml")
    result = anon_duck.run(con, job)
    assert result.verified and {c.name for c in result.checks} >= {"disassociation_chunk_km", "disassociation_disjoint"}
    rows = con.execute("SELECT cluster_id, chunk_id, codes FROM toy_dis_record_chunks").fetchall()
    by_cluster: dict[int, dict[int, Counter]] = {}
    for p, c, codes in rows:
        by_cluster.setdefault(p, {}).setdefault(c, Counter())[tuple(codes)] += 1
    fig4 = EXPECTED["expected_verpart"]
    for p, name in ((0, "P1"), (1, "P2")):
        want = sorted(sorted(Counter(tuple(sub[j]) for sub in fig4[name]["subrecords_private"].values()).items())
                      for j in range(len(fig4[name]["record_chunks"])))
        assert sorted(sorted(c.items()) for c in by_cluster[p].values()) == want
    shared = Counter(tuple(c) for (c,) in con.execute("SELECT codes FROM toy_dis_shared_chunks").fetchall())
    assert shared == Counter(tuple(v) for v in EXPECTED["expected_refined"]["shared_subrecords_private"].values())
    assert con.execute("SELECT cluster_id, n_records, joint_id FROM toy_dis_clusters ORDER BY 1").fetchall() == \
        [(0, 5, 0), (1, 5, 0)]
    items = con.execute("SELECT cluster_id, list(code ORDER BY code) FROM toy_dis_item_chunks GROUP BY 1 ORDER BY 1")
    assert items.fetchall() == [(0, ["401.0"]), (1, ["404.00", "480.1"])]
    assert all(c.passed for c in anon_duck.verify(con, job))
    rep = anon_duck.report(con, job)
    assert rep["suppressed_codes"] == 0 and rep["mre"]["constraints"] == 5
    assert 0 <= rep["are"]["W2"]["are_mean"] < 2


def test_release_has_no_ids_and_unlinkable_deterministic_sub_ids(con):
    job = load_job(JOBS / "disassociation_toy.toml")
    anon_duck.run(con, job)
    first = {t: table_fingerprint(con, f"toy_dis_{t}") for t in ("record_chunks", "shared_chunks")}
    cols = {r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name LIKE 'toy_dis_%'"
                                      " AND table_name <> 'toy_dis_meta'").fetchall()}
    assert cols == {"cluster_id", "n_records", "joint_id", "chunk_id", "sub_id", "codes", "code",
                    "code_a", "code_b", "support",       # these three: the support view's
                    "code_a_label", "code_b_label",      # the support view's labels
                    "code_label",                        # the terms view's labels, and the retention counts
                    "persons_input", "persons_exact", "persons_generalized", "persons_without_count",
                    "persons_dropped"}
    values = {str(v) for (v,) in con.execute("SELECT unnest(codes) FROM toy_dis_record_chunks").fetchall()}
    assert not any(v.startswith("r") for v in values)
    anon_duck.run(con, job)
    assert first == {t: table_fingerprint(con, f"toy_dis_{t}") for t in ("record_chunks", "shared_chunks")}
    other = job.with_release("toy_dis2")
    other = type(other)(other.dataset, other.hierarchies, other.method, other.params,
                        type(other.release)("toy_dis2", 99), other.settings, other.base_dir)
    anon_duck.run(con, other)
    # another seed permutes sub_ids differently (same multisets)
    a = con.execute("SELECT list(codes ORDER BY sub_id) FROM toy_dis_record_chunks GROUP BY chunk_id ORDER BY chunk_id")
    b = con.execute("SELECT list(codes ORDER BY sub_id) FROM toy_dis2_record_chunks GROUP BY chunk_id ORDER BY chunk_id")
    assert a.fetchall() != b.fetchall()


# ------------------------------------------------------------------------------------------
# the audit catches broken releases; F12 counter-example
# ------------------------------------------------------------------------------------------
TOY_TABLES = {s: ("main", f"toy_dis_{s}") for s in ("clusters", "record_chunks", "shared_chunks", "shared_scope",
                                                 "item_chunks")}
"""The release tables of disassociation_toy.toml, as the audit takes them."""


def test_audit_rejects_tampered_releases(con):
    job = load_job(JOBS / "disassociation_toy.toml")
    anon_duck.run(con, job)
    backend = DuckDBBackend(con)
    tables = TOY_TABLES
    assert all(c.passed for c in audit(backend, tables, k=3, m=2))
    assert not {c.name: c for c in audit(backend, tables, k=4, m=2)}["disassociation_chunk_km"].passed
    con.execute("UPDATE toy_dis_record_chunks SET codes = ['296.00', '296.01', '296.02', '692.71'] "
                "WHERE chunk_id = 0 AND sub_id = 1")
    res = {c.name: c for c in audit(backend, tables, k=3, m=2)}
    assert not res["disassociation_chunk_km"].passed and not res["disassociation_disjoint"].passed
    assert res["disassociation_disjoint"].violations[0]["code"] == "692.71"
    con.execute("DELETE FROM toy_dis_shared_chunks WHERE sub_id = 10")
    con.execute("UPDATE toy_dis_clusters SET n_records = 2 WHERE cluster_id = 1")
    res = {c.name: c for c in audit(backend, tables, k=3, m=2)}
    assert not res["disassociation_chunk_rows"].passed and not res["disassociation_cluster_size"].passed
    con.execute("ALTER TABLE toy_dis_item_chunks ADD COLUMN support INTEGER")
    assert not audit(backend, tables, k=3, m=2)[0].passed


def test_the_disjointness_check_in_slices_finds_what_one_slice_finds(con, monkeypatch):
    """The check groups by (cluster, code), one slice of clusters at a time (it ran out of 4 GB
    at 1M persons in one query): a slice per cluster id finds the same violations, in the
    same order, with the same count, as one slice for the whole release."""
    from anon_duck.verifiers import disassociation as verifier
    anon_duck.run(con, load_job(JOBS / "disassociation_toy.toml"))
    tables = TOY_TABLES
    # an item-chunk code of each cluster put in one of its record chunks too: a violation per cluster
    con.execute("""UPDATE toy_dis_record_chunks AS r SET codes = list_append(r.codes, i.code)
                   FROM (SELECT cluster_id, min(code) AS code FROM toy_dis_item_chunks GROUP BY ALL) AS i
                   WHERE r.cluster_id = i.cluster_id AND r.sub_id = 1""")
    backend = DuckDBBackend(con)
    whole = {c.name: c for c in verifier.audit(backend, tables, k=3, m=2)}["disassociation_disjoint"]
    monkeypatch.setattr(verifier, "SLICE_PLACE_ROWS", 1)
    ran = []
    real = backend.rows
    monkeypatch.setattr(backend, "rows", lambda stage, *a, **kw: ran.append(stage) or real(stage, *a, **kw))
    sliced = {c.name: c for c in verifier.audit(backend, tables, k=3, m=2)}["disassociation_disjoint"]
    assert ran.count("verify disassociation_disjoint") == con.execute(
        "SELECT max(cluster_id) - min(cluster_id) + 1 FROM toy_dis_clusters").fetchone()[0] > 1
    assert not whole.passed and len({v["cluster_id"] for v in whole.violations}) > 1
    assert (sliced.passed, sliced.n_violations, sliced.violations) == (whole.passed, whole.n_violations, whole.violations)


def test_the_chunk_checks_in_slices_find_what_one_slice_finds(con, monkeypatch):
    """The k^m and shape checks group by chunk, one slice of chunk ids at a time (at 1M persons
    one grouping of every chunk took 20 times the time of 100K): a slice per chunk id finds
    the same violations, in the same order, with the same count, as one slice; a chunk with
    no id is checked once, in the first slice."""
    from anon_duck.verifiers import disassociation as verifier
    anon_duck.run(con, load_job(JOBS / "disassociation_toy.toml"))
    tables = TOY_TABLES
    # a rare code in the first subrecord of every record chunk (a k^m violation per chunk), a
    # repeated sub_id in every shared chunk, and a record chunk without an id
    con.execute("UPDATE toy_dis_record_chunks SET codes = list_append(codes, 'rare' || chunk_id) WHERE sub_id = 1")
    con.execute("UPDATE toy_dis_shared_chunks SET sub_id = 1 WHERE sub_id = 2")
    con.execute("UPDATE toy_dis_record_chunks SET chunk_id = NULL "
                "WHERE chunk_id = (SELECT max(chunk_id) FROM toy_dis_record_chunks)")
    backend = DuckDBBackend(con)
    names = ("disassociation_chunk_km", "disassociation_chunk_rows")
    whole = {c.name: c for c in verifier.audit(backend, tables, k=3, m=2, limit=100) if c.name in names}
    monkeypatch.setattr(verifier, "SLICE_CODE_ROWS", 1)
    monkeypatch.setattr(verifier, "SLICE_SUBRECORDS", 1)
    ran = []
    real = backend.rows
    monkeypatch.setattr(backend, "rows", lambda stage, *a, **kw: ran.append(stage) or real(stage, *a, **kw))
    sliced = {c.name: c for c in verifier.audit(backend, tables, k=3, m=2, limit=100) if c.name in names}
    n_ids = con.execute("""SELECT max(chunk_id) - min(chunk_id) + 1 FROM (SELECT chunk_id FROM toy_dis_record_chunks
                           UNION ALL SELECT chunk_id FROM toy_dis_shared_chunks)""").fetchone()[0]
    assert ran.count("verify disassociation_chunk_km") == ran.count("verify disassociation_chunk_rows") == n_ids > 1
    n_record_chunks = con.execute("SELECT count(DISTINCT coalesce(chunk_id, -1)) FROM toy_dis_record_chunks").fetchone()[0]
    km = whole["disassociation_chunk_km"]
    assert not km.passed and km.violations[0]["chunk_id"] is None
    assert len({v["chunk_id"] for v in km.violations}) == n_record_chunks
    assert {v["problem"] for v in whole["disassociation_chunk_rows"].violations} == {"sub_id is not 1..n"}
    for name in names:
        assert (sliced[name].n_violations, sliced[name].violations) == (whole[name].n_violations, whole[name].violations)


@pytest.mark.parametrize("table", ["record_chunks", "shared_chunks"])
@pytest.mark.parametrize("sub_id", ["NULL", "sub_id + 1000", "1"])
def test_sub_ids_that_are_not_1_to_n_fail_the_shape_check(con, table, sub_id):
    """A chunk's sub_ids run 1..n without repeats: a NULL, a gap or a repeat in one subrecord
    (the count of subrecords unchanged) is named."""
    anon_duck.run(con, load_job(JOBS / "disassociation_toy.toml"))
    tables = TOY_TABLES
    chunk = con.execute(f"SELECT min(chunk_id) FROM toy_dis_{table}").fetchone()[0]
    con.execute(f"UPDATE toy_dis_{table} SET sub_id = {sub_id} WHERE chunk_id = {chunk} AND sub_id = 2")
    rows = {c.name: c for c in audit(DuckDBBackend(con), tables, k=3, m=2)}["disassociation_chunk_rows"]
    assert [(v["chunk_id"], v["problem"]) for v in rows.violations] == [(chunk, "sub_id is not 1..n")]


def test_a_chunk_id_of_a_record_and_a_shared_chunk_fails_the_shape_check(con):
    """The k^m check groups both tables' subrecords by chunk id, so one id for two chunks would
    pool their supports: the shape check names it."""
    anon_duck.run(con, load_job(JOBS / "disassociation_toy.toml"))
    tables = TOY_TABLES
    con.execute("""UPDATE toy_dis_shared_chunks SET chunk_id = (SELECT min(chunk_id) FROM toy_dis_record_chunks)
                   WHERE chunk_id = (SELECT min(chunk_id) FROM toy_dis_shared_chunks)""")
    con.execute("""UPDATE toy_dis_shared_scope SET chunk_id = (SELECT min(chunk_id) FROM toy_dis_record_chunks)
                   WHERE chunk_id = (SELECT min(chunk_id) FROM toy_dis_shared_scope)""")
    rows = {c.name: c for c in audit(DuckDBBackend(con), tables, k=3, m=2)}["disassociation_chunk_rows"]
    assert not rows.passed
    assert {(v["kind"], v["problem"]) for v in rows.violations} == {
        ("record", "chunk id names a record chunk and a shared chunk"),
        ("shared", "chunk id names a record chunk and a shared chunk")}


def _f12_job(tmp_path, merge_small: bool):
    rows = [("p1", "a"), ("p1", "b"), ("p2", "a"), ("p2", "c"), ("p3", "a"), ("p3", "d"), ("p4", "e")]
    path = tmp_path / "f12.parquet"
    duckdb.connect().execute(f"COPY (SELECT * FROM (VALUES {', '.join(map(str, rows))}) t(pid, code)) TO '{path}'")
    return job_from_dict({"input": {"codes": {"path": str(path), "id": "pid", "code": "code"}},
                          "method": {"name": "disassociation", "k": 2, "m": 1, "max_cluster_size": 4,
                                     "merge_small": merge_small},
                          "release": {"name": "f12"}})


def test_f12_small_cluster_is_merged_or_rejected(con, tmp_path):
    before = user_tables(con)
    with pytest.raises(VerificationError, match="disassociation_cluster_size"):
        anon_duck.run(con, _f12_job(tmp_path, merge_small=False))
    assert user_tables(con) == before
    result = anon_duck.run(con, _f12_job(tmp_path, merge_small=True))
    assert result.verified and result.facts["clusters"] == 1
    assert sorted(c for (c,) in con.execute("SELECT codes FROM f12_record_chunks").fetchall()) == [[], ["a"], ["a"], ["a"]]
    assert [c for (c,) in con.execute("SELECT code FROM f12_item_chunks ORDER BY code").fetchall()] == list("bcde")


# ------------------------------------------------------------------------------------------
# metrics on the corrected Fig. 5 reconstruction (digest F9, F11)
# ------------------------------------------------------------------------------------------
FIG5 = {"r1": ["296.00", "296.01", "834.0", "944.01"], "r2": ["296.00", "296.01", "296.02", "692.71", "834.0"],
        "r3": ["296.00", "296.01", "296.02", "692.71", "695.10", "834.0"],
        "r4": ["296.00", "296.02", "692.71", "695.10"],
        "r5": ["296.00", "296.01", "296.02", "692.71", "695.10", "401.0"], "r6": ["296.03", "295.04", "480.1"],
        "r7": ["294.10", "296.03", "404.00", "834.0", "944.01"], "r8": ["294.10", "295.04", "296.03", "480.1", "834.0"],
        "r9": ["294.10", "295.04", "404.00", "834.0"], "r10": ["294.10", "295.04", "296.03", "834.0", "944.01"]}
F11_QUERIES = [["296.01", "834.0"], ["834.0"], ["944.01"], ["401.0"], ["296.00", "296.01"], ["692.71", "695.10"],
               ["834.0", "944.01"], ["294.10", "295.04"], ["296.01", "695.10"], ["480.1"], ["404.00"]]


def test_are_and_mre_on_corrected_fig5(con):
    job = load_job(JOBS / "disassociation_toy.toml")
    backend = DuckDBBackend(con)
    inputs = prepare(backend, job)
    rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
    recon = [(0, 0, i, c) for i, rid in enumerate(FIG5) for c in FIG5[rid]]
    backend.write_table(RECON, {"recon_id": np.asarray([r[0] for r in recon]), "cluster_id": np.asarray([r[1] for r in recon]),
                                "row_no": np.asarray([r[2] for r in recon]), "code": np.asarray([r[3] for r in recon])})
    idx = rec.index_of()
    queries = [tuple(sorted(idx[c] for c in q)) for q in F11_QUERIES]
    qid = write_workload(backend, queries)
    c_o = original_counts(backend, queries, int(qid.max()) + 1)
    out = are(query_counts(backend, queries, 1, [(0, 0)]), c_o, qid, queries, by_size=False)
    assert out["are_mean"] == pytest.approx(7 / 22)
    policy = build_policy(backend, job, check_params(job), rec)
    m = mre(constraint_errors(backend, policy.constraint_of, 0, 1), policy.constraint_of)
    # F11: u1 0, u2 0, u3 +0.25, u4 0, u5 -0.40
    assert (m["min"], m["max"]) == (pytest.approx(-0.4), pytest.approx(0.25))
    assert m["mean"] == pytest.approx((0.25 - 0.4) / 5)
    assert m["within_2_5"] == pytest.approx(3 / 5)


# ------------------------------------------------------------------------------------------
# utility policies level 3 / sim s / sup x (seed 001 §6.1, digest §5.5 and A15), by hand
# ------------------------------------------------------------------------------------------
def _toy_icd() -> dict[str, list[str]]:
    """Fig. 1 with 834.0 written 834.00: the paper's text for it ("Closed dislocation of finger,
    unspecified part") is ICD-9-CM 834.00, and 834.0 is that code's parent, which the built-in
    tree rejects as a record code (not a leaf). Every other Fig. 1 code is a leaf."""
    return {pid: [c.replace("834.0", "834.00") for c in codes] for pid, codes in _toy_records().items()}


# Leaf codes of four chapters, two of them V and E codes (digest A15: "plus V codes and E
# codes as two extra chapters"; ICD order: numeric, then V, then E, which text order is not).
MIXED = {"p1": ["001.0", "250.01", "V22.0"], "p2": ["042", "E849.0"], "p3": ["V10.3", "E880.9", "001.0"],
         "p4": ["250.01"]}
U1 = {"294.10", "295.04", "296.00", "296.01", "296.02", "296.03"}


def _policy_groups(rows: dict[str, list[str]], **method: object) -> tuple[set[frozenset[str]], set[str]]:
    """The constraint groups ``build_policy`` makes on ``rows`` (person -> codes) under the
    built-in ICD-9-CM tree, and the codes it leaves without a constraint."""
    con = duckdb.connect()
    con.execute("CREATE TABLE dx (pid VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO dx VALUES (?, ?)", [(p, c) for p, codes in rows.items() for c in codes])
    job = job_from_dict({"input": {"id": "pid", "codes": {"table": "dx", "id": "pid", "code": "code",
                                                          "hierarchy": "icd9"}},
                         "hierarchy": {"icd9": {"type": "builtin", "name": "icd9cm"}},
                         "method": {"name": "disassociation", "k": 2, "m": 2, **method}, "release": {"name": "pol"}})
    backend = DuckDBBackend(con)
    inputs = prepare(backend, job)
    rec = encode(backend, inputs.person, job.dataset.id, inputs.codes)
    policy = build_policy(backend, job, check_params(job), rec)
    groups: dict[int, set[str]] = {}
    for code, u in zip(rec.codes.tolist(), policy.constraint_of.tolist()):
        groups.setdefault(u, set()).add(code)
    free = groups.pop(-1, set())
    assert len(groups) == policy.n_constraints
    return {frozenset(g) for g in groups.values()}, free


@pytest.mark.parametrize("data,method,groups,free", [
    # level 3 = ICD chapters: on Fig. 1 exactly Fig. 3b's u1-u5 (290-319, 390-459, 460-519,
    # 680-709, 800-999), so the paper's example policy is the chapter policy
    ("toy", {"policy": "level3"},
     [U1, {"692.71", "695.10"}, {"401.0", "404.00"}, {"480.1"}, {"834.00", "944.01"}], set()),
    ("mixed", {"policy": "level3"},
     [{"001.0", "042"}, {"250.01"}, {"V10.3", "V22.0"}, {"E849.0", "E880.9"}], set()),
    # sim 5: the 13 codes in ICD order cut into blocks of 5 (the last one shorter)
    ("toy", {"policy": "sim", "sim_size": 5},
     [{"294.10", "295.04", "296.00", "296.01", "296.02"}, {"296.03", "401.0", "404.00", "480.1", "692.71"},
      {"695.10", "834.00", "944.01"}], set()),
    # sim 2: ICD order 001.0, 042, 250.01, V10.3, V22.0, E849.0, E880.9 (text order would put E first)
    ("mixed", {"policy": "sim", "sim_size": 2},
     [{"001.0", "042"}, {"250.01", "V10.3"}, {"V22.0", "E849.0"}, {"E880.9"}], set()),
    # sup 30%: sigma = 3 of 10 records. The largest frequent itemset is {296.00, 296.02, 692.71,
    # 695.10} (r2, r3, r5); every other frequent set of >= 3 codes and every pair of support 4
    # meets it; the support-3 pairs in code order: {294.10, 295.04} kept, {294.10, 296.03} and
    # {295.04, 296.03} overlap it, {834.00, 944.01} kept; then the frequent singletons still
    # free, 296.01 and 296.03 (support 4). 401.0, 404.00, 480.1 (support 2) are not frequent.
    ("toy", {"policy": "sup", "sup_percent": 30},
     [{"296.00", "296.02", "692.71", "695.10"}, {"294.10", "295.04"}, {"834.00", "944.01"}, {"296.01"},
      {"296.03"}], {"401.0", "404.00", "480.1"}),
    # sup 40%: sigma = 4. Frequent pairs {296.00, 296.01}, {296.00, 296.02}, {296.00, 692.71}
    # (support 4 each; no frequent triple since {296.01, 296.02} = 3): the first in code order
    # is kept, the others overlap it; then every free singleton of support >= 4.
    ("toy", {"policy": "sup", "sup_percent": 40},
     [{"296.00", "296.01"}, {"294.10"}, {"295.04"}, {"296.02"}, {"296.03"}, {"692.71"}, {"834.00"}, {"944.01"}],
     {"401.0", "404.00", "480.1", "695.10"}),
], ids=["level3-toy", "level3-mixed", "sim5-toy", "sim2-mixed", "sup30-toy", "sup40-toy"])
def test_policies_build_the_constraints_derived_by_hand(data, method, groups, free):
    """Digest A15 on data small enough to derive the constraints by hand (derivations in the
    parameter comments); explicit, level 1 and level 2 are covered elsewhere."""
    got_groups, got_free = _policy_groups(_toy_icd() if data == "toy" else MIXED, **method)
    assert got_groups == {frozenset(g) for g in groups}
    assert got_free == free


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------
def _toy_dict(**method):
    return {"input": {"id": "pid", "codes": {"path": str(FIXTURES / "001" / "toy_records.parquet"), "id": "pid",
                                             "code": "code"}},
            "method": {"name": "disassociation", "k": 3, "m": 2, **method}, "release": {"name": "bad"}}


@pytest.mark.parametrize("method,exc,match", [
    ({"k": 11}, InputError, "larger than the number of records"),
    ({"k": 1}, JobError, "method.k"),
    ({"m": 0}, JobError, "method.m"),
    ({"max_cluster_size": 2}, JobError, "method.max_cluster_size"),
    ({"policy": "level1"}, JobError, "input.codes.hierarchy"),
    ({"policy": "explicit"}, JobError, "method.constraints"),
    ({"constraints": {"u1": ["834.0"]}}, JobError, "method.constraints"),
    ({"policy": "explicit", "constraints": {"u1": ["834.0"], "u2": ["834.0", "944.01"]}}, JobError, "disjoint"),
    ({"policy": "explicit", "constraints": {"u1": [834.0]}}, JobError, "strings"),
    ({"policy": "explicit", "constraints": {"u1": ["999.99"]}}, InputError, "occur in no record"),
    ({"refine": "yes"}, JobError, "method.refine"),
    ({"colour": 1}, JobError, "colour"),
])
def test_bad_parameters_fail_clearly_and_write_nothing(con, method, exc, match):
    before = user_tables(con)
    with pytest.raises(exc, match=match):
        anon_duck.run(con, job_from_dict(_toy_dict(**method)))
    assert user_tables(con) == before


def test_unknown_code_column_and_codes_missing_from_hierarchy(con, tmp_path):
    d = _toy_dict()
    d["input"]["codes"]["code"] = "diagnosis"
    with pytest.raises(InputError, match="diagnosis"):
        anon_duck.run(con, job_from_dict(d))
    d = _toy_dict(policy="level3")
    d["input"]["codes"]["hierarchy"] = "icd9"
    d["hierarchy"] = {"icd9": {"type": "builtin", "name": "icd9cm", "leaf_level": "category"}}
    with pytest.raises(InputError, match="not leaves of hierarchy"):
        anon_duck.run(con, job_from_dict(d))
    assert user_tables(con) == set()


def test_empty_records_duplicates_and_hostile_names(con):
    """Persons without codes are records (A21); duplicate (person, code) rows collapse;
    identifiers with quotes go through every template; the source is not modified."""
    hostile = 'p"; DROP TABLE t; --'
    con.execute(f'CREATE TABLE "pe""ople" ("{hostile.replace(chr(34), chr(34) * 2)}" VARCHAR)')
    con.execute(f'INSERT INTO "pe""ople" VALUES {", ".join(f"({chr(39)}{i}{chr(39)})" for i in range(12))}')
    con.execute('CREATE TABLE dx (who VARCHAR, "c""ode" VARCHAR)')
    con.execute("INSERT INTO dx SELECT CAST(i % 8 AS VARCHAR), CAST(i % 3 AS VARCHAR) FROM range(40) t(i)")
    con.execute("INSERT INTO dx VALUES ('0', '0'), ('0', '0')")
    before = table_fingerprint(con, "dx")
    job = job_from_dict({"input": {"table": 'pe"ople', "id": hostile,
                                   "codes": {"table": "dx", "id": "who", "code": 'c"ode'}},
                         "method": {"name": "disassociation", "k": 3, "m": 2}, "release": {"name": "hostile"}})
    result = anon_duck.run(con, job)
    assert result.verified and result.facts["records"] == 12
    assert con.execute("SELECT sum(n_records) FROM hostile_clusters").fetchone()[0] == 12
    assert table_fingerprint(con, "dx") == before


def test_infeasible_when_all_records_fewer_than_k():
    rec = _records({"a": ["x"], "b": ["x"]})
    from anon_duck.methods.disassociation.horpart import Horizontal, merge_small
    with pytest.raises(InfeasibleError):
        merge_small(Horizontal(np.zeros(2, dtype=np.int64), [""]), 3, 6)
    assert rec.n == 2


# ------------------------------------------------------------------------------------------
# real data (slow): every release passes the audit; nothing suppressed; shape of D^A
# ------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name,k,m,records", [("bms", 5, 2, 59_601), ("informs", 5, 2, 26_735),
                                               ("informs", 25, 3, 26_735)])
def test_real_data_release_verifies(con, name, k, m, records):
    job = load_job(JOBS / f"disassociation_{name}.toml").with_params(k=k, m=m)
    result = anon_duck.run(con, job)
    rel = job.release.name
    assert result.verified and result.facts["records"] == records and result.facts["codes_suppressed"] == 0
    assert con.execute(f"SELECT sum(n_records), min(n_records) >= {k} FROM {rel}_clusters").fetchone() == (records, True)
    # every distinct code of the input is published somewhere (disassociation never suppresses)
    n_codes = con.execute(f"SELECT count(DISTINCT c) FROM (SELECT unnest(codes) AS c FROM {rel}_record_chunks UNION ALL "
                          f"SELECT unnest(codes) FROM {rel}_shared_chunks UNION ALL SELECT code FROM {rel}_item_chunks)")
    assert n_codes.fetchone()[0] == result.facts["codes"]


# docs/disassociation.md "Every release of the sweep passes the audit": clusters per (data, k).
# They do not depend on m (HORPART and MERGE_SMALL never read it).
SWEEP_CLUSTERS = {("bms", 2): 9_057, ("bms", 25): 974, ("informs", 2): 7_857, ("informs", 25): 661}


@pytest.mark.slow
@pytest.mark.parametrize("dataset,k,m", [(d, 25, m) for d in ("bms", "informs") for m in (1, 2, 3)] +
                         [("bms", 2, 1), ("informs", 2, 1)])
def test_sweep_subset_verifies_with_the_documented_clusters(dataset, k, m):
    """The cheap end of the documented 24-release sweep, through the sweep command's own
    function (``experiments.sweep_one``): k = 25 for every m and k = 2 for m = 1, on both
    datasets. Every release passes the audit, suppresses nothing and has the docs' clusters."""
    row = sweep_one(dataset, k, m)
    assert row["verified"] and row["codes_suppressed"] == 0
    assert row["clusters"] == SWEEP_CLUSTERS[dataset, k]


@pytest.mark.slow
@pytest.mark.parametrize("policy,extra,constraints", [("level3", {}, 18), ("sim", {"sim_size": 10}, 60),
                                                      ("sup", {"sup_percent": 1.25}, 56)],
                         ids=["level3", "sim10", "sup1.25"])
def test_informs_release_under_level3_sim_sup_passes_the_audit(con, policy, extra, constraints):
    """INFORMS, k = 5, m = 2 (the job's), under the policies the other tests build only on toy
    data: 18 ICD chapters (of the tree's 19), 60 blocks of 10 of the 599 codes, 56 disjoint
    frequent itemsets at 1.25% (docs "MRE by policy"). The policy is deterministic, so are the
    counts; every audit check passes."""
    result = anon_duck.run(con, load_job(JOBS / "disassociation_informs.toml").with_params(policy=policy, **extra))
    assert result.verified and all(c.passed for c in result.checks)
    assert {c.name for c in result.checks} >= {"disassociation_chunk_km", "disassociation_cluster_size",
                                               "disassociation_disjoint"}
    assert (result.facts["policy"], result.facts["constraints"]) == (policy, constraints)
    assert result.facts["codes_suppressed"] == 0


@pytest.mark.slow
def test_informs_report_small(con):
    job = load_job(JOBS / "disassociation_informs.toml").with_params(reconstructions=2, queries=100)
    anon_duck.run(con, job)
    rep = anon_duck.report(con, job)
    assert rep["suppression_rate"] == 0.0 and rep["mre"]["constraints"] == 599
    assert rep["are"]["W1"]["queries"] > 100 and rep["are"]["W2"]["queries"] == 100
    # record-chunk codes keep exact counts: the frequent single codes of W1 are not all wrong
    assert rep["are"]["W1"]["are_mean"] < rep["are"]["W2"]["are_mean"]


@pytest.mark.parametrize("mode,mean_401", [("uniform", 3.0), ("one", 1.0), ("below_k", 1.5)])
def test_reconstructions_keep_chunks_and_draw_item_counts(con, mode, mean_401):
    """Digest §2.6: record-chunk codes keep their exact counts in every reconstruction; an
    item-chunk code of a 5-record cluster is placed 1..5 (uniform), 1 (one) or 1..k-1 = 1..2
    (below_k) times; the shared chunk's {834.0, 944.01} pair stays 3 over the joint rows."""
    from anon_duck.methods.disassociation.report import reconstruct
    job = load_job(JOBS / "disassociation_toy.toml")
    anon_duck.run(con, job)
    tables = TOY_TABLES
    reconstruct(DuckDBBackend(con), tables, seed=5, n=400, k=3, mode=mode)
    counts = dict(con.execute(f"SELECT code, count(*) / 400.0 FROM {'.'.join(RECON)} GROUP BY code").fetchall())
    assert (counts["296.00"], counts["692.71"], counts["294.10"]) == (5, 4, 4)
    assert counts["401.0"] == pytest.approx(mean_401, abs=0.15)
    pair = con.execute(f"SELECT count(*) / 400.0 FROM (SELECT recon_id FROM {'.'.join(RECON)} WHERE code IN "
                       "('834.0', '944.01') GROUP BY recon_id, cluster_id, row_no HAVING count(*) = 2)").fetchone()[0]
    assert pair == 3


@pytest.mark.parametrize("mode", ["uniform", "one", "below_k"])
def test_a_reconstruction_of_some_codes_keeps_their_rows_of_the_whole_one(con, mode):
    """The report reconstructs only the codes its queries and constraints read
    (``reconstruct(codes=...)``): every row it keeps is a row of the whole reconstruction, and
    it keeps all of those codes' rows (a record-chunk, a shared-chunk and an item-chunk code)."""
    from anon_duck.methods.disassociation.report import RECON_CODES, reconstruct
    job = load_job(JOBS / "disassociation_toy.toml")
    anon_duck.run(con, job)
    backend, recon = DuckDBBackend(con), ".".join(RECON)
    inputs = prepare(backend, job)
    index = encode(backend, inputs.person, job.dataset.id, inputs.codes).index_of()    # the report's dictionary
    reconstruct(backend, TOY_TABLES, seed=5, n=50, k=3, mode=mode)
    whole = con.execute(f"SELECT * FROM {recon}").fetchall()
    kept = {"296.00", "834.0", "401.0"}
    backend.write_table(RECON_CODES, {"cid": np.asarray([index[c] for c in sorted(kept)], dtype=np.int64)})
    reconstruct(backend, TOY_TABLES, seed=5, n=50, k=3, mode=mode, codes=RECON_CODES)
    part = con.execute(f"SELECT * FROM {recon}").fetchall()
    assert sorted(part) == sorted(row for row in whole if row[3] in kept)
    assert {row[3] for row in part} == kept and len(part) < len(whole)


# ------------------------------------------------------------------------------------------
# completeness (issue #16 item 11b): the privacy audit sees only the release, so a code the
# method lost would pass it; the completeness check compares the release with the input
# ------------------------------------------------------------------------------------------
def _item_domain(masks, domains) -> list[int]:
    """Fig. 9 line 4's item chunk: the cluster's codes in no record chunk."""
    return sorted(set(masks) - {t for d in domains for t in d})


def test_completeness_passes_every_toy_release_and_catches_a_lost_or_miscounted_code(con):
    import anon_duck
    from anon_duck.verifiers.disassociation import completeness
    job = load_job(JOBS / "disassociation_toy.toml")
    result = anon_duck.run(con, job)
    assert [c.name for c in result.checks][-2:] == ["disassociation_completeness", "min_count"] and result.verified
    tables = {s: ("main", f"{job.release.name}_{s}")
              for s in ("clusters", "record_chunks", "shared_chunks", "item_chunks")}
    checks = anon_duck.verify(con, job)                      # re-reads the input codes itself
    assert [c.name for c in checks][-3:] == ["disassociation_completeness", "min_count", "analyst_views"]
    assert checks[-3].passed
    con.execute("CREATE TABLE input_codes AS SELECT DISTINCT CAST(pid AS VARCHAR) AS id, CAST(code AS VARCHAR) AS code "
                f"FROM read_parquet('{FIXTURES / '001' / 'toy_records.parquet'}')")
    backend = DuckDBBackend(con)
    assert completeness(backend, tables, codes=("input_codes",), k=3).passed
    # the mutant of the issue: a code dropped from the item chunk (the only place it was released)
    r = job.release.name
    dropped, held_by = con.execute(
        f"SELECT i.code, (SELECT count(*) FROM input_codes c WHERE c.code = i.code) FROM {r}_item_chunks i "
        f"WHERE i.code NOT IN (SELECT unnest(codes) FROM {r}_record_chunks UNION SELECT unnest(codes) FROM "
        f"{r}_shared_chunks) GROUP BY i.code HAVING count(*) = 1 ORDER BY i.code LIMIT 1").fetchone()
    con.execute(f"DELETE FROM {r}_item_chunks WHERE code = ?", [dropped])
    lost = completeness(backend, tables, codes=("input_codes",), k=3)
    assert not lost.passed and lost.violations == [
        {"code": dropped, "input_records": held_by, "subrecords": None, "item_clusters": None,
         "problem": "missing from the release (none is suppressed)"}]
    con.execute(f"INSERT INTO {r}_item_chunks SELECT cluster_id, ? FROM {r}_item_chunks LIMIT 1", [dropped])
    assert completeness(backend, tables, codes=("input_codes",), k=3).passed
    # an item chunk stands for 1 to k - 1 = 2 records of its cluster: a code held by more records
    # than its item chunks can hold lost some (the input gains holders of the item-only code here)
    con.execute("INSERT INTO input_codes SELECT 'extra' || i, '404.00' FROM range(3) t(i)")
    short = completeness(backend, tables, codes=("input_codes",), k=3)
    assert not short.passed and short.violations == [
        {"code": "404.00", "input_records": 5, "subrecords": 0, "item_clusters": 1,
         "problem": "held by 5 records, the release accounts for at most 2"}]
    con.execute("DELETE FROM input_codes WHERE id LIKE 'extra%'")
    # a record chunk that lost one code of one subrecord: its count no longer matches the input
    chunk_code = con.execute(f"SELECT unnest(codes) AS c FROM {job.release.name}_record_chunks LIMIT 1").fetchone()[0]
    con.execute(f"UPDATE {job.release.name}_record_chunks SET codes = list_filter(codes, lambda x: x <> ?) "
                f"WHERE sub_id = (SELECT min(sub_id) FROM {job.release.name}_record_chunks "
                f"WHERE list_contains(codes, ?))", [chunk_code, chunk_code])
    miscounted = completeness(backend, tables, codes=("input_codes",), k=3)
    assert not miscounted.passed and [v["code"] for v in miscounted.violations] == [chunk_code]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_releases_keep_every_code(con, tmp_path, seed):
    """Completeness runs with every release: on random records with a long tail of codes held
    by one record each (support 1 < k, so their only place is an item chunk), every run passes
    it. A method that drops support-1 codes from the item chunk (the issue's mutant) fails here,
    where the toy (no support-1 item code) cannot see it."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, 121)                   # Zipf-like: a few common codes, a long tail
    rows = sorted({(f"p{i}", f"c{c}") for i in range(200)
                   for c in rng.choice(120, rng.integers(1, 6), replace=False, p=popularity / popularity.sum())})
    path = tmp_path / "codes.parquet"
    con.execute(f"COPY (SELECT * FROM (VALUES {', '.join(map(str, rows))}) t(pid, code)) TO '{path}'")
    job = job_from_dict({"input": {"codes": {"path": str(path), "id": "pid", "code": "code"}},
                         "method": {"name": "disassociation", "k": 3, "m": 2, "max_cluster_size": 10},
                         "release": {"name": "rnd", "seed": seed}})
    result = anon_duck.run(con, job)
    assert result.verified and result.checks[-2].name == "disassociation_completeness"
    singles = {c for c, n in Counter(c for _, c in rows).items() if n == 1}
    items = {c for (c,) in con.execute("SELECT code FROM rnd_item_chunks").fetchall()}
    assert len(singles) >= 5 and singles <= items


def test_expected_counts_in_slices_give_the_one_slice_answers(con, monkeypatch):
    """report.expected_are joins each query's codes with the subrecords holding them; on a
    dense input all queries at once ran out of memory (100K persons of the OMOP-shaped CDM
    under 4 GB), and batches of queries that each read the whole release were quadratic in
    the persons. So the sum over clusters is taken one slice of clusters at a time: a slice
    per cluster gives the same ARE as one slice for all."""
    from anon_duck.methods.disassociation import report
    job = load_job(JOBS / "disassociation_toy.toml").with_params(reconstructions=0)
    anon_duck.run(con, job)
    cut = []
    real = report._slices

    def counted(clusters, rows, budget):
        cut.append(real(clusters, rows, budget))
        return cut[-1]
    monkeypatch.setattr(report, "_slices", counted)
    whole = anon_duck.report(con, job)["are"]
    monkeypatch.setattr(report, "EXPECTED_SLICE_ROWS", 1)
    each = anon_duck.report(con, job)["are"]
    n_clusters = con.execute("SELECT count(*) FROM toy_dis_clusters").fetchone()[0]
    assert [len(c) for c in cut] == [1, 1, n_clusters, n_clusters] and n_clusters > 1
    for name in ("W1", "W2"):
        assert each[name]["expected"]["queries"] == whole[name]["expected"]["queries"] > 1
        assert each[name]["expected"]["are"] == pytest.approx(whole[name]["expected"]["are"], rel=1e-12)
    assert each["W1"]["expected"]["by_size"] == pytest.approx(whole["W1"]["expected"]["by_size"], rel=1e-12)


def test_reconstructions_in_batches_and_slices_give_the_one_batch_answers(con, monkeypatch):
    """The reconstructions are drawn a batch at a time (ranking the shared chunks' 74M
    subrecords of 1M persons of a dense CDM 10 times at once outgrew 4 GB) and their query
    counts taken one slice of clusters at a time (10 reconstructions of 100K persons outgrew it):
    a batch per reconstruction and a slice per cluster give each reconstruction's ARE and MRE
    of one batch and one slice."""
    from anon_duck.methods.disassociation import report
    job = load_job(JOBS / "disassociation_toy.toml").with_params(reconstructions=3)
    anon_duck.run(con, job)
    whole = anon_duck.report(con, job)
    batches = []
    real = report.reconstruct
    monkeypatch.setattr(report, "reconstruct", lambda *a, **k: (batches.append(k["first"]), real(*a, **k)))
    monkeypatch.setattr(report, "RECON_SLICE_ROWS", 1)
    monkeypatch.setattr(report, "RECON_BATCH_ROWS", 1)
    each = anon_duck.report(con, job)
    assert batches == [0, 1, 2]
    assert each["mre"]["constraints"] == whole["mre"]["constraints"] > 0
    assert each["mre"]["bins"] == pytest.approx(whole["mre"]["bins"], rel=1e-12)
    for measure in ("within_2_5", "within_5", "min", "max", "mean"):
        assert each["mre"][measure] == pytest.approx(whole["mre"][measure], rel=1e-12)
    whole, each = whole["are"], each["are"]
    for name in ("W1", "W2"):
        assert each[name]["queries"] == whole[name]["queries"] > 1
        for measure in ("are_mean", "are_std"):
            assert each[name][measure] == pytest.approx(whole[name][measure], rel=1e-12)
    assert each["W1"]["by_size"] == pytest.approx(whole["W1"]["by_size"], rel=1e-12)
    assert whole["W1"]["are_std"] > 0                         # three reconstructions that differ


def test_slices_cut_consecutive_clusters_by_their_records():
    from anon_duck.methods.disassociation.report import _slices
    clusters = {"cluster_id": np.array([4, 1, 2, 3]), "n_records": np.array([2, 6, 2, 2])}
    assert _slices(clusters, rows=10, budget=100) == [(1, 4)]
    assert _slices(clusters, rows=200, budget=100) == [(1, 1), (2, 4)]    # half the records each
    assert _slices(clusters, rows=400, budget=100) == [(1, 1), (2, 2), (3, 4)]   # a cluster is never cut
    assert _slices({**clusters, "n_records": np.ones(4, dtype=int)}, rows=10 ** 9, budget=1) == \
        [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert _slices({"cluster_id": np.array([], dtype=int), "n_records": np.array([], dtype=int)}, 5, 1) == []
