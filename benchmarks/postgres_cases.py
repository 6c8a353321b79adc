"""PostgreSQL bench cases (issue #33, "Speed"), each beside its DuckDB twin on the same data with
the same parameters, and with its one-query floor on the same server: the k-anonymity and k^m
verifiers through the PostgreSQL backend, against the hand-written query a steward would run.

Each case starts a throwaway PostgreSQL 16 of pgserver's (the wheel's server, in a temporary
folder, stopped and removed when the worker exits: untimed) and loads the cached Parquet input
as a regular table ``t`` (DuckDB's reader, then COPY; ANALYZEd), so the verifier reads it as it
would read a steward's table. ``seconds`` is the second of two calls, as for every verifier
case. The cases need pgserver and psycopg (``pip install -e '.[postgres-test]'``); without
them ``--quick`` leaves them out. The server's settings are pgserver's defaults
(``work_mem`` 4 MB, no parallel workers beyond PostgreSQL's default of 2 per query).
"""
from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from anon_duck.sqlrender import render
from anon_duck.verifiers import k_anonymity, km_anonymity
from .cases import QIS, _second_call, _synthetic, _synthetic_codes, case


@functools.cache
def _server() -> str:
    """The URI of this worker's server, started once (pgserver, in a folder of its own)."""
    import pgserver
    folder = tempfile.mkdtemp(prefix="anon_duck_bench_pg_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    server = pgserver.get_server(Path(folder) / "data", cleanup_mode="stop")
    atexit.register(server.cleanup)       # registered last: stopped before the folder is removed
    return server.get_uri()


def _loaded(data: Callable[[float], tuple[Path, int]], scale: float) -> tuple[Any, int]:
    """A PostgreSQL backend whose database holds ``data``'s rows as table ``t``, and their count."""
    import psycopg

    from anon_duck.backend import backend_for
    path, n = data(scale)
    con = psycopg.connect(_server(), autocommit=True)
    atexit.register(con.close)
    backend = backend_for(con)
    scratch = ("temp", "main", "_ad_bench_load")
    backend.load_file("bench: load", scratch, str(path), "parquet", [])
    backend.run("bench: table", render("bench/copy_table.sql.j2", target=("main", "t"), source=scratch))
    backend.run("bench: analyze", render("bench/analyze.sql.j2", relation=("main", "t")))
    return backend, n


@case("verify_k_postgres", peer_of="verify_k", data=_synthetic, needs="pgserver")
def verify_k_postgres(scale: float) -> dict[str, Any]:
    """``verify_k`` on PostgreSQL: the k-anonymity verifier (k = 5) through the PostgreSQL backend."""
    backend, n = _loaded(_synthetic, scale)
    seconds, res = _second_call(lambda: k_anonymity(backend, relation="t", qis=QIS, k=5))
    return {"seconds": seconds, "rows": n, "min_class": res.detail.get("min_class_size"),
            "violations": res.n_violations}


@case("verify_k_postgres_floor", peer_of="verify_k_floor", floor_of="verify_k_postgres", data=_synthetic,
      needs="pgserver")
def verify_k_postgres_floor(scale: float) -> dict[str, Any]:
    """``verify_k_floor`` on PostgreSQL: the one GROUP BY, on the same server."""
    backend, n = _loaded(_synthetic, scale)
    sql = render("bench/floor_k.sql.j2", relation=("t",), qis=QIS)
    seconds, value = _second_call(lambda: backend.scalar("bench: floor", sql))
    return {"seconds": seconds, "rows": n, "value": value}


@case("verify_km_postgres", peer_of="verify_km", data=_synthetic_codes, needs="pgserver")
def verify_km_postgres(scale: float) -> dict[str, Any]:
    """``verify_km`` on PostgreSQL: k^m-anonymity (k = 5, m = 2) through the PostgreSQL backend."""
    backend, n = _loaded(_synthetic_codes, scale)
    seconds, res = _second_call(lambda: km_anonymity(backend, relation="t", id_col="id", code_col="code", k=5, m=2))
    return {"seconds": seconds, "rows": n, "violations": res.n_violations}


@case("verify_km_postgres_floor", peer_of="verify_km_floor", floor_of="verify_km_postgres", data=_synthetic_codes,
      needs="pgserver")
def verify_km_postgres_floor(scale: float) -> dict[str, Any]:
    """``verify_km_floor`` on PostgreSQL: rare codes and code pairs by one query, on the same server."""
    backend, n = _loaded(_synthetic_codes, scale)
    sql = render("bench/floor_km.sql.j2", relation=("t",), id_col="id", code_col="code", k=5)
    seconds, value = _second_call(lambda: backend.scalar("bench: floor", sql))
    return {"seconds": seconds, "rows": n, "value": value}
