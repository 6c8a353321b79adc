"""`anon-duck bench --quick`: every registered case completes at a small scale (what CI can
afford); the numbers themselves live in BENCHMARKS.md, never in timed unit tests."""
from __future__ import annotations

import json

from anon_duck.bench.cases import CASES
from anon_duck.cli import main


def test_quick_bench_runs_every_case(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)        # generated data is cached under ./bench_out
    assert main(["bench", "--quick", "--out", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert set(report["cases"]) == set(CASES)
    assert all(r["rows"] > 0 and r["median_s"] >= 0 for r in report["cases"].values())
    assert "pycanon_k / verify_k" in report["ratios"]
    assert (tmp_path / "r.md").read_text().startswith("Machine:")
