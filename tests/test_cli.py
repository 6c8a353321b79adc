"""The command line: verbs, exit codes, messages (run in-process through ``main``)."""
from __future__ import annotations

import json

import duckdb

from anon_duck.cli import main

from conftest import JOBS

TOY = str(JOBS / "toy_fulldomain.toml")


def test_run_verify_report_export_inspect(tmp_path, capsys):
    db = str(tmp_path / "t.duckdb")
    assert main(["run", TOY, "--db", db]) == 0
    assert "verified: yes" in capsys.readouterr().out
    assert main(["verify", TOY, "--db", db]) == 0
    assert "k_anonymity: pass" in capsys.readouterr().out
    assert main(["report", TOY, "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "fulldomain"
    assert main(["export", TOY, "--db", db, "--to", str(tmp_path / "out")]) == 0
    assert "toy_k2_release.parquet" in capsys.readouterr().out
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
    assert main(["run", str(bad)]) == 2
    assert "method.k = 'two': expected int" in capsys.readouterr().err


def test_missing_job_file(capsys):
    assert main(["run", "/nonexistent/job.toml"]) == 2
    assert "cannot read job file" in capsys.readouterr().err


def test_demo_prints_a_verified_summary(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["method", "release", "verified"]
    assert all(" yes " in line for line in out.splitlines()[1:])
