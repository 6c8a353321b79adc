"""The report's retention section: what a release dropped, read from its retention tables
(anon_duck/retention.py): the codes dropped for the most persons, a histogram of the codes'
retention, and the records per QI and generalization level."""
from __future__ import annotations

from typing import Any, Mapping

from ..backend.base import Backend
from ..sqlrender import render

TOP = 20
BINS = tuple(f"{10 * b}-{10 * b + 10} %" for b in range(10))
_COLS = ("code", "code_label", "persons_input", "persons_exact", "persons_generalized", "persons_without_count",
         "persons_dropped")


def retention_section(backend: Backend, tables: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """``codes``: totals, the ``TOP`` codes with the most persons dropped and the histogram
    (``bins``: label -> number of codes whose share of persons kept falls in it), all over the
    named codes, and ``merged``: the one row of the codes too rare to be named (its label says
    how many and below which count; None without one); ``qis``: the
    qi_retention rows. A key is None when the release has no such table (a release published
    before retention tables, or a method without codes or QIs)."""
    out: dict[str, Any] = {"codes": None, "qis": None}
    if "retention" in tables:
        top = backend.rows("report: retention top", render("report/retention_top.sql.j2",
                                                           retention=tables["retention"]), {"limit": TOP})
        hist = dict((int(b), (int(c), int(p))) for b, c, p in backend.rows(
            "report: retention histogram", render("report/retention_histogram.sql.j2", retention=tables["retention"])))
        merged = backend.rows("report: retention merged", render("report/retention_merged.sql.j2",
                                                                 retention=tables["retention"]))
        out["codes"] = {
            "codes": sum(c for c, _ in hist.values()),
            "top_dropped": [dict(zip(_COLS, (r[0], r[1], *map(int, r[2:])))) for r in top],
            "bins": {BINS[b]: hist.get(b, (0, 0))[0] for b in range(10)},
            "merged": dict(zip(_COLS[1:], (merged[0][0], *map(int, merged[0][1:])))) if merged else None,
        }
    if "qi_retention" in tables:
        out["qis"] = [{"qi": q, "status": s, "level": lvl, "records": int(n)} for q, s, lvl, n in backend.rows(
            "report: qi retention", render("report/qi_retention.sql.j2", retention=tables["qi_retention"]))]
    return out


def text_lines(section: Mapping[str, Any] | None) -> list[str]:
    """The retention section for the terminal summary."""
    if not section or (section.get("codes") is None and section.get("qis") is None):
        return []
    lines = [""]
    codes = section.get("codes")
    if codes is not None:
        lines.append(f"retention of {codes['codes']} input codes (share of their persons the release shows them for)")
        lines.extend(f"  {label:<10}{n:>8} codes" for label, n in codes["bins"].items())
        if codes.get("merged"):
            m = codes["merged"]
            lines.append(f"  and {m['code_label']}, merged into one row: {m['persons_input']} persons, "
                         f"dropped for {m['persons_dropped']}")
        if codes["top_dropped"]:
            lines.append(f"codes dropped for the most persons (of {len(codes['top_dropped'])} shown)")
            for r in codes["top_dropped"]:
                label = "" if r["code_label"] == r["code"] else f" {r['code_label']}"
                lines.append(f"  {r['code']}{label}: dropped for {r['persons_dropped']} of {r['persons_input']}")
        else:
            lines.append("no code was dropped for any person")
    if section.get("qis"):
        lines.append("records per quasi-identifier and level")
        lines.extend(f"  {q['qi']:<20} {q['status']:<12} {'' if q['level'] is None else q['level']:>5} {q['records']:>10}"
                     for q in section["qis"])
    return lines
