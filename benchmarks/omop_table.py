"""The OMOP-shaped CDM steps' own tables in BENCHMARKS.md (issue #31): each method's run, verify,
risk and report with the process tree's memory, and the growth from 100K to 1M persons."""
from __future__ import annotations

import math
from typing import Any

from .runner import load_cell


def cdm_markdown(result: dict[str, Any]) -> str:
    """One row per method of an omop_cdm step: the run's seconds and CPU seconds (its fragment
    workers' included), then verify, risk and report, and the peaks of the process tree."""
    lines = ["| method | persons | fragments | run s | CPU s | verify s | risk s | report s | peak RSS MB (all) | "
             "worker max MB | verified | other load |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in result["cases"].items():
        lines.append(f"| {name.removeprefix('omop_cdm_')} | {r['rows']:,} | {r.get('fragments', 1)} | "
                     f"{r['median_s']:.1f} | {r['cpu_s']:.1f} | {r['verify_s']:.1f} | {r['risk_s']:.1f} | "
                     f"{_s(r.get('report_s'))} | {r['peak_rss_mb']:,.0f} | {_mb(r.get('workers_max_mb'))} | "
                     f"{'yes' if r['verified'] else '**no**'} | {load_cell(r)} |")
    return "\n".join(lines)


def growth_markdown(results: dict[str, dict[str, Any]], small: str, large: str) -> str:
    """Each method's growth from step ``small`` to step ``large`` (10 times the persons), as the
    exponent e of time ∝ persons^e (run, verify, report) and of the peak RSS: issue #31 asks
    e ≤ 1.1."""
    if small not in results or large not in results:
        return f"(needs `python -m benchmarks --suite --steps {small},{large}`)"
    lines = ["| method | persons | run s | e | verify s | e | report s | e | peak RSS MB | e | e ≤ 1.1? |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, big in results[large]["cases"].items():
        little = results[small]["cases"].get(name)
        if little is None:
            continue
        grow = math.log(big["rows"] / little["rows"])
        exps = {k: math.log(big[k] / little[k]) / grow if big.get(k) and little.get(k) else None
                for k in ("median_s", "verify_s", "report_s", "peak_rss_mb")}
        known = [e for e in exps.values() if e is not None]
        lines.append(f"| {name.removeprefix('omop_cdm_')} | {little['rows']:,} → {big['rows']:,} | "
                     f"{little['median_s']:.1f} → {big['median_s']:.1f} | {_e(exps['median_s'])} | "
                     f"{little['verify_s']:.1f} → {big['verify_s']:.1f} | {_e(exps['verify_s'])} | "
                     f"{_s(little.get('report_s'))} → {_s(big.get('report_s'))} | {_e(exps['report_s'])} | "
                     f"{little['peak_rss_mb']:,.0f} → {big['peak_rss_mb']:,.0f} | {_e(exps['peak_rss_mb'])} | "
                     f"{'**met**' if max(known) <= 1.1 else '**missed**'} |")
    return "\n".join(lines)


def _e(value: float | None) -> str:
    """A growth exponent, or ``-`` where a step did not time the measure."""
    return "-" if value is None else f"{value:.2f}"


def _s(value: float | None) -> str:
    """Seconds, or ``-`` where the step did not time it (a run of the step from before the bench
    timed reports at 1M persons)."""
    return "-" if value is None else f"{value:.1f}"


def _mb(value: float | None) -> str:
    """A peak in MB, or ``-`` where no such process ran (an unpartitioned run has no workers)."""
    return f"{value:,.0f}" if value else "-"
