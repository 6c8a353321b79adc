"""What the user-facing docs promise, checked on the docs' own text (issue #29): docs/dbt.md and
README.md write every anon_duck generic test in dbt-core 1.11's form (inputs under
``arguments:``) and install the package with no placeholder (item 10); the docs, README and
``anon-duck methods`` cite the papers by authors, title, venue and year from one table,
``anon_duck/methods/papers.py``, not by the reading folder's "seed" numbers (item 7)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO


# dbt's own keys of a generic test; everything else is an input of the test and belongs under
# ``arguments:`` (dbt-core's generic_test_builders: the top-level keys it accepts beside it)
DBT_KEYS = {"arguments", "config", "name", "description", "column_name"}


def yaml_blocks(path) -> list:
    """Every ```yaml block of a Markdown file, parsed."""
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the dbt extra: pip install -e '.[dbt]'")
    text = path.read_text()
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]


def generic_tests(doc) -> list[tuple[str, dict]]:
    """(test name, its properties) of every anon_duck.* generic test anywhere in a parsed block."""
    found = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(key, str) and key.startswith("anon_duck.") and isinstance(value, dict):
                found.append((key, value))
            else:
                found += generic_tests(value)
    elif isinstance(doc, list):
        for item in doc:
            found += generic_tests(item)
    return found


@pytest.mark.parametrize("doc", ["docs/dbt.md", "README.md"])
def test_generic_tests_put_their_inputs_under_arguments(doc):
    tests = [t for block in yaml_blocks(REPO / doc) for t in generic_tests(block)]
    assert tests, f"{doc} shows no anon_duck generic test"
    for name, props in tests:
        assert set(props) <= DBT_KEYS, f"{doc}: {name} has inputs outside `arguments:`: {sorted(set(props) - DBT_KEYS)}"
        assert isinstance(props.get("arguments"), dict) and props["arguments"], f"{doc}: {name} has no arguments"


def test_dbt_docs_show_every_generic_test_of_the_package():
    shown = {name.split(".", 1)[1] for block in yaml_blocks(REPO / "docs/dbt.md") for name, _ in generic_tests(block)}
    macros = {m for p in (REPO / "macros").rglob("*.sql")
              for m in re.findall(r"\{%-?\s*test\s+(\w+)\s*\(", p.read_text())}
    assert macros and shown == macros


def test_the_install_snippet_has_no_placeholder():
    text = (REPO / "docs/dbt.md").read_text()
    assert "<your-org>" not in text
    packages = [b["packages"] for b in yaml_blocks(REPO / "docs/dbt.md") if isinstance(b, dict) and "packages" in b]
    assert packages and all(not re.search(r"[<>]", str(p)) for p in packages)
    assert packages[0] == [{"local": "../anon_duck"}]


# ------------------------------------------------------------------------------------------
# Papers are cited by authors and year, not by the reading folder's file numbers (item 7)
# ------------------------------------------------------------------------------------------
SEED_NAME = re.compile(r"\bseeds? `?00[0-4]", re.I)
USER_DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", USER_DOCS)
def test_docs_cite_papers_not_seed_numbers(doc):
    hits = [line for line in (REPO / doc).read_text().splitlines() if SEED_NAME.search(line)]
    assert hits == []


def test_readme_lists_every_paper_as_papers_py_has_it():
    from anon_duck.methods.papers import PAPERS
    text = (REPO / "README.md").read_text()
    for p in PAPERS.values():
        assert f"- **{p.short}**: {p.reference}" in text


def test_methods_command_names_each_paper(capsys):
    from anon_duck.cli import main
    from anon_duck.methods import method_names
    from anon_duck.methods.papers import METHOD_PAPER, PAPERS
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert not SEED_NAME.search(out)
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    from anon_duck.methods import get_method
    for name in method_names():
        if not type(get_method(name)).__module__.startswith("anon_duck."):
            continue                              # a plug-in another test registered
        assert PAPERS[METHOD_PAPER[name]].short in lines[name], name      # each summary cites its paper
    for p in PAPERS.values():                                           # and the list below gives it in full
        assert f"{p.short}: {p.reference}" in out


SEEDS = Path("/work/shared/seeds")


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' texts are not on this machine")
def test_citations_match_the_papers_texts():
    """What each paper's text states must agree with its entry: the title (where the text
    keeps its title block), every author's surname (where it names them) or the
    corresponding author (002), the DOI (where printed), and distinctive abstract words."""
    from anon_duck.methods.papers import PAPERS
    texts = {p.name[:3]: p.read_text(errors="replace") for p in SEEDS.glob("00?_*.txt")}
    by_seed = {p.seed: p for p in PAPERS.values()}
    for seed in ("001", "004"):
        paper, text = by_seed[seed], texts[seed].lower()
        assert paper.title.lower() in text
        assert all(a.split()[-1].lower() in text for a in paper.authors)
        assert paper.doi.lower() in text
        assert str(paper.year) in text
    assert "k, km)-anonymity" in texts["000"] and "utility constraint" in texts["000"]
    assert "ydchung@korea.ac.kr" in texts["002"] and "counterfeit record" in texts["002"]
    assert "blood transfusion service" in texts["003"].lower() and "lkc-privacy" in texts["003"].lower()


# ------------------------------------------------------------------------------------------
# docs/CONTRIBUTING_CHECKS.md (item 16): every file, test and macro it points to exists
# ------------------------------------------------------------------------------------------
GUIDE = REPO / "docs" / "CONTRIBUTING_CHECKS.md"


def test_the_checks_guide_names_only_files_that_exist():
    text = GUIDE.read_text()
    paths = {p for p in re.findall(r"`((?:tests|macros|sql|anon_duck|docs)/[\w/.<>-]+|README\.md|dbt_project\.yml)`", text)
             if "<" not in p}
    assert len(paths) >= 11
    assert [p for p in sorted(paths) if not (REPO / p).exists()] == []


def test_the_checks_guide_names_only_tests_and_macros_that_exist():
    text = GUIDE.read_text()
    tests = "".join(p.read_text() for p in (REPO / "tests").glob("test_*.py"))
    for name in set(re.findall(r"`(test_\w+)`", text)) - {"test_verify", "test_dbt", "test_spark"}:
        assert f"def {name}(" in tests, name
    macros = (REPO / "macros" / "l_diversity.sql").read_text()
    for name in ("l_diversity_violations", "l_diversity_classes", "l_diversity_violated"):
        assert f"{{% macro {name}(" in macros and f"`{name}" in text
    assert "{% test l_diverse(" in (REPO / "macros" / "generic_tests" / "privacy_tests.sql").read_text()
    from anon_duck.verifiers import models
    assert "l_diversity" in models.__all__
