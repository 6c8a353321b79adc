"""One API call's hold on the caller's connection: the backend for it, the job's settings for
the duration of the call, and on the way out (error, Ctrl-C or not) the scratch tables dropped
and the caller's settings restored."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from . import interrupts
from .backend import Backend, backend_for
from .errors import AnonDuckError, InputError
from .job import Job
from .scratch import drop_scratch

# what every call takes: a connection of an engine (anon_duck.backend.ENGINES) or a ready Backend
Connection = Any


@contextlib.contextmanager
def session(con: Connection, job: Job, *, publishes: bool = False) -> Iterator[Backend]:
    """One API call's backend: the job's settings hold inside it. The cleanup on the way out
    holds Ctrl-C until it is done (a cleanup cut short leaves scratch tables and the job's
    settings behind); a Ctrl-C held there stops a call that had not completed anyway, and comes
    too late to stop one that had (its release is published: saying otherwise would be false).

    Before any setting or table is touched, every call refuses a connection with a
    transaction open: publication is a transaction of its own and DuckDB cannot nest one, an
    export to a DuckDB file writes a second database (one transaction writes one), and any
    statement that fails inside the caller's transaction would abort it, losing their
    uncommitted work. A call that ``publishes`` also refuses a read-only database (the whole
    run would otherwise end in DuckDB's error at publication)."""
    _check_connection(backend_for(con, None), job, publishes)
    backend = backend_for(con, job)
    completed = False
    try:
        yield backend
        completed = True
    finally:
        with interrupts.held() as held:
            try:
                backend.cleanup(lambda: drop_scratch(backend))
            finally:
                try:
                    backend.restore_settings()
                except AnonDuckError:
                    pass  # the connection is unusable (e.g. interrupted); nothing to give back
        if held and not completed:
            raise KeyboardInterrupt("interrupted while cleaning up")


def _check_connection(probe: Backend, job: Job, publishes: bool) -> None:
    if publishes and not probe.writable(job.release.schema or "main"):
        raise InputError(f"release {job.release.name!r}: the database is open read-only, and a run writes its release "
                         "tables into it; open it writable (nothing was run)")
    if probe.in_transaction():
        raise InputError("the connection has a transaction open: anon_duck works in transactions of its own (a run "
                         "publishes in one, DuckDB cannot nest them, and a failing statement would abort yours); "
                         "commit or roll back first (nothing was run, and your transaction is still open)")
