"""The engine seam (issue #33, docs/ENGINES.md): the factory in anon_duck/backend/ wraps what a
caller hands in, optional capabilities are asked for by name, and no module outside
anon_duck/backend/ names a concrete backend or tests isinstance on a backend class."""
from __future__ import annotations

import ast
import dataclasses

import duckdb
import pytest

import anon_duck
from anon_duck import partition
from anon_duck.backend import ENGINES, backend_for, connect
from anon_duck.errors import EngineError, InputError
from anon_duck.jobspec import Settings

from conftest import REPO
from test_partition import _codes_job


def test_the_factory_wraps_a_duckdb_connection_with_the_jobs_settings():
    con = duckdb.connect()
    plain = backend_for(con)
    assert plain.con is con and plain._previous == {}
    job = dataclasses.replace(_codes_job(duckdb.connect()), settings=Settings(threads=1))
    with_settings = backend_for(con, job)
    assert with_settings.threads() == 1
    with_settings.restore_settings()


def test_the_factory_passes_a_ready_backend_and_refuses_anything_else():
    backend = backend_for(duckdb.connect())
    assert backend_for(backend) is backend
    with pytest.raises(EngineError, match=r"builtins.object is no connection .*duckdb, spark"):
        backend_for(object())


def test_connect_names_the_engines_and_the_file(tmp_path):
    with pytest.raises(InputError, match=r"--engine oracle: not an engine anon_duck knows \(duckdb, spark"):
        connect("oracle", ":memory:")
    with pytest.raises(InputError, match="no such database file"):
        with connect("duckdb", str(tmp_path / "none.duckdb"), read_only=True):
            pass
    with pytest.raises(InputError, match="--spark-master needs --engine spark"):
        with connect("duckdb", ":memory:", master="local[2]"):
            pass
    with connect("duckdb", ":memory:") as con:
        assert con.execute("SELECT 42").fetchone() == (42,)


class _Runner:
    """A DuckDB backend with the optional fragment capability, recording its calls: it runs the
    fragments as DuckDB alone would, last fragment first."""

    def __init__(self, inner):
        self._inner, self.calls = inner, []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def anonymize_fragments(self, job, method, inputs, params, fragments, progress):
        self.calls.append(fragments.count)
        return partition._one_after_another(self._inner, job, method, inputs, params, fragments,
                                            lambda *_: None)


def test_a_backend_with_the_fragment_capability_runs_the_fragments():
    """partition.anonymize asks the backend for ``anonymize_fragments`` by name: a ready backend
    that has it runs the fragments, and the release is the one DuckDB alone publishes."""
    con, alone = duckdb.connect(), duckdb.connect()
    job = dataclasses.replace(_codes_job(con), settings=Settings(partition_size=30))
    _codes_job(alone)
    runner = _Runner(backend_for(con))
    assert anon_duck.run(runner, job).verified and runner.calls == [3]
    anon_duck.run(alone, job)
    for suffix in ("clusters", "record_chunks", "shared_chunks", "item_chunks"):
        query = f'SELECT * FROM "dis_{suffix}"'
        assert con.execute(query).fetchall() == alone.execute(query).fetchall()


def _concrete_uses(source: str, package: tuple[str, ...]) -> list[str]:
    """Imports of anon_duck.backend's engine modules, and isinstance tests on a ``*Backend``
    class, in one module's ``source`` (relative imports resolved against its ``package``)."""
    tree = ast.parse(source)
    engines = {f"anon_duck.backend.{name}" for name in ENGINES}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [module] + [f"{module}.{a.name}" for a in node.names]
            found += [f"imports {n}" for n in names if any(n == e or n.startswith(e + ".") for e in engines)]
        elif isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names
                      if any(a.name == e or a.name.startswith(e + ".") for e in engines)]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            found += [f"isinstance {ast.unparse(k)}" for k in kinds if ast.unparse(k).endswith("Backend")]
    return found


def test_no_module_outside_the_backend_package_names_a_concrete_backend():
    """The benchmarks (benchmarks/, beside the product) measure concrete backends on purpose and
    are not read."""
    outside = [p for p in sorted((REPO / "anon_duck").rglob("*.py"))
               if not p.relative_to(REPO).as_posix().startswith("anon_duck/backend/")]
    assert len(outside) > 50
    found = {p.relative_to(REPO).as_posix(): uses for p in outside
             if (uses := _concrete_uses(p.read_text(), p.relative_to(REPO).parts[:-1]))}
    assert found == {}


def test_the_seam_check_can_fail():
    """The check above reads the forms the code used before the seam."""
    source = ("from ..backend.spark import SparkBackend\nimport anon_duck.backend.duckdb\n"
              "def f(b):\n    return isinstance(b, SparkBackend)\n")
    assert _concrete_uses(source, ("anon_duck", "partition")) == [
        "imports anon_duck.backend.spark", "imports anon_duck.backend.spark.SparkBackend",
        "imports anon_duck.backend.duckdb", "isinstance SparkBackend"]
