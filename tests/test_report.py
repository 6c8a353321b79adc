"""The release report (``report --html/--json``, the terminal summary) and the parameter sweep
(issue #21 items 2-3): every section and figure of the HTML page, nothing it links outside
itself, its numbers equal to the method's report; the JSON schema; the risk of each method's
release; a sweep that measures one point per value and publishes nothing."""
from __future__ import annotations

import json
import sys
from html.parser import HTMLParser

import duckdb
import pytest
import sqlglot

import anon_duck
from anon_duck import api
from anon_duck.cli import main
from anon_duck.job import load_job
from anon_duck.reports.text import number
from anon_duck.sqlrender import recording

from conftest import JOBS, user_tables

TOY = str(JOBS / "toy_fulldomain.toml")
SECTIONS = {"summary", "provenance", "risk", "classes", "loss", "retention", "measures", "workloads"}


class Page(HTMLParser):
    """What a test needs of an HTML page: ids of sections and figures, every URL-bearing
    attribute, tag counts, and the text of the cells that carry a data-key."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections, self.figures, self.urls, self.tags, self.cells = set(), set(), [], {}, {}
        self._key: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "section":
            self.sections.add(a["id"])
        if tag == "figure":
            self.figures.add(a["id"])
        self.urls += [v for k, v in attrs if k in ("src", "href", "xlink:href", "action") and v]
        self._key = a.get("data-key")
        if self._key:
            self.cells[self._key] = ""

    def handle_data(self, data):
        if self._key:
            self.cells[self._key] += data

    def handle_endtag(self, tag):
        self._key = None


@pytest.fixture(scope="module")
def toy_db(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("report") / "toy.duckdb")
    assert main(["run", TOY, "--db", db]) == 0
    return db


def test_html_page_has_every_section_and_figure_and_the_reports_numbers(toy_db, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", TOY, "--db", toy_db, "--html", str(out)]) == 0
    page = Page(out.read_text())
    assert page.sections == SECTIONS
    assert page.figures == {"fig-risk", "fig-classes", "fig-loss", "fig-workload-0"}
    assert page.tags["svg"] == 4 and "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert all(u.startswith("#") for u in page.urls), page.urls      # only references inside an SVG
    assert not [p for p in tmp_path.iterdir() if p.name != "report.html"]    # no temporary sibling left

    job = anon_duck.load_job(TOY)
    with duckdb.connect(toy_db, read_only=True) as con:
        rep = api.report(con, job)
    assert page.cells["measure.ncp.ncp"] == number(rep["ncp"]["ncp"])
    assert page.cells["measure.discernibility.dm"] == number(rep["discernibility"]["dm"]) == "24"
    assert page.cells["measure.are.are"] == number(rep["are"]["are"])
    for column, value in rep["ncp"]["per_attribute"].items():
        assert page.cells[f"loss.{column}.ncp"] == number(value)
    # the release's classes are the ones discernibility counts: 6 classes of 2, so risk 1/2
    assert page.cells["after.n_classes"] == number(rep["discernibility"]["n_classes"]) == "6"
    assert page.cells["after.prosecutor_risk_max"] == number(1 / rep["discernibility"]["min_class_size"]) == "0.5"
    # the 12 toy patients are all unique on (age, sex, zip) before
    assert page.cells["before.sample_uniques"] == "12" and page.cells["after.sample_uniques"] == "0"
    assert "written: " in capsys.readouterr().err


def test_json_is_the_documented_nested_schema(toy_db, capsys):
    assert main(["report", TOY, "--db", toy_db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"schema", "release", "method", "params", "seed", "anon_duck_version", "checks", "facts", "risk",
                        "loss", "headline", "measures", "workloads", "notes", "retention", "provenance"}
    assert doc["schema"] == "anon_duck.report/1" and doc["params"] == {"k": 2} and doc["seed"] == "1"
    assert doc["checks"] == {"verified": {"k_anonymity": True}, "verdict": "pass"}
    assert set(doc["risk"]) == {"model", "k", "thresholds", "before", "after"} and doc["risk"]["k"] == 2
    assert doc["risk"]["thresholds"] == [0.5, 0.2, 0.1, 0.05]       # anon-duck risk's defaults
    for side in ("before", "after"):
        assert set(doc["risk"][side]) == {"class_definition", "n_records", "n_classes", "min_class_size",
                                          "max_class_size", "prosecutor_risk_max", "prosecutor_risk_avg",
                                          "records_below_k", "sample_uniques", "records_at_risk", "marketer_risk",
                                          "distribution"}
        assert [r["threshold"] for r in doc["risk"][side]["records_at_risk"]] == [0.5, 0.2, 0.1, 0.05]
    assert doc["risk"]["after"]["distribution"] == [{"class_size": 2, "n_classes": 6, "n_records": 12}]
    assert [a["level"] for a in doc["loss"]["attributes"]] == [2, 0, 1]      # the facts' lattice node
    assert [m["name"] for m in doc["measures"]] == ["LM", "NCP", "DM", "C_avg/k", "ARE"]
    assert doc["headline"] == {"name": "LM", "value": doc["facts"]["lm"]}
    assert all(m["meaning"] and m["source"] for m in doc["measures"])
    (workload,) = doc["workloads"]
    assert workload["n"] == 100 and sum(workload["histogram"]["counts"]) == 100
    assert workload["quantiles"]["p0"] <= workload["quantiles"]["p50"] <= workload["quantiles"]["p100"]


def test_terminal_report_is_a_summary_not_a_dump(toy_db, capsys):
    assert main(["report", TOY, "--db", toy_db]) == 0
    text = capsys.readouterr().out
    # 30 lines of measures and risk, then the QIs' retention (one line per QI and level)
    assert "verifier at publication: PASS" in text and "Normalized Certainty Penalty" in text
    assert "per_query" not in text and "ncp.per_attribute" not in text and len(text.splitlines()) < 40
    assert text.splitlines()[2].startswith("headline loss: LM ")       # the headline, under the verdict


# every method's toy job: the release's classes are at least k (or what the method promises)
METHOD_JOBS = {"artuc_toy.toml": 2, "disassociation_toy.toml": 3, "longitudinal_toy.toml": 2,
               "counterfeit_toy.toml": 4, "lkc_toy.toml": None, "disassociation_cba_toy.toml": None}


@pytest.mark.parametrize("name", sorted(METHOD_JOBS))
def test_every_methods_report_document_and_page(name, tmp_path):
    from anon_duck.reports import html
    job = anon_duck.load_job(JOBS / name)
    with duckdb.connect() as con:
        anon_duck.run(con, job)
        with recording() as rendered:
            doc = api.release_report(con, job)
    before, after = doc["risk"]["before"], doc["risk"]["after"]
    assert before["sample_uniques"] == before["n_records"]       # every toy record is unique before
    if METHOD_JOBS[name] is not None:
        assert after["min_class_size"] >= METHOD_JOBS[name] and after["records_below_k"] == 0
    assert sum(d["n_records"] for d in after["distribution"]) == after["n_records"]
    assert doc["checks"]["verdict"] == "pass" and doc["measures"]
    html.write(tmp_path / "r.html", html.report_page(doc))
    assert Page((tmp_path / "r.html").read_text()).sections == SECTIONS
    for template, sql in rendered:      # the report's own templates transpile like every other
        if template.startswith("report/"):
            for dialect in ("spark", "postgres", "snowflake"):
                assert sqlglot.transpile(sql, read="duckdb", write=dialect)


def test_cba_release_counts_records_left_without_tokens():
    """cba's "after" classes are token sets; a record whose codes were all suppressed still
    counts, as the empty set."""
    job = anon_duck.load_job(JOBS / "disassociation_cba_toy.toml")
    with duckdb.connect() as con:
        anon_duck.run(con, job)
        whole = api.release_report(con, job)["risk"]["after"]
        con.execute("DELETE FROM toy_cba_record_tokens WHERE record_id = 1")
        after = api.release_report(con, job)["risk"]["after"]
    assert whole["n_records"] == after["n_records"] == 10
    assert after["sample_uniques"] == whole["sample_uniques"] + 1       # record 1 alone in the empty class


def test_sweep_measures_each_value_and_publishes_nothing(con, job_file):
    job = job_file("toy_fulldomain.toml")
    seen = []
    doc = api.sweep(con, job, "k", [2, 3], on_point=seen.append)
    assert [p["value"] for p in doc["points"]] == [2, 3] and seen == doc["points"]
    assert user_tables(con) == set()              # no release, no scratch
    for p in doc["points"]:
        assert p["risk_after"]["prosecutor_risk_max"] <= 1 / p["value"]
        assert p["risk_after"]["records_below_k"] == 0 and p["verified"] == {"k_anonymity": True}
        assert 0 < p["loss"] < 1
    assert doc["points"][0]["risk_before"]["sample_uniques"] == 12
    assert doc["loss"]["name"] == "LM"
    # the k = 2 point is the release a run publishes: the same LM as its run and its report
    result = anon_duck.run(con, job)
    assert doc["points"][0]["loss"] == pytest.approx(result.facts["lm"])
    assert api.release_report(con, job)["headline"] == {"name": "LM", "value": pytest.approx(result.facts["lm"])}


@pytest.mark.parametrize("job_name", ["toy_fulldomain.toml", "counterfeit_toy.toml", "lkc_toy.toml",
                                      "disassociation_toy.toml"])
def test_run_report_and_sweep_lead_with_one_headline(tmp_path, capsys, job_name):
    """Issue #29 item 8: run printed LM while report and sweep led with NCP for the same
    fulldomain release. Each command now names the method's one headline measure, and where
    run has its value (a fact), the three print the same number."""
    from anon_duck.reports import catalog, text
    job = JOBS / job_name
    db = str(tmp_path / "h.duckdb")
    method = load_job(job).method
    name = catalog.headline_of(method).measure
    assert main(["run", str(job), "--db", db]) == 0
    run_line = next(line for line in capsys.readouterr().out.splitlines() if "headline loss:" in line)
    assert main(["report", str(job), "--db", db, "--json"]) == 0
    headline = json.loads(capsys.readouterr().out)["headline"]
    k = {"lkc_toy.toml": "--K", "disassociation_toy.toml": "--k"}.get(job_name, "--k")
    value = load_job(job).params.get(k.lstrip("-"))
    assert main(["sweep", str(job), "--db", db, k, str(value), "--json"]) == 0
    sweep = json.loads(capsys.readouterr().out)
    assert headline["name"] == sweep["loss"]["name"] == name
    assert sweep["points"][0]["loss"] == pytest.approx(headline["value"])
    if catalog.headline_of(method).from_facts:
        assert run_line.strip() == f"headline loss: {name} {text.number(headline['value'])} (lower is better)"
    else:
        assert run_line.strip() == f"headline loss: {name} (computed by `anon-duck report`)"


def test_sweep_cli_prints_progress_and_writes_the_curve(toy_db, tmp_path, capsys):
    out = tmp_path / "sweep.html"
    assert main(["sweep", TOY, "--db", toy_db, "--k", "2,3", "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert "[1/2] k = 2" in captured.err and "[2/2] k = 3" in captured.err
    assert len(captured.out.splitlines()) == 4        # title, header, one line per k
    page = Page(out.read_text())
    assert page.sections == {"curve", "points"} and page.figures == {"fig-sweep"}
    assert all(u.startswith("#") for u in page.urls)
    with duckdb.connect(toy_db, read_only=True) as con:
        assert user_tables(con) == {"toy_k2", "toy_k2_release", "toy_k2_qi_retention", "toy_k2_meta"}


@pytest.mark.parametrize("values, named", [("0", "'0'"), ("2,-1", "'-1'"), ("2,x", "'x'")])
def test_sweep_refuses_a_bad_k_by_name(toy_db, capsys, values, named):
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", TOY, "--db", toy_db, "--k", values])
    assert exit_.value.code == 2 and named in capsys.readouterr().err


def test_sweep_refuses_a_parameter_the_method_lacks(toy_db, capsys):
    assert main(["sweep", TOY, "--db", toy_db, "--h", "0.1"]) == 2
    assert "unknown key 'h'" in capsys.readouterr().err


@pytest.mark.parametrize("verb", [["report"], ["sweep", "--k", "2"]])
def test_html_in_a_missing_folder_is_refused_and_nothing_is_written(toy_db, tmp_path, capsys, verb):
    target = tmp_path / "missing" / "r.html"
    assert main([verb[0], TOY, "--db", toy_db, "--html", str(target), *verb[1:]]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_html_without_matplotlib_names_the_extra(toy_db, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib raises ImportError
    assert main(["report", TOY, "--db", toy_db, "--html", str(tmp_path / "r.html")]) == 2
    assert "pip install 'anon-duck[report]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_report_package_does_not_shadow_the_api_call():
    """``anon_duck.report`` is the API function; the package is ``anon_duck.reports``, so that
    importing it cannot replace the function on the top-level package."""
    import anon_duck.reports.html  # noqa: F401
    assert callable(anon_duck.report) and callable(anon_duck.api.release_report)
