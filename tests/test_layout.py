"""Issue #16 item 7: method packages sit below the API. Importing any method (or GenDiag) loads
neither anon_duck.api, nor the bench, nor the CLI; paper reproductions live with the bench."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from anon_duck.methods import method_names

from conftest import REPO

PACKAGES = sorted({f"anon_duck.methods.{p.stem if p.suffix == '.py' else p.name}"
                   for p in (REPO / "anon_duck" / "methods").iterdir()
                   if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()})


def test_every_registered_method_has_a_package_checked_here():
    from anon_duck.methods import get_method
    ours = [m for m in method_names() if type(get_method(m)).__module__.startswith("anon_duck.")]   # not plug-ins
    assert {f"anon_duck.methods.{m}" for m in ours} - set(PACKAGES) <= {
        "anon_duck.methods.artuc_baseline", "anon_duck.methods.artuc_rmr", "anon_duck.methods.cba"}
    assert "anon_duck.methods.gendiag" in PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_a_method_package_imports_without_the_api_bench_or_cli(package):
    code = ("import importlib, sys; importlib.import_module(%r); "
            "print(sorted(m for m in sys.modules if m in ('anon_duck.api', 'anon_duck.cli', 'anon_duck.demo') "
            "or m.startswith('benchmarks')))" % package)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"{package} imports {out.stdout.strip()}"


def test_paper_reproductions_live_with_the_bench():
    """Experiments, figures and benchmark data generators (the longitudinal cohorts, the LKC
    paper's Adult blow-up) are the bench's, not a method's."""
    methods = REPO / "anon_duck" / "methods"
    assert not [p for p in methods.rglob("*.py") if p.stem in ("experiments", "figure", "bench", "cohort", "blowup")]
    assert (REPO / "benchmarks" / "papers" / "disassociation.py").exists()
    assert (REPO / "benchmarks" / "generators" / "adult_blowup.py").exists()


def test_the_product_keeps_no_benchmark_code():
    """The benchmarks live beside the product (benchmarks/): no module under anon_duck/ imports
    them, the wheel does not ship them, and the CLI has no bench command."""
    package = REPO / "anon_duck"
    assert not (package / "bench").exists() and not (REPO / "sql" / "bench").exists()
    offenders = [p.relative_to(REPO) for p in package.rglob("*.py")
                 if re.search(r"^\s*(from|import)\s+(benchmarks|\.+bench)\b", p.read_text(), re.M)]
    assert offenders == []
    from anon_duck.cli import _parser
    assert "bench" not in _parser()._subparsers._group_actions[0].choices


DOCS = [REPO / "README.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").glob("*.md"))]
COMMANDS = sorted({m for doc in DOCS for m in re.findall(r"python -m ((?:anon_duck|benchmarks)(?:\.\w+)*)", doc.read_text())})


def test_the_docs_name_module_commands():
    assert "benchmarks.papers.disassociation" in COMMANDS and "benchmarks.papers.longitudinal" in COMMANDS


@pytest.mark.parametrize("module", COMMANDS)
def test_every_documented_module_command_runs_from_where_it_lives(module):
    """A paper reproduction that moves takes its documented ``python -m`` command with it: the
    module exists and is runnable (a ``__main__`` guard), without importing it."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"docs name python -m {module}, which does not exist"
    if spec.submodule_search_locations:     # a package runs its __main__
        spec = importlib.util.find_spec(f"{module}.__main__")
        assert spec is not None, f"python -m {module}: the package has no __main__"
    assert 'if __name__ == "__main__":' in open(spec.origin).read(), f"python -m {module} would do nothing"


@pytest.mark.parametrize(("message", "ok"), [("Split api.py into a facade\n\nWhy: ...\n", True),
                                             ("x" * 72 + "\n", True), ("x" * 73 + "\n", False),
                                             ("Subject\nno blank line\n", False), ("# only a comment\n", False)])
def test_the_commit_msg_hook_keeps_subjects_short(tmp_path, message, ok):
    """CONTRIBUTING.md's habit, checked by .githooks/commit-msg: a subject of at most 72
    characters, a blank line before the body."""
    (tmp_path / "MSG").write_text(message)
    proc = subprocess.run(["bash", str(REPO / ".githooks" / "commit-msg"), str(tmp_path / "MSG")],
                          capture_output=True, text=True)
    assert (proc.returncode == 0) == ok, proc.stderr


def _extras() -> dict[str, list[str]]:
    import tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_every_extra_that_installs_dbt_caps_dbt_core_below_1_12():
    """Issue #29 item 2: `pip install -e ".[spark]"` alone failed on a machine that reaches only
    the package index: dbt-spark let pip take dbt-core 1.12, whose parser build downloads from
    elsewhere. Each extra that pulls a dbt adapter caps dbt-core itself."""
    for name, requirements in _extras().items():
        if any(r.startswith("dbt-") and not r.startswith("dbt-core") for r in requirements):
            assert "dbt-core>=1.11,<1.12" in requirements, name


def test_the_test_extras_leave_numpy_as_the_base_install_has_it():
    """Issue #29 item 3: pycanon pins numpy 2.0.2, so an extra the README's test command
    installs must not pull it (the suite would test a numpy users do not have); it is a bench peer."""
    readme = (REPO / "README.md").read_text()
    installed = re.search(r'pip install -e "\.\[([\w,-]+)\]" && python -m pytest', readme).group(1).split(",")
    extras = _extras()
    for name in installed:
        assert not [r for r in extras[name] if r.startswith(("pycanon", "anonypy"))], name
    assert any(r.startswith("pycanon") for r in extras["bench"])
