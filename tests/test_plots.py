"""The report's figures, read back from their SVG (issue #29 item 9): a legend sits outside the
axes and covers no bar, a bar of value 0 shows a '0', and a sweep's points that fall on the
same place share one label instead of printing two on top of each other."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("matplotlib", reason="the report extra is not installed: pip install -e '.[report]'")

from anon_duck.reports import plots, risk_plots  # noqa: E402

NS = {"s": "http://www.w3.org/2000/svg"}


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _groups(root: ET.Element, prefix: str) -> list[ET.Element]:
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith(prefix)]


def _path_box(d: str) -> tuple[float, float, float, float]:
    nums = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", d)]
    xs, ys = nums[0::2], nums[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _axes_boxes(root: ET.Element) -> list[tuple[float, float, float, float]]:
    """The plotting area of every axes: the rectangles the bars are clipped to."""
    return [(float(r.get("x")), float(r.get("y")), float(r.get("x")) + float(r.get("width")),
             float(r.get("y")) + float(r.get("height"))) for r in root.iter("{http://www.w3.org/2000/svg}rect")]


def _legend_boxes(root: ET.Element) -> list[tuple[float, float, float, float]]:
    """The colour swatches and text anchors of every legend."""
    boxes = []
    for legend in _groups(root, "legend"):
        for path in legend.iter("{http://www.w3.org/2000/svg}path"):
            boxes.append(_path_box(path.get("d")))
        for text in legend.iter("{http://www.w3.org/2000/svg}text"):
            x, y = float(text.get("x")), float(text.get("y"))
            boxes.append((x, y - 8, x + 6 * len(text.text or ""), y))
    return boxes


def _outside(box, area) -> bool:
    return box[3] <= area[1] or box[1] >= area[3] or box[2] <= area[0] or box[0] >= area[2]


def _zero_marks(root: ET.Element) -> list[str]:
    return ["".join(g.itertext()).strip() for g in _groups(root, "zero")]


RISK = {"k": 2, "thresholds": [0.5, 0.2],
        "before": {"prosecutor_risk_max": 1.0, "prosecutor_risk_avg": 1.0, "records_below_k": 1.0,
                   "records_at_risk": [{"share": 1.0}, {"share": 1.0}]},
        "after": {"prosecutor_risk_max": 0.5, "prosecutor_risk_avg": 0.5, "records_below_k": 0.0,
                  "records_at_risk": [{"share": 0.0}, {"share": 1.0}]}}


def test_the_before_after_legend_is_outside_the_axes_and_every_zero_bar_shows_0():
    """The last bar reaches 1 (the right edge, where the legend used to sit); two 'after'
    values are 0, and each shows a '0'."""
    root = _tree(plots.risk_bars(RISK))
    (area,) = _axes_boxes(root)
    legend = _legend_boxes(root)
    assert legend and all(_outside(box, area) for box in legend)
    assert _zero_marks(root) == ["0", "0"]


def test_the_risk_pages_legends_are_outside_their_axes():
    at_risk = risk_plots.at_risk({"prosecutor": {"records_at_risk": [{"threshold": 0.5, "share": 1.0},
                                                                     {"threshold": 0.2, "share": 0.0}]},
                                  "journalist": {"records_at_risk": [{"threshold": 0.5, "share": 1.0},
                                                                     {"threshold": 0.2, "share": 1.0}]}})
    codes = risk_plots.codes({"k": 5, "by_m": [{"m": 1, "below_k_share": 1.0, "unique_share": 0.0},
                                               {"m": 2, "below_k_share": 1.0, "unique_share": 1.0}]})
    for svg, zeros in ((at_risk, 1), (codes, 1)):
        root = _tree(svg)
        (area,) = _axes_boxes(root)
        assert all(_outside(box, area) for box in _legend_boxes(root))
        assert _zero_marks(root) == ["0"] * zeros


def test_zero_bars_show_0_in_the_loss_and_class_size_figures():
    root = _tree(plots.attribute_loss([{"attribute": "age", "ncp": 0.4}, {"attribute": "sex", "ncp": 0.0}]))
    assert _zero_marks(root) == ["0"]
    side = {"distribution": [{"class_size": 1, "n_records": 3}, {"class_size": 5, "n_records": 10}],
            "n_classes": 5, "max_class_size": 5}
    root = _tree(plots.class_size_panels([("input", side, plots.BEFORE)], 2, "t"))
    assert _zero_marks(root) == ["0", "0"]          # buckets 2 and 3-4 hold no records


def test_a_sweeps_points_at_one_place_share_one_label():
    """k = 5 and k = 10 pick the same release: one label "k=5, 10" per panel, never two labels at
    one position (drawn over each other they read "k=$0"), and no '$' anywhere."""
    point = lambda v, loss, hi, avg: {"value": v, "loss": loss,   # noqa: E731
                                      "risk_after": {"prosecutor_risk_max": hi, "prosecutor_risk_avg": avg}}
    doc = {"param": "k", "loss": {"name": "LM"},
           "points": [point(2, 0.44, 0.5, 0.0017), point(5, 0.49, 0.071, 0.00066), point(10, 0.49, 0.071, 0.00066)]}
    svg = plots.sweep_curve(doc)
    texts = [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg) if t.startswith("k=")]
    assert sorted(texts) == ["k=2", "k=2", "k=5, 10", "k=5, 10"]
    positions = re.findall(r'<text[^>]*x="([\d.]+)" y="([\d.]+)"[^>]*>k=', svg)
    assert len(positions) == len(set(positions))
    assert "$" not in "".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert plots.point_labels("k", [2, 5, 10], [0.5, 0.07, 0.07], [0.4, 0.5, 0.5]) == [
        ("k=2", 0.5, 0.4), ("k=5, 10", 0.07, 0.5)]
