"""The utility table BENCHMARKS.md shows: one row per method and k, from the step's result."""
from __future__ import annotations

from typing import Any, Mapping

from ..runner import load_cell
from .cases import KS, METHODS, OUTCOMES, name

HEAD = ("| method | k | persons | exact | generalized | without counts | dropped | NCP | ARE: X | ARE: X and Y "
        "| ARE: X, born in Z | ARE: all answered | run s | verified | other load |")


def utility_markdown(result: Mapping[str, Any]) -> str:
    """The table of a one-scale step holding the utility cases (those it measured)."""
    lines = [HEAD, "|" + "---|" * (HEAD.count("|") - 1)]
    for method in METHODS:
        for k in KS:
            r = result["cases"].get(name(method, k))
            if r is None:
                continue
            shares = [_percent(r.get(f"pairs_{o}")) for o in OUTCOMES]
            errors = [_number(r.get(f"are_{kind}")) for kind in ("code", "pair", "band")]
            lines.append(f"| {method} | {k} | {r['rows']:,} | {' | '.join(shares)} | {_number(r.get('ncp'))} | "
                         f"{' | '.join(errors)} | {_number(r.get('are'))} ({r.get('answered', 0)}) | "
                         f"{r['median_s']:.1f} | {'yes' if r.get('verified') else '**no**'} | {load_cell(r)} |")
    return "\n".join(lines)


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f} %"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
