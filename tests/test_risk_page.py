"""``anon-duck risk --html`` and the report's risk columns from the risk command's measures
(issue #21): the risk page's sections and figures, nothing it links outside itself, its numbers
equal to :func:`anon_duck.api.risk`'s; a bad path refused before any work; the report's records
at risk and marketer risk equal to ``api.risk`` before the release and to a brute-force count
over the release table after it."""
from __future__ import annotations

import dataclasses
import sys
from collections import Counter

import duckdb
import pytest

import anon_duck
from anon_duck import api
from anon_duck.cli import main
from anon_duck.job import RiskSettings
from anon_duck.reports.text import number

from conftest import JOBS
from test_report import Page

QI_SECTIONS = {"summary", "classes", "at-risk", "drivers"}
# job -> (sections, figures) of its risk page
PAGES = {"toy_fulldomain.toml": (QI_SECTIONS, {"fig-classes", "fig-at-risk", "fig-drivers"}),
         "artuc_toy.toml": (QI_SECTIONS | {"codes"}, {"fig-classes", "fig-at-risk", "fig-drivers", "fig-codes"}),
         "longitudinal_toy.toml": ({"summary", "events"}, {"fig-events"})}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("riskpage") / "risk.duckdb"
    duckdb.connect(str(path)).close()
    return str(path)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_risk_page_has_every_section_and_figure_and_api_risks_numbers(db, tmp_path, capsys, name):
    out = tmp_path / "risk.html"
    assert main(["risk", str(JOBS / name), "--db", db, "--population-size", "1000", "--html", str(out)]) == 0
    assert "written: " in capsys.readouterr().err
    page = Page(out.read_text())
    sections, figures = PAGES[name]
    assert page.sections == sections and page.figures == figures
    assert page.tags["svg"] == len(figures)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert all(u.startswith("#") for u in page.urls), page.urls      # only references inside an SVG
    assert [p.name for p in tmp_path.iterdir()] == ["risk.html"]     # no temporary sibling left

    with duckdb.connect(db, read_only=True) as con:
        want = api.risk(con, anon_duck.load_job(JOBS / name), population_size=1000)
    cells = page.cells
    q = want["qis"]
    if q is not None:
        assert cells["n_records"] == number(q["n_records"]) and cells["n_classes"] == number(q["n_classes"])
        assert cells["sample_uniques"] == number(q["sample_uniques"]["records"])
        assert cells["prosecutor.highest"] == number(q["prosecutor"]["highest"])
        assert cells["prosecutor.average"] == number(q["prosecutor"]["average"])
        assert [cells[f"at_risk.{number(r['threshold'])}"] for r in q["prosecutor"]["records_at_risk"]] == \
            [number(r["share"]) for r in q["prosecutor"]["records_at_risk"]] and len(q["prosecutor"]["records_at_risk"]) == 4
        assert cells["records_below_k"] == number(q["records_below_k"]["share"])
        assert cells["marketer"] == number(q["marketer"]["average"])
        assert cells["population.size"] == "1,000"
        assert cells["zayatz.share"] == number(q["population"]["estimates"]["zayatz"]["share"])
        assert cells["dankar_rule"] == q["population"]["estimates"]["dankar_rule"].capitalize()
        for r in want["drivers"]["per_qi"]:
            assert cells[f"drivers.{r['qi']}.uniques_without"] == number(r["uniques_without"])
            assert cells[f"drivers.{r['qi']}.distinction"] == number(r["distinction"])
        for r in want["drivers"]["per_pair"]:
            assert cells[f"drivers.{'+'.join(r['qis'])}.uniques_without"] == number(r["uniques_without"])
    if want["codes"] is not None:
        for r in want["codes"]["by_m"]:
            assert cells[f"codes.{r['m']}.below_k_persons"] == number(r["below_k_persons"])
            assert cells[f"codes.{r['m']}.unique_persons"] == number(r["unique_persons"])
    if want["events"] is not None:
        assert cells["events.unique_trajectory_persons"] == number(want["events"]["unique_trajectory_persons"])
        for r in want["events"]["first_events"]:
            assert cells[f"events.{r['j']}.unique_persons"] == number(r["unique_persons"])


def test_risk_page_shows_journalist_risk_against_a_population_table(tmp_path, capsys):
    """The toy's patients twice over as the population: journalist risk 1/2 for every record."""
    db = tmp_path / "pop.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"CREATE TABLE pop AS SELECT age, sex, zip FROM read_csv('{JOBS.parent / 'toy' / 'patients.csv'}')"
                    " UNION ALL SELECT age, sex, zip FROM read_csv("
                    f"'{JOBS.parent / 'toy' / 'patients.csv'}')")
    out = tmp_path / "risk.html"
    assert main(["risk", str(JOBS / "toy_fulldomain.toml"), "--db", str(db), "--population-table", "pop",
                 "--html", str(out)]) == 0
    cells = Page(out.read_text()).cells
    assert cells["journalist.highest"] == "0.5" and cells["journalist.average"] == "0.5"
    assert cells["journalist.at_risk.0.5"] == "0" and cells["journalist.at_risk.0.2"] == "1"
    assert cells["marketer"] == "0.5" and cells["population.uniques"] == "0"


def test_risk_html_in_a_missing_folder_exits_2_before_any_work(tmp_path, capsys):
    """Refused before the database is opened (this one does not exist) and nothing is written."""
    target = tmp_path / "missing" / "risk.html"
    assert main(["risk", str(JOBS / "toy_fulldomain.toml"), "--db", str(tmp_path / "absent.duckdb"),
                 "--html", str(target)]) == 2
    assert "the folder" in (err := capsys.readouterr().err) and "does not exist (nothing was written)" in err
    assert list(tmp_path.iterdir()) == []


def test_risk_html_without_matplotlib_names_the_extra(db, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib raises ImportError
    assert main(["risk", str(JOBS / "toy_fulldomain.toml"), "--db", db, "--html", str(tmp_path / "r.html")]) == 2
    assert "pip install 'anon-duck[report]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


THRESHOLDS = (0.5, 0.3, 0.2)      # 0.3 tells classes of 2 (risk 0.5) from classes of 4 (0.25)


@pytest.mark.parametrize("name", ["artuc_toy.toml", "lkc_toy.toml"])       # classes of 2 and 4; of 1 and 2
def test_report_risk_rows_equal_api_risk_before_and_a_count_of_the_release_after(name, tmp_path):
    job = anon_duck.load_job(JOBS / name)
    job = dataclasses.replace(job, risk=RiskSettings(thresholds=THRESHOLDS))
    with duckdb.connect() as con:
        anon_duck.run(con, job)
        doc = api.release_report(con, job)
        risk = doc["risk"]
        assert risk["thresholds"] == list(THRESHOLDS)
        want = api.risk(con, job, k=risk["k"])["qis"]
        qis = [q.column for q in job.dataset.qis]
        release = con.execute(f'SELECT {", ".join(qis)} FROM "{job.release.name}_release"').fetchall()
    before, after = risk["before"], risk["after"]
    assert before["records_at_risk"] == want["prosecutor"]["records_at_risk"]
    assert before["marketer_risk"] == want["marketer"]["average"]
    assert (before["n_records"], before["n_classes"], before["prosecutor_risk_max"], before["prosecutor_risk_avg"],
            before["records_below_k"], before["sample_uniques"]) == \
        (want["n_records"], want["n_classes"], want["prosecutor"]["highest"], want["prosecutor"]["average"],
         want["records_below_k"]["share"], want["sample_uniques"]["records"])
    # after, by hand: a class is the records with the same generalized QI labels
    sizes = Counter(release)
    per_record = [sizes[r] for r in release]
    assert [r["threshold"] for r in after["records_at_risk"]] == list(THRESHOLDS)
    assert [r["share"] for r in after["records_at_risk"]] == \
        pytest.approx([sum(1 for s in per_record if 1 / s > t) / len(release) for t in THRESHOLDS], rel=1e-12)
    assert after["marketer_risk"] == pytest.approx(len(sizes) / len(release), rel=1e-12)

    from anon_duck.reports import html, text
    summary = text.summary(doc)
    assert "share of records at risk > 0.3 (1 in 3.33)" in summary and "marketer risk" in summary
    html.write(tmp_path / "r.html", html.report_page(doc))
    cells = Page((tmp_path / "r.html").read_text()).cells
    for side, values in (("before", before), ("after", after)):
        assert cells[f"{side}.marketer_risk"] == number(values["marketer_risk"])
        for r in values["records_at_risk"]:
            assert cells[f"{side}.records_at_risk.{r['threshold']:g}"] == number(r["share"])
