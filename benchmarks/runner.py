"""Run cases × repetitions in fresh processes; summarize as JSON and a markdown table.

The cases' data is built first, in one untimed worker (``--prepare``): a repetition that
generated its data would report the generator's memory as the case's peak RSS (a cold cache
once doubled the 10M-row k-anonymity case's), so a repetition that adds to the data cache is an error."""
from __future__ import annotations

import importlib.util
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from anon_duck.errors import AnonDuckError
from . import child_env, omop_cases, postgres_cases  # noqa: F401  (register the OMOP-shaped and PostgreSQL cases)
from .utility import cases as utility_cases  # noqa: F401  (register the utility benchmark's cases)
from .cases import CASES, FLOORS, NEEDS, PEERS, PREPARE
from .load import BUSY, CpuWatch
from .spark_cases import SPARK

WORKER = [sys.executable, "-m", "benchmarks.worker"]


def run_cases(names: Sequence[str], *, scale: float, reps: int, progress=print,
              memory_limit: str | None = None) -> dict[str, Any]:
    """Each case ``reps`` times, each repetition in a fresh worker with DuckDB capped at
    ``memory_limit``; per case the median and minimum time, the peak RSS over the repetitions
    and the most other programs kept the machine busy during one of them (bench/load.py)."""
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise AnonDuckError(f"bench: unknown case {unknown[0]!r}; cases: {', '.join(sorted(CASES))}")
    missing = [n for n in names if not installed(n)]
    if missing:
        raise AnonDuckError(f"bench: case {missing[0]!r} needs {NEEDS[missing[0]]}, which is not installed: "
                            "pip install -e '.[bench]'")
    names = list(names or sorted(CASES))
    _prepare([n for n in names if n in PREPARE], scale, progress)
    results: dict[str, Any] = {}
    for name in names:
        runs = []
        for rep in range(reps):
            progress(f"bench {name} (scale {scale:g}) repetition {rep + 1}/{reps}")
            watch = CpuWatch()
            limit = ["--memory-limit", memory_limit] if memory_limit else []
            proc = subprocess.run([*WORKER, name, str(scale), *limit], capture_output=True, text=True, env=child_env())
            if proc.returncode != 0:
                raise AnonDuckError(f"bench case {name!r} failed:\n{proc.stderr[-2000:]}")
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            if run["data_built"]:
                raise AnonDuckError(f"bench case {name!r} generated data inside a timed repetition "
                                    f"({', '.join(run['data_built'])}): name its builder with @case(..., data=...)")
            run.update(other_load=watch.other_load(), loadavg=watch.loadavg)
            runs.append(run)
        secs = [r["seconds"] for r in runs]
        summary = {k: v for k, v in runs[-1].items()
                   if k not in ("seconds", "peak_rss_mb", "data_built", "other_load", "loadavg")}
        summary.update({k: max(r.get(k, 0) for r in runs) for k in PEAKS if any(k in r for r in runs)})
        summary.update(min_s=min(secs), median_s=statistics.median(secs), reps=reps, memory_limit=memory_limit,
                       other_load=max(r["other_load"] for r in runs), loadavg=max(r["loadavg"] for r in runs))
        if summary.get("rows"):
            summary["rows_per_s"] = summary["rows"] / summary["median_s"] if summary["median_s"] else None
        results[name] = summary
    ratios = {f"{peer} / {ours}": results[peer]["median_s"] / results[ours]["median_s"]
              for peer, ours in PEERS.items() if peer in results and ours in results and results[ours]["median_s"]}
    floors = {f"{ours} / {floor}": results[ours]["median_s"] / results[floor]["median_s"]
              for floor, ours in FLOORS.items() if floor in results and ours in results and results[floor]["median_s"]}
    same = {f"{peer} / {ours}": results[peer]["release"] == results[ours]["release"]
            for peer, ours in PEERS.items() if "release" in results.get(peer, {}) and "release" in results.get(ours, {})}
    return {"machine": _machine(), "scale": scale, "memory_limit": memory_limit, "cases": results, "ratios": ratios,
            "floor_ratios": floors, "same_release": same}


def quick_cases() -> list[str]:
    """``--quick``'s cases: every registered case but those that start a Spark session (CI has
    neither the JVM nor the minutes each session's start costs), the peers whose library is
    not installed (the test environment leaves them out: pycanon pins an old numpy), and the
    utility cases' twins at a second k (the same code as the first k)."""
    return [n for n in sorted(CASES) if n not in SPARK and n not in utility_cases.TWINS and installed(n)]


def installed(name: str) -> bool:
    """Whether the peer library case ``name`` imports (if any) is installed."""
    return name not in NEEDS or importlib.util.find_spec(NEEDS[name]) is not None


def _prepare(names: Sequence[str], scale: float, progress: Callable[[str], None]) -> None:
    """Build and cache the data of ``names`` in one untimed worker, before any repetition."""
    if not names:
        return
    progress(f"bench: preparing data of {', '.join(names)} (scale {scale:g}, untimed)")
    proc = subprocess.run([*WORKER, "--prepare", *names, str(scale)], capture_output=True, text=True, env=child_env())
    if proc.returncode != 0:
        raise AnonDuckError(f"bench: preparing the data of {', '.join(names)} failed:\n{proc.stderr[-2000:]}")


# Memory figures of the Spark cases (spark_cases.py): the largest over the repetitions is kept,
# as for peak_rss_mb, and each gets a column of its own in a table where a case returned it;
# other_mb (the tree's processes of no role, returned only when there were any) is kept the same
# way and shown among the figures.
SPARK_COLUMNS = {"session_s": "session s", "jvm_peak_mb": "JVM MB", "py_driver_peak_mb": "Py driver MB",
                 "py_workers_max_mb": "Py worker max MB", "py_workers_sum_mb": "Py workers sum MB"}
PEAKS = ("peak_rss_mb", "other_mb", *SPARK_COLUMNS)
SHOWN = ("rows", "min_s", "median_s", "peak_rss_mb", "rows_per_s", "reps", "memory_limit", "other_load", "loadavg",
         *SPARK_COLUMNS)


def to_markdown(report: dict[str, Any]) -> str:
    extra = [k for k in SPARK_COLUMNS if any(k in r for r in report["cases"].values())]
    lines = [f"Machine: {report['machine']}; scale {report['scale']:g}; DuckDB memory_limit "
             f"{report.get('memory_limit') or 'default'}.", "",
             "| case | rows | min s | median s | peak RSS MB | " + "".join(f"{SPARK_COLUMNS[k]} | " for k in extra)
             + "other load | rows/s | figures |", "|---|---|---|---|---|" + "---|" * len(extra) + "---|---|---|"]
    for name, r in report["cases"].items():
        figures = ", ".join(f"{k}={v}" for k, v in r.items() if k not in SHOWN)
        rps = f"{r['rows_per_s']:,.0f}" if r.get("rows_per_s") else "-"
        cells = "".join(f"{r[k]:g} | " if k in r else "- | " for k in extra)
        lines.append(f"| {name} | {r.get('rows', '-'):,} | {r['min_s']:.3f} | {r['median_s']:.3f} | "
                     f"{r['peak_rss_mb']:.0f} | {cells}{load_cell(r)} | {rps} | {figures} |")
    if report["ratios"]:
        same = report.get("same_release", {})
        head = ("| peer / ours (median time) | ratio | same release? |", "|---|---|---|") if same else \
            ("| peer / ours (median time) | ratio |", "|---|---|")
        lines += ["", *head]
        lines += [f"| {k} | {v:.1f}× |" + (f" {_same_cell(same.get(k))} |" if same else "")
                  for k, v in report["ratios"].items()]
    if report.get("floor_ratios"):
        lines += ["", "| ours / floor (median time) | ratio |", "|---|---|"]
        lines += [f"| {k} | {v:.2f}× |" for k, v in report["floor_ratios"].items()]
    return "\n".join(lines)


def _same_cell(same: bool | None) -> str:
    return "-" if same is None else ("**same**" if same else "**DIFFERENT**")


def load_cell(r: dict[str, Any]) -> str:
    """The other load of a measurement, marked **busy** above :data:`load.BUSY`: a number
    taken on a busy machine is never shown as if it were not."""
    load = r.get("other_load")
    if load is None:
        return "-"
    return f"**busy {load:.2f}**" if load > BUSY else f"{load:.2f}"


def growth_exponent(points: Sequence[dict[str, Any]]) -> float | None:
    """The least-squares slope of log(time) on log(rows): time grows about as rows^slope."""
    pts = [(p["rows"], p["median_s"]) for p in points if p.get("rows") and p["median_s"] > 0]
    if len(pts) < 2 or len({r for r, _ in pts}) < 2:
        return None
    x, y = np.log([r for r, _ in pts]), np.log([t for _, t in pts])
    return float(np.polyfit(x, y, 1)[0])


def run_curves(names: Sequence[str], *, scales: Sequence[float], reps: int, out_dir: Path,
               progress=print, memory_limit: str | None = None) -> dict[str, Any]:
    """Time vs rows for each case over ``scales`` (e.g. 1, 2, 4, 8): a markdown table with the
    growth exponent, and a PNG per case when matplotlib (the ``bench`` extra) is installed."""
    curves: dict[str, list[dict[str, Any]]] = {}
    for scale in scales:
        report = run_cases(names, scale=scale, reps=reps, progress=progress, memory_limit=memory_limit)
        for name, r in report["cases"].items():
            curves.setdefault(name, []).append({"scale": scale, **r})
    plots = _plot(curves, out_dir)
    return {"machine": _machine(), "memory_limit": memory_limit, "curves": curves, "plots": plots}


def curves_markdown(result: dict[str, Any]) -> str:
    lines = [f"Machine: {result['machine']}; DuckDB memory_limit {result.get('memory_limit') or 'default'}.", ""]
    for name, points in result["curves"].items():
        lines += [f"**{name}**", "", "| scale | rows | median s | s per 1M rows | peak RSS MB | other load |",
                  "|---|---|---|---|---|---|"]
        for p in points:
            per = p["median_s"] / p["rows"] * 1e6 if p.get("rows") else float("nan")
            lines.append(f"| {p['scale']:g} | {p['rows']:,} | {p['median_s']:.2f} | {per:.2f} | "
                         f"{p['peak_rss_mb']:.0f} | {load_cell(p)} |")
        slope = growth_exponent(points)
        if slope is not None:
            lines += ["", f"Growth: time ∝ rows^{slope:.2f} (least-squares slope of log time on log rows, "
                          f"{len(points)} points)."]
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

    import duckdb
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"DuckDB {duckdb.__version__}")
