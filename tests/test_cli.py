"""The command line: verbs, exit codes, messages (run in-process through ``main``)."""
from __future__ import annotations

import json

import duckdb
import pytest

from anon_duck.cli import main

from conftest import JOBS

ADULT_JOB = str(JOBS / "adult_fulldomain.toml")

TOY = str(JOBS / "toy_fulldomain.toml")


def test_run_verify_report_export_inspect(tmp_path, capsys):
    db = str(tmp_path / "t.duckdb")
    assert main(["run", TOY, "--db", db]) == 0
    assert "(verified by k_anonymity;" in capsys.readouterr().out
    assert main(["verify", TOY, "--db", db]) == 0
    assert "k_anonymity: pass" in capsys.readouterr().out
    assert main(["report", TOY, "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "fulldomain"
    assert main(["export", TOY, "--db", db, "--to", str(tmp_path / "out")]) == 0
    assert "toy_k2_release.parquet" in capsys.readouterr().out
    assert main(["export", TOY, "--db", db, "--to", str(tmp_path / "tables"), "--no-views"]) == 0
    assert "toy_k2.parquet" not in capsys.readouterr().out and (tmp_path / "tables" / "toy_k2_release.parquet").exists()
    assert main(["inspect", TOY, "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 12


def test_verify_exit_1_prints_violations(tmp_path, capsys):
    db = str(tmp_path / "t.duckdb")
    main(["run", TOY, "--db", db])
    with duckdb.connect(db) as con:
        con.execute("DELETE FROM toy_k2_release WHERE rowid IN (SELECT min(rowid) FROM toy_k2_release)")
    capsys.readouterr()
    assert main(["verify", TOY, "--db", db]) == 1
    captured = capsys.readouterr()
    assert "FAIL (1 violations)" in captured.out and "class_size=1" in captured.err


def test_bad_job_exit_2_names_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(open(TOY).read().replace("k = 2", "k = 'two'"))
    assert main(["run", str(bad), "--db", str(tmp_path / "t.duckdb")]) == 2
    assert "method.k = 'two': expected int" in capsys.readouterr().err


def test_missing_job_file(tmp_path, capsys):
    assert main(["run", "/nonexistent/job.toml", "--db", str(tmp_path / "t.duckdb")]) == 2
    assert "cannot read job file" in capsys.readouterr().err


def test_demo_prints_a_verified_summary(capsys, monkeypatch):
    """The demo's command on the toy jobs: its real-data jobs are each run, verified and reported
    by test_scratch (every fixture job), and CI runs the whole `anon-duck demo` first."""
    from anon_duck import demo
    monkeypatch.setattr(demo, "DEMO_JOBS", [("fulldomain", "toy_fulldomain.toml"), ("artuc", "artuc_toy.toml"),
                                            ("disassociation", "disassociation_toy.toml"),
                                            ("longitudinal", "longitudinal_toy.toml")])
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.split("\n\n")[0].splitlines()   # the legend follows a blank line
             if not line.startswith("  (")]                           # notes on an empty ARE: (1) ...
    assert table[0].split()[:3] == ["method", "release", "verified"]
    from anon_duck.demo import DEMO_JOBS
    assert [line.split()[0] for line in table[1:]] == [m for m, _ in DEMO_JOBS]
    assert all(line.split()[2] == "yes" for line in table[1:])


def test_database_errors_exit_2(tmp_path, capsys):
    assert main(["run", TOY, "--db", str(tmp_path)]) == 2          # a folder is not a database
    assert f"anon-duck: --db {tmp_path}: cannot open the database to write the release into it (nothing was run): " \
        in capsys.readouterr().err


def test_release_commands_need_a_database(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", TOY])
    assert exc.value.code == 2 and "--db" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["risk", "sweep", "inspect"])
@pytest.mark.parametrize("db", [None, "new.duckdb"])
def test_input_only_commands_need_no_database(tmp_path, capsys, monkeypatch, command, db):
    """risk, sweep and inspect read only the job's input: without --db, or with a database file
    that does not exist yet, they work on an empty in-memory database and create no file."""
    monkeypatch.chdir(tmp_path)
    extra = {"risk": [], "sweep": ["--k", "2,5"], "inspect": []}[command]
    assert main([command, ADULT_JOB if command != "sweep" else TOY, *extra, *(["--db", db] if db else [])]) == 0
    assert capsys.readouterr().out.strip()
    assert list(tmp_path.iterdir()) == []


def test_spark_refuses_a_database_file_before_spark_starts(tmp_path, capsys):
    (tmp_path / "t.duckdb").write_bytes(b"")
    for command in ("run", "verify", "risk"):
        assert main([command, TOY, "--engine", "spark", "--db", str(tmp_path / "t.duckdb")]) == 2
        assert f"--db {tmp_path / 't.duckdb'}: a file; with --engine spark, --db names the Spark warehouse folder" \
            in capsys.readouterr().err


def test_a_bug_exits_3_with_its_traceback(tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")
    monkeypatch.setattr("anon_duck.api.run", broken)
    assert main(["run", TOY, "--db", str(tmp_path / "t.duckdb")]) == 3
    err = capsys.readouterr().err
    assert "ZeroDivisionError: boom" in err and "internal error" in err


def test_methods_lists_every_registered_method(capsys):
    from anon_duck.methods import method_names
    assert main(["methods"]) == 0
    listing, papers = capsys.readouterr().out.split("\n\npapers:\n")     # the papers follow the methods
    lines = listing.splitlines()
    assert [line.split()[0] for line in lines] == method_names() and all(len(line.split()) > 3 for line in lines)
    from anon_duck.methods.papers import PAPERS
    assert len(papers.splitlines()) == len(PAPERS) == 6 and all(line.startswith("  ") for line in papers.splitlines())
