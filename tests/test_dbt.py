"""The dbt package for real: tests/dbt/project installs anon_duck by local path, seeds a release
made by anon_duck and the raw table it came from, and runs `dbt seed`, `dbt run`, `dbt test` on
dbt-duckdb, dbt-postgres (the suite's throwaway server) and dbt-spark (local Spark, session method). On each, each privacy test passes on
the release and fails on the raw table with exactly the offending groups anon_duck's Python
verifiers count on DuckDB (they render the same macro files), and the risk model gives the
numbers of anon_duck.risk.risk_measures."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import load_job
from anon_duck.risk import risk_measures
from anon_duck.verifiers import k_anonymity, kkm_anonymity, km_anonymity, l_diversity, lkc_privacy, min_count, t_closeness

from conftest import FIXTURES, JOBS, REPO

dbt_main = pytest.importorskip("dbt.cli.main", reason="the dbt extra is not installed: pip install -e '.[dbt]'")
pytest.importorskip("dbt.adapters.duckdb", reason="dbt-duckdb is not installed: pip install -e '.[dbt]'")

PROJECT = REPO / "tests" / "dbt" / "project"

# The seeds: (seed name, SQL over an anon_duck run's connection or the fixtures)
SEEDS = {
    "toy_release": ("toy_fulldomain.toml", "SELECT * FROM toy_k2_release"),
    "toy_raw": (None, f"SELECT pid, age, sex, zip, disease FROM read_csv('{FIXTURES}/toy/patients.csv')"),
    "counterfeit_release": ("counterfeit_toy.toml", "SELECT * FROM toy_counterfeit_release"),
    "counterfeit_raw": (None, f"SELECT * FROM read_csv('{FIXTURES}/002/table1.csv')"),
    "lkc_release": ("lkc_toy.toml", "SELECT * FROM lkc_toy_release"),
    "lkc_raw": (None, f"SELECT * FROM read_csv('{FIXTURES}/003/table1.csv')"),
    "cba_record_tokens": ("disassociation_cba_toy.toml", "SELECT record_id, token FROM toy_cba_record_tokens"),
    "cba_codes_raw": (None, f"SELECT pid, code FROM read_parquet('{FIXTURES}/001/toy_records.parquet')"),
    "artuc_release": ("artuc_toy.toml", "SELECT record, age, origin, gender FROM artuc_toy_release"),
    "artuc_record_tokens": ("artuc_toy.toml", "SELECT record, token FROM artuc_toy_record_tokens"),
    "mondrian_release": ("mondrian_toy.toml", "SELECT * FROM toy_mondrian_release"),
    "artuc_retention": ("artuc_toy.toml", "SELECT code, persons_input FROM artuc_toy_retention"),
    "artuc_code_counts": (None, f"SELECT code, count(DISTINCT rec_id) AS persons_input "
                                f"FROM read_csv('{FIXTURES}/000/toy_codes.csv', all_varchar = true) GROUP BY code"),
    # NULLs (issue #29 item 11): a NULL QI is a value of its own, a NULL sensitive value too
    "nulls_raw": (None, "SELECT * FROM (VALUES ('a', 'x'), (NULL, 'x'), (NULL, NULL), ('a', NULL), ('b', 'y')) AS t(q, s)"),
    "artuc_raw": (None, f"SELECT d.rec_id, d.age, d.origin, d.gender, c.code "
                        f"FROM read_csv('{FIXTURES}/000/toy_demographics.csv') d "
                        f"JOIN read_csv('{FIXTURES}/000/toy_codes.csv', all_varchar = true) c USING (rec_id)"),
}


def _write_seeds(seeds: Path, con: duckdb.DuckDBPyConnection) -> None:
    """Run each job once, then write every seed as CSV; the same rows stay in ``con`` (as tables
    named like the seeds) for the Python verifiers."""
    for job in sorted({j for j, _ in SEEDS.values() if j}):
        assert anon_duck.run(con, load_job(JOBS / job)).verified
    for name, (_, query) in SEEDS.items():
        con.execute(f'CREATE TABLE "{name}" AS {query}')
        con.execute(f"COPY \"{name}\" TO '{seeds / (name + '.csv')}' (HEADER)")


def _spark_target() -> None:
    """Skip the Spark target, saying why, where it cannot run. It is opt-in for now: twice on
    2026-11-25 Spark read a seed table's file that was gone (FILE_NOT_EXIST under this run's own
    pytest temp folder), both times while other pytest sessions ran on the machine, and pytest
    deletes all but its three newest temp folders when a session starts. Alone it passed every
    time; making that certain is issue #18's."""
    import os
    if os.environ.get("ANON_DUCK_DBT_SPARK") != "1":
        pytest.skip("the dbt-spark leg is opt-in until a missing-file read is explained (issue #18): "
                    "ANON_DUCK_DBT_SPARK=1 python -m pytest tests/test_dbt.py")
    pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install -e '.[spark,dbt]'")
    pytest.importorskip("dbt.adapters.spark", reason="dbt-spark is not installed: pip install -e '.[spark,dbt]'")
    if not shutil.which("java"):
        pytest.skip("Spark needs Java 17+, and no java is on PATH")


@pytest.fixture(scope="module", params=["duckdb", "spark", "postgres"])
def dbt_results(request, tmp_path_factory):
    target = request.param
    if target == "spark":
        _spark_target()
    server = _postgres_target(request) if target == "postgres" else None
    work = tmp_path_factory.mktemp(f"dbt_{target}")
    project = work / "project"
    shutil.copytree(PROJECT, project)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    (project / "seeds").mkdir()
    con = duckdb.connect()
    _write_seeds(project / "seeds", con)
    mp = pytest.MonkeyPatch()
    mp.setenv("ANON_DUCK_DBT_DB", str(work / "warehouse.duckdb"))
    mp.setenv("ANON_DUCK_DBT_WAREHOUSE", str(work / "spark-warehouse"))
    mp.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    if server is not None:
        mp.setenv("ANON_DUCK_DBT_PGHOST", server.info.host)
        mp.setenv("ANON_DUCK_DBT_PGDATABASE", server.info.dbname)
    events: list[str] = []
    runner = dbt_main.dbtRunner(callbacks=[lambda e: events.append(e.info.name)])
    args = ["--project-dir", str(project), "--profiles-dir", str(project), "--target", target]
    out = {"events": events}
    try:
        for command in ("deps", "seed", "run", "test"):
            out[command] = runner.invoke([command, "--quiet", *args])
    finally:
        mp.undo()
    yield out, con, _reader(target, work / "warehouse.duckdb", server)
    con.close()
    if server is not None:
        server.close()


def _postgres_target(request):
    """A connection to a fresh database on the suite's PostgreSQL server (tests/pg_server.py)."""
    pytest.importorskip("dbt.adapters.postgres", reason="dbt-postgres is not installed: pip install -e '.[postgres-test]'")
    import psycopg
    uri = request.getfixturevalue("postgres_server")
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "dbt_check"')
        admin.execute('CREATE DATABASE "dbt_check" TEMPLATE template0 LC_COLLATE "C.UTF-8" LC_CTYPE "C.UTF-8"')
    return psycopg.connect(uri.replace("/postgres?", "/dbt_check?"), autocommit=True)


def _reader(target: str, warehouse: Path, server=None):
    """A function that runs one query on the dbt target's warehouse and returns its rows."""
    if target == "postgres":
        server.execute("SET search_path = anon_duck_check")
        return lambda sql: [tuple(r) for r in server.execute(sql).fetchall()]
    if target == "duckdb":
        def read(sql: str) -> list[tuple]:
            with duckdb.connect(str(warehouse)) as wh:
                return wh.execute(sql).fetchall()
        return read
    from pyspark.sql import SparkSession
    session = SparkSession.builder.getOrCreate()     # the session dbt-spark made in this process
    session.catalog.setCurrentDatabase("anon_duck_check")
    return lambda sql: [tuple(r) for r in session.sql(sql).collect()]


def _tests(results) -> dict[tuple[str, str], tuple[str, int]]:
    """(test macro, seed or model) -> (status, failures) for every test node dbt ran; a test
    given a ``kind`` argument is keyed ``<macro>_<kind>``."""
    out = {}
    for r in results.result.results:
        node = r.node
        model = node.attached_node.split(".")[-1]
        kind = node.test_metadata.kwargs.get("kind")
        name = node.test_metadata.name + (f"_{kind}" if kind else "")
        assert (name, model) not in out, (name, model)
        out[(name, model)] = (str(r.status), int(r.failures or 0))
    return out


def test_seed_and_run_succeed(dbt_results):
    out, _, _ = dbt_results
    for command in ("deps", "seed", "run"):
        assert out[command].success, f"dbt {command} failed: {out[command].exception}"


def test_no_deprecation_warning_from_the_test_project(dbt_results):
    """The project writes every generic test in dbt-core 1.11's form (inputs under
    ``arguments:``), as docs/dbt.md shows: no ``MissingArgumentsPropertyInGenericTestDeprecation``
    (or any other deprecation) in the events of deps, seed, run and test."""
    out, _, _ = dbt_results
    assert out["events"], "the callback saw no dbt events at all"
    assert [e for e in out["events"] if "Deprecation" in e] == []


def test_privacy_tests_pass_on_releases_and_fail_on_raw_tables_like_the_python_verifiers(dbt_results):
    out, con, read = dbt_results
    assert read("SELECT count(*) - count(q), count(*) - count(s) FROM nulls_raw") == [(2, 2)]   # real NULLs
    got = _tests(out["test"])
    b = DuckDBBackend(con)
    toy = ["age", "sex", "zip"]
    # the Python verifier takes one row per record; dbt's reads the long table distinct on (id, QIs)
    con.execute("CREATE OR REPLACE TABLE artuc_raw_people AS SELECT DISTINCT rec_id, age, origin, gender FROM artuc_raw")
    expected_raw = {
        ("k_anonymous", "toy_raw"): k_anonymity(b, relation="toy_raw", qis=toy, k=2),
        ("l_diverse", "counterfeit_raw"): l_diversity(b, relation="counterfeit_raw", qis=["age", "sex", "zipcode"],
                                                      sensitive="disease", l=2),
        ("l_diverse_recursive", "counterfeit_raw"): l_diversity(b, relation="counterfeit_raw", qis=["age", "sex", "zipcode"],
                                                                sensitive="disease", l=2, kind="recursive", c=2,
                                                                limit=1000),
        ("t_close", "toy_raw"): t_closeness(b, relation="toy_raw", qis=["sex", "zip"], sensitive="disease", t=0.2,
                                           limit=1000),
        ("t_close", "counterfeit_raw"): t_closeness(b, relation="counterfeit_raw", qis=["zipcode"], sensitive="age",
                                                   t=0.1, ordered=True, limit=1000),
        ("k_anonymous", "nulls_raw"): k_anonymity(b, relation="nulls_raw", qis=["q"], k=2),
        ("l_diverse", "nulls_raw"): l_diversity(b, relation="nulls_raw", qis=["q"], sensitive="s", l=2),
        ("lkc_private", "lkc_raw"): lkc_privacy(b, relation="lkc_raw", qis=["Job", "Sex", "Age"], sensitive="Surgery",
                                                sensitive_values=["Transgender"], L=2, K=2, C=0.5,
                                                limit=1000),
        ("km_anonymous", "cba_codes_raw"): km_anonymity(b, relation="cba_codes_raw", id_col="pid", code_col="code",
                                                        k=3, m=2, limit=1000),
        ("kkm_anonymous", "artuc_raw"): kkm_anonymity(b, relation="artuc_raw_people", qis=["age", "origin", "gender"],
                                                      codes_relation="artuc_raw", id_col="rec_id", code_col="code",
                                                      k=2, m=2, limit=1000),
        ("min_count", "artuc_code_counts"): min_count(b, relation="artuc_code_counts", key="code",
                                                      count="persons_input", min_count=2),
    }
    for key, check in expected_raw.items():
        assert not check.passed
        assert got[key] == ("fail", check.n_violations), key
    # the list-column form finds the same itemsets as the long table it was made from
    assert got[("km_anonymous", "cba_codes_lists")] == got[("km_anonymous", "cba_codes_raw")]
    assert got[("l_diverse", "nulls_raw")] == ("fail", 1)     # only 'b': NULL counts as a value, 'a' has 2
    released = {key: status for key, status in got.items() if key[1] in
                {"toy_release", "counterfeit_release", "lkc_release", "cba_record_tokens", "artuc_release",
                 "mondrian_release", "artuc_retention"}}
    assert len(released) == 8 and all(status == ("pass", 0) for status in released.values()), released
    assert len(got) == 20


def test_the_risk_model_equals_the_python_risk_measures(dbt_results):
    _, con, read = dbt_results
    rows = {r[0]: tuple(float(v) if v is not None else None for v in r[1:]) for r in read("SELECT * FROM toy_risk")}
    sizes = read("SELECT class_size, n_classes, n_records FROM toy_class_sizes ORDER BY 1")
    b = DuckDBBackend(con)
    for stage, table in (("raw", "toy_raw"), ("release", "toy_release")):
        want = risk_measures(b, relation=table, qis=["age", "sex", "zip"], k=2).values()
        assert rows[stage] == pytest.approx(tuple(float(v) for v in want), rel=1e-12)
    assert rows["raw"][0] == 12 and rows["release"][2] >= 2          # 12 patients; the release is 2-anonymous
    assert sum(n for _, _, n in sizes) == 12


def _bad_project(tmp_path: Path, tests: str) -> tuple[list, Exception | None]:
    """A project with one seed (people: age, sex), an empty model over it and the given tests;
    returns dbt test's results, or the exception that stopped dbt before it ran tests."""
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    (project / "seeds").mkdir()
    (project / "seeds" / "people.csv").write_text("age,sex\n30,F\n31,M\n")
    for m in (project / "models").iterdir():
        m.unlink()
    (project / "models" / "no_people.sql").write_text("select * from {{ ref('people') }} where false")
    (project / "models" / "schema.yml").write_text(tests)
    mp = pytest.MonkeyPatch()
    mp.setenv("ANON_DUCK_DBT_DB", str(tmp_path / "w.duckdb"))
    mp.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    runner = dbt_main.dbtRunner()
    args = ["--project-dir", str(project), "--profiles-dir", str(project)]
    try:
        for command in ("deps", "seed", "run", "test"):
            res = runner.invoke([command, "--quiet", *args])
            if res.exception is not None:
                return [], res.exception
    finally:
        mp.undo()
    return list(res.result.results), None


@pytest.mark.parametrize("test, message", [
    ("{columns: [age], k: 0}", "argument k must be an integer >= 1; got 0"),
    ("{columns: [], k: 2}", "argument columns must name at least one column"),
])
def test_bad_numbers_stop_dbt_at_compilation_naming_the_argument(tmp_path, test, message):
    _, error = _bad_project(tmp_path, f"version: 2\nseeds:\n  - name: people\n    data_tests:\n"
                                      f"      - anon_duck.k_anonymous:\n          arguments: {test}\n")
    assert error is not None and message in str(error)


@pytest.mark.parametrize("args, message", [
    ("L: 1, K: 2, C: 1.5", "argument C must be a number in (0, 1]"),
    ("L: 1, K: 2, C: 0", "argument C must be a number in (0, 1]"),
    ("L: 1, K: 2, C: 'abc'", "argument C must be a number in (0, 1]"),
    ("L: 0, K: 2, C: 0.5", "argument L must be an integer >= 1; got 0"),
])
def test_bad_lkc_arguments_stop_dbt_naming_them(tmp_path, args, message):
    _, error = _bad_project(tmp_path, f"version: 2\nseeds:\n  - name: people\n    data_tests:\n"
                                      f"      - anon_duck.lkc_private:\n"
                                      f"          arguments: {{columns: [age, sex], {args}}}\n")
    assert error is not None and message in str(error)


def test_an_unknown_column_or_an_empty_model_is_an_error_naming_it(tmp_path):
    results, error = _bad_project(tmp_path, "version: 2\n"
                                            "seeds:\n  - name: people\n    data_tests:\n"
                                            "      - anon_duck.k_anonymous:\n"
                                            "          arguments: {columns: [age, zip], k: 2}\n"
                                            "models:\n  - name: no_people\n    data_tests:\n"
                                            "      - anon_duck.k_anonymous:\n"
                                            "          arguments: {columns: [age], k: 2}\n")
    assert error is None and [str(r.status) for r in results] == ["error", "error"]
    messages = "\n".join(sorted(str(r.message) for r in results))
    assert "argument columns names column 'zip', which" in messages
    assert "is empty: a privacy test on zero rows proves nothing" in messages


def test_the_documented_install_snippet_installs(tmp_path):
    """docs/dbt.md's packages.yml, as written, in a dbt project beside a checkout named
    ``anon_duck`` (here a link to this repository): ``dbt deps`` installs the package."""
    import re
    snippet = re.search(r"```yaml\n(packages:\n.*?)```", (REPO / "docs" / "dbt.md").read_text(), flags=re.S).group(1)
    (tmp_path / "anon_duck").symlink_to(REPO, target_is_directory=True)
    project = tmp_path / "analytics"
    project.mkdir()
    shutil.copy(PROJECT / "dbt_project.yml", project)
    shutil.copy(PROJECT / "profiles.yml", project)
    (project / "packages.yml").write_text(snippet)
    mp = pytest.MonkeyPatch()
    mp.setenv("ANON_DUCK_DBT_DB", str(tmp_path / "w.duckdb"))
    mp.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    try:
        res = dbt_main.dbtRunner().invoke(["deps", "--quiet", "--project-dir", str(project), "--profiles-dir", str(project)])
    finally:
        mp.undo()
    assert res.success, res.exception
    assert (project / "dbt_packages" / "anon_duck" / "macros" / "generic_tests" / "privacy_tests.sql").is_file()
