"""anon_duck: database-native anonymization of health records in DuckDB.

>>> import duckdb, anon_duck
>>> job = anon_duck.load_job("fixtures/jobs/adult_fulldomain.toml")   # doctest: +SKIP
>>> result = anon_duck.run(duckdb.connect("ehr.duckdb"), job)          # doctest: +SKIP
"""
from __future__ import annotations

from .errors import AnonDuckError, InfeasibleError, InputError, JobError, VerificationError  # noqa: E402
from .version import __version__  # noqa: E402

_API = ("run", "verify", "report", "export", "inspect")
_JOB = ("load_job", "parse_job")


def __getattr__(name: str):
    """``anon_duck.run``, the other API calls and the job readers, imported on first use (PEP
    562): importing a method package (``anon_duck.methods.lkc``) then loads the package's base
    but never the API that sits above the methods, and importing the package loads neither
    DuckDB nor numpy (the CLI holds Ctrl-C while it imports them: anon_duck/__main__.py)."""
    if name in _API:
        from . import api
        return getattr(api, name)
    if name in _JOB:
        from . import job
        return getattr(job, name)
    raise AttributeError(f"module 'anon_duck' has no attribute {name!r}")

__all__ = ["run", "verify", "report", "export", "inspect", "load_job", "parse_job", "AnonDuckError", "JobError",
           "InputError", "InfeasibleError", "VerificationError", "__version__"]
