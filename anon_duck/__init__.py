"""anon_duck: database-native anonymization of health records in DuckDB.

>>> import duckdb, anon_duck
>>> job = anon_duck.load_job("fixtures/jobs/adult_fulldomain.toml")   # doctest: +SKIP
>>> result = anon_duck.run(duckdb.connect("ehr.duckdb"), job)          # doctest: +SKIP
"""
from __future__ import annotations

__version__ = "0.1.0"

from .api import export, inspect, report, run, verify  # noqa: E402
from .errors import AnonDuckError, InfeasibleError, InputError, JobError, VerificationError  # noqa: E402
from .job import load_job, parse_job  # noqa: E402

__all__ = ["run", "verify", "report", "export", "inspect", "load_job", "parse_job", "AnonDuckError", "JobError",
           "InputError", "InfeasibleError", "VerificationError", "__version__"]
