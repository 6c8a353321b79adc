"""The figures of ``anon-duck risk --html`` (:func:`anon_duck.api.risk`'s dict, docs/risk.md), as
inline SVG drawn like the report's (:mod:`.plots`: matplotlib, Agg, text kept as text)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .plots import AFTER, BEFORE, class_size_panels, legend_above, mark_zeros, require, svg

SHOWN_PAIRS = 8
"""QI pairs drawn in the drivers figure (the table lists them all)."""


def class_sizes(q: Mapping[str, Any], k: int) -> str:
    """Records per class size of the input, the dashed line at k."""
    side = {"distribution": q["class_sizes"], "n_classes": q["n_classes"], "max_class_size": q["max_class_size"]}
    return class_size_panels([("input", side, BEFORE)], k, "risk-classes")


def at_risk(q: Mapping[str, Any]) -> str:
    """The share of records whose risk exceeds each threshold: prosecutor, and journalist when
    a population table gives it."""
    plt = require()
    rows = q["prosecutor"]["records_at_risk"]
    labels = [f"> {r['threshold']:g}\n(1 in {1 / r['threshold']:.3g})" for r in rows]
    journalist = q["journalist"]
    width = 0.4 if journalist else 0.6
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    xs = range(len(rows))
    left = [x - (width / 2 if journalist else 0) for x in xs]
    ax.bar(left, [r["share"] for r in rows], width, color=BEFORE, label="prosecutor")
    mark_zeros(ax, left, [r["share"] for r in rows], horizontal=False, color=BEFORE)
    if journalist:
        shares_j = [r["share"] for r in journalist["records_at_risk"]]
        ax.bar([x + width / 2 for x in xs], shares_j, width, color=AFTER, label="journalist")
        mark_zeros(ax, [x + width / 2 for x in xs], shares_j, horizontal=False, color=AFTER)
        legend_above(ax)
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_xlabel("re-identification risk above")
    ax.set_ylabel("share of records")
    return svg(plt, fig, "risk-at-risk")


def drivers(d: Mapping[str, Any]) -> str:
    """Sample uniques left when each QI (then each of the top pairs) is removed, with the input's
    sample uniques as a dashed line: the shortest bar is what to generalize first."""
    plt = require()
    rows = [(f"without {r['qi']}", r["uniques_without"], BEFORE) for r in d["per_qi"]]
    rows += [(f"without {' + '.join(r['qis'])}", r["uniques_without"], AFTER) for r in d["per_pair"][:SHOWN_PAIRS]]
    fig, ax = plt.subplots(figsize=(6.4, 0.8 + 0.32 * len(rows)))
    ax.barh([r[0] for r in rows], [r[1] for r in rows], color=[r[2] for r in rows])
    for color in (BEFORE, AFTER):
        mark_zeros(ax, [i for i, r in enumerate(rows) if r[2] == color], [r[1] for r in rows if r[2] == color],
                   horizontal=True, color=color)
    ax.axvline(d["sample_uniques"], color="#c53030", linestyle="--", linewidth=1)
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlabel(f"sample uniques left (dashed: {d['sample_uniques']:,} with every QI)")
    return svg(plt, fig, "risk-drivers")


def shares(title: str, xlabel: str, groups: Sequence[tuple[str, Sequence[float], str]], xs: Sequence[str],
           name: str) -> str:
    """Grouped bars of shares of persons (code sets per m, trajectories per j)."""
    plt = require()
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    width = 0.8 / len(groups)
    for i, (label, values, color) in enumerate(groups):
        positions = [x + (i - (len(groups) - 1) / 2) * width for x in range(len(xs))]
        heights = [0.0 if v is None else v for v in values]
        ax.bar(positions, heights, width, color=color, label=label)
        mark_zeros(ax, positions, heights, horizontal=False, color=color)
    ax.set_xticks(list(range(len(xs))), list(xs))
    ax.set_ylim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of persons")
    ax.set_title(title, fontsize=10, pad=18)      # room for the legend above the axes
    legend_above(ax, fontsize=8)
    return svg(plt, fig, name)


def codes(c: Mapping[str, Any]) -> str:
    return shares(f"code sets (k = {c['k']})", "codes the adversary knows (m)",
                  [(f"hold a rare set (< {c['k']} persons)", [r["below_k_share"] for r in c["by_m"]], BEFORE),
                   ("hold a set nobody else holds", [r["unique_share"] for r in c["by_m"]], AFTER)],
                  [str(r["m"]) for r in c["by_m"]], "risk-codes")


def events(e: Mapping[str, Any]) -> str:
    return shares("trajectories", "first j events the adversary knows",
                  [("unique on them", [r["unique_share"] for r in e["first_events"]], AFTER)],
                  [str(r["j"]) for r in e["first_events"]], "risk-events")
