"""The orchestration: run → verify gate → one-transaction publication; verify, report, export,
inspect; bad input; hostile identifiers; atomicity; determinism. Exercised with the
full-domain baseline on the 12-patient toy and on Adult."""
from __future__ import annotations

import dataclasses

import numpy as np

import duckdb
import pytest

import anon_duck
from anon_duck import api
from anon_duck.backend.duckdb import DuckDBBackend
import anon_duck.release
from anon_duck.errors import InputError, JobError, VerificationError
from anon_duck.job import Source
from anon_duck.methods import get_method
from anon_duck.scratch import staging
from anon_duck.sqlrender import ident, qualified
from anon_duck.verifiers import CheckResult

from conftest import FIXTURES, table_fingerprint, user_tables


def _with_table(job, table: str):
    """The same job reading a database table instead of the CSV."""
    ds = dataclasses.replace(job.dataset, source=Source(table=table))
    return dataclasses.replace(job, dataset=ds)


def _load_toy(con, name: str = "patients") -> None:
    con.execute(f"CREATE TABLE {ident(name)} AS SELECT * FROM read_csv(?)", [str(FIXTURES / "toy/patients.csv")])


def test_run_publishes_a_verified_release_without_ids(con, job_file):
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    _load_toy(con)
    before = table_fingerprint(con, "patients")
    result = anon_duck.run(con, job)
    assert result.verified and result.tables == ["toy_k2_release", "toy_k2_qi_retention"]
    assert table_fingerprint(con, "patients") == before          # the source is never modified
    cols = [r[0] for r in con.execute("DESCRIBE toy_k2_release").fetchall()]
    assert "pid" not in cols and "name" not in cols               # no id, no dropped column
    assert {"age", "age__lo", "age__hi", "sex", "zip", "disease"} == set(cols)
    sizes = con.execute("SELECT count(*) FROM toy_k2_release GROUP BY age, sex, zip").fetchall()
    assert min(s[0] for s in sizes) >= 2
    assert user_tables(con) == {"patients", "toy_k2_release", "toy_k2_qi_retention", "toy_k2_meta", "toy_k2"}   # no scratch left behind
    meta = dict(con.execute("SELECT key, value FROM toy_k2_meta WHERE key <> 'table'").fetchall())
    assert meta["method"] == "fulldomain" and meta["seed"] == "1" and meta["anon_duck_version"] == anon_duck.__version__
    assert '"k_anonymity": true' in meta["verified"]


def test_fulldomain_picks_the_minimum_lm_minimal_node(con, job_file):
    """Brute force over the whole lattice: the chosen node is k-anonymous and no k-anonymous
    node has a lower LM (seed 002's comparator)."""
    import itertools

    import numpy as np

    from anon_duck.backend.duckdb import DuckDBBackend
    from anon_duck.inputs import prepare
    from anon_duck.methods import fulldomain
    from anon_duck.sqlrender import render

    job = job_file("toy_fulldomain.toml")
    b = DuckDBBackend(con)
    inputs = prepare(b, job)
    freq = b.fetch("t", render("fulldomain/frequency_set.sql.j2", relation=inputs.person, qis=["age", "sex", "zip"]))
    maps = [fulldomain._level_map(b, q.hierarchy, freq[f"q{i}"]) for i, q in enumerate(job.dataset.qis)]
    best = fulldomain.search(freq["cnt"], maps, 2, lambda *a: None)
    n = freq["cnt"].sum()
    brute = []
    for node in itertools.product(*(range(m.node_ids.shape[0]) for m in maps)):
        sizes = fulldomain._class_sizes(freq["cnt"], maps, node)
        if sizes.min() >= 2:
            brute.append(np.mean([(m.lm_terms[lvl] * freq["cnt"]).sum() / n for m, lvl in zip(maps, node)]))
    assert best.lm == pytest.approx(min(brute))
    assert best.min_class >= 2


def test_same_seed_same_bytes_other_seed_other_order(con, job_file):
    job = job_file("toy_fulldomain.toml")
    anon_duck.run(con, job)
    first = con.execute("SELECT * FROM toy_k2_release").fetchall()
    anon_duck.run(con, job)                                       # re-run replaces cleanly
    assert con.execute("SELECT * FROM toy_k2_release").fetchall() == first
    other = dataclasses.replace(job, release=dataclasses.replace(job.release, seed=99))
    anon_duck.run(con, other)
    again = con.execute("SELECT * FROM toy_k2_release").fetchall()
    assert sorted(again) == sorted(first) and again != first


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_grouped_publication_is_the_same_table(con, seed):
    """``ReleaseTable(repeats=True)``: publication orders the distinct rows once and repeats
    each (lib/release_order.jinja's in_release_order_grouped). On 600 rows with 24 distinct
    ones (text, integers, doubles with infinities and fractions, NULLs) the published rows come
    in exactly the order of the ungrouped publication, copies included; the grouped statement
    really groups (it differs from the plain one)."""
    from anon_duck.sqlrender import render
    con.execute("""CREATE TABLE src AS
        SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE 'v' || (i % 4) END AS label, i % 3 AS n,
               CASE i % 4 WHEN 0 THEN 'inf'::DOUBLE WHEN 1 THEN -1.25 WHEN 2 THEN 1e-5 ELSE NULL END AS lo
        FROM range(600) t(i) ORDER BY hash(i)""")
    assert con.execute("SELECT count(*) FROM (SELECT DISTINCT * FROM src)").fetchone()[0] == 24
    columns = [(r[0], r[1]) for r in con.execute("DESCRIBE src").fetchall()]
    tables = {}
    for grouped in (False, True):
        sql = render("release/publish_table.sql.j2", target=("main", f"out_{grouped}"), source=("main", "src"),
                     columns=columns, seeded=True, seed=seed, grouped=grouped)
        assert ("_ad_copies" in sql) == grouped
        con.execute(sql)
        tables[grouped] = con.execute(f"SELECT * FROM out_{grouped} ORDER BY rowid").fetchall()
    assert len(tables[True]) == 600 and tables[True] == tables[False]


def test_rows_are_not_in_input_order(con, job_file, monkeypatch):
    """The published order is a seeded shuffle of the staged release, not the order the method
    staged it in (which already differs from the input order, so comparing with the input
    alone would pass without any shuffle): same seed, same order; another seed, another."""
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    _load_toy(con)
    staged_rows: list[list[tuple]] = []
    real_publish = anon_duck.release.publish

    def capture(backend, job, tables, checks, facts):
        release = next(t for t in tables if t.suffix == "release")
        staged_rows.append(con.execute(f"SELECT * FROM {qualified(release.staged)}").fetchall())
        return real_publish(backend, job, tables, checks, facts)
    monkeypatch.setattr(anon_duck.release, "publish", capture)
    orders = []
    for seed in (1, 1, 2):
        anon_duck.run(con, dataclasses.replace(job, release=dataclasses.replace(job.release, seed=seed)))
        orders.append(con.execute("SELECT * FROM toy_k2_release").fetchall())
    original = [r[0] for r in con.execute("SELECT disease FROM patients").fetchall()]
    assert sorted(r[0] for r in orders[0]) == sorted(original)
    assert sorted(orders[0]) == sorted(staged_rows[0]) and orders[0] != staged_rows[0]
    assert orders[0] == orders[1] and orders[2] != orders[0]


def test_two_releases_do_not_interfere(con, job_file):
    job = job_file("toy_fulldomain.toml")
    anon_duck.run(con, job)
    anon_duck.run(con, job.with_release("toy_other").with_params(k=3))
    assert {"toy_k2_release", "toy_other_release"} <= user_tables(con)
    assert [(c.name, c.passed) for c in anon_duck.verify(con, job)] == [("k_anonymity", True), ("analyst_views", True)]
    assert all(c.passed for c in anon_duck.verify(con, job.with_release("toy_other").with_params(k=3)))


def test_verifier_gate_blocks_publication(con, job_file, monkeypatch):
    job = job_file("toy_fulldomain.toml")
    method = get_method("fulldomain")
    monkeypatch.setattr(type(method), "verify",
                        lambda self, *a, **k: [CheckResult("k_anonymity", False, 1, [{"class_size": 1}], {})])
    with pytest.raises(VerificationError, match="nothing was published") as err:
        anon_duck.run(con, job)
    assert err.value.violations == [{"class_size": 1}]
    assert user_tables(con) == set()


@pytest.mark.parametrize("failure", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_failure_while_publishing_leaves_the_old_release(con, job_file, monkeypatch, failure):
    job = job_file("toy_fulldomain.toml")
    anon_duck.run(con, job)
    old = table_fingerprint(con, "toy_k2_release")
    from anon_duck.backend.duckdb import DuckDBBackend
    real = DuckDBBackend.write_table

    def failing(self, name, columns):     # the last table written before the swap
        if tuple(name) == staging("toy_k2_meta"):
            raise failure
        return real(self, name, columns)
    monkeypatch.setattr(DuckDBBackend, "write_table", failing)
    with pytest.raises(type(failure)):
        anon_duck.run(con, job.with_params(k=3))
    assert table_fingerprint(con, "toy_k2_release") == old
    assert user_tables(con) == {"toy_k2_release", "toy_k2_qi_retention", "toy_k2_meta", "toy_k2"}
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp'").fetchone()[0] == 0


def test_export_writes_only_release_tables(con, job_file, tmp_path):
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    _load_toy(con)
    anon_duck.run(con, job)
    files = anon_duck.export(con, job, tmp_path / "out")
    assert sorted(p.name for p in files) == ["toy_k2.parquet", "toy_k2_meta.parquet", "toy_k2_qi_retention.parquet",
                                             "toy_k2_release.parquet"]
    cols = [r[0] for r in duckdb.sql(f"DESCRIBE SELECT * FROM '{files[0]}'").fetchall()]
    assert "pid" not in cols and "name" not in cols
    db = anon_duck.export(con, job, tmp_path / "rel.duckdb")[0]
    with duckdb.connect(str(db)) as out:
        assert {r[0] for r in out.execute("SHOW TABLES").fetchall()} == {"toy_k2_release", "toy_k2_qi_retention", "toy_k2_meta",
                                                                         "toy_k2"}
    csv = anon_duck.export(con, job, tmp_path / "csv_out.csv")
    assert all(p.suffix == ".csv" and p.parent.name == "csv_out.csv" and p.exists() for p in csv)
    tables = anon_duck.export(con, job, tmp_path / "tables", views=False)     # the analyst view toy_k2 left out
    assert sorted(p.name for p in tables) == sorted(p.name for p in (tmp_path / "tables").iterdir()) == \
        ["toy_k2_meta.parquet", "toy_k2_qi_retention.parquet", "toy_k2_release.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["csv_out.csv", "out", "rel.duckdb", "tables"]  # no partial left


def test_export_never_overwrites_and_leaves_nothing_on_failure(con, job_file, tmp_path, monkeypatch):
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    _load_toy(con)
    anon_duck.run(con, job)
    for first in ("out", "out.parquet", "out.csv"):
        anon_duck.export(con, job, tmp_path / first)        # three paths, three exports
        with pytest.raises(InputError, match="never writes over an earlier export"):
            anon_duck.export(con, job, tmp_path / first)
    real_run = DuckDBBackend.run

    def failing(self, stage, sql, params=None):
        if stage == "export toy_k2_meta":
            raise anon_duck.AnonDuckError("disk full")
        return real_run(self, stage, sql, params)
    monkeypatch.setattr(DuckDBBackend, "run", failing)
    for to in ("new", "new.duckdb"):
        with pytest.raises(anon_duck.AnonDuckError, match="disk full"):
            anon_duck.export(con, job, tmp_path / to)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.csv", "out.parquet"]


def test_inspect_profiles_the_input(con, job_file):
    out = anon_duck.inspect(con, job_file("toy_fulldomain.toml"))
    assert out["rows"] == 12 and out["distinct"]["sex"] == 2 and out["current_k"] == 1
    assert out["missing_from_hierarchies"] == []


def test_report_has_ncp_dm_and_are(con, job_file):
    job = job_file("toy_fulldomain.toml")
    anon_duck.run(con, job)
    rep = anon_duck.report(con, job)
    assert 0 <= rep["ncp"]["ncp"] <= 1
    assert rep["discernibility"]["min_class_size"] >= 2
    assert rep["are"]["n_queries"] == 100 and rep["are"]["are"] >= 0


# ---------------------------------------------------------------------------------------
# bad input: a clear error naming the problem, and the database unchanged
# ---------------------------------------------------------------------------------------
def _expect_input_error(con, job, match):
    before = user_tables(con)
    with pytest.raises((InputError, JobError), match=match):
        anon_duck.run(con, job)
    assert user_tables(con) == before


def test_unknown_table(con, job_file):
    _expect_input_error(con, _with_table(job_file("toy_fulldomain.toml"), "nope"), "does not exist")


def test_unknown_column(con, job_file):
    _load_toy(con)
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    ds = dataclasses.replace(job.dataset, sensitive="diagnosis")
    _expect_input_error(con, dataclasses.replace(job, dataset=ds), "input.sensitive = 'diagnosis': no such column")


def test_null_in_a_qi(con, job_file):
    _load_toy(con)
    con.execute("UPDATE patients SET sex = NULL WHERE pid = 3")
    _expect_input_error(con, _with_table(job_file("toy_fulldomain.toml"), "patients"), r"'sex' has 1 NULL \(rows with id 3\)")


def test_value_missing_from_hierarchy(con, job_file):
    _load_toy(con)
    con.execute("UPDATE patients SET zip = 99999 WHERE pid = 3")
    _expect_input_error(con, _with_table(job_file("toy_fulldomain.toml"), "patients"),
                        r"'zip': 1 distinct value\(s\) are not leaves of hierarchy 'zip', e.g. '99999'")


def test_k_larger_than_table(con, job_file):
    _expect_input_error(con, job_file("toy_fulldomain.toml").with_params(k=13), "larger than the number of records")


def test_k_below_two(con, job_file):
    _expect_input_error(con, job_file("toy_fulldomain.toml").with_params(k=1), "method.k = 1: must be >= 2")


def test_duplicate_ids(con, job_file):
    _load_toy(con)
    con.execute("UPDATE patients SET pid = 1 WHERE pid = 2")
    _expect_input_error(con, _with_table(job_file("toy_fulldomain.toml"), "patients"), "1 duplicate id")


def test_empty_table(con, job_file):
    _load_toy(con)
    con.execute("DELETE FROM patients")
    _expect_input_error(con, _with_table(job_file("toy_fulldomain.toml"), "patients"), "no rows")


def test_text_in_a_numeric_qi(con, job_file):
    _load_toy(con)
    con.execute("ALTER TABLE patients ALTER age TYPE VARCHAR")
    _expect_input_error(con, _with_table(job_file("toy_fulldomain.toml"), "patients"), "declared numeric")


HOSTILE = ['x"; DROP TABLE patients; --', "select", "année naïve", "a b.c", "`tick`", "it's"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_identifiers_are_data_not_sql(con, job_file, name):
    """Table and column names with quotes, semicolons, keywords, spaces, dots and unicode go
    through every template quoted; nothing is executed as SQL. A dot in a job's table name
    separates schema and table (``a b.c`` is table ``c`` of schema ``a b``, each part quoted);
    in a column name it is part of the name."""
    job = job_file("toy_fulldomain.toml")
    table = qualified(name.split("."))
    if "." in name:
        con.execute(f"CREATE SCHEMA {ident(name.split('.')[0])}")
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv(?)", [str(FIXTURES / "toy/patients.csv")])
    con.execute(f"ALTER TABLE {table} RENAME COLUMN zip TO {ident(name)}")
    qis = tuple(dataclasses.replace(q, column=name) if q.column == "zip" else q for q in job.dataset.qis)
    ds = dataclasses.replace(job.dataset, source=Source(table=name), qis=qis)
    job = dataclasses.replace(job, dataset=ds)
    result = anon_duck.run(con, job)
    assert result.verified
    assert name in [r[0] for r in con.execute("DESCRIBE toy_k2_release").fetchall()]
    assert [c.passed for c in anon_duck.verify(con, job)] == [True, True]
    assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 12


def test_verify_reports_a_tampered_release(con, job_file):
    job = job_file("toy_fulldomain.toml")
    anon_duck.run(con, job)
    con.execute("DELETE FROM toy_k2_release WHERE rowid IN (SELECT min(rowid) FROM toy_k2_release)")
    checks = anon_duck.verify(con, job)
    assert not checks[0].passed and checks[0].n_violations == 1
    assert checks[0].violations[0]["class_size"] == 1


def test_verify_sees_published_bounds(con, job_file):
    """A numeric QI's bounds are published next to its label: a row whose bounds differ from
    its class's is a class of its own, whatever its label says."""
    job = job_file("toy_fulldomain.toml")
    anon_duck.run(con, job)
    con.execute("UPDATE toy_k2_release SET age__lo = age__lo - 1 WHERE rowid IN (SELECT min(rowid) FROM toy_k2_release)")
    checks = anon_duck.verify(con, job)
    assert not checks[0].passed and checks[0].n_violations == 2      # its class of 2 split in two


def test_verify_without_a_release(con, job_file):
    with pytest.raises(InputError, match="not in this database"):
        api.verify(con, job_file("toy_fulldomain.toml"))


@pytest.mark.slow
def test_adult_fulldomain_verifies(con, job_file):
    result = anon_duck.run(con, job_file("adult_fulldomain.toml"))
    assert result.verified and result.facts["min_class"] >= 10
    assert result.facts["levels"] == {"age": 4, "sex": 0, "race": 0, "marital_status": 1, "education": 3}


def test_fetch_keeps_nulls_as_nulls(con):
    from anon_duck.backend.duckdb import DuckDBBackend
    from anon_duck.sqlrender import render
    con.execute("CREATE TABLE n AS SELECT * FROM (VALUES (1, 'a'), (NULL, NULL)) t(i, s)")
    out = DuckDBBackend(con).fetch("t", f"SELECT * FROM {qualified(('n',))}")
    assert out["i"][0] == 1 and np.isnan(out["i"][1])
    assert out["s"][0] == "a" and out["s"][1] is None


def test_release_never_overwrites_a_foreign_table(con, job_file):
    """A source (or any table) named like a release table is refused, not replaced."""
    _load_toy(con, "toy_k2_release")
    job = _with_table(job_file("toy_fulldomain.toml"), "toy_k2_release")
    before = table_fingerprint(con, "toy_k2_release")
    with pytest.raises(InputError, match="would overwrite table 'toy_k2_release'"):
        anon_duck.run(con, job)
    assert table_fingerprint(con, "toy_k2_release") == before
    assert user_tables(con) == {"toy_k2_release"}


@pytest.mark.parametrize("create", [
    "CREATE TABLE \"TOY_K2_RELEASE\" AS SELECT 42 AS v",          # DuckDB's catalog ignores case
    "CREATE VIEW toy_k2_release AS SELECT 42 AS v",
])
def test_release_never_overwrites_a_table_or_view_of_another_case(con, job_file, create):
    _load_toy(con)
    con.execute(create)
    with pytest.raises(InputError, match="would overwrite table 'toy_k2_release'"):
        anon_duck.run(con, _with_table(job_file("toy_fulldomain.toml"), "patients"))
    assert con.execute("SELECT v FROM toy_k2_release").fetchall() == [(42,)]


@pytest.mark.parametrize("meta", [
    "CREATE TABLE toy_k2_meta AS SELECT * FROM (VALUES ('table', 'precious')) t(key, value)",
    "CREATE TABLE toy_k2_meta AS SELECT * FROM (VALUES ('table', 'precious'), ('anon_duck_version', '0.1.0')) t(key, value)",
    "CREATE TABLE toy_k2_meta AS SELECT 1 AS key",
])
def test_a_foreign_meta_table_never_steers_what_is_dropped(con, job_file, meta):
    """Publishing drops the tables an earlier release's ``_meta`` lists; a table of that name
    that anon_duck did not write (wrong shape, no version, or listing a table outside the
    release's prefix) is refused, and nothing is dropped."""
    _load_toy(con)
    con.execute("CREATE TABLE precious AS SELECT 7 AS v")
    con.execute(meta)
    with pytest.raises(InputError, match="'toy_k2_meta' exists but was not written by anon_duck"):
        anon_duck.run(con, _with_table(job_file("toy_fulldomain.toml"), "patients"))
    assert con.execute("SELECT v FROM precious").fetchall() == [(7,)]
    assert user_tables(con) == {"patients", "precious", "toy_k2_meta"}


def test_verify_refuses_a_release_of_another_method(con, job_file):
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    _load_toy(con)
    anon_duck.run(con, job)
    with pytest.raises(InputError, match="made by method 'fulldomain', not by this job's method.name = 'counterfeit'"):
        anon_duck.verify(con, dataclasses.replace(job, method="counterfeit", params={"k": 2, "h": 0.5}))


def test_a_method_without_checks_publishes_nothing(con, job_file, monkeypatch):
    job = _with_table(job_file("toy_fulldomain.toml"), "patients")
    _load_toy(con)
    monkeypatch.setattr(type(get_method("fulldomain")), "verify", lambda *a, **k: [])
    with pytest.raises(anon_duck.AnonDuckError, match="returned no verifier checks"):
        anon_duck.run(con, job)
    assert user_tables(con) == {"patients"}
