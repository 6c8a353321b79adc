"""Property-based fuzzing of job files and inputs across every method (issue: reliability).

Starting from each method's toy job, hypothesis deletes keys, swaps values for hostile or
out-of-range ones, adds unknown keys, points roles at missing columns, and damages the data
(NULLs, values outside the hierarchy, empty or single-row tables, duplicate ids). Whatever
happens, the outcome must be one of two: a clear anon_duck error (an AnonDuckError with a
message), or a release that verifies. Any other exception is a bug; the database must hold
nothing but the source table afterwards on error.
"""
from __future__ import annotations

import copy
import os
import tomllib
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anon_duck
from anon_duck.errors import AnonDuckError
from anon_duck.job import Source, job_from_dict, parse_job

from conftest import JOBS, user_tables

SEEDS = {p.stem: (p, tomllib.loads(p.read_text())) for p in sorted(JOBS.glob("toy_*.toml")) + sorted(JOBS.glob("*_toy.toml"))}
# 400 mutated jobs in the suite (each a run or a refusal); ANON_DUCK_FUZZ_EXAMPLES=5000 for a deeper run
EXAMPLES = int(os.environ.get("ANON_DUCK_FUZZ_EXAMPLES", "400"))

HOSTILE_VALUES = [-1, 0, 1, 2, 10**9, 0.5, -0.5, 1.5, True, "", "x\"; DROP TABLE src; --", "année", "*", [], {}, [1, "a"],
                  {"a": 1}, "1/0", "nan"]


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path in a nested TOML document (lists indexed)."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append(prefix + (i,))
            out += _paths(v, prefix + (i,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


@st.composite
def mutated_jobs(draw):
    name = draw(st.sampled_from(sorted(SEEDS)))
    path, seed = SEEDS[name]
    doc = copy.deepcopy(seed)
    mutations = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delete", "replace", "unknown", "column", "data"]))
        paths = _paths(doc)
        if kind in ("delete", "replace") and paths:
            p = draw(st.sampled_from(paths))
            parent = _parent(doc, p)
            try:
                if kind == "delete":
                    del parent[p[-1]]
                else:
                    parent[p[-1]] = draw(st.sampled_from(HOSTILE_VALUES))
            except (KeyError, IndexError, TypeError):
                continue
            mutations.append((kind, p))
        elif kind == "unknown":
            tables = [p for p in paths if isinstance(_parent(doc, p + ("x",)), dict)] + [()]
            t = draw(st.sampled_from(tables))
            target = _parent(doc, t + ("x",)) if t else doc
            target["unexpected_key"] = 1
            mutations.append((kind, t))
        elif kind == "column":
            cols = [p for p in paths if p[-1] in ("column", "id", "sensitive", "class", "code", "age", "position")]
            if cols:
                p = draw(st.sampled_from(cols))
                _parent(doc, p)[p[-1]] = "no_such_column"
                mutations.append((kind, p))
        else:
            mutations.append(("data", draw(st.sampled_from(["null", "empty", "single", "duplicate", "alien"]))))
    return name, path, doc, mutations


def _damage(con: duckdb.DuckDBPyConnection, job, how: str) -> None:
    """Damage the person table the job reads (it was loaded as table src)."""
    cols = [r[0] for r in con.execute("DESCRIBE src").fetchall()]
    qis = [q.column for q in job.dataset.qis] or cols
    col = qis[0] if qis[0] in cols else cols[0]
    q = anon_duck.sqlrender.ident(col)
    if how == "null":
        con.execute(f"UPDATE src SET {q} = NULL WHERE rowid = (SELECT min(rowid) FROM src)")
    elif how == "empty":
        con.execute("DELETE FROM src")
    elif how == "single":
        con.execute("DELETE FROM src WHERE rowid > (SELECT min(rowid) FROM src)")
    elif how == "duplicate":
        con.execute("INSERT INTO src SELECT * FROM src LIMIT 1")
    elif how == "alien":
        typ = dict(con.execute("DESCRIBE src").fetchall()[i][:2] for i in range(len(cols)))[col]
        value = "'zz_not_in_any_hierarchy'" if "VARCHAR" in typ else "-987654"
        con.execute(f"UPDATE src SET {q} = {value} WHERE rowid = (SELECT min(rowid) FROM src)")


def _check_outcome(name, path, doc, mutations) -> None:
    with duckdb.connect() as con:
        try:
            job = job_from_dict(doc, base_dir=path.parent)
        except AnonDuckError as err:
            assert str(err), f"{name} {mutations}: empty error message"
            return
        data = [m[1] for m in mutations if m[0] == "data"]
        if data and job.dataset.source is not None and job.dataset.source.path is not None:
            p = job.dataset.source.path
            reader = "read_parquet" if p.suffix == ".parquet" else "read_csv"
            try:
                con.execute(f"CREATE TABLE src AS SELECT * FROM {reader}(?)", [str(p)])
            except duckdb.Error:
                return
            job = job.__class__(**{**job.__dict__, "dataset": job.dataset.__class__(
                **{**job.dataset.__dict__, "source": Source(table="src")})})
            for how in data:
                _damage(con, job, how)
        before = user_tables(con)
        try:
            result = anon_duck.run(con, job)
        except AnonDuckError as err:
            assert str(err), f"{name} {mutations}: empty error message"
            assert user_tables(con) == before, f"{name} {mutations}: partial output after an error"
            return
        assert result.verified, f"{name} {mutations}: unverified release"
        assert all(c.passed for c in anon_duck.verify(con, job)), f"{name} {mutations}"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(mutated_jobs())
def test_bad_jobs_and_inputs_give_a_clear_error_or_a_verified_release(case):
    _check_outcome(*case)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(sorted(SEEDS)), st.integers(0, 10_000), st.text(max_size=5))
def test_garbled_toml_is_a_job_error(name, cut, junk):
    text = SEEDS[name][0].read_text()
    cut %= len(text)
    garbled = text[:cut] + junk + text[cut:]
    try:
        parse_job(garbled, base_dir=SEEDS[name][0].parent)
    except AnonDuckError as err:
        assert str(err)


def test_seeds_exist():
    assert "toy_fulldomain" in SEEDS and len(SEEDS) >= 1


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_every_seed_job_runs(name):
    """The unmutated seeds must produce verified releases (otherwise the fuzzing proves little)."""
    path, doc = SEEDS[name]
    with duckdb.connect() as con:
        assert anon_duck.run(con, job_from_dict(doc, base_dir=path.parent)).verified
