"""docs/CONTRIBUTING_METHODS.md is enough to add a method: tests/plugins/mondrian.py follows it
from outside the package (registered with ``anon_duck.methods.register``, its own templates),
runs through ``anon_duck.run``, publishes the documented column layout, and its release passes
the generic k-anonymity verifier and the generic report."""
from __future__ import annotations

import duckdb
import numpy as np
import pytest

import anon_duck
from anon_duck.columns import bounds
from anon_duck.errors import JobError
from anon_duck.job import load_job
from anon_duck.methods import get_method, method_names, register

from conftest import REPO
from plugins import mondrian


@pytest.fixture(scope="module", autouse=True)
def registered():
    register("mondrian", "plugins.mondrian", templates=str(mondrian.TEMPLATES))


def _job(tmp_path, k: int, qis: str = '"age", "hours"'):
    path = tmp_path / "job.toml"
    path.write_text(f'[input]\ntable = "people"\nid = "pid"\nsensitive = "disease"\n'
                    + "".join(f'[[input.qi]]\ncolumn = {q}\nkind = "numeric"\n' for q in qis.split(", "))
                    + f'[method]\nname = "mondrian"\nk = {k}\n[release]\nname = "m"\nseed = 1\n')
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
    assert "mondrian" in method_names() and get_method("mondrian") is mondrian.METHOD
    job = _job(tmp_path, k)
    result = anon_duck.run(con, job)
    assert result.verified and [c.name for c in result.checks] == ["k_anonymity"]
    cols = [r[0] for r in con.execute("DESCRIBE m_release").fetchall()]
    assert cols == ["age", *bounds("age"), "hours", *bounds("hours"), "disease"]
    sizes = [r[0] for r in con.execute("SELECT count(*) FROM m_release GROUP BY age, hours").fetchall()]
    assert min(sizes) >= k and sum(sizes) == 300
    assert max(sizes) < 2 * k + 60         # median cuts keep classes small (not one big class)
    report = anon_duck.report(con, job)
    assert 0 < report["ncp"]["ncp"] < 1
    assert all(c.passed for c in anon_duck.verify(con, job))


def test_a_plugin_checks_its_parameters_like_a_builtin(con, tmp_path):
    with pytest.raises(JobError, match="method.k = 0: must be >= 1"):
        anon_duck.run(con, _job(tmp_path, 0))


def test_the_guide_names_paths_that_exist():
    guide = (REPO / "docs" / "CONTRIBUTING_METHODS.md").read_text()
    import re
    paths = set(re.findall(r"`((?:anon_duck|sql|tests|docs|fixtures)/[\w/.<>*-]+)`", guide))
    concrete = [p for p in paths if "<" not in p and "*" not in p]
    assert concrete, "the guide names files"
    missing = [p for p in concrete if not (REPO / p).exists()]
    assert not missing, f"the guide names paths that do not exist: {missing}"
