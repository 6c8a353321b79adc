"""Interrupted and killed runs, resource settings. A run that is stopped at any moment leaves
either the previous release or none — never a partial one, never scratch tables."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import duckdb
import pytest

import anon_duck
import anon_duck.api  # anon_duck.api.* below: the package loads it lazily (PEP 562)
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.job import parse_job

from conftest import JOBS, user_tables

ADULT = str(JOBS / "adult_fulldomain.toml")


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "anon_duck.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
@pytest.mark.parametrize("delay", [0.3, 0.8, 1.3])
def test_stopped_run_leaves_nothing_partial(tmp_path, sig, delay):
    db = str(tmp_path / "t.duckdb")
    proc = _cli("run", ADULT, "--db", db)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT and proc.returncode == 130:      # interrupted inside main()
        assert "nothing was published" in err
    else:                                                    # finished, or stopped while starting up
        assert proc.returncode in (0, -sig)
    with duckdb.connect(db) as con:
        tables = user_tables(con)
        assert tables in (set(), {"adult_k10", "adult_k10_release", "adult_k10_meta"})   # all or nothing
        if tables:
            assert all(c.passed for c in anon_duck.verify(con, anon_duck.load_job(ADULT)))


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
