"""The report's figures as inline SVG text, drawn with matplotlib (the ``report`` extra).

matplotlib rather than Vega-Lite (altair + vl-convert): it renders SVG in-process with no
JavaScript runtime and no network, the SVG is static markup that any browser (or a PDF printer)
shows without a script, and it is already the project's plotting library (the bench's curves).
It is imported here only, lazily, with the Agg backend: the core package never needs it.
"""
from __future__ import annotations

import io
import re
from typing import Any, Mapping, Sequence

from ..errors import InputError

INSTALL = "pip install 'anon-duck[report]'"
BEFORE, AFTER = "#8c8c8c", "#2b6cb0"
SIZE_BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, 999), (1000, None))


def require() -> Any:
    """matplotlib's pyplot on the Agg backend, or an InputError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise InputError(f"--html draws its figures with matplotlib, which is not installed: {INSTALL}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def svg(plt: Any, fig: Any, name: str) -> str:
    """The figure as an ``<svg>`` element: text kept as text (searchable, small), ids salted by
    the figure's name (several SVGs share one page), no XML prolog, DOCTYPE or metadata."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None,
                                                                        "Format": None, "Type": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


def risk_bars(risk: Mapping[str, Any]) -> str:
    """Before/after bars of the risk shares: highest and average risk, records below k, records
    at risk per threshold."""
    plt = require()
    keys = [(lambda side: side["prosecutor_risk_max"], "highest risk"),
            (lambda side: side["prosecutor_risk_avg"], "average risk"),
            (lambda side: side["records_below_k"], f"records in classes < {risk['k']}")]
    keys += [(lambda side, i=i: side["records_at_risk"][i]["share"], f"records at risk > {t:g}")
             for i, t in enumerate(risk["thresholds"])]
    fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.4 * len(keys)))
    ys = range(len(keys))
    ax.barh([y - 0.2 for y in ys], [value(risk["before"]) for value, _ in keys], 0.4, color=BEFORE, label="before")
    if risk["after"]:
        ax.barh([y + 0.2 for y in ys], [value(risk["after"]) for value, _ in keys], 0.4, color=AFTER, label="after")
    ax.set_yticks(list(ys), [label for _, label in keys])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share (prosecutor model)")
    ax.legend(loc="lower right", frameon=False)
    return svg(plt, fig, "risk")


def buckets(distribution: Sequence[Mapping[str, int]], largest: int) -> list[tuple[str, int]]:
    """Records per class-size bucket (1, 2, 3-4, 5-9, ...) up to the one holding ``largest``."""
    out = []
    for lo, hi in SIZE_BUCKETS:
        if lo > largest:
            break
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi else f"{lo}+")
        out.append((label, sum(d["n_records"] for d in distribution
                               if d["class_size"] >= lo and (hi is None or d["class_size"] <= hi))))
    return out


def class_histograms(risk: Mapping[str, Any]) -> str:
    """Records per class size, before and after, side by side."""
    sides = [("before", risk["before"], BEFORE)] + ([("after", risk["after"], AFTER)] if risk["after"] else [])
    return class_size_panels(sides, risk["k"], "classes")


def class_size_panels(sides: Sequence[tuple[str, Mapping[str, Any], str]], k: int, name: str) -> str:
    """One panel of records per class-size bucket for each ``(title, side, colour)``, a side
    holding ``distribution``, ``n_classes`` and ``max_class_size``; a dashed line at ``k``."""
    plt = require()
    fig, axes = plt.subplots(1, len(sides), figsize=(6.4 if len(sides) == 1 else 10, 3), squeeze=False)
    largest = max(side["max_class_size"] or 0 for _, side, _ in sides)     # one x axis for every side
    for ax, (title, side, color) in zip(axes[0], sides):
        bars = buckets(side["distribution"], largest)
        ax.bar([b for b, _ in bars], [n for _, n in bars], color=color)
        ax.set_title(f"{title}: {side['n_classes']:,} classes", fontsize=10)
        ax.set_xlabel("class size")
        ax.set_ylabel("records")
        ax.tick_params(axis="x", labelsize=8, labelrotation=45)
        ax.axvline(-0.5 + sum(1 for lo, _ in SIZE_BUCKETS[:len(bars)] if lo < k), color="#c53030",
                   linestyle="--", linewidth=1)
    return svg(plt, fig, name)


def attribute_loss(attributes: Sequence[Mapping[str, Any]]) -> str:
    """NCP per attribute."""
    plt = require()
    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.45 * len(attributes)))
    ax.barh([a["attribute"] for a in attributes], [a.get("ncp") or 0.0 for a in attributes], color=AFTER)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("NCP (0 = original values, 1 = fully generalized)")
    return svg(plt, fig, "loss")


def workload(w: Mapping[str, Any], index: int) -> str:
    """A workload's histogram (per-query errors) or its bars (per size, per bin)."""
    plt = require()
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    if "histogram" in w:
        edges, counts = w["histogram"]["edges"], w["histogram"]["counts"]
        ax.bar(edges[:-1], counts, width=[b - a for a, b in zip(edges, edges[1:])], align="edge", color=AFTER,
               edgecolor="white")
        ax.set_xlabel(w["measure"])
        ax.set_ylabel("queries")
    else:
        ax.bar(list(w["bars"]), list(w["bars"].values()), color=AFTER)
        ax.set_ylabel(w["name"].split(" by ")[0].split(" of ")[0])
        ax.tick_params(axis="x", labelsize=8)
    ax.set_title(w["name"], fontsize=10)
    return svg(plt, fig, f"workload{index}")


def retention_bars(bins: Mapping[str, int]) -> str:
    """The codes per retention bin: the share of a code's persons the release shows it for."""
    plt = require()
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    ax.bar(list(bins), list(bins.values()), color=AFTER)
    ax.set_ylabel("codes")
    ax.set_xlabel("share of the code's persons for whom the release shows it")
    ax.tick_params(axis="x", labelsize=8)
    ax.set_title("Retention of the input's codes", fontsize=10)
    return svg(plt, fig, "retention")


def sweep_curve(doc: Mapping[str, Any]) -> str:
    """The trade-off: the method's loss against the release's highest and average risk, one
    labelled point per parameter value."""
    plt = require()
    points = [p for p in doc["points"] if p["risk_after"] is not None and p["loss"] is not None]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, key, label in ((axes[0], "prosecutor_risk_max", "highest risk"),
                           (axes[1], "prosecutor_risk_avg", "average risk")):
        xs = [p["risk_after"][key] for p in points]
        ys = [p["loss"] for p in points]
        ax.plot(xs, ys, marker="o", color=AFTER)
        for p, x, y in zip(points, xs, ys):
            ax.annotate(f"{doc['param']}={p['value']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(f"{label} of the release (prosecutor model)")
    axes[0].set_ylabel(f"{doc['loss']['name']} (loss)")
    return svg(plt, fig, "sweep")
