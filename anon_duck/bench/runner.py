"""Run cases × repetitions in fresh processes; summarize as JSON and a markdown table.

The cases' data is built first, in one untimed worker (``--prepare``): a repetition that
generated its data would report the generator's memory as the case's peak RSS (a cold cache
once doubled ``verify_k_10m_2gb``'s), so a repetition that adds to the data cache is an error."""
from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import AnonDuckError
from .cases import CASES, FLOORS, PEERS, PREPARE

WORKER = [sys.executable, "-m", "anon_duck.bench.worker"]


def run_cases(names: Sequence[str], *, scale: float, reps: int, progress=print) -> dict[str, Any]:
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise AnonDuckError(f"bench: unknown case {unknown[0]!r}; cases: {', '.join(sorted(CASES))}")
    names = list(names or sorted(CASES))
    _prepare([n for n in names if n in PREPARE], scale, progress)
    results: dict[str, Any] = {}
    for name in names:
        runs = []
        for rep in range(reps):
            progress(f"bench {name} (scale {scale:g}) repetition {rep + 1}/{reps}")
            proc = subprocess.run([*WORKER, name, str(scale)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise AnonDuckError(f"bench case {name!r} failed:\n{proc.stderr[-2000:]}")
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            if run["data_built"]:
                raise AnonDuckError(f"bench case {name!r} generated data inside a timed repetition "
                                    f"({', '.join(run['data_built'])}): name its builder with @case(..., data=...)")
            runs.append(run)
        secs = [r["seconds"] for r in runs]
        summary = {k: v for k, v in runs[-1].items() if k not in ("seconds", "peak_rss_mb", "data_built")}
        summary.update(min_s=min(secs), median_s=statistics.median(secs),
                       peak_rss_mb=max(r["peak_rss_mb"] for r in runs), reps=reps)
        if summary.get("rows"):
            summary["rows_per_s"] = summary["rows"] / summary["median_s"] if summary["median_s"] else None
        results[name] = summary
    ratios = {f"{peer} / {ours}": results[peer]["median_s"] / results[ours]["median_s"]
              for peer, ours in PEERS.items() if peer in results and ours in results and results[ours]["median_s"]}
    floors = {f"{ours} / {floor}": results[ours]["median_s"] / results[floor]["median_s"]
              for floor, ours in FLOORS.items() if floor in results and ours in results and results[floor]["median_s"]}
    return {"machine": _machine(), "scale": scale, "cases": results, "ratios": ratios, "floor_ratios": floors}


def _prepare(names: Sequence[str], scale: float, progress: Callable[[str], None]) -> None:
    """Build and cache the data of ``names`` in one untimed worker, before any repetition."""
    if not names:
        return
    progress(f"bench: preparing data of {', '.join(names)} (scale {scale:g}, untimed)")
    proc = subprocess.run([*WORKER, "--prepare", *names, str(scale)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AnonDuckError(f"bench: preparing the data of {', '.join(names)} failed:\n{proc.stderr[-2000:]}")


def to_markdown(report: dict[str, Any]) -> str:
    lines = [f"Machine: {report['machine']}; scale {report['scale']:g}.", "",
             "| case | rows | min s | median s | peak RSS MB | rows/s | figures |", "|---|---|---|---|---|---|---|"]
    for name, r in report["cases"].items():
        figures = ", ".join(f"{k}={v}" for k, v in r.items()
                            if k not in ("rows", "min_s", "median_s", "peak_rss_mb", "rows_per_s", "reps"))
        rps = f"{r['rows_per_s']:,.0f}" if r.get("rows_per_s") else "-"
        lines.append(f"| {name} | {r.get('rows', '-'):,} | {r['min_s']:.3f} | {r['median_s']:.3f} | "
                     f"{r['peak_rss_mb']:.0f} | {rps} | {figures} |")
    if report["ratios"]:
        lines += ["", "| peer / ours (median time) | ratio |", "|---|---|"]
        lines += [f"| {k} | {v:.1f}× |" for k, v in report["ratios"].items()]
    if report.get("floor_ratios"):
        lines += ["", "| ours / floor (median time) | ratio |", "|---|---|"]
        lines += [f"| {k} | {v:.2f}× |" for k, v in report["floor_ratios"].items()]
    return "\n".join(lines)


def run_curves(names: Sequence[str], *, scales: Sequence[float], reps: int, out_dir: Path,
               progress=print) -> dict[str, Any]:
    """Time vs rows for each case over ``scales`` (e.g. 1, 2, 4, 8): a markdown table, and a
    PNG per case when matplotlib (the ``bench`` extra) is installed."""
    curves: dict[str, list[dict[str, Any]]] = {}
    for scale in scales:
        report = run_cases(names, scale=scale, reps=reps, progress=progress)
        for name, r in report["cases"].items():
            curves.setdefault(name, []).append({"scale": scale, "rows": r.get("rows"), "median_s": r["median_s"],
                                                "peak_rss_mb": r["peak_rss_mb"]})
    plots = _plot(curves, out_dir)
    return {"machine": _machine(), "curves": curves, "plots": plots}


def curves_markdown(result: dict[str, Any]) -> str:
    lines = [f"Machine: {result['machine']}.", ""]
    for name, points in result["curves"].items():
        lines += [f"**{name}**", "", "| scale | rows | median s | s per 1M rows | peak RSS MB |", "|---|---|---|---|---|"]
        for p in points:
            per = p["median_s"] / p["rows"] * 1e6 if p.get("rows") else float("nan")
            lines.append(f"| {p['scale']:g} | {p['rows']:,} | {p['median_s']:.2f} | {per:.2f} | {p['peak_rss_mb']:.0f} |")
        if name in result["plots"]:
            lines += ["", f"![{name}]({result['plots'][name]})"]
        lines.append("")
    return "\n".join(lines)


def _plot(curves: dict[str, list[dict[str, Any]]], out_dir: Path) -> dict[str, str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, points in curves.items():
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([p["rows"] for p in points], [p["median_s"] for p in points], marker="o")
        ax.set_xlabel("rows")
        ax.set_ylabel("median seconds")
        ax.set_title(name)
        fig.tight_layout()
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths[name] = str(path)
    return paths


def write_curves(result: dict[str, Any], out: Path) -> Path:
    """``out`` with suffix ``.curves.json`` and ``.curves.md``; returns the markdown path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".curves.json").write_text(json.dumps(result, indent=2, default=str))
    md = out.with_suffix(".curves.md")
    md.write_text(curves_markdown(result) + "\n")
    return md


def write(report: dict[str, Any], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    md = out.with_suffix(".md")
    md.write_text(to_markdown(report) + "\n")
    return md


def _machine() -> str:
    import os
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
