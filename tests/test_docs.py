"""What the user-facing docs promise, checked on the docs' own text (issue #29): docs/dbt.md and
README.md write every anon_duck generic test in dbt-core 1.11's form (inputs under
``arguments:``) and install the package with no placeholder."""
from __future__ import annotations

import re

import pytest

from conftest import REPO

yaml = pytest.importorskip("yaml", reason="PyYAML comes with the dbt extra: pip install -e '.[dbt]'")

# dbt's own keys of a generic test; everything else is an input of the test and belongs under
# ``arguments:`` (dbt-core's generic_test_builders: the top-level keys it accepts beside it)
DBT_KEYS = {"arguments", "config", "name", "description", "column_name"}


def yaml_blocks(path) -> list:
    """Every ```yaml block of a Markdown file, parsed."""
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
