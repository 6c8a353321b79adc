"""A job's input files as tables of a schema of their own (``[input] table = "cdm.person"``):
the same test on every engine, DuckDB (tests/test_job.py) and PostgreSQL (tests/test_postgres.py)."""
from __future__ import annotations

from pathlib import Path

from anon_duck.backend import backend_for
from anon_duck.job import Job, parse_job

from conftest import JOBS

# longitudinal_toy.toml reads a person file, an events file and an edges hierarchy file
FILES = {"patients": "../004/toy_patients.csv", "events": "../004/toy_events.csv",
         "icd": "../004/icd_hypertension.csv"}
TEXT = ["id", "code", "node", "parent", "label", "dna"]


def tables_in_schema(con, schema: str) -> Job:
    """Load longitudinal_toy's files into tables of ``schema`` (created) through ``con``'s own
    loader, and the job with every ``path =`` of a file replaced by ``table = "<schema>.<t>"``."""
    backend = backend_for(con)
    backend.run("test: schema", f'CREATE SCHEMA "{schema}"')
    text = (JOBS / "longitudinal_toy.toml").read_text()
    for table, path in FILES.items():
        backend.load_file("test: load", ("temp", "main", "_ad_load"), str((JOBS / path).resolve()), "csv", TEXT)
        backend.run("test: copy", f'CREATE TABLE "{schema}"."{table}" AS SELECT * FROM "temp"."main"."_ad_load"')
        backend.run("test: drop", 'DROP TABLE "temp"."main"."_ad_load"')
        assert f'path = "{path}"' in text
        text = text.replace(f'path = "{path}"', f'table = "{schema}.{table}"')
    assert "path =" not in text
    return parse_job(text, base_dir=JOBS)


def file_job() -> Job:
    """The same job reading its files."""
    return parse_job((JOBS / "longitudinal_toy.toml").read_text(), base_dir=JOBS)


def exported(con, job: Job, to: Path) -> dict[str, bytes]:
    """Every exported file of ``job``'s release, by name."""
    import anon_duck

    return {f.name: f.read_bytes() for f in anon_duck.export(con, job, to)}
