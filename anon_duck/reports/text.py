"""The terminal report: a short summary a steward reads in one screen (headline numbers, risk
before and after, one line per measure with what it means). ``--json`` prints the document."""
from __future__ import annotations

from .retention import text_lines as retention_lines

from typing import Any, Mapping

RISK_ROWS = (("prosecutor_risk_max", "highest re-identification risk (1 / smallest class)"),
             ("prosecutor_risk_avg", "average re-identification risk"),
             ("records_below_k", "share of records in classes smaller than k"),
             ("sample_uniques", "records alone in their class"),
             ("n_classes", "classes"),
             ("marketer_risk", "marketer risk (no population: classes / records)"))


def risk_rows(risk: Mapping[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """``(key, label, before, after)`` per row of the before/after risk table: :data:`RISK_ROWS`,
    then the share of records at risk above each threshold (``after`` is None without an after
    side). The key names the value in a side (``records_at_risk.<t>`` for a threshold)."""
    before, after = risk["before"], risk["after"]
    rows = [(key, label, before[key], after[key] if after else None) for key, label in RISK_ROWS]
    for i, t in enumerate(risk["thresholds"]):
        rows.append((f"records_at_risk.{t:g}", f"share of records at risk > {t:g} (1 in {1 / t:.3g})",
                     before["records_at_risk"][i]["share"], after["records_at_risk"][i]["share"] if after else None))
    return rows


def number(value: Any) -> str:
    """A measure as the report shows it: integers whole, other numbers to 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def summary(doc: Mapping[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in doc["params"].items() if not isinstance(v, (dict, list)))
    checks = doc["checks"]
    verdicts = ", ".join(f"{name} {'pass' if ok else 'FAIL'}" for name, ok in checks["verified"].items())
    lines = [f"release {doc['release']}: method {doc['method']} ({params}), seed {doc['seed']}",
             f"verifier at publication: {checks['verdict'].upper()} ({verdicts})"]
    headline = doc.get("headline")
    if headline and headline["value"] is not None:
        lines.append(f"headline loss: {headline['name']} {number(headline['value'])} (lower is better)")
    lines.append("")
    risk = doc["risk"]
    before, after = risk["before"], risk["after"]
    title = f"risk ({risk['model']} model, k = {risk['k']})"
    lines.append(f"{title:<54}{'before':>8}   {'after':>8}")
    for _, label, b, a in risk_rows(risk):
        lines.append(f"  {label:<52}{number(b):>8}   {number(a) if after else '-':>8}")
    lines.append(f"  before: {before['class_definition']}")
    lines.append(f"  after:  {after['class_definition'] if after else 'no class view for this method'}")
    lines.append("")
    attributes = doc["loss"]["attributes"]
    if attributes:
        lines.append("loss per attribute")
        for a in attributes:
            extra = "".join(f", {key.replace('_', ' ')} {number(a[key])}" for key in ("level", "cut", "mean_width", "query_error")
                            if key in a)
            lines.append(f"  {a['attribute']:<20} NCP {number(a.get('ncp'))}{extra}")
    else:
        lines.append(f"loss per attribute: none ({doc['loss']['note']})")
    lines.append("")
    lines.append("measures")
    for m in doc["measures"]:
        lines.append(f"  {m['name']:<24}{number(m['value']):>10}  {m['meaning']}")
    for w in doc["workloads"]:
        if "quantiles" in w:
            q = w["quantiles"]
            lines.append(f"  {w['name']}: median {number(q['p50'])}, 90% below {number(q['p90'])}, "
                         f"max {number(q['p100'])} ({w['n']} queries)")
    lines.extend(f"note: {n}" for n in doc["notes"])
    lines.extend(retention_lines(doc.get("retention")))
    return "\n".join(lines)


def sweep_table(doc: Mapping[str, Any]) -> str:
    """One line per point of a sweep."""
    loss = doc["loss"]["name"]
    lines = [f"sweep of {doc['method']}'s {doc['param']} (nothing published): {loss} = {doc['loss']['meaning']}",
             f"{doc['param']:>8} {loss:>12} {'risk max':>10} {'risk avg':>10} {'below k':>8} {'classes':>9} {'s':>7}"]
    for p in doc["points"]:
        r = p["risk_after"] or {}
        lines.append(f"{number(p['value']):>8} {number(p['loss']):>12} {number(r.get('prosecutor_risk_max')):>10} "
                     f"{number(r.get('prosecutor_risk_avg')):>10} {number(r.get('records_below_k')):>8} "
                     f"{number(r.get('n_classes')):>9} {p['seconds']:>7.2f}")
    return "\n".join(lines)
