"""Issue #20 item 3: every release publishes analyst views over its own tables; verify checks
them, export writes them, and every query of docs/analyst.md gives the documented rows."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp

import anon_duck
from anon_duck.release import ReleaseNames
from anon_duck.errors import InputError
from anon_duck.job import load_job
from anon_duck.methods import get_method

from conftest import JOBS

ANALYST = Path(__file__).resolve().parents[1] / "docs" / "analyst.md"
EXAMPLE = re.compile(r"```sql\n-- job: (\S+)\n(.*?)```\n```text\n(.*?)```", re.S)
TOYS = ["toy_fulldomain", "lkc_toy", "counterfeit_toy", "artuc_toy", "disassociation_toy", "disassociation_cba_toy",
        "longitudinal_toy"]


@pytest.fixture(scope="module")
def released():
    """One fresh database per toy job, with its release published."""
    out = {}
    for toy in TOYS:
        con = duckdb.connect()
        anon_duck.run(con, load_job(JOBS / f"{toy}.toml"))
        out[toy] = con
    return out


@pytest.mark.parametrize("toy", TOYS)
def test_views_read_only_the_release_tables_and_verify(released, toy):
    con, job = released[toy], load_job(JOBS / f"{toy}.toml")
    names = [ReleaseNames(job.release.name).view(v) for v in get_method(job.method).views]
    assert names[0] == job.release.name
    listed = {r[0] for r in con.execute(f"SELECT value FROM \"{job.release.name}_meta\" WHERE key = 'table'").fetchall()}
    for name in names:
        (sql,) = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [name]).fetchone()
        definition = sqlglot.parse_one(sql, read="duckdb").expression      # CREATE VIEW name AS <this>
        read = {t.name for t in definition.find_all(exp.Table)} - {c.alias_or_name for c in definition.find_all(exp.CTE)}
        assert read and read <= listed, (name, read - listed)
        assert con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] > 0
    views = anon_duck.verify(con, job)[-1]
    assert views.name == "analyst_views" and views.passed and views.detail["views"] == names


def test_a_tampered_or_missing_view_fails_verify(released):
    con, job = released["artuc_toy"], load_job(JOBS / "artuc_toy.toml")
    con.execute('ALTER VIEW artuc_toy RENAME TO artuc_toy_kept')
    try:
        con.execute('CREATE VIEW artuc_toy AS SELECT * FROM artuc_toy_kept WHERE record > 0')
        check = anon_duck.verify(con, job)[-1]
        assert not check.passed and check.violations[0]["view"] == "artuc_toy" and "differ" in check.violations[0]["problem"]
        con.execute("DROP VIEW artuc_toy_codes")
        assert {v["view"] for v in anon_duck.verify(con, job)[-1].violations} == {"artuc_toy", "artuc_toy_codes"}
    finally:
        anon_duck.run(con, job)          # republished: the views come back, replaced
    con.execute("DROP VIEW artuc_toy_kept")
    assert anon_duck.verify(con, job)[-1].passed


def test_the_events_view_check_reads_drawn_patients_and_every_row_count(released, monkeypatch):
    """Longitudinal's view shows its events table (50M rows at 10^6 persons): verify compares
    the rows of 256 release ids drawn by the release seed, and the row counts. A change in a
    drawn patient's rows fails; so does a row left out of an undrawn patient (2 drawn here, of
    the toy's few patients)."""
    from anon_duck.backend.duckdb import DuckDBBackend
    from anon_duck.methods.base import ViewSample, release_view
    from anon_duck.release.views import view_sample
    con, job = released["longitudinal_toy"], load_job(JOBS / "longitudinal_toy.toml")
    method, name = get_method(job.method), job.release.name
    assert method.views[0].sample.size == 256
    monkeypatch.setattr(method, "views", release_view(
        "events", ("release_id", ViewSample(method.views[0].sample.template, size=2))))
    drawn = list(view_sample(DuckDBBackend(con), job, method.views[0]).values())
    ids = [r[0] for r in con.execute(f'SELECT DISTINCT release_id FROM "{name}_events" ORDER BY 1').fetchall()]
    assert len(drawn) == 2 and set(drawn) < set(ids)
    undrawn = min(set(ids) - set(drawn))
    _sampled_check_catches(con, job, changed=f"SELECT * REPLACE (CASE WHEN release_id = {drawn[0]} AND pos = 1 "
                                             f"THEN age || '?' ELSE age END AS age) FROM kept",
                           dropped=f"SELECT * FROM kept WHERE release_id <> {undrawn} OR pos > 1")


def _sampled_check_catches(con: duckdb.DuckDBPyConnection, job, *, changed: str, dropped: str) -> None:
    """The release's view, renamed ``kept``, replaced by ``changed`` (one row of a drawn value
    changed: 2 groups differ) and then by ``dropped`` (one row of an undrawn value left out:
    the row counts differ); the view is restored after, and verify passes again."""
    name = job.release.name
    con.execute(f'ALTER VIEW "{name}" RENAME TO kept')
    try:
        for sql, differing in ((changed, 2), (dropped, 1)):
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {sql}')
            check = anon_duck.verify(con, job)[-1]
            assert check.violations == [{"view": name, "problem": f"{differing} group(s) of equal rows differ from "
                                                                  f"its definition"}]
    finally:
        con.execute(f'DROP VIEW "{name}"')
        con.execute(f'ALTER VIEW kept RENAME TO "{name}"')
    assert anon_duck.verify(con, job)[-1].passed


def test_the_records_view_check_reads_drawn_clusters_and_every_row_count(released, monkeypatch):
    """Disassociation's records view lists every subrecord with its codes' labels (11M labels
    at 10^6 persons): verify compares the rows of 256 clusters drawn by the release seed, and
    the row counts. A change in a drawn cluster's rows fails; so does a subrecord left out of
    an undrawn cluster (1 drawn here, of the toy's clusters)."""
    from anon_duck.backend.duckdb import DuckDBBackend
    from anon_duck.methods.base import AnalystView, ViewSample
    from anon_duck.release.views import view_sample
    con, job = released["disassociation_toy"], load_job(JOBS / "disassociation_toy.toml")
    method, name = get_method(job.method), job.release.name
    records = method.views[0]
    assert records.sample.size == 256
    monkeypatch.setattr(method, "views", (AnalystView("", records.template, sample=ViewSample(records.sample.template,
                                                                                                size=1)),))
    (drawn,) = view_sample(DuckDBBackend(con), job, method.views[0]).values()
    clusters = {r[0] for r in con.execute(f'SELECT cluster_id FROM "{name}_record_chunks"').fetchall()}
    assert drawn in clusters and len(clusters) > 1
    undrawn = min(clusters - {drawn})
    first = "(SELECT min((cluster_id, chunk_id, sub_id)) FROM kept WHERE cluster_id = {})"
    _sampled_check_catches(con, job, changed=f"SELECT * REPLACE (CASE WHEN (cluster_id, chunk_id, sub_id) = "
                                             f"{first.format(drawn)} THEN code_labels || ['?'] ELSE code_labels "
                                             f"END AS code_labels) FROM kept",
                           dropped=f"SELECT * FROM kept WHERE (cluster_id, chunk_id, sub_id) <> {first.format(undrawn)}")


def test_a_user_table_named_like_the_view_is_never_overwritten(tmp_path):
    con = duckdb.connect()
    con.execute("CREATE TABLE lkc_toy AS SELECT 1 AS mine")
    with pytest.raises(InputError, match="would overwrite table 'lkc_toy'"):
        anon_duck.run(con, load_job(JOBS / "lkc_toy.toml"))
    assert con.execute("SELECT * FROM lkc_toy").fetchall() == [(1,)]


def test_export_writes_the_views(released, tmp_path):
    con, job = released["disassociation_toy"], load_job(JOBS / "disassociation_toy.toml")
    files = {f.name for f in anon_duck.export(con, job, tmp_path / "out.csv")}
    assert {"toy_dis.csv", "toy_dis_terms.csv"} <= files
    exported = tmp_path / "out.csv" / "toy_dis.csv"
    assert duckdb.connect().execute(f"SELECT count(*) FROM read_csv('{exported}')").fetchone() == \
        con.execute("SELECT count(*) FROM toy_dis").fetchone()


def test_every_query_of_the_analyst_guide_gives_its_documented_rows(released):
    examples = EXAMPLE.findall(ANALYST.read_text())
    assert len(examples) >= 8 and {job for job, _, _ in examples} == set(TOYS)
    for job, sql, rows in examples:
        got = [repr(tuple(r)) for r in released[job].execute(sql).fetchall()]
        assert got == rows.strip().splitlines(), sql


def _expected_support(con, release: str, mode: str, k: int) -> dict[tuple[str, str], float]:
    """Digest §2.9 by hand, from the published tables: for each code set Q of one or two codes,
    the sum over clusters P whose parts hold every code of Q of |P| times, per part, the share
    of the part's rows holding Q's codes in that part (record chunk: of |P| rows; shared chunk:
    of the rows of every cluster it spans; item chunk code: p_t of the item_count mode)."""
    def rows(sql):
        return con.execute(sql.format(r=release)).fetchall()
    size = dict(rows("SELECT cluster_id, n_records FROM {r}_clusters"))
    parts: dict[int, list[tuple[list[set[str]], int]]] = {p: [] for p in size}   # (subrecords, rows) per part
    chunks: dict[tuple[int, int], list[set[str]]] = {}
    for chunk, cluster, codes in rows("SELECT chunk_id, cluster_id, codes FROM {r}_record_chunks"):
        chunks.setdefault((chunk, cluster), []).append(set(codes))
    for (_, cluster), subs in chunks.items():
        parts[cluster].append((subs, size[cluster]))
    shared: dict[int, list[set[str]]] = {}
    for chunk, codes in rows("SELECT chunk_id, codes FROM {r}_shared_chunks"):
        shared.setdefault(chunk, []).append(set(codes))
    scope: dict[int, list[int]] = {}
    for chunk, cluster in rows("SELECT chunk_id, cluster_id FROM {r}_shared_scope"):
        scope.setdefault(chunk, []).append(cluster)
    for chunk, clusters in scope.items():
        for cluster in clusters:
            parts[cluster].append((shared[chunk], sum(size[c] for c in clusters)))
    p_item = {"one": lambda n: 1 / n, "uniform": lambda n: (n + 1) / (2 * n),
              "below_k": lambda n: (1 + min(n, k - 1)) / (2 * n)}[mode]
    items: dict[int, set[str]] = {p: set() for p in size}
    for cluster, code in rows("SELECT cluster_id, code FROM {r}_item_chunks"):
        items[cluster].add(code)
    out: dict[tuple[str, str], float] = {}
    for cluster, n in size.items():
        domains = [(subs, n_rows, set().union(*subs)) for subs, n_rows in parts[cluster]]
        codes = set().union(*(d for _, _, d in domains), items[cluster])
        for a in codes:
            for b in codes:
                q = {a, b}
                p, covered = 1.0, set()
                for subs, n_rows, domain in domains:
                    here = q & domain
                    if here:
                        p *= sum(here <= s for s in subs) / n_rows
                        covered |= here
                for code in q & items[cluster]:
                    p *= p_item(n)
                    covered.add(code)
                if covered == q:
                    out[(a, b)] = out.get((a, b), 0.0) + n * p
    return out


@pytest.mark.parametrize("mode", ["one", "uniform", "below_k"])
def test_support_view_is_the_papers_expected_count(mode):
    """<release>_support holds every code and every pair of codes that meet in a cluster, in
    both orders, with the expected count of the reconstructions (computed here by hand)."""
    con, job = duckdb.connect(), load_job(JOBS / "disassociation_toy.toml").with_params(item_count=mode)
    anon_duck.run(con, job)
    got = {(a, b): s for a, b, s in con.execute("SELECT code_a, code_b, support FROM toy_dis_support").fetchall()}
    want = _expected_support(con, "toy_dis", mode, job.params["k"])
    assert got.keys() == want.keys() and len(got) > 40
    assert all(got[q] == pytest.approx(round(want[q], 6), abs=1e-9) for q in want)
    # a code set within one record chunk is counted exactly: the chunk's rows holding both
    both = con.execute("SELECT count(*) FROM toy_dis WHERE list_has_all(codes, ['296.00', '296.01'])").fetchone()[0]
    assert got[("296.00", "296.01")] == got[("296.01", "296.00")] == both


def test_support_view_matches_the_brute_force_with_shared_chunks():
    """The OMOP fixture's release has shared chunks spanning several clusters (counted once per
    chunk by the view, then repeated per cluster): still the hand-computed expected counts."""
    con, job = duckdb.connect(), load_job(JOBS / "omop_disassociation.toml")
    anon_duck.run(con, job)
    name = job.release.name
    assert con.execute(f'SELECT count(DISTINCT chunk_id) FROM "{name}_shared_scope"').fetchone()[0] > 5
    got = {(a, b): s for a, b, s in con.execute(f'SELECT code_a, code_b, support FROM "{name}_support"').fetchall()}
    params = get_method(job.method).check_params(job)
    want = _expected_support(con, name, params.item_count, params.k)
    assert got.keys() == want.keys() and len(got) > 10_000
    assert all(got[q] == pytest.approx(round(want[q], 6), abs=1e-9) for q in want)


def _profiled(con, sql: str, params: list, path: Path) -> list[dict]:
    """Run ``sql`` with DuckDB's JSON profiler on and return its operators, flattened."""
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"PRAGMA profiling_output = '{path}'")
    try:
        con.execute(sql, params).fetchall()
    finally:
        con.execute("PRAGMA disable_profiling")
    import json
    out, todo = [], list(json.loads(path.read_text())["operator"])
    while todo:
        op = todo.pop()
        out.append(op)
        todo.extend(op.get("children", []))
    return out


def test_a_filtered_support_query_touches_only_the_clusters_holding_the_code(tmp_path):
    """``WHERE code_a = X`` reaches the pair join: each join pairing codes of a cluster emits
    at most the codes of the clusters holding X (counted here from the published tables),
    far fewer than the pairs of every cluster, which the unfiltered view pairs."""
    con, job = duckdb.connect(), load_job(JOBS / "omop_disassociation.toml")
    anon_duck.run(con, job)
    name = job.release.name
    codes_of = f'''SELECT cluster_id, code FROM "{name}_item_chunks"
                   UNION SELECT cluster_id, unnest(codes) FROM "{name}_record_chunks"
                   UNION SELECT s.cluster_id, unnest(c.codes) FROM "{name}_shared_chunks" AS c
                         JOIN "{name}_shared_scope" AS s USING (chunk_id)'''
    per_cluster = dict(con.execute(f"SELECT cluster_id, count(*) FROM ({codes_of}) GROUP BY ALL").fetchall())
    all_pairs = sum(n * (n - 1) for n in per_cluster.values())
    # the rarest code held by two clusters or more, and the most common one
    held = con.execute(f"SELECT code, list(cluster_id) FROM ({codes_of}) GROUP BY code "
                       "HAVING count(*) >= 2 ORDER BY count(*), code").fetchall()
    for (code, clusters), column in [(held[0], "code_a"), (held[-1], "code_a"), (held[-1], "code_b")]:
        bound = sum(per_cluster[c] for c in clusters)
        ops = _profiled(con, f'SELECT * FROM "{name}_support" WHERE {column} = ?', [code], tmp_path / "plan.json")
        pair_joins = [op for op in ops if "code != code" in str(op.get("extra_info", {}).get("Conditions", ""))]
        assert pair_joins and max(op["intermediate_rows"] for op in pair_joins) <= bound, (code, bound)
    assert bound < all_pairs / 3
    ops = _profiled(con, f'SELECT count(*) FROM "{name}_support"', [], tmp_path / "plan.json")
    assert max(op["intermediate_rows"] for op in ops if "code != code" in str(op.get("extra_info", {}))) == all_pairs


def test_the_support_check_reads_a_seeded_sample_and_catches_a_change_in_it():
    """verify checks ``<release>_support`` on the rows pairing two of 32 codes drawn by the
    release seed (md5 order): a view whose rows differ for a drawn pair fails, and the draw is
    the same on every verify."""
    from anon_duck.release.views import view_sample as _view_sample
    from anon_duck.backend.duckdb import DuckDBBackend
    con, job = duckdb.connect(), load_job(JOBS / "omop_disassociation.toml")
    anon_duck.run(con, job)
    name = f"{job.release.name}_support"
    view = get_method(job.method).views[2]
    drawn = list(_view_sample(DuckDBBackend(con), job, view).values())
    assert view.sample.size == len(drawn) == 32 and drawn == list(_view_sample(DuckDBBackend(con), job, view).values())
    import hashlib
    every = [r[0] for r in con.execute(f'SELECT DISTINCT code_a FROM "{name}"').fetchall()]
    key = lambda c: (hashlib.md5(f"{job.release.seed}:{c}".encode()).hexdigest(), c)   # noqa: E731
    assert drawn == sorted(every, key=key)[:32]
    con.execute(f'ALTER VIEW "{name}" RENAME TO kept')
    try:
        con.execute(f'''CREATE VIEW "{name}" AS SELECT * REPLACE (
                        CASE WHEN code_a = '{drawn[3]}' AND code_a <> code_b THEN support + 1 ELSE support END AS support)
                        FROM kept''')
        changed = con.execute(f'SELECT count(*) FROM kept WHERE code_a = ? AND code_b <> code_a AND list_contains(?, code_b)',
                              [drawn[3], drawn]).fetchone()[0]
        check = anon_duck.verify(con, job)[-1]
        assert not check.passed and changed > 0
        # each changed row is a group of the view's and one of the definition's
        assert check.violations == [{"view": name, "problem": f"{2 * changed} group(s) of equal rows differ from its definition"}]
    finally:
        con.execute(f'DROP VIEW "{name}"')
        con.execute(f'ALTER VIEW kept RENAME TO "{name}"')
    assert anon_duck.verify(con, job)[-1].passed
