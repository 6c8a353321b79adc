"""One self-contained HTML file from a report or sweep document, or from ``anon-duck risk``'s dict: inline CSS, inline SVG figures
(:mod:`.plots`), no script, no link to anything outside the file, so it opens without a network
and can be mailed or archived as it is. Written to a temporary sibling and renamed into place."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import jinja2
from markupsafe import Markup

from ..errors import InputError
from ..version import __version__
from . import plots, risk_plots
from .text import number, risk_rows

TEMPLATES = Path(__file__).resolve().parent / "templates"

_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True)
_ENV.filters["num"] = number


def check_target(path: Path) -> None:
    """Refuse, before any work, a path whose folder does not exist or that names a folder."""
    if not path.parent.is_dir():
        raise InputError(f"--html {path}: the folder {path.parent} does not exist (nothing was written)")
    if path.is_dir():
        raise InputError(f"--html {path}: is a folder; give a file name such as report.html")


def report_page(doc: Mapping[str, Any]) -> str:
    risk = doc["risk"]
    figures = {"risk": plots.risk_bars(risk), "classes": plots.class_histograms(risk)}
    if doc["loss"]["attributes"]:
        figures["loss"] = plots.attribute_loss(doc["loss"]["attributes"])
    workloads = [(w, Markup(plots.workload(w, i))) for i, w in enumerate(doc["workloads"])]
    codes = (doc.get("retention") or {}).get("codes")
    if codes:
        figures["retention"] = plots.retention_bars(codes["bins"])
    return _ENV.get_template("report.html.j2").render(
        doc=doc, risk_rows=risk_rows(risk), figures={k: Markup(v) for k, v in figures.items()}, workloads=workloads)


def risk_page(out: Mapping[str, Any], release: str) -> str:
    """The page of :func:`anon_duck.api.risk`'s dict for the job publishing ``release``: the
    input summary, class sizes, records at risk, the drivers, code sets and trajectories (each
    section when the job has such data)."""
    figures = {}
    if out["qis"] is not None:
        figures["classes"] = risk_plots.class_sizes(out["qis"], out["options"]["k"])
        figures["at_risk"] = risk_plots.at_risk(out["qis"])
        figures["drivers"] = risk_plots.drivers(out["drivers"])
    if out["codes"] is not None:
        figures["codes"] = risk_plots.codes(out["codes"])
    if out["events"] is not None:
        figures["events"] = risk_plots.events(out["events"])
    return _ENV.get_template("risk.html.j2").render(out=out, release=release, version=__version__,
                                                    figures={k: Markup(v) for k, v in figures.items()})


def sweep_page(doc: Mapping[str, Any]) -> str:
    return _ENV.get_template("sweep.html.j2").render(doc=doc, figure=Markup(plots.sweep_curve(doc)))


def write(path: Path, page: str) -> None:
    """Write ``page`` to ``path`` all or nothing."""
    check_target(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        partial.write_text(page, encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
