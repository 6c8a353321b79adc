"""Every measure the report shows: its name, one line on what it means, and the paper that
defines it; and, per method, which numbers of the method's own report (``Method.report``) are
which measure. Also the one loss number a sweep plots for each method.

Nothing is computed here: the values are the method's, read from its report by key path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..methods.papers import PAPERS

# The five papers, as a measure's source names them ("Poulis et al. (2017) Def. 3-4"); the full
# references are in anon_duck/methods/papers.py and README.md.
SEED_000, SEED_001, SEED_002, SEED_003, SEED_004 = (
    PAPERS[k].narrative for k in ("artuc", "disassociation", "counterfeit", "lkc", "longitudinal"))


@dataclass(frozen=True)
class Measure:
    name: str
    meaning: str
    source: str
    lower_is_better: bool = True


MEASURES: dict[str, Measure] = {m.name: m for m in (
    Measure("NCP", "Normalized Certainty Penalty: the share of each QI's domain a released value spans, "
                   "averaged over records and QIs (0 exact, 1 fully generalized)",
            "Xu et al., Utility-based anonymization using local recoding, KDD 2006; " + SEED_000 + " Def. 3-4"),
    Measure("DM", "Discernibility metric: sum over classes of |class|^2 (large classes cost more)",
            "Bayardo & Agrawal, Data privacy through optimal k-anonymization, ICDE 2005"),
    Measure("C_avg/k", "Average class size divided by k (1 is the ideal: classes no larger than needed)",
            "LeFevre, DeWitt & Ramakrishnan, Mondrian multidimensional k-anonymity, ICDE 2006"),
    Measure("ARE", "Average relative error of seeded COUNT queries answered on the release",
            "LeFevre et al., ICDE 2006; " + SEED_000 + " Def. 7"),
    Measure("LM", "Loss metric: (leaves under the released value - 1) / (leaves of the domain - 1), "
                  "averaged over records and QIs",
            "Iyengar, Transforming data to satisfy privacy constraints, KDD 2002 (as " + SEED_002 + " uses it)"),
    Measure("LM_real", "LM over the real records only (counterfeits left out)", SEED_002),
    Measure("RCE", "Reconstruction error: how far the QI value distribution a recipient can rebuild "
                   "from the release and catalog is from the original's", SEED_002),
    Measure("counterfeits", "Counterfeit records added so that every class reaches k", SEED_002),
    Measure("query error", "Relative error of per-value COUNT queries on one QI, with the catalog "
                           "subtracted (raw: without it)", SEED_002 + " Fig. 5-10"),
    Measure("UL", "Utility loss of diagnosis codes per record: generalization (UL_gen) plus suppression "
                  "(UL_sup)", SEED_000 + " Def. 5-6"),
    Measure("UL_gen", "Utility loss from generalizing codes into tokens", SEED_000 + " Def. 5"),
    Measure("UL_sup", "Utility loss from suppressed code occurrences, per published record", SEED_000 + " Def. 6"),
    Measure("codes absent", "Share of the input's distinct diagnosis codes that no published token covers (%): "
                            "every occurrence suppressed by GenDiag, or held only by suppressed records", SEED_000),
    Measure("S", "GenDiag's suppressed codes: (cluster, code) pairs removed, summed over the clusters (a count, "
                 "not a share: one code suppressed in ten clusters counts ten times)", SEED_000 + " Requirement 4"),
    Measure("suppression rate", "Share of distinct diagnosis codes removed from the release", SEED_001 + " Fig. 14"),
    Measure("ARE W1", "ARE of COUNT queries for frequent code sets (1-4 codes) on the release", SEED_001 + " Def. 2"),
    Measure("ARE W2", "ARE of COUNT queries for random code sets (1-4 codes) on the release", SEED_001 + " Def. 2"),
    Measure("ARE W1 (reconstructed)", "ARE W1 averaged over seeded random reconstructions", SEED_001 + " §6"),
    Measure("MRE", "Mean relative error of the support of each utility constraint", SEED_001 + " Def. 3"),
    Measure("MRE within 5%", "Share of utility constraints whose support is off by less than 5%",
            SEED_001 + " Fig. 11", lower_is_better=False),
    Measure("ARE demographics (W1)", "ARE of COUNT queries on two demographic attributes", SEED_000 + " §5.4"),
    Measure("ARE demographic + code (W2)", "ARE of COUNT queries on one demographic attribute and one code",
            SEED_000 + " §5.4"),
    Measure("ARE codes (W3)", "ARE of COUNT queries on two diagnosis codes", SEED_000 + " §5.4"),
    Measure("DR", "Discernibility ratio: sum over classes of |class|^2 / |T|^2", SEED_003 + " §5.1"),
    Measure("CE", "Classification error (%) of a decision tree trained on the release", SEED_003 + " §5.1"),
    Measure("BE", "Baseline error (%): the same tree trained on the raw data", SEED_003 + " §5.1"),
    Measure("UE", "Upper-bound error (%): the raw data without the QIs", SEED_003 + " §5.1"),
    Measure("ILM", "Information loss of the generalized (code, age) pairs, per record (Algorithm 3)",
            SEED_004 + " Alg. 3 step 20"),
    Measure("ALM", "Information loss per released (code, age) pair (Algorithm 3)", SEED_004 + " Alg. 3 step 20"),
    Measure("ILM (Def. 8)", "ILM as Definition 8 normalizes it", SEED_004 + " Def. 8"),
    Measure("ALM (Def. 8)", "ALM as Definition 8 normalizes it", SEED_004 + " Def. 8"),
    Measure("suppressed records", "Records left out of the release under fulldomain's suppression_limit "
                                  "(ARX's record suppression)",
            "Prasser et al., ARX - a comprehensive tool for anonymizing biomedical data, AMIA 2014"),
    Measure("AvgRE", "Average relative error of frequent (code, age) combination COUNT queries",
            SEED_004 + " Appendix B"),
)}


# method -> [(measure name, key path into the method's report)]; a path that is missing or None in
# a report (e.g. CE without scikit-learn) is left out.
Path = tuple[str, ...]
_GENERALIZED: list[tuple[str, Path]] = [("NCP", ("ncp", "ncp")), ("DM", ("discernibility", "dm")),
                                        ("C_avg/k", ("discernibility", "c_avg_norm")), ("ARE", ("are", "are"))]
_ARTUC: list[tuple[str, Path]] = [("NCP", ("ncp",)), ("UL", ("ul",)), ("UL_gen", ("ul_gen",)), ("UL_sup", ("ul_sup",)),
                                  ("codes absent", ("absent_codes_pct",)), ("S", ("suppressed_codes",)),
                                  ("ARE demographics (W1)", ("are", "W1")),
                                  ("ARE demographic + code (W2)", ("are", "W2")), ("ARE codes (W3)", ("are", "W3"))]
METHOD_MEASURES: dict[str, list[tuple[str, Path]]] = {
    "fulldomain": [("LM", ("facts", "lm"))] + _GENERALIZED + [("suppressed records", ("suppressed",))],
    "artuc": _ARTUC, "artuc_baseline": _ARTUC, "artuc_rmr": _ARTUC,
    "counterfeit": [("LM", ("lm",)), ("LM_real", ("lm_real",)), ("DM", ("dm",)), ("RCE", ("rce",)),
                    ("counterfeits", ("n_counterfeits",))],
    "lkc": [("DR", ("discernibility", "dr")), ("CE", ("classification", "CE")), ("BE", ("classification", "BE")),
            ("UE", ("classification", "UE"))],
    "disassociation": [("ARE W1", ("are", "W1", "expected", "are")), ("ARE W2", ("are", "W2", "expected", "are")),
                       ("ARE W1 (reconstructed)", ("are", "W1", "are_mean")), ("MRE", ("mre", "mean")),
                       ("MRE within 5%", ("mre", "within_5")), ("suppression rate", ("suppression_rate",))],
    "cba": [("suppression rate", ("suppression_rate",)), ("ARE W1", ("are", "W1", "are")),
            ("ARE W2", ("are", "W2", "are"))],
    "longitudinal": [("ILM", ("ilm_alg",)), ("ALM", ("alm_alg",)), ("ILM (Def. 8)", ("ilm_def8",)),
                     ("ALM (Def. 8)", ("alm_def8",)), ("AvgRE", ("avg_re",))],
}


@dataclass(frozen=True)
class SweepLoss:
    """A method's headline loss: the one number ``run`` prints first, the report leads with and
    a sweep plots. It is a measure, read from the run's facts (``from_facts``: the release's
    metadata, which a sweep's staged run has too) or from the method's report."""

    measure: str
    path: Path
    from_facts: bool = False


# One headline per method, used by run, report, sweep and the demo. fulldomain's is LM, the
# measure its lattice search minimizes (NCP, which the report shows beside it, is not what
# chose the node); counterfeit's likewise (its paper's).
HEADLINE: dict[str, SweepLoss] = {
    "fulldomain": SweepLoss("LM", ("lm",), True),
    "artuc": SweepLoss("NCP", ("ncp",), True), "artuc_baseline": SweepLoss("NCP", ("ncp",), True),
    "artuc_rmr": SweepLoss("NCP", ("ncp",), True),
    "counterfeit": SweepLoss("LM", ("lm",), True),
    "lkc": SweepLoss("DR", ("discernibility", "dr")),
    "disassociation": SweepLoss("ARE W1", ("are", "W1", "expected", "are")),
    "cba": SweepLoss("suppression rate", ("suppression_rate",)),
    "longitudinal": SweepLoss("ILM", ("ilm_alg",), True),
}
SWEEP_LOSS = HEADLINE      # the name sweeps used before the headline was shared


def headline_of(method: str) -> SweepLoss:
    """The headline measure of ``method``; a plug-in's is its report's ``summary.info_loss``
    (a (name, value) pair)."""
    return HEADLINE.get(method, SweepLoss("info_loss", ("summary", "info_loss")))


def headline_value(method: str, facts: Mapping[str, Any] | None, report: Mapping[str, Any] | None) -> Any:
    """The headline's value from a run's facts or the method's report (whichever the headline
    reads; None when that one is not given or lacks it). A plug-in's (name, value) pair gives
    its value."""
    spec = headline_of(method)
    source = facts if spec.from_facts else report
    value = lookup(source, spec.path) if source is not None else None
    if isinstance(value, (list, tuple)):
        value = value[1]
    return value


def lookup(report: Mapping[str, Any], path: Path) -> Any:
    """The value at ``path`` in a nested report, or None when any step is missing."""
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def measures_of(method: str, report: Mapping[str, Any], facts: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The method's measures as ``{"name", "value", "meaning", "source", "key"}``, in the order
    :data:`METHOD_MEASURES` lists them (a path starting with ``facts`` reads the run's facts).
    A method without an entry (a plug-in) shows the numbers at the top of its report, with no
    meaning or source to give."""
    if method not in METHOD_MEASURES:
        return [{"name": key, "value": value, "meaning": "(a plug-in method's measure: no description)",
                 "source": "", "key": key} for key, value in report.items()
                if isinstance(value, (int, float)) and not isinstance(value, bool)]
    out = []
    source = {**report, "facts": dict(facts or {})}
    for name, path in METHOD_MEASURES[method]:
        value = lookup(source, path)
        if value is not None:
            m = MEASURES[name]
            out.append({"name": name, "value": value, "meaning": m.meaning, "source": m.source,
                        "key": ".".join(path)})
    return out
