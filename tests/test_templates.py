"""Every SQL template, as really rendered by the toy jobs, parses as DuckDB and transpiles
(sqlglot) to Postgres, Spark, BigQuery and Snowflake; every template is exercised."""
from __future__ import annotations

import dataclasses

import duckdb
import pytest
import sqlglot

import anon_duck
import anon_duck.api
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import AnonDuckError
from anon_duck.job import Settings, load_job
from anon_duck.sqlrender import ident, lit, qualified, recording, render, template_names

from conftest import JOBS

DIALECTS = ("duckdb", "postgres", "spark", "bigquery", "snowflake")
# Jobs whose runs (run + verify + report + risk + inspect + export) exercise the templates: the
# foundation toy and every method's toy job (<method>_toy.toml).
TOY_JOBS = sorted(JOBS.glob("toy_*.toml")) + sorted(JOBS.glob("*_toy.toml"))


@pytest.fixture(scope="module")
def renderings(tmp_path_factory):
    out: dict[str, list[str]] = {}
    with recording() as rec:
        for path in TOY_JOBS:
            job = load_job(path)
            with duckdb.connect() as con:
                anon_duck.run(con, job)
                anon_duck.verify(con, job)
                anon_duck.report(con, job)
                anon_duck.api.risk(con, job)
                anon_duck.inspect(con, job)
                for target in ("x.duckdb", "x.csv", "x"):
                    anon_duck.export(con, job, tmp_path_factory.mktemp("export") / target)
        with duckdb.connect() as con:     # [settings] render SET statements
            anon_duck.run(con, dataclasses.replace(load_job(TOY_JOBS[0]), settings=Settings("1GB", 1)))
        with duckdb.connect() as con, pytest.MonkeyPatch.context() as patch:
            # a sort budget of a few rows: the toys' tables are below DuckDB's, so only this
            # publishes and exports in chunks (release/order.py)
            patch.setattr(DuckDBBackend, "sort_budget", lambda self: 64)
            toy = load_job(JOBS / "artuc_toy.toml")
            anon_duck.run(con, toy)
            anon_duck.export(con, toy, tmp_path_factory.mktemp("export") / "x.csv")
        with duckdb.connect() as con:     # [settings] partition_size renders the partition templates
            toy = load_job(JOBS / "disassociation_toy.toml")
            anon_duck.run(con, dataclasses.replace(toy, settings=Settings(partition_size=6), params={
                k: v for k, v in toy.params.items() if k not in ("policy", "constraints")}))
    for name, sql in rec:
        out.setdefault(name, [])
        if sql not in out[name] and len(out[name]) < 3:
            out[name].append(sql)
    return out


def test_toy_jobs_exist():
    assert TOY_JOBS, "fixtures/jobs/toy_*.toml and *_toy.toml drive this test"


# Statements that only mean something to DuckDB itself (exporting into a DuckDB file).
DUCKDB_ONLY = {"release/attach.sql.j2": "ATTACH a DuckDB file for export",
               "release/detach.sql.j2": "DETACH that file",
               "partition/write_tagged.sql.j2": "DuckDB's fragment files for its worker processes",
               "partition/write_table.sql.j2": "DuckDB's fragment files for its worker processes"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_rendering_transpiles(renderings, dialect):
    failures = []
    for name, sqls in renderings.items():
        if dialect != "duckdb" and name in DUCKDB_ONLY:
            continue
        for sql in sqls:
            try:
                for stmt in sqlglot.transpile(sql, read="duckdb", write=dialect):
                    sqlglot.parse(stmt, read=dialect)
            except sqlglot.errors.SqlglotError as err:
                failures.append(f"{name}: {str(err)[:200]}")
    assert not failures, "\n".join(failures)


# Templates the toy jobs cannot reach, with the reason; everything else must be rendered.
NOT_EXERCISED_BY_TOYS: dict[str, str] = {
    "hierarchy/load_builtin.sql.j2": "built-in ICD trees: tests/test_hierarchy.py",
    "hierarchy/edges_from_table.sql.j2": "table-backed hierarchies: tests/test_hierarchy.py",
    "hierarchy/mask_edges.sql.j2": "masking hierarchies: tests/test_hierarchy_builders.py",
    "hierarchy/mask_values.sql.j2": "masking hierarchies: tests/test_hierarchy_builders.py",
    "hierarchy/date_edges.sql.j2": "date hierarchies: tests/test_hierarchy_builders.py",
    "hierarchy/date_values.sql.j2": "date hierarchies: tests/test_hierarchy_builders.py",
    "release/drop_view.sql.j2": "replacing a release's views: tests/test_views.py, tests/test_release_hygiene.py",
    "release/create_schema.sql.j2": "[release] schema: tests/test_release_hygiene.py, tests/test_postgres.py, tests/test_spark.py",
    "hierarchy/cycles.sql.j2": "only reached once a tree is built; rendered in every run (listed for clarity)",
    "inputs/normalize_codes.sql.j2": "code sets: method jobs",
    "inputs/normalize_events.sql.j2": "events: method jobs",
    "inputs/orphans.sql.j2": "code sets/events: method jobs",
    "inputs/persons_from_ids.sql.j2": "codes-only jobs: method jobs",
    "inputs/inspect_codes.sql.j2": "code sets: method jobs",
    "inputs/inspect_events.sql.j2": "events: method jobs",
    "inputs/null_examples.sql.j2": "only on bad input: tests/test_api.py",
    "inputs/rename_columns.sql.j2": "columns the job spells in another case: tests/test_omop_export.py",
    "inputs/non_numeric_values.sql.j2": "only on bad input: tests/test_connection.py",
    "metrics/domain.sql.j2": "numeric QIs without a hierarchy: method jobs",
    "release/meta_value.sql.j2": "read by methods' reports",
    "util/fingerprint.sql.j2": "tests only (source-unchanged checks)",
    "partition/tagged_rows.sql.j2": "Spark executors only: tests/test_spark.py -k partition",
    "partition/write_fragment.sql.j2": "a fragment's task: tests/test_partition.py -k 'worker or executor_task'",
    "partition/write_tagged.sql.j2": "DuckDB's worker processes (20,000 persons on): tests/test_partition.py -k worker",
    "partition/write_table.sql.j2": "DuckDB's worker processes (20,000 persons on): tests/test_partition.py -k worker",
}


def test_every_template_is_exercised(renderings):
    missing = [t for t in template_names() if t not in renderings and t not in NOT_EXERCISED_BY_TOYS
               and t.split("/")[0] in {"hierarchy", "inputs", "release", "util", "fulldomain", "metrics", "partition"}]
    assert not missing, f"templates no toy job renders: {missing}"


@pytest.mark.parametrize("name", ['x"; DROP TABLE t; --', "select", "année", "a b", "a.b", "`x`"])
def test_ident_quotes_anything(name):
    sql = f"SELECT {ident(name)} FROM {qualified(('temp', 'main', name))}"
    tree = sqlglot.parse_one(sql, read="duckdb")
    assert [c.name for c in tree.find_all(sqlglot.exp.Column)] == [name]


def test_lit_and_fail():
    assert lit("O'Hara") == "'O''Hara'" and lit(3) == "3"
    with pytest.raises(AnonDuckError, match="unsupported cast"):
        render("engines/duckdb/create_table_from_registered.sql.j2", target=("t",), source="s", columns=[("a", "INT; --")])


def test_a_shape_key_parses_once_and_still_records(monkeypatch):
    """``render(shape=...)`` skips re-parsing a statement whose shape it has seen (the LKC
    loop renders the same grouping sets many times), but every rendering is recorded."""
    from anon_duck import sqlrender
    parsed = []
    monkeypatch.setattr(sqlrender, "_check_parses", lambda name, sql: parsed.append(name))
    monkeypatch.setattr(sqlrender, "_parsed_shapes", set())
    with recording() as rec:
        for shape in ("a", "a", "b", None, None):
            render("engines/duckdb/table_exists.sql.j2", shape=shape)
    assert len(rec) == 5 and len(parsed) == 4      # the second "a" is not parsed again


def test_nested_recordings_each_keep_recording():
    """Leaving an inner recording that saw what the outer one saw (equal lists) stops the inner
    one only: the outer keeps recording."""
    with recording() as outer:
        with recording() as inner:
            render("util/fingerprint.sql.j2", relation=("t",))
        assert inner == outer
        render("util/fingerprint.sql.j2", relation=("u",))
    assert len(outer) == 2 and len(inner) == 1


def test_compiled_templates_are_cached_across_processes(tmp_path):
    """Both environments keep compiled templates in Jinja's bytecode cache (a third of a second
    of every CLI call); an edited template is compiled anew, and a cache that cannot be written
    is no error."""
    import jinja2

    from anon_duck import sqlrender
    assert sqlrender.environment().bytecode_cache is sqlrender._bytecode_cache()     # None: no private folder
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "t.sql.j2").write_text("SELECT {{ x }}")
    cache = sqlrender._BytecodeCache(str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()

    def fresh() -> jinja2.Environment:
        return jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), bytecode_cache=cache)
    assert fresh().get_template("t.sql.j2").render(x=1) == "SELECT 1"
    assert len(list((tmp_path / "cache").iterdir())) == 1
    (folder / "t.sql.j2").write_text("SELECT {{ x }} + 1")
    assert fresh().get_template("t.sql.j2").render(x=1) == "SELECT 1 + 1"
    broken = sqlrender._BytecodeCache(str(tmp_path / "missing"))     # writes fail: no such folder
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), bytecode_cache=broken)
    assert env.get_template("t.sql.j2").render(x=2) == "SELECT 2 + 1"
