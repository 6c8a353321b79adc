"""The report's retention, provenance and l-diversity sections (docs/report.md) against counts
made in Python from the published tables and the input."""
from __future__ import annotations

import math
from collections import Counter, defaultdict

import duckdb
import pytest

import anon_duck
from anon_duck import api
from anon_duck.cli import main
from conftest import JOBS


def test_retention_section_is_the_retention_table(con, job_file):
    job = job_file("artuc_toy.toml")
    anon_duck.run(con, job)
    doc = api.release_report(con, job)
    rows = con.execute("SELECT code, code_label, persons_input, persons_exact, persons_generalized, "
                       "persons_without_count, persons_dropped FROM artuc_toy_retention").fetchall()
    merged = [r for r in rows if r[0] is None]
    uncounted = [r for r in rows if r[2] is None]
    rows = [r for r in rows if r[0] is not None and r[2] is not None]
    dropped = sorted((r for r in rows if r[6] > 0), key=lambda r: (-r[6], r[0]))[:20]
    codes = doc["retention"]["codes"]
    assert [(r["code"], r["persons_dropped"]) for r in codes["top_dropped"]] == [(r[0], r[6]) for r in dropped]
    assert codes["top_dropped"][0] == {"code": "494.1", "code_label": "494.1", "persons_input": 7,
                                       "persons_exact": 6, "persons_generalized": 0, "persons_without_count": 0,
                                       "persons_dropped": 1}
    bins = Counter(min(int(10 * (r[2] - r[6]) / r[2]), 9) for r in rows)
    assert codes["codes"] == len(rows) == sum(codes["bins"].values())
    assert list(codes["bins"].values()) == [bins.get(b, 0) for b in range(10)]
    # the one code held by a single person (k = 2) is named (a token lists it) without counts, which
    # the merged row holds; neither is in the bins or the top
    assert uncounted == [("458.21", "458.21", None, None, None, None, None)]
    assert merged == [(None, "1 code(s) held by fewer than 2 persons", 1, 0, 1, 0, 0)]
    assert codes["merged"] == dict(zip(("code_label", "persons_input", "persons_exact", "persons_generalized",
                                        "persons_without_count", "persons_dropped"), merged[0][1:]))
    qis = {(q["qi"], q["status"], q["level"]): q["records"] for q in doc["retention"]["qis"]}
    for qi in ("age", "origin", "gender"):
        assert sum(n for (q, _, _), n in qis.items() if q == qi) == 8      # every toy record, once per QI


def test_html_shows_retention_and_provenance(con, job_file, tmp_path):
    from anon_duck.reports import html
    job = job_file("artuc_toy.toml")
    anon_duck.run(con, job)
    page = html.report_page(api.release_report(con, job))
    assert 'id="retention"' in page and 'id="fig-retention"' in page and 'data-key="retention.dropped.494.1">1<' in page
    assert 'id="provenance"' in page and 'data-key="provenance.rows.persons">8<' in page
    assert "toy_codes.csv" in page and "DuckDB " + duckdb.__version__ in page


def test_cli_report_names_its_job_file_and_inputs(tmp_path, capsys):
    import json
    job = JOBS / "counterfeit_toy.toml"
    db = str(tmp_path / "t.duckdb")
    assert main(["run", str(job), "--db", db]) == 0
    capsys.readouterr()
    assert main(["report", str(job), "--db", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    pv = doc["provenance"]
    assert pv["job_file"] == str(job.resolve()) and pv["sensitive"] == "disease"
    (source,) = pv["sources"]
    assert source["role"] == "persons" and source["source"].endswith("table1.csv'") and source["rows"] == 7     # Table 1 of seed 002
    assert pv["made_at"].endswith("+00:00") and pv["anon_duck_version"] == anon_duck.__version__


def _l_diversity(rows: list[tuple]) -> tuple[int, int, float, int]:
    """Brute force: classes of equal QI values, distinct and entropy l-diversity."""
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for *qis, s in rows:
        if s is not None:
            classes[tuple(str(q) for q in qis)][str(s)] += 1
    distinct = [len(c) for c in classes.values()]
    entropy = []
    for c in classes.values():
        t = sum(c.values())
        entropy.append(math.exp(-sum(n / t * math.log(n / t) for n in c.values())))
    return len(classes), min(distinct), min(entropy), sum(d == 1 for d in distinct)


@pytest.mark.parametrize("name", ["toy_fulldomain.toml", "counterfeit_toy.toml", "lkc_toy.toml",
                                  "counterfeit_adult.toml"])
def test_l_diversity_on_the_release(con, job_file, name):
    job = job_file(name)
    anon_duck.run(con, job)
    doc = api.release_report(con, job)
    cols = ", ".join(f'"{c}"' for c in [q.column for q in job.dataset.qis] + [job.dataset.sensitive])
    rows = con.execute(f'SELECT {cols} FROM "{job.release.name}_release"').fetchall()
    classes, distinct, entropy, single = _l_diversity(rows)
    got = doc["provenance"]["l_diversity"]
    assert (got["classes"], got["distinct_l"], got["single_valued_classes"]) == (classes, distinct, single)
    assert got["entropy_l"] == pytest.approx(entropy, rel=1e-9)


def test_no_l_diversity_without_a_sensitive_attribute(con, job_file):
    job = job_file("adult_fulldomain.toml")
    anon_duck.run(con, job)
    doc = api.release_report(con, job)
    assert job.dataset.sensitive is None and doc["provenance"]["l_diversity"] is None
