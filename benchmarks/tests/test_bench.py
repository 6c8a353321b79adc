"""`python -m benchmarks --quick`: every registered case completes at a small scale (what CI can
afford); the numbers themselves live in BENCHMARKS.md, never in timed unit tests."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks.cases import CASES, NEEDS
from benchmarks.runner import installed
from benchmarks.spark_cases import SPARK
from benchmarks.utility.cases import TWINS
from anon_duck.errors import AnonDuckError


def test_quick_bench_runs_every_case(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)        # generated data is cached under ./bench_out, cold here
    # exit 0 also means no timed repetition generated data: the runner fails on one that did
    assert main(["--quick", "--out", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    # the Spark cases start a JVM: not in CI; peers run where the bench extra installed them; a
    # utility case at its second k is the same code as at its first
    assert set(report["cases"]) == {n for n in CASES if n not in SPARK and n not in TWINS and installed(n)}
    assert {n.removesuffix("_k10") for n in TWINS} == {n.removesuffix("_k5") for n in report["cases"]
                                                       if n.startswith("omop_utility_")}
    assert {"pycanon_k", "pycanon_l", "anonypy_mondrian_adult"} <= set(NEEDS)
    assert all(r["rows"] > 0 for r in report["cases"].values())
    # every anonymizer case publishes a verified release (cases time the run, the verifier gate
    # inside it raises on a violation; `verified` restates the gate's checks)
    verified = {n for n, r in report["cases"].items() if "verified" in r}
    assert all(report["cases"][n]["verified"] is True for n in verified)
    for family in ("artuc", "disassociation", "counterfeit", "lkc", "longitudinal", "fulldomain"):
        assert any(n.startswith(family) for n in verified), f"no verified {family} case"
    assert ("pycanon_k / verify_k" in report["ratios"]) == installed("pycanon_k")
    assert (tmp_path / "r.md").read_text().startswith("Machine:")


def test_prepare_builds_data_before_the_repetitions(tmp_path, monkeypatch):
    # the data is on disk before the first timed repetition starts, and that repetition only reads it
    from benchmarks import runner
    from benchmarks.generators import DATA
    monkeypatch.chdir(tmp_path)
    cached_at_start: list[list[Path]] = []

    def progress(message: str) -> None:
        if "repetition" in message:
            cached_at_start.append(sorted(DATA.rglob("*.parquet")))

    report = runner.run_cases(["verify_k"], scale=0.001, reps=2, progress=progress, memory_limit="300MB")
    assert cached_at_start[0] and cached_at_start[0] == cached_at_start[1]
    summary = report["cases"]["verify_k"]
    assert summary["rows"] == 1_000 and summary["memory_limit"] == "300MB"
    assert "data_built" not in summary and summary["other_load"] >= 0


def test_every_memory_figure_is_the_largest_over_the_repetitions(monkeypatch):
    """A Spark case's memory figures are peaks, as peak_rss_mb: the summary keeps each one's
    largest over the repetitions, other_mb too, which a repetition returns only when the tree
    had a process of no role; the other figures are the last repetition's."""
    from types import SimpleNamespace

    from benchmarks import runner
    runs = iter([{"seconds": 1.0, "rows": 5, "peak_rss_mb": 900, "jvm_peak_mb": 800, "other_mb": 40, "other": "bash"},
                 {"seconds": 2.0, "rows": 5, "peak_rss_mb": 700, "jvm_peak_mb": 850},
                 {"seconds": 3.0, "rows": 5, "peak_rss_mb": 800, "jvm_peak_mb": 600, "other_mb": 5, "other": "chmod"}])
    monkeypatch.setattr(runner, "_prepare", lambda names, scale, progress: None)
    monkeypatch.setattr(runner.subprocess, "run", lambda *a, **k: SimpleNamespace(
        returncode=0, stdout=json.dumps({**next(runs), "data_built": []}), stderr=""))
    summary = runner.run_cases(["verify_k"], scale=1, reps=3, progress=lambda _: None)["cases"]["verify_k"]
    assert (summary["peak_rss_mb"], summary["jvm_peak_mb"], summary["other_mb"]) == (900, 850, 40)
    assert summary["other"] == "chmod" and summary["median_s"] == 2.0


def test_a_repetition_that_generates_data_fails(tmp_path, monkeypatch):
    # a case whose builder is not registered generates its data in the timed repetition:
    # its peak RSS would include the generator, so the runner refuses the run
    from benchmarks import runner
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "PREPARE", {})
    with pytest.raises(AnonDuckError, match="generated data inside a timed repetition.*synthetic_qis_1000"):
        runner.run_cases(["verify_k"], scale=0.001, reps=1, progress=lambda _: None)


def test_suite_plan_runs_exactly_the_registered_cases():
    # the suite is what BENCHMARKS.md reports: a case registered but left out of the plan
    # would be checked by --quick and never measured
    from benchmarks.suite import PLAN
    assert {c for step in PLAN for c in step.cases} == set(CASES)
    assert len({step.name for step in PLAN}) == len(PLAN)


def test_suite_writes_every_step_and_the_generated_section(tmp_path, monkeypatch):
    from benchmarks import suite
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(suite, "PLAN", (suite.Step("one", "One scale", ("verify_k", "verify_k_floor"), scale=0.01),
                                        suite.Step("curve", "A curve", ("verify_k",), curve=(0.005, 0.01))))
    monkeypatch.setattr(suite, "TARGETS", (suite.Target("k near its floor", "one", "verify_k", "floor", 1e9, 0.01),
                                           suite.Target("k in no time", "one", "verify_k", "median_s", 0.0, 0.01),
                                           suite.Target("a step not run", "nowhere", "verify_k", "median_s", 1)))
    monkeypatch.setattr(suite, "MEMORY_LIMIT", "500MB")
    bench_md = tmp_path / "BENCHMARKS.md"
    bench_md.write_text(f"# Hand-written\n\nprose before\n\n{suite.BEGIN}\nold tables\n{suite.END}\n\nprose after\n")
    assert main(["--suite", "--out", str(tmp_path / "out" / "x.json"), "--benchmarks", str(bench_md)]) == 0
    results = tmp_path / suite.RESULTS     # beside BENCHMARKS.md, committed with it (not --out's folder)
    text = (results / "suite.md").read_text()
    assert "### One scale" in text and "### A curve" in text and "**verify_k**" in text
    one = json.loads((results / "one.json").read_text())
    assert one["cases"]["verify_k"]["rows"] > 0 and one["cases"]["verify_k"]["memory_limit"] == "500MB"
    assert len(json.loads((results / "curve.curves.json").read_text())["curves"]["verify_k"]) == 2
    assert not (tmp_path / "out").exists()
    written = bench_md.read_text()
    assert written.startswith("# Hand-written\n\nprose before\n\n") and written.endswith("\n\nprose after\n")
    assert "old tables" not in written and written.count(suite.BEGIN) == written.count(suite.END) == 1
    rows = {line.split(" | ")[0]: line for line in written.splitlines() if line.startswith("| k ") or "not run" in line}
    assert rows["| k near its floor"].endswith("| **met** |") and rows["| k in no time"].endswith("| **missed** |")
    assert "not measured" in rows["| a step not run"]
    assert "Growth: time ∝ rows^" in written      # the curve's exponent
    # re-measuring one step keeps the other's numbers: the section is rebuilt from every step's JSON
    curve_json = (results / "curve.curves.json").read_text()
    assert main(["--suite", "--steps", "one", "--benchmarks", str(bench_md)]) == 0
    assert (results / "curve.curves.json").read_text() == curve_json
    assert "Growth: time ∝ rows^" in bench_md.read_text() and "not measured yet" not in bench_md.read_text()


def test_the_cdm_growth_is_an_exponent_judged_against_1_1():
    """omop_table.growth_markdown: time ∝ persons^e from 100K to 1M persons; ten times the
    persons in ten times the seconds is e = 1, in twenty times e = 1.30 (missed); a report that
    one of the steps did not time is left out of the judgement."""
    from benchmarks.omop_table import growth_markdown

    def case(rows, run, verify, report, peak):
        return {"rows": rows, "median_s": run, "verify_s": verify, "report_s": report, "peak_rss_mb": peak}
    results = {"small": {"cases": {"omop_cdm_lkc": case(100_000, 2.0, 1.0, 3.0, 500),
                                   "omop_cdm_longitudinal": case(100_000, 30.0, 1.0, 9.0, 800),
                                   "omop_cdm_fulldomain": case(100_000, 1.0, 1.0, 1.0, 500)}},
               "large": {"cases": {"omop_cdm_lkc": case(1_000_000, 20.0, 10.0, 60.0, 500),
                                   "omop_cdm_longitudinal": case(1_000_000, 600.0, 5.0, 90.0, 900),
                                   "omop_cdm_fulldomain": case(1_000_000, 10.0, 10.0, None, 500)}}}
    rows = {line.split(" | ")[0]: line for line in growth_markdown(results, "small", "large").splitlines()}
    assert rows["| lkc"] == ("| lkc | 100,000 → 1,000,000 | 2.0 → 20.0 | 1.00 | 1.0 → 10.0 | 1.00 | 3.0 → 60.0 | 1.30 | "
                             "500 → 500 | 0.00 | **missed** |")
    assert "| 30.0 → 600.0 | 1.30 |" in rows["| longitudinal"] and rows["| longitudinal"].endswith("**missed** |")
    assert rows["| fulldomain"].endswith("| 1.0 → - | - | 500 → 500 | 0.00 | **met** |")
    assert "needs `python -m benchmarks --suite --steps small,nowhere`" in growth_markdown(results, "small", "nowhere")


def test_suite_refuses_a_benchmarks_file_without_markers_before_measuring(tmp_path, monkeypatch):
    from benchmarks import suite
    ran: list[str] = []
    monkeypatch.setattr(suite, "run_cases", lambda *a, **k: ran.append("run"))
    (tmp_path / "B.md").write_text("# no markers\n")
    with pytest.raises(AnonDuckError, match="has no generated section"):
        suite.run_suite(tmp_path, benchmarks=tmp_path / "B.md", progress=lambda _: None)
    with pytest.raises(AnonDuckError, match="unknown step 'nope'"):
        suite.run_suite(tmp_path, steps=("nope",), progress=lambda _: None)
    assert ran == []


def test_busy_measurements_are_marked_and_targets_judged():
    from benchmarks import suite
    from benchmarks.runner import growth_exponent, load_cell
    assert load_cell({"other_load": 0.1}) == "0.10" and load_cell({"other_load": 1.4}) == "**busy 1.40**"
    results = {"verifiers": {"scale": 1.0, "cases": {
        "verify_k": {"median_s": 0.30, "other_load": 0.0, "peak_rss_mb": 900.0},
        "verify_k_floor": {"median_s": 0.25, "other_load": 2.0, "peak_rss_mb": 800.0},
        "pycanon_k": {"median_s": 2.0, "other_load": 0.0, "peak_rss_mb": 2000.0}}}}
    table = suite.targets_markdown(results)
    line = next(x for x in table.splitlines() if x.startswith("| verify_k ≤ 1.5× its floor, 1M rows"))
    assert "1.20×" in line and "**busy 2.00**" in line and line.endswith("**met** |")
    memory = suite.memory_markdown(results)
    assert "| pycanon_k | 2,000 | peer (not ours) |" in memory and "| verify_k | 900 | yes |" in memory
    # a target against a peer measured in the same step: a time ratio, a figure both report
    results["k_anonymizers"] = {"scale": 1.0, "cases": {
        "mondrian_adult": {"median_s": 0.8, "other_load": 0.0, "ncp": 0.06, "c_avg_norm": 1.81},
        "anonypy_mondrian_adult": {"median_s": 10.0, "other_load": 1.5, "ncp": 0.05}}}
    lines = {x.split(" | ")[0][2:]: x for x in suite.targets_markdown(results).splitlines()}
    faster = lines["Mondrian on Adult (k = 10) ≥ 10× faster than anonypy's, side by side"]
    assert "0.080 (0.800 s / 10.000 s)" in faster and "**busy 1.50**" in faster and faster.endswith("**met** |")
    ncp = lines["Mondrian on Adult (k = 10): NCP ≤ anonypy's Mondrian's"]
    assert "1.200 (0.060 / 0.050)" in ncp and ncp.endswith("**missed** |")
    assert "| 1.81 |" in lines["Mondrian on Adult (k = 10): C_avg/k ≤ 2.0"]
    del results["k_anonymizers"]["cases"]["anonypy_mondrian_adult"]["ncp"]      # an older result: no figure
    assert "not measured" in suite.targets_markdown(results).split("NCP ≤ anonypy")[1].splitlines()[0]
    # time = rows^1.5 exactly: the fitted exponent is 1.5
    assert growth_exponent([{"rows": r, "median_s": r ** 1.5} for r in (10, 100, 1000)]) == pytest.approx(1.5)


def test_other_load_counts_a_busy_neighbour():
    import subprocess
    import sys
    from benchmarks.load import CpuWatch
    burn = "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"
    neighbour = subprocess.Popen([sys.executable, "-c", burn])
    try:
        watch = CpuWatch()
        subprocess.run([sys.executable, "-c", "import time; time.sleep(1.0)"], check=True)
        assert watch.other_load() > 0.4          # the neighbour held most of a core
    finally:
        neighbour.wait()


def test_bench_connections_take_the_memory_limit(monkeypatch):
    from benchmarks import cases
    from anon_duck.sqlrender import render
    monkeypatch.setattr(cases, "MEMORY_LIMIT", "300MB")
    with cases.connect() as con:
        shown = con.execute(render("engines/duckdb/current_setting.sql.j2"), {"name": "memory_limit"}).fetchone()[0]
    assert shown == "286.1 MiB"        # DuckDB shows 300 MB in MiB


def test_a_case_peak_leaves_out_its_release_digest(monkeypatch):
    """peak_then_digest reads the peak RSS before the digest's export (untimed, without the
    case's memory_limit), so the digest cannot show in the peak. (Measuring a real peak in a
    child process would not do: Linux carries the forking process's peak into the child's.)"""
    import resource
    from types import SimpleNamespace

    from benchmarks import cases
    calls = []
    monkeypatch.setattr(resource, "getrusage", lambda who: calls.append("peak") or SimpleNamespace(ru_maxrss=2048))
    monkeypatch.setattr(cases, "release_digest", lambda con, job, views: calls.append("digest") or "d")
    assert cases.peak_then_digest(None, None) == {"peak_rss_mb": 2.0, "release": "d"}
    assert calls == ["peak", "digest"]


@pytest.mark.parametrize("args", [["--reps", "0"], ["--curve", "a,b"], ["--curve", "1,-2"]])
def test_bench_arguments_are_checked(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["verify_k", *args])
    assert exc.value.code == 2 and "error: argument" in capsys.readouterr().err


def test_a_peer_that_is_not_installed_is_named(monkeypatch):
    from benchmarks import cases, runner
    monkeypatch.setitem(cases.NEEDS, "verify_k", "no_such_peer_library")
    assert "verify_k" not in runner.quick_cases()
    with pytest.raises(AnonDuckError, match="case 'verify_k' needs no_such_peer_library, which is not installed"):
        runner.run_cases(["verify_k"], scale=0.01, reps=1)
