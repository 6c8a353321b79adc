"""Issue #16 items 0, 2 and 4: the caller's connection, transaction and settings come back as
they were; a read-only database is refused before any work; the reading verbs open the database
read-only; export writes exactly the path it is given and says what it wrote."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import duckdb
import pytest

import anon_duck
import anon_duck.session
from anon_duck.errors import InputError
from anon_duck.job import Settings, load_job

from conftest import JOBS, user_tables

TOY = JOBS / "toy_fulldomain.toml"


def _settings(con) -> tuple:
    return con.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone()


def test_a_run_inside_the_callers_transaction_is_refused_touching_nothing():
    job = dataclasses.replace(load_job(TOY), settings=Settings("300MB", 1))
    con = duckdb.connect()
    con.execute("CREATE TABLE notes (a INTEGER)")
    before = _settings(con)
    con.execute("BEGIN")
    con.execute("INSERT INTO notes VALUES (1)")
    with pytest.raises(InputError, match="transaction open.*your transaction is still open"):
        anon_duck.run(con, job)
    assert _settings(con) == before
    assert con.execute("SELECT count(*) FROM notes").fetchone() == (1,)      # still usable, insert still there
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM notes").fetchone() == (1,)
    assert user_tables(con) == {"notes"}


def test_a_memory_limit_the_caller_set_reads_the_same_after_any_number_of_runs():
    job = dataclasses.replace(load_job(TOY), settings=Settings("300MB", 1))
    con = duckdb.connect()
    con.execute("SET memory_limit = '1GB'")
    con.execute("SET threads = 2")
    before = _settings(con)
    for _ in range(3):
        anon_duck.run(con, job)
        assert _settings(con) == before == ("953.6 MiB", 2)


def test_settings_come_back_after_a_failed_run(tmp_path):
    bad = dataclasses.replace(load_job(TOY), settings=Settings("300MB", 1), params={"k": 10 ** 6})
    con = duckdb.connect()
    con.execute("SET memory_limit = '1GB'")
    before = _settings(con)
    with pytest.raises(anon_duck.errors.AnonDuckError):
        anon_duck.run(con, bad)
    assert _settings(con) == before


@pytest.mark.parametrize("call", ["verify", "report", "inspect", "export_csv", "export_duckdb"])
def test_every_call_refuses_the_callers_transaction_touching_nothing(call, tmp_path):
    """Not only run: an export to a DuckDB file inside the caller's transaction used to abort
    it (one transaction writes one database), and any failing statement in there would."""
    job = dataclasses.replace(load_job(TOY), settings=Settings("300MB", 1))
    con = duckdb.connect()
    anon_duck.run(con, load_job(TOY))
    con.execute("CREATE TABLE notes (a INTEGER)")
    con.execute("SET memory_limit = '1GB'")
    before, tables = _settings(con), user_tables(con)
    con.execute("BEGIN")
    con.execute("INSERT INTO notes VALUES (1)")
    with pytest.raises(InputError, match="transaction open.*nothing was run, and your transaction is still open"):
        if call.startswith("export"):
            anon_duck.export(con, job, tmp_path / ("out.csv" if call == "export_csv" else "out.duckdb"))
        else:
            getattr(anon_duck, call)(con, job)
    assert _settings(con) == before and user_tables(con) == tables and not list(tmp_path.iterdir())
    assert con.execute("SELECT count(*) FROM notes").fetchone() == (1,)
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM notes").fetchone() == (1,)


# (a sub-megabyte limit is left out: no job runs under one, and DuckDB 1.2 cannot even run the
# formatting query the restore needs below it)
@pytest.mark.parametrize("typed", ["1GB", "300MB", "4GB", "10GB", "1GiB", "512MiB", "16GiB", "1TB"])
def test_a_memory_limit_a_person_typed_comes_back_to_the_byte(typed):
    """DuckDB shows memory_limit truncated (1GB reads 953.6 MiB) and has no exact reading; the
    restored value is the roundest byte count that reads the same, which is what was typed."""
    from anon_duck.backend.duckdb import DuckDBBackend, _parse_bytes
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{typed}'")
    shown = _settings(con)[0]
    con.execute("SET memory_limit = DEFAULT")       # as restore_settings computes it
    assert DuckDBBackend(con)._restorable("memory_limit", shown) == f"{_parse_bytes(typed)}B"


@pytest.mark.parametrize("typed", ["1.5GB", "2.5GB", "1.25GB", "123456789B"])
def test_a_memory_limit_display_cannot_pin_down_still_reads_the_same(typed):
    job = dataclasses.replace(load_job(TOY), settings=Settings("300MB", None))
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{typed}'")
    before = _settings(con)
    anon_duck.run(con, job)
    assert _settings(con) == before


def test_a_job_setting_the_caller_already_has_is_not_touched():
    """Setting it and back could only restore what DuckDB shows, not the exact value."""
    con = duckdb.connect()
    con.execute("SET memory_limit = '1GB'")
    con.execute("SET threads = 2")
    result = anon_duck.run(con, dataclasses.replace(load_job(TOY), settings=Settings("1GB", 2)))
    assert not [stage for stage, _ in result.stages if stage.startswith(("settings: memory_limit",
                                                                          "settings: threads", "settings: restore"))]
    changed = anon_duck.run(con, dataclasses.replace(load_job(TOY), settings=Settings("1GB", 1)))
    assert [stage for stage, _ in changed.stages if stage in ("settings: threads", "settings: memory_limit")] == \
        ["settings: threads"]
    assert _settings(con) == ("953.6 MiB", 2)


@pytest.mark.parametrize("where", ["work", "cleanup"])
def test_settings_come_back_after_ctrl_c(where, monkeypatch):
    """Ctrl-C during the work or while the scratch tables are dropped: the caller's settings
    come back either way."""
    job = dataclasses.replace(load_job(TOY), settings=Settings("300MB", 1))
    con = duckdb.connect()
    con.execute("SET memory_limit = '1GB'")
    con.execute("SET threads = 2")

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(*((anon_duck.api, "prepare") if where == "work" else (anon_duck.session, "drop_scratch")), interrupt)
    with pytest.raises(KeyboardInterrupt):
        anon_duck.run(con, job)
    assert _settings(con) == ("953.6 MiB", 2)


def test_a_read_only_database_is_refused_before_any_work(tmp_path, monkeypatch):
    path = tmp_path / "ro.duckdb"
    duckdb.connect(str(path)).close()
    with monkeypatch.context() as patch, duckdb.connect(str(path), read_only=True) as con:
        patch.setattr(anon_duck.api, "prepare", lambda *a, **k: pytest.fail("the work started"))
        with pytest.raises(InputError, match="open read-only.*nothing was run") as err:
            anon_duck.run(con, load_job(TOY))
        assert not user_tables(con)
    proc = subprocess.run([sys.executable, "-m", "anon_duck.cli", "run", str(TOY), "--db", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0          # the CLI opens it writable for run


def test_a_database_another_process_writes_is_refused_in_a_sentence(tmp_path):
    """DuckDB lets one process write a file, or several read it: the CLI says which it needed."""
    db = tmp_path / "held.duckdb"
    with duckdb.connect(str(db)) as con:
        anon_duck.run(con, load_job(TOY))
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); sys.stdin.read()", str(db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        for verb, need in (("run", "write the release into it"), ("verify", "read it")):
            proc = subprocess.run([sys.executable, "-m", "anon_duck.cli", verb, str(TOY), "--db", str(db)],
                                  capture_output=True, text=True)
            assert proc.returncode == 2
            assert proc.stderr.startswith(f"anon-duck: --db {db}: cannot open the database to {need} "
                                          "(nothing was run): "), proc.stderr
    finally:
        holder.communicate("")


def test_the_reading_verbs_open_the_database_read_only(tmp_path):
    db = tmp_path / "r.duckdb"
    with duckdb.connect(str(db)) as con:
        anon_duck.run(con, load_job(TOY))
    holder = duckdb.connect(str(db), read_only=True)          # another reader holds the file
    try:
        for verb in (["verify"], ["report"], ["inspect"], ["export", "--to", str(tmp_path / "out.csv")]):
            proc = subprocess.run([sys.executable, "-m", "anon_duck.cli", verb[0], str(TOY), "--db", str(db), *verb[1:]],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, (verb, proc.stderr)
    finally:
        holder.close()


def test_export_writes_the_path_it_is_given_and_lists_the_files(tmp_path):
    con = duckdb.connect()
    anon_duck.run(con, load_job(TOY))
    csv = anon_duck.export(con, load_job(TOY), tmp_path / "out.csv")
    parquet = anon_duck.export(con, load_job(TOY), tmp_path / "out.parquet")      # no clash with out.csv
    assert {p.parent for p in csv} == {tmp_path / "out.csv"} and {p.suffix for p in csv} == {".csv"}
    assert {p.parent for p in parquet} == {tmp_path / "out.parquet"} and {p.suffix for p in parquet} == {".parquet"}
    assert sorted(p.name for p in (tmp_path / "out.csv").iterdir()) == sorted(p.name for p in csv)
    with pytest.raises(InputError, match="out.csv exists; anon_duck never writes over an earlier export: "
                                         "remove it or export to a new path"):
        anon_duck.export(con, load_job(TOY), tmp_path / "out.csv")
    upper = anon_duck.export(con, load_job(TOY), tmp_path / "OUT.CSV")      # the suffix in any case
    assert (tmp_path / "OUT.CSV" / "toy_k2_meta.csv") in upper
    assert (tmp_path / "OUT.CSV" / "toy_k2_meta.csv").read_text().startswith("key,value\n")
    db = tmp_path / "r.duckdb"
    with duckdb.connect(str(db)) as c:
        anon_duck.run(c, load_job(TOY))
    proc = subprocess.run([sys.executable, "-m", "anon_duck.cli", "export", str(TOY), "--db", str(db),
                           "--to", str(tmp_path / "cli")], capture_output=True, text=True)
    assert proc.returncode == 0
    printed = proc.stdout.splitlines()
    assert printed[:-1] == sorted(str(p) for p in (tmp_path / "cli").iterdir()) or \
        sorted(printed[:-1]) == sorted(str(p) for p in (tmp_path / "cli").iterdir())
    assert printed[-1].startswith("(export of release toy_k2: 4 file(s)")


def _toy_with(con, tmp_path, edit) -> "anon_duck.job.Job":
    """The toy job on a copy of its patients table changed by ``edit`` (SQL run on it)."""
    con.execute("CREATE TABLE patients AS SELECT * FROM read_csv('fixtures/toy/patients.csv', all_varchar = true)")
    con.execute("ALTER TABLE patients ALTER pid TYPE INTEGER")
    for sql in edit:
        con.execute(sql)
    text = TOY.read_text().replace('path = "../toy/patients.csv"', 'table = "patients"')
    text = text.replace('path = "../toy/', f'path = "{JOBS.parent}/toy/')
    job_path = tmp_path / "job.toml"
    job_path.write_text(text)
    return load_job(job_path)


def test_values_that_are_not_numbers_are_named_with_their_ids(tmp_path):
    con = duckdb.connect()
    job = _toy_with(con, tmp_path, ["UPDATE patients SET age = 'forty' WHERE pid = 4",
                                    "UPDATE patients SET age = '3O' WHERE pid = 9"])
    with pytest.raises(InputError) as err:
        anon_duck.run(con, job)
    assert "column 'age' is declared numeric but has type VARCHAR; 2 value(s) are not numbers: " in str(err.value)
    assert "'forty' (id 4)" in str(err.value) and "'3O' (id 9)" in str(err.value)


def test_nulls_in_several_columns_are_reported_at_once(tmp_path):
    con = duckdb.connect()
    job = _toy_with(con, tmp_path, ["ALTER TABLE patients ALTER age TYPE INTEGER",
                                    "UPDATE patients SET age = NULL WHERE pid IN (2, 5)",
                                    "UPDATE patients SET sex = NULL WHERE pid = 7"])
    with pytest.raises(InputError) as err:
        anon_duck.run(con, job)
    message = str(err.value)
    assert message.startswith("NULL values in 2 column(s): column 'age' has 2 NULL (rows with id 2, 5); "
                              "column 'sex' has 1 NULL (rows with id 7)")


def test_the_demo_explains_every_measure_it_prints(monkeypatch):
    """The demo's loss column holds each method's headline measure (the one run, report and
    sweep lead with, issue #29 item 8): a legend line per measure shown says what it is; an
    empty ARE says why in a numbered note; the papers are named by authors, title, venue and
    year, never "seed NNN" (item 7); and the next commands to try close the output."""
    import io

    from anon_duck import demo
    from anon_duck.methods.papers import PAPERS
    from anon_duck.reports import catalog
    monkeypatch.setattr(demo, "DEMO_JOBS", [("fulldomain", "toy_fulldomain.toml"), ("lkc", "lkc_toy.toml"),
                                            ("disassociation", "disassociation_toy.toml")])
    out = io.StringIO()
    assert demo.run_demo(out=out) == 0
    text = out.getvalue()
    assert "seed 0" not in text.lower()
    blocks = text.split("\n\n")
    header, *rows = blocks[0].splitlines()
    starts = [(m.group(), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]   # columns: 2+ spaces apart
    assert [name for name, _ in starts] == ["method", "release", "verified", "loss measure", "loss", "ARE", "seconds"]
    table = [r for r in rows if not r.startswith("  (")]
    notes = [r.strip() for r in rows if r.startswith("  (")]
    cells = [{name: r[a:b].strip() for (name, a), (_, b) in zip(starts, starts[1:] + [("", None)])} for r in table]
    shown = [c["loss measure"] for c in cells]
    assert shown == [catalog.headline_of(m).measure for m in ("fulldomain", "lkc", "disassociation")]
    assert [c["ARE"] == "n/a (1)" for c in cells] == [False, True, False]
    assert notes == [f"(1) {demo.NO_ARE['lkc']}"]
    legend = blocks[1].splitlines()
    assert legend[0] == "What the numbers are (lower is better for each):"
    for measure in shown + ["ARE"]:
        assert any(line.strip().startswith(measure + " ") for line in legend[1:]), measure
    papers = blocks[2].splitlines()
    assert papers[0] == "The papers the methods follow:"
    for key in ("counterfeit", "lkc", "disassociation"):
        p = PAPERS[key]
        assert any(p.short in line and p.title in line and p.venue in line and str(p.year) in line
                   for line in papers[1:]), key
    steps = blocks[3].splitlines()
    assert steps[0].startswith("Next:")
    assert [line.split()[:2] for line in steps[1:]] == [["anon-duck", "run"], ["anon-duck", "report"],
                                                        ["anon-duck", "verify"]]
    assert all("toy_fulldomain.toml --db my.duckdb" in line for line in steps[1:])