"""The full benchmark suite behind BENCHMARKS.md, as data: ``anon-duck bench --suite``.

One command regenerates every number BENCHMARKS.md reports. Each step is a set of cases at
one scale (peers in the same step, so their ratios are measured side by side) or a scaling
curve; steps run one after another, each case in fresh worker processes (runner.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .runner import curves_markdown, run_cases, run_curves, to_markdown, write, write_curves


@dataclass(frozen=True)
class Step:
    name: str                            # output stem under the suite's folder
    title: str                           # heading in suite.md
    cases: tuple[str, ...]
    scale: float = 1.0
    reps: int = 1
    curve: tuple[float, ...] = ()        # scales of a scaling curve; empty = one scale


PLAN: tuple[Step, ...] = (
    Step("verifiers", "Verifiers vs pycanon and vs their floors (1M rows)",
         ("verify_k", "verify_k_floor", "verify_l", "verify_l_floor", "pycanon_k", "pycanon_l"), reps=3),
    Step("verifiers_more", "More verifiers (k^m, LKC; 1M rows beside their floors, and 10M rows under 2 GB)",
         ("verify_km", "verify_km_floor", "verify_lkc", "verify_lkc_floor", "verify_k_10m_2gb", "verify_km_10m_2gb", "verify_lkc_10m_2gb"), reps=3),
    Step("k_anonymizers", "Full-domain vs anonypy's Mondrian on Adult", ("fulldomain_adult", "anonypy_mondrian_adult")),
    Step("methods", "Methods end to end at the sizes their issues name (longitudinal: its curve's last point)",
         ("artuc_informs", "disassociation_bms", "counterfeit_adult_run", "lkc_adult"), reps=3),
    Step("counterfeit_x40", "Counterfeit lattice search on Adult ×40", ("counterfeit_adult",), scale=40, reps=3),
    Step("lkc_curve", "LKC scaling curve", ("lkc_adult",), curve=(0.2, 0.4, 0.6, 0.8, 1.0)),
    Step("dis_curve", "Disassociation scaling curve", ("disassociation_bms",), curve=(1, 2, 4, 8)),
    Step("long_curve", "Longitudinal scaling curve", ("longitudinal_d50",), curve=(0.125, 0.25, 0.5, 1.0)),
    # EHRD-like up to its full size (208,387 records, ~45 s; docs/artuc.md, Speed)
    Step("artuc_ehrd_curve", "ArtUC on EHRD-like data (k = 10, m = 2), 6K…208K records", ("artuc_ehrd",),
         curve=(0.03, 0.12, 0.25, 0.5, 1.0)),
    Step("artuc_curve", "ArtUC on INFORMS-like data ×1, ×2", ("artuc_informs_like",), curve=(1, 2)),
    Step("cf_curve", "Counterfeit lattice search scaling curve (Adult ×1…×40)", ("counterfeit_adult",),
         curve=(1, 2, 4, 8, 40)),
)


def run_suite(out_dir: Path, *, progress: Callable[[str], None] = print) -> Path:
    """Run every step of :data:`PLAN`; write ``<step>.json``/``.md`` and one ``suite.md``."""
    sections = []
    for step in PLAN:
        progress(f"suite step {step.name}: {', '.join(step.cases)}")
        out = out_dir / f"{step.name}.json"
        if step.curve:
            result = run_curves(step.cases, scales=step.curve, reps=step.reps, out_dir=out_dir, progress=progress)
            write_curves(result, out)
            body = curves_markdown(result)
        else:
            report = run_cases(step.cases, scale=step.scale, reps=step.reps, progress=progress)
            write(report, out)
            body = to_markdown(report)
        sections.append(f"## {step.title}\n\n{body}\n")
    suite = out_dir / "suite.md"
    suite.write_text("# Benchmark suite\n\n" + "\n".join(sections))
    return suite
