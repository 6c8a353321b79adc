"""Issue #22: on DuckDB a seeded release table is copied in release order in chunks of
consecutive digests (release/order.py copy_in_order), so no sort holds the whole table's row text. The
chunks must give exactly the one-statement order (release/publish_table), ties between rows of
one digest included, and an export must be the same file either way."""
from __future__ import annotations

import hashlib

import duckdb
import pytest

import anon_duck
from anon_duck import api
from anon_duck.release import exports as release_export, order as release_order
from anon_duck.release.order import copy_in_order
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.sqlrender import qualified, render

from conftest import JOBS


def _stored(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    return con.execute(f"SELECT * FROM {qualified((table,))}").fetchall()


def test_chunks_give_the_one_statement_order(con, monkeypatch):
    # 300 rows: 50 distinct rows six times each; (0, NULL, 0.0) and (0, '', 0.0) have the same
    # row text (coalesce(text, '')), so the same digest, and the tie-break by columns decides
    # between them (NULLS LAST); doubles and text of varying length
    con.execute("CREATE TABLE src AS SELECT i % 50 AS a, CASE WHEN i % 7 = 0 THEN NULL ELSE repeat('x', i % 50) END AS b, "
                "(i % 50) / 3.0 AS c FROM range(300) r(i)")
    backend = DuckDBBackend(con)
    monkeypatch.setattr(DuckDBBackend, "sort_budget", lambda self: None)
    copy_in_order(backend, "one", ("main", "whole"), ("main", "src"), True, 7)
    monkeypatch.setattr(DuckDBBackend, "sort_budget", lambda self: 200)     # about 8 rows' text per chunk
    copy_in_order(backend, "chunked", ("main", "chunked"), ("main", "src"), True, 7)
    chunks = [stage for stage, _ in backend.trace if stage.startswith("chunked: chunk ")]
    assert len(chunks) > 20
    assert _stored(con, "chunked") == _stored(con, "whole")
    assert sorted(_stored(con, "whole"), key=repr) == sorted(_stored(con, "src"), key=repr)
    con.execute("CREATE TABLE nothing AS SELECT * FROM src LIMIT 0")
    copy_in_order(backend, "empty", ("main", "empty"), ("main", "nothing"), True, 7)
    assert _stored(con, "empty") == [] and [r[0] for r in con.execute("DESCRIBE empty").fetchall()] == ["a", "b", "c"]


def test_a_table_below_one_budget_is_one_statement(con, monkeypatch):
    """The one statement digests each row once; the chunks' keys digest it and join it back. A
    table whose row text (release/row_bytes) is below the budget is copied by the one
    statement; at the budget itself it is cut in two ranges of digests, and the chunks run."""
    con.execute("CREATE TABLE src AS SELECT i % 50 AS a, repeat('x', i % 50) AS b FROM range(300) r(i)")
    backend = DuckDBBackend(con)
    columns = list(backend.columns("columns", ("main", "src")).items())
    total = backend.scalar("bytes", render("release/row_bytes.sql.j2", source=("main", "src"), columns=columns))
    copies = {}
    for budget in (total, total + 1):
        monkeypatch.setattr(DuckDBBackend, "sort_budget", lambda self, b=budget: b)
        backend = DuckDBBackend(con)
        copy_in_order(backend, "copy", ("main", f"copy_{budget}"), ("main", "src"), True, 7)
        copies[budget] = [stage for stage, _ in backend.trace if stage.startswith("copy")]
    assert copies[total][-4:] == ["copy: chunks", "copy: chunk 1/2", "copy: chunk 2/2", "copy: drop keys"]
    assert copies[total + 1] == ["copy: columns", "copy: bytes", "copy"]
    assert _stored(con, f"copy_{total}") == _stored(con, f"copy_{total + 1}")


def test_toy_below_its_budget_never_chunks(tmp_path, monkeypatch):
    """ArtUC's toy under a budget above each of its tables is published and exported by one
    statement per table: the chunked copy is never entered."""
    def chunked(*args, **kwargs):
        raise AssertionError("copied in chunks")
    monkeypatch.setattr(DuckDBBackend, "sort_budget", lambda self: 1 << 20)
    monkeypatch.setattr(release_order, "copy_chunks", chunked)
    monkeypatch.setattr(release_export, "copy_chunks", chunked)
    job = anon_duck.load_job(JOBS / "artuc_toy.toml")
    with duckdb.connect() as con:
        anon_duck.run(con, job)
        for target in ("x.csv", "x.duckdb"):
            assert api.export(con, job, tmp_path / target)


@pytest.mark.parametrize("target", ["x.csv", "x", "x.duckdb"])
def test_export_is_the_same_file_in_chunks(tmp_path, monkeypatch, target):
    """ArtUC's toy release (its tables in chunks, its analyst views in one statement) exported
    with a budget of a few rows per chunk is byte for byte the export in one statement per table."""
    job = anon_duck.load_job(JOBS / "artuc_toy.toml")
    digests = []
    for budget in (None, 64):
        monkeypatch.setattr(DuckDBBackend, "sort_budget", lambda self, b=budget: b)
        with duckdb.connect() as con:
            anon_duck.run(con, job)
            (tmp_path / str(budget)).mkdir()
            files = api.export(con, job, tmp_path / str(budget) / target)
            if target.endswith(".duckdb"):
                con.execute(render("release/attach.sql.j2", alias="x", path=str(files[0])))
                digests.append({t: con.execute(f"SELECT * FROM {qualified(('x', 'main', t))}").fetchall()
                                for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'x'").fetchall()})
            else:
                digests.append({f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
    assert len(digests[0]) >= 7
    assert digests[0] == digests[1]
