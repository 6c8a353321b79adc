"""Interrupted and killed runs, resource settings. A run that is stopped at any moment leaves
either the previous release or none — never a partial one, never scratch tables."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import anon_duck
import anon_duck.api  # anon_duck.api.* below: the package loads it lazily (PEP 562)
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import parse_job

from conftest import JOBS, user_tables

ADULT = str(JOBS / "adult_fulldomain.toml")


INTERRUPT_AT = str(Path(__file__).with_name("interrupt_at.py"))
RELEASE = {"adult_k10", "adult_k10_release", "adult_k10_qi_retention", "adult_k10_meta"}
# the stages of a fulldomain run on Adult, in order, up to the publication's last statement
STAGES = ["import", "input", "inputs", "hierarchy", "fulldomain", "verify k_anonymity", "release",
          "publish adult_k10_release", "write main._ad_staged_adult_k10_meta", "publish: drop", "publish: rename",
          "publish: view"]


def _interrupted(stage: str, *args: str, delay: float = 0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, INTERRUPT_AT, stage, str(delay), *args], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def earlier_release(tmp_path_factory) -> tuple[Path, dict[str, list]]:
    """A database file holding the release an earlier, completed ``anon-duck run`` published,
    and every row of it: made once for the module, each test interrupts a run on a copy."""
    db = tmp_path_factory.mktemp("earlier") / "t.duckdb"
    assert subprocess.run([sys.executable, "-m", "anon_duck", "run", ADULT, "--db", str(db)]).returncode == 0
    with duckdb.connect(str(db)) as con:
        published = user_tables(con)
        before = {t: con.execute(f'SELECT * FROM "{t}"').fetchall() for t in sorted(published)}
    assert published == RELEASE and not db.with_name(db.name + ".wal").exists()
    return db, before


@pytest.mark.slow
@pytest.mark.parametrize(("stage", "earlier"), [(stage, earlier) for stage in STAGES for earlier in (False, True)
                                                if earlier or stage != "publish: drop"])   # drops the earlier one
def test_ctrl_c_at_every_stage_exits_130_and_leaves_no_partial_release(tmp_path, request, stage, earlier):
    """Ctrl-C at each named stage of a run (start-up included) ends it with exit 130 and
    "nothing was published", and leaves the database as it was: no release, or the earlier
    release whole. Deterministic: the signal is sent as the stage's first statement starts."""
    db = str(tmp_path / "t.duckdb")
    if earlier:
        source, before = request.getfixturevalue("earlier_release")
        shutil.copyfile(source, db)
        published = set(before)
    proc = _interrupted(stage, "run", ADULT, "--db", db)
    assert f"interrupting at {stage}" in proc.stderr
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert "interrupted; nothing was published" in proc.stderr and "internal error" not in proc.stderr
    with duckdb.connect(db) as con:
        assert user_tables(con) == (published if earlier else set())       # no scratch, no staged table
        if earlier:
            assert {t: con.execute(f'SELECT * FROM "{t}"').fetchall() for t in before} == before


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
@pytest.mark.parametrize("delay", [0.3, 1.3])
def test_stopped_run_leaves_nothing_partial(tmp_path, sig, delay):
    """A signal at any moment (here after a sleep: wherever the run is) leaves all or nothing;
    SIGINT is exit 130 once the CLI's entry runs, SIGKILL kills."""
    db = str(tmp_path / "t.duckdb")
    proc = subprocess.Popen([sys.executable, "-m", "anon_duck", "run", ADULT, "--db", db], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in ((0, 130, -sig) if sig == signal.SIGINT else (0, -sig)), err[-3000:]
    if proc.returncode == 130:
        assert "nothing was published" in err
    with duckdb.connect(db) as con:
        tables = user_tables(con)
        assert tables in (set(), RELEASE)   # all or nothing
        if tables:
            assert all(c.passed for c in anon_duck.verify(con, anon_duck.load_job(ADULT)))


@pytest.mark.parametrize("error", [duckdb.InterruptException("INTERRUPT Error: Interrupted!"),
                                   RuntimeError("Query interrupted")])
@pytest.mark.parametrize("read", ["rows", "fetch", "scalar"])
def test_an_interrupt_while_a_result_streams_is_an_interrupt(con, error, read):
    """DuckDB streams results: a Ctrl-C while rows are fetched surfaces as DuckDB's own error
    from the fetch, after the statement returned. It is a KeyboardInterrupt naming the stage
    (the CLI's exit 130), never an internal error (exit 3: a RuntimeError out of a fetch)."""
    class Cursor:
        def fetchall(self):
            raise error

        fetchnumpy = fetchall

    class Connection:
        def __getattr__(self, name):
            return getattr(con, name)

        def execute(self, sql, params=None):
            return Cursor()
    backend = DuckDBBackend(con)
    backend.con = Connection()
    with pytest.raises(KeyboardInterrupt, match="stage x: interrupted"):
        getattr(backend, read)("stage x", "SELECT 1")


def test_an_engine_error_while_a_result_streams_names_the_stage(con):
    with pytest.raises(anon_duck.AnonDuckError, match="^stage y: "):
        DuckDBBackend(con).rows("stage y", "SELECT CAST('x' AS INTEGER) FROM range(3)")


def test_settings_reach_duckdb(con):
    DuckDBBackend(con, memory_limit="512MB", threads=1)
    assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] in ("488.2 MiB", "512.0 MB", "488.2MiB")


def test_job_settings_hold_for_the_call_only(con, monkeypatch):
    """[settings] reach DuckDB while the job runs and the caller's connection gets its own
    settings back afterwards, also when the run fails."""
    job = parse_job(open(JOBS / "toy_fulldomain.toml").read().replace(
        "[release]", '[settings]\nthreads = 1\nmemory_limit = "300MB"\n[release]'), base_dir=JOBS)
    con.execute("SET threads = 2")
    before = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    seen = []
    real_prepare = anon_duck.api.prepare

    def spy(backend, job, **kw):
        seen.append(con.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchone())
        return real_prepare(backend, job, **kw)
    monkeypatch.setattr(anon_duck.api, "prepare", spy)
    anon_duck.run(con, job)
    with pytest.raises(anon_duck.InputError):
        anon_duck.run(con, job.with_params(k=10_000))
    assert seen == [(1, "286.1 MiB")] * 2
    assert con.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchone() == (2, before)
