"""`anon-duck bench --quick`: every registered case completes at a small scale (what CI can
afford); the numbers themselves live in BENCHMARKS.md, never in timed unit tests."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from anon_duck.bench.cases import CASES
from anon_duck.cli import main
from anon_duck.errors import AnonDuckError


def test_quick_bench_runs_every_case(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)        # generated data is cached under ./bench_out, cold here
    # exit 0 also means no timed repetition generated data: the runner fails on one that did
    assert main(["bench", "--quick", "--out", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report["cases"]) == set(CASES)
    assert all(r["rows"] > 0 for r in report["cases"].values())
    # every anonymizer case publishes a verified release (cases time the run, the verifier gate
    # inside it raises on a violation; `verified` restates the gate's checks)
    verified = {n for n, r in report["cases"].items() if "verified" in r}
    assert all(report["cases"][n]["verified"] is True for n in verified)
    for family in ("artuc", "disassociation", "counterfeit", "lkc", "longitudinal", "fulldomain"):
        assert any(n.startswith(family) for n in verified), f"no verified {family} case"
    assert "pycanon_k / verify_k" in report["ratios"]
    assert (tmp_path / "r.md").read_text().startswith("Machine:")


def test_prepare_builds_data_before_the_repetitions(tmp_path, monkeypatch):
    # the data is on disk before the first timed repetition starts, and that repetition only reads it
    from anon_duck.bench import runner
    from anon_duck.bench.generators import DATA
    monkeypatch.chdir(tmp_path)
    cached_at_start: list[list[Path]] = []

    def progress(message: str) -> None:
        if "repetition" in message:
            cached_at_start.append(sorted(DATA.rglob("*.parquet")))

    report = runner.run_cases(["verify_k_10m_2gb"], scale=0.0001, reps=2, progress=progress)
    assert cached_at_start[0] and cached_at_start[0] == cached_at_start[1]
    assert report["cases"]["verify_k_10m_2gb"]["rows"] == 1_000
    assert "data_built" not in report["cases"]["verify_k_10m_2gb"]


def test_a_repetition_that_generates_data_fails(tmp_path, monkeypatch):
    # a case whose builder is not registered generates its data in the timed repetition:
    # its peak RSS would include the generator, so the runner refuses the run
    from anon_duck.bench import runner
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "PREPARE", {})
    with pytest.raises(AnonDuckError, match="generated data inside a timed repetition.*synthetic_qis_1000"):
        runner.run_cases(["verify_k"], scale=0.001, reps=1, progress=lambda _: None)


def test_suite_plan_runs_exactly_the_registered_cases():
    # the suite is what BENCHMARKS.md reports: a case registered but left out of the plan
    # would be checked by --quick and never measured
    from anon_duck.bench.suite import PLAN
    assert {c for step in PLAN for c in step.cases} == set(CASES)
    assert len({step.name for step in PLAN}) == len(PLAN)


def test_suite_writes_every_step(tmp_path, monkeypatch):
    from anon_duck.bench import suite
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(suite, "PLAN", (suite.Step("one", "One scale", ("verify_k",), scale=0.01),
                                        suite.Step("curve", "A curve", ("verify_k",), curve=(0.005, 0.01))))
    assert main(["bench", "--suite", "--out", str(tmp_path / "out" / "x.json")]) == 0
    text = (tmp_path / "out" / "suite.md").read_text()
    assert "## One scale" in text and "## A curve" in text and "**verify_k**" in text
    assert json.loads((tmp_path / "out" / "one.json").read_text())["cases"]["verify_k"]["rows"] > 0
    assert len(json.loads((tmp_path / "out" / "curve.curves.json").read_text())["curves"]["verify_k"]) == 2
