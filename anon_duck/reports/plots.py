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


def legend_above(ax: Any, **kwargs: Any) -> None:
    """The legend in one row above the axes, never over a bar (inside, "lower right" covered the
    last bar whenever it reached the right edge)."""
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncol=max(len(handles), 1), frameon=False,
              borderaxespad=0, **kwargs)


def mark_zeros(ax: Any, positions: Sequence[float], values: Sequence[float | None], *, horizontal: bool,
               color: str) -> None:
    """A '0' where a bar's value is 0 (or missing): a zero-length bar draws nothing, and an
    absent bar reads as "no data" rather than "none". Each mark's SVG group id starts with
    ``zero`` (the tests find them by it)."""
    for i, (pos, value) in enumerate(zip(positions, values)):
        if value:
            continue
        xy, offset, align = ((0, pos), (2, 0), {"ha": "left", "va": "center"}) if horizontal else \
            ((pos, 0), (0, 1), {"ha": "center", "va": "bottom"})
        ax.annotate("0", xy, xytext=offset, textcoords="offset points", fontsize=8, color=color,
                    gid=f"zero-{ax.get_gid() or 'ax'}-{color.lstrip('#')}-{i}", annotation_clip=False, **align)


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
    before = [value(risk["before"]) for value, _ in keys]
    ax.barh([y - 0.2 for y in ys], before, 0.4, color=BEFORE, label="before")
    mark_zeros(ax, [y - 0.2 for y in ys], before, horizontal=True, color=BEFORE)
    if risk["after"]:
        after = [value(risk["after"]) for value, _ in keys]
        ax.barh([y + 0.2 for y in ys], after, 0.4, color=AFTER, label="after")
        mark_zeros(ax, [y + 0.2 for y in ys], after, horizontal=True, color=AFTER)
    ax.set_yticks(list(ys), [label for _, label in keys])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share (prosecutor model)")
    legend_above(ax)
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
    for i, (ax, (title, side, color)) in enumerate(zip(axes[0], sides)):
        ax.set_gid(f"panel{i}")
        bars = buckets(side["distribution"], largest)
        ax.bar([b for b, _ in bars], [n for _, n in bars], color=color)
        mark_zeros(ax, range(len(bars)), [n for _, n in bars], horizontal=False, color=color)
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
    values = [a.get("ncp") or 0.0 for a in attributes]
    ax.barh([a["attribute"] for a in attributes], values, color=AFTER)
    mark_zeros(ax, range(len(attributes)), values, horizontal=True, color=AFTER)
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
        mark_zeros(ax, range(len(w["bars"])), list(w["bars"].values()), horizontal=False, color=AFTER)
        ax.set_ylabel(w["name"].split(" by ")[0].split(" of ")[0])
        ax.tick_params(axis="x", labelsize=8)
    ax.set_title(w["name"], fontsize=10)
    return svg(plt, fig, f"workload{index}")


def point_labels(param: str, values: Sequence[Any], xs: Sequence[float], ys: Sequence[float]
                 ) -> list[tuple[str, float, float]]:
    """One label per distinct point: values that land on the same (x, y) share it ("k=5, 10").
    Two labels drawn at one place overprinted each other ("k=5" over "k=10" read "k=$0")."""
    at: dict[tuple[float, float], list[Any]] = {}
    for v, x, y in zip(values, xs, ys):
        at.setdefault((x, y), []).append(v)
    return [(f"{param}={', '.join(map(str, vs))}", x, y) for (x, y), vs in at.items()]


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
    labelled point per parameter value (values at the same point share one label)."""
    plt = require()
    points = [p for p in doc["points"] if p["risk_after"] is not None and p["loss"] is not None]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, key, label in ((axes[0], "prosecutor_risk_max", "highest risk"),
                           (axes[1], "prosecutor_risk_avg", "average risk")):
        xs = [p["risk_after"][key] for p in points]
        ys = [p["loss"] for p in points]
        ax.plot(xs, ys, marker="o", color=AFTER)
        for text, x, y in point_labels(doc["param"], [p["value"] for p in points], xs, ys):
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(f"{label} of the release (prosecutor model)")
    axes[0].set_ylabel(f"{doc['loss']['name']} (loss)")
    return svg(plt, fig, "sweep")
