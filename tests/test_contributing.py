"""docs/CONTRIBUTING_METHODS.md is enough to add a method: tests/plugins/mondrian.py follows it
from outside the package (registered with ``anon_duck.methods.register``, its own templates),
runs through ``anon_duck.run``, publishes the documented column layout, and its release passes
the generic k-anonymity verifier and the generic report."""
from __future__ import annotations

import ast
import importlib
import re

import duckdb
import numpy as np
import pytest

import anon_duck
from anon_duck.columns import bounds
from anon_duck.errors import JobError, VerificationError
from anon_duck.job import load_job
from anon_duck.methods import get_method, method_names, register

from conftest import REPO
from plugins import mondrian


@pytest.fixture(scope="module", autouse=True)
def registered():
    register("numeric_mondrian", "plugins.mondrian", templates=str(mondrian.TEMPLATES))


def _job(tmp_path, k: int, qis: str = '"age", "hours"'):
    path = tmp_path / "job.toml"
    path.write_text(f'[input]\ntable = "people"\nid = "pid"\nsensitive = "disease"\n'
                    + "".join(f'[[input.qi]]\ncolumn = {q}\nkind = "numeric"\n' for q in qis.split(", "))
                    + f'[method]\nname = "numeric_mondrian"\nk = {k}\n[release]\nname = "m"\nseed = 1\n')
    return load_job(path)


@pytest.fixture
def con():
    rng = np.random.default_rng(7)
    c = duckdb.connect()
    c.execute("CREATE TABLE people AS SELECT * FROM (SELECT unnest(range(1, 301)) AS pid, unnest(?::INTEGER[]) AS age, "
              "unnest(?::INTEGER[]) AS hours, unnest(?::VARCHAR[]) AS disease)",
              [rng.integers(17, 90, 300).tolist(), rng.integers(1, 99, 300).tolist(),
               rng.choice(["flu", "hiv", "cancer"], 300).tolist()])
    yield c
    c.close()


@pytest.mark.parametrize("k", [2, 5, 25])
def test_a_plugged_in_mondrian_publishes_a_verified_k_anonymous_release(con, tmp_path, k):
    assert "numeric_mondrian" in method_names() and get_method("numeric_mondrian") is mondrian.METHOD
    job = _job(tmp_path, k)
    result = anon_duck.run(con, job)
    assert result.verified and [c.name for c in result.checks] == ["k_anonymity"]
    cols = [r[0] for r in con.execute("DESCRIBE m_release").fetchall()]
    assert cols == ["age", *bounds("age"), "hours", *bounds("hours"), "disease"]
    sizes = [r[0] for r in con.execute("SELECT count(*) FROM m_release GROUP BY age, hours").fetchall()]
    assert min(sizes) >= k and sum(sizes) == 300
    assert max(sizes) < 2 * k + 60         # median cuts keep classes small (not one big class)
    boxes = con.execute("SELECT DISTINCT {} FROM m_release".format(
        ", ".join(f'"{c}"' for q in ("age", "hours") for c in bounds(q)))).fetchall()
    assert len(boxes) == len(sizes) and not [   # strict partitioning: the classes' boxes are disjoint
        (a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
        if all(a[d] <= b[d + 1] and b[d] <= a[d + 1] for d in (0, 2))]
    report = anon_duck.report(con, job)
    assert 0 < report["ncp"]["ncp"] < 1
    assert all(c.passed for c in anon_duck.verify(con, job))


def test_a_plugin_checks_its_parameters_like_a_builtin(con, tmp_path):
    with pytest.raises(JobError, match="method.k = 0: must be >= 1"):
        anon_duck.run(con, _job(tmp_path, 0))


def test_the_guide_names_paths_that_exist():
    guide = (REPO / "docs" / "CONTRIBUTING_METHODS.md").read_text()
    paths = set(re.findall(r"`((?:anon_duck|sql|tests|docs|fixtures)/[\w/.<>*-]+)`", guide))
    concrete = [p for p in paths if "<" not in p and "*" not in p]
    assert concrete, "the guide names files"
    missing = [p for p in concrete if not (REPO / p).exists()]
    assert not missing, f"the guide names paths that do not exist: {missing}"


def _module(path: str) -> str:
    """``anon_duck/methods/__init__`` -> ``anon_duck.methods``."""
    return path.replace("/", ".").removesuffix(".__init__")


def _python_names_in_the_guide() -> list[tuple[str, str]]:
    """(module, name) for every Python name the guide ties to a module: dotted names
    (`anon_duck.columns.bounds`), `path.py: name`, `NAME` in `path.py`, and a module followed by
    its names (`anon_duck/verifiers/models.py`: `k_anonymity`, ... or `anon_duck/demo.py` (`DEMO_JOBS`))."""
    text = " ".join((REPO / "docs" / "CONTRIBUTING_METHODS.md").read_text().split())
    out = []
    for m in re.finditer(r"`(anon_duck(?:\.\w+)+)", text):
        module, _, name = m.group(1).rpartition(".")
        out.append((module, name))
    for m in re.finditer(r"`(anon_duck/[\w/]+)\.py: (\w+)", text):
        out.append((_module(m.group(1)), m.group(2)))
    for m in re.finditer(r"`(\w+)` in `(anon_duck/[\w/]+)\.py`", text):
        out.append((_module(m.group(2)), m.group(1)))
    for m in re.finditer(r"`(anon_duck/[\w/]+)\.py`(?:: | \()((?:`\w+[^`]*`(?:,| and)? ?)+)", text):
        out += [(_module(m.group(1)), name) for name in re.findall(r"`(\w+)", m.group(2))]
    return out


def test_the_guide_names_python_objects_that_exist():
    """A name the guide sends a contributor to (a helper, a registry, a verifier) is where it says."""
    named = _python_names_in_the_guide()
    assert len(named) >= 10, named
    missing = []
    for module, name in named:
        try:
            importlib.import_module(f"{module}.{name}")
            continue
        except ImportError:
            pass
        if not hasattr(importlib.import_module(module), name):
            missing.append(f"{module}.{name}")
    assert not missing, f"the guide names objects that do not exist: {missing}"


# ------------------------------------------------------------------------------------------
# The <qi>__lo / <qi>__hi names have one owner: anon_duck/columns.py (templates reach it through
# the lo_column / hi_column filters). The dbt package in macros/ is left out: it renders under
# dbt too, where the filters do not exist, so it takes column names as arguments.
# ------------------------------------------------------------------------------------------
BOUND_SUFFIX = re.compile(r"__(?:lo|hi)\b")


def _string_literals(source: str) -> list[str]:
    """The string constants of a Python module that are code, not docstrings."""
    tree = ast.parse(source)
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def _template_code(text: str) -> str:
    """A template without its Jinja comments and SQL line comments."""
    return re.sub(r"--[^\n]*", "", re.sub(r"\{#.*?#\}", "", text, flags=re.S))


def test_bound_column_names_are_spelled_in_one_place():
    owner = REPO / "anon_duck" / "columns.py"
    python = [p for root in ("anon_duck", "tests/plugins") for p in (REPO / root).rglob("*.py") if p != owner]
    templates = [p for root in ("sql", "tests/plugins") for pattern in ("*.j2", "*.jinja")
                 for p in (REPO / root).rglob(pattern)]
    spelled = [str(p.relative_to(REPO)) for p in python if any(map(BOUND_SUFFIX.search, _string_literals(p.read_text())))]
    spelled += [str(p.relative_to(REPO)) for p in templates if BOUND_SUFFIX.search(_template_code(p.read_text()))]
    assert len(python) > 50 and len(templates) > 50
    assert not spelled, f"spell the bound columns through anon_duck.columns / lo_column, hi_column: {spelled}"
    assert any(map(BOUND_SUFFIX.search, _string_literals(owner.read_text())))   # the scan sees the owner's


def test_the_generic_verifier_gates_a_plugin_release(con, tmp_path, monkeypatch):
    """The guide's verify hook is what stands between a plug-in's bug and a publication: a
    Mondrian whose cuts ignore k (one class per distinct box of values) is refused, nothing is published."""
    def careless(values, k, progress):
        return np.unique(values, axis=0, return_inverse=True)[1].reshape(-1)
    monkeypatch.setattr(mondrian, "partition", careless)
    with pytest.raises(VerificationError, match="k_anonymity"):
        anon_duck.run(con, _job(tmp_path, 5))
    assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'm\\_%' ESCAPE '\\'").fetchone()[0]
