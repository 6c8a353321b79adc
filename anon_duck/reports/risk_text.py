"""``anon-duck risk``'s terminal summary of :func:`anon_duck.api.risk`'s dict: a few lines a
steward reads top down (how risky is the input, what drives it), not a dump of every key;
``--json`` prints the whole dict."""
from __future__ import annotations

from typing import Any

# class sizes and QI pairs listed before "..."
SHOWN_SIZES = 8
SHOWN_PAIRS = 5


def risk_summary(out: dict[str, Any]) -> str:
    lines: list[str] = []
    if out["qis"] is not None:
        lines += _qis(out["qis"])
    if out["drivers"] is not None:
        lines += _drivers(out["drivers"])
    if out["codes"] is not None:
        lines += _codes(out["codes"])
    if out["events"] is not None:
        lines += _events(out["events"])
    return "\n".join(lines)


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f} %"


def _at_risk(rows: list[dict[str, Any]]) -> str:
    return "   ".join(f"risk > {r['threshold']:g}: {_pct(r['share'])}" for r in rows)


def _qis(q: dict[str, Any]) -> list[str]:
    n = q["n_records"]
    sizes = "  ".join(f"{s['class_size']}: {s['n_classes']:,}" for s in q["class_sizes"][:SHOWN_SIZES])
    more = "  ..." if len(q["class_sizes"]) > SHOWN_SIZES else ""
    p = q["prosecutor"]
    lines = [
        f"Input: {n:,} records; quasi-identifiers {', '.join(q['columns'])}",
        f"  equivalence classes  {q['n_classes']:,} (sizes {q['min_class_size']} to {q['max_class_size']}); "
        f"sample uniques {q['sample_uniques']['records']:,} ({_pct(q['sample_uniques']['share'])})",
        f"  classes by size      {sizes}{more}",
        f"  prosecutor risk      highest {p['highest']:.4g}, average {p['average']:.4g}",
        f"  records at risk      {_at_risk(p['records_at_risk'])}",
        f"  records in classes smaller than k = {q['records_below_k']['k']}: {_pct(q['records_below_k']['share'])}",
        f"  marketer risk        {q['marketer']['average']:.4g}",
    ]
    j = q["journalist"]
    if j is not None:
        lines += [f"  journalist risk      highest {j['highest']:.4g}, average {j['average']:.4g}",
                  f"    records at risk    {_at_risk(j['records_at_risk'])}"]
    pop = q["population"]
    if pop is not None:
        lines.append(f"  population           {pop['size']:,} persons")
        if "uniques" in pop:
            lines.append(f"    population uniques (counted in the population table): {pop['uniques']:,} "
                         f"({_pct(pop['uniques_share'])}); sample uniques unique in it: "
                         f"{pop['sample_uniques_unique_in_population']:,}")
        est = pop["estimates"]
        pitman = est["pitman"]
        pitman_text = ("did not converge" if pitman["share"] is None else f"{_pct(pitman['share'])}"
                       + (f" (theta {pitman['theta']:.4g}, alpha {pitman['alpha']:.4g})" if pitman["theta"] else ""))
        lines.append(f"    population uniqueness estimated from the sample (sampling fraction "
                     f"{_pct(est['sampling_fraction'])}): Zayatz {_pct(est['zayatz']['share'])}, Pitman "
                     f"{pitman_text}; Dankar et al.'s rule picks {est['dankar_rule'].capitalize()}")
    return lines


def _drivers(d: dict[str, Any]) -> list[str]:
    lines = [f"What drives uniqueness ({d['sample_uniques']:,} sample uniques; generalize the first ones first):"]
    width = max(len(r["qi"]) for r in d["per_qi"])
    for r in d["per_qi"]:
        separation = "n/a" if r["separation"] is None else f"{r['separation']:.3f}"
        lines.append(f"  without {r['qi']:<{width}}  {r['uniques_without']:>8,} uniques ({-r['uniques_drop']:+,})   "
                     f"{r['distinct']:,} distinct values, separation {separation}")
    for r in d["per_pair"][:SHOWN_PAIRS]:
        lines.append(f"  without {' + '.join(r['qis'])}: {r['uniques_without']:,} uniques ({-r['uniques_drop']:+,})")
    return lines


def _codes(c: dict[str, Any]) -> list[str]:
    lines = [f"Code sets ({c['n_persons']:,} persons; an adversary knows up to m codes, k = {c['k']}):"]
    for r in c["by_m"]:
        lines.append(f"  m = {r['m']}: {_pct(r['below_k_share'])} of persons hold a set of <= {r['m']} codes "
                     f"that fewer than {c['k']} persons hold; {_pct(r['unique_share'])} one that nobody else holds")
    return lines


def _events(e: dict[str, Any]) -> list[str]:
    prefixes = "   ".join(f"j = {r['j']}: {_pct(r['unique_share'])}" for r in e["first_events"])
    return [f"Trajectories ({e['n_persons']:,} persons with events):",
            f"  unique (code, age) trajectory: {_pct(e['unique_trajectory_share'])}",
            f"  unique on the first j events:  {prefixes}"]
