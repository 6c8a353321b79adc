"""A throwaway PostgreSQL server for the tests (docs/postgres.md): pgserver's (PostgreSQL 16 in
its wheel), else the system's ``initdb``/``pg_ctl`` when they are PostgreSQL 16 or later, in a
temporary folder, listening on a Unix socket only; stopped and removed at the end. ``start``
says why no server could start instead of raising, so the tests can skip saying it."""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

MIN_VERSION = 16      # TRY_CAST is written with pg_input_is_valid (PostgreSQL 16)


@contextlib.contextmanager
def start() -> Iterator[tuple[str | None, str]]:
    """(URI, how) of a running server, or (None, why none could start)."""
    with tempfile.TemporaryDirectory(prefix="anon_duck_pg_") as folder:
        uri, how = _pgserver(Path(folder))
        if uri is None:
            uri, how = _system(Path(folder), how)
        try:
            yield uri, how
        finally:
            if uri is not None and how.startswith("system"):
                subprocess.run([shutil.which("pg_ctl"), "-D", str(Path(folder) / "data"), "-m", "immediate", "stop"],
                               capture_output=True)
            elif uri is not None:
                _STOP.pop()()


_STOP: list = []


def _pgserver(folder: Path) -> tuple[str | None, str]:
    try:
        import pgserver
    except ImportError:
        return None, "pgserver is not installed (pip install pgserver)"
    try:
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    except Exception as err:      # pgserver raises its own errors when postgres cannot start
        return None, f"pgserver could not start PostgreSQL: {err}"
    _STOP.append(server.cleanup)
    return server.get_uri(), "pgserver"


def _system(folder: Path, before: str) -> tuple[str | None, str]:
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if not (initdb and pg_ctl):
        return None, f"{before}, and no initdb/pg_ctl is on PATH"
    version = subprocess.run([initdb, "--version"], capture_output=True, text=True).stdout
    major = int("".join(c for c in version.split()[-1].split(".")[0] if c.isdigit()) or 0) if version else 0
    if major < MIN_VERSION:
        return None, f"{before}, and the system's PostgreSQL is {major}, older than {MIN_VERSION}"
    data = folder / "data"
    done = subprocess.run([initdb, "-D", str(data), "-U", "postgres", "--locale=C.UTF-8", "-A", "trust"],
                          capture_output=True, text=True)
    if done.returncode:
        return None, f"{before}, and initdb failed: {done.stderr.strip()[-300:]}"
    options = f"-k {folder} -c listen_addresses=''"
    done = subprocess.run([pg_ctl, "-D", str(data), "-o", options, "-w", "-l", str(folder / "log"), "start"],
                          capture_output=True, text=True)
    if done.returncode:
        return None, f"{before}, and pg_ctl could not start it: {done.stderr.strip()[-300:]}"
    return f"postgresql://postgres@/postgres?host={folder}", "system PostgreSQL"
