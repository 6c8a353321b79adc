"""Re-identification risk of a relation: the prosecutor model (a record's risk is one over its
equivalence class's size) that the verifiers report next to a verdict, and the whole analysis of
a job's input behind ``anon-duck risk`` (journalist and marketer risk, population uniqueness,
the QIs that drive uniqueness, code sets, trajectories; docs/risk.md).

The SQL is the dbt package's (``macros/risk.sql``), so a dbt model computing
``anon_duck.risk_measures`` and these functions give the same numbers for the same table; the
population models (:mod:`anon_duck.population`) are fitted to the class-size histogram it returns.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

from .argcheck import Relation, column_names, positive_int, show
from .backend.base import Backend
from .errors import InputError, JobError
from .job import DEFAULT_THRESHOLDS, Job, check_threshold
from .population import population_uniqueness
from .sqlrender import render
from .verifiers.models import refuse_nulls

RISK_MEASURES = ("n_records", "n_classes", "min_class_size", "max_class_size", "prosecutor_risk_max",
                 "prosecutor_risk_avg", "records_below_k", "sample_uniques")


def risk_measures(backend: Backend, *, relation: Relation, qis: Sequence[str], k: int = 5,
                  thresholds: Sequence[float] = ()) -> dict[str, Any]:
    """One dict of :data:`RISK_MEASURES`: class counts and sizes, the highest and the average
    prosecutor risk (1 / smallest class; classes / records), the share of records in classes
    smaller than ``k`` and the number of sample uniques; with ``thresholds``, also
    ``records_at_risk`` (``[{"threshold", "share"}]``, the share of records whose risk exceeds
    each), from the same pass. NULL in a QI raises InputError (it would form a class of its own)."""
    qis = column_names("risk_measures", "qis", qis)
    positive_int("risk_measures", "k", k)
    refuse_nulls(backend, "risk_measures", relation, qis)
    row = backend.rows("risk: measures", render("risk/risk_measures.sql.j2", relation=relation, qis=qis, k=int(k),
                                                thresholds=list(thresholds)))[0]
    measures = dict(zip(RISK_MEASURES, row))
    if thresholds:
        measures["records_at_risk"] = _at_risk(thresholds, row[len(RISK_MEASURES):])
    return measures


def class_size_distribution(backend: Backend, *, relation: Relation, qis: Sequence[str]) -> list[dict[str, int]]:
    """``[{"class_size", "n_classes", "n_records"}, ...]``, smallest class size first."""
    qis = column_names("class_size_distribution", "qis", qis)
    refuse_nulls(backend, "class_size_distribution", relation, qis)
    rows = backend.rows("risk: class sizes", render("risk/class_size_distribution.sql.j2", relation=relation, qis=qis))
    return [{"class_size": int(s), "n_classes": int(c), "n_records": int(n)} for s, c, n in rows]


# ---------------------------------------------------------------------------------------------
# the risk of a job's input (``anon-duck risk``; docs/risk.md defines every number)
# ---------------------------------------------------------------------------------------------
DEFAULT_K, DEFAULT_M, DEFAULT_EVENTS_PREFIX = 5, 2, 5


@dataclass(frozen=True)
class RiskOptions:
    """What one risk analysis measures, resolved from the call, the job's ``[risk]`` table
    and the defaults, in that order (k and m fall back to the method's own k and m)."""

    population_size: int | None
    thresholds: tuple[float, ...]
    k: int
    m: int
    events_prefix: int

    def as_dict(self) -> dict[str, Any]:
        return {"population_size": self.population_size, "thresholds": list(self.thresholds), "k": self.k,
                "m": self.m, "events_prefix": self.events_prefix}


def resolve_risk_options(job: Job, *, population_size: int | None = None, thresholds: Sequence[float] | None = None,
                         k: int | None = None, m: int | None = None,
                         events_prefix: int | None = None) -> RiskOptions:
    """The options of ``api.risk``: each argument given wins over the job's ``[risk]`` key,
    which wins over the default. A bad argument is an InputError naming it and its value."""
    for name, value in (("population_size", population_size), ("k", k), ("m", m), ("events_prefix", events_prefix)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InputError(f"risk: {name} = {value!r} must be a whole number >= 1")
    if thresholds is not None:
        if isinstance(thresholds, (str, bytes)) or not thresholds:
            raise InputError(f"risk: thresholds = {thresholds!r} must be a non-empty list of numbers in (0, 1]")
        try:
            thresholds = tuple(check_threshold(t, "threshold") for t in thresholds)
        except JobError as err:
            raise InputError(f"risk: {err}") from None
    settings = job.risk
    return RiskOptions(
        population_size if population_size is not None else settings.population_size,
        thresholds or settings.thresholds or DEFAULT_THRESHOLDS,
        k or settings.k or method_whole(job, "k") or DEFAULT_K,
        m or settings.m or method_whole(job, "m") or DEFAULT_M,
        events_prefix or settings.events_prefix or DEFAULT_EVENTS_PREFIX)


def method_whole(job: Job, key: str) -> int | None:
    """The job's method parameter ``key`` when it is a whole number >= 1 (a k, m or K the risk
    measures can count against), else None."""
    value = job.params.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


@dataclass(frozen=True)
class Population:
    """What the steward says about the population the input was drawn from: its size, a
    relation holding it (same QI columns), or both (the size then counts for the estimates)."""

    size: int | None = None
    relation: tuple[str, ...] | None = None


def qi_risk(backend: Backend, *, relation: Relation, qis: Sequence[str], k: int, thresholds: Sequence[float],
            population: Population = Population()) -> dict[str, Any]:
    """The ``qis`` section: class sizes, prosecutor and marketer risk, records at risk per
    threshold, sample uniques; with a population, journalist risk and population uniqueness."""
    measures = risk_measures(backend, relation=relation, qis=qis, k=k, thresholds=thresholds)
    qis = list(qis)
    n = int(measures["n_records"])
    sizes = class_size_distribution(backend, relation=relation, qis=qis)
    out: dict[str, Any] = {
        "columns": qis, "n_records": n, "n_classes": int(measures["n_classes"]),
        "min_class_size": measures["min_class_size"], "max_class_size": measures["max_class_size"],
        "class_sizes": sizes,
        "prosecutor": {"highest": measures["prosecutor_risk_max"], "average": measures["prosecutor_risk_avg"],
                       "records_at_risk": measures["records_at_risk"]},
        "sample_uniques": {"records": int(measures["sample_uniques"]),
                           "share": int(measures["sample_uniques"]) / n if n else None},
        "records_below_k": {"k": int(k), "share": measures["records_below_k"]},
        # no population: the marketer matches the sample against itself (El Emam: J / n)
        "marketer": {"average": measures["prosecutor_risk_avg"]},
        "journalist": None, "population": None,
    }
    if population.relation is not None:
        out.update(_against_population_table(backend, relation, population.relation, qis, thresholds, n))
    size = population.size or (out["population"] or {}).get("size")
    if size is not None:
        if size < n:
            raise InputError(f"risk: population_size = {size} is smaller than the sample ({n} records); the "
                             "population is every person the sample was drawn from")
        histogram = {s["class_size"]: s["n_classes"] for s in sizes}
        out["population"] = {**(out["population"] or {}), "size": size,
                             "estimates": population_uniqueness(histogram, size)}
    return out


def _at_risk(thresholds: Sequence[float], shares: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"threshold": t, "share": s} for t, s in zip(thresholds, shares)]


POPULATION_MEASURES = ("n_records", "n_classes", "short_classes", "min_population_class_size", "journalist_risk_max",
                       "journalist_risk_avg", "marketer_risk", "population_uniques_in_sample")


def _against_population_table(backend: Backend, relation: Relation, population: tuple[str, ...], qis: list[str],
                              thresholds: Sequence[float], n: int) -> dict[str, Any]:
    """Journalist and marketer risk against the population relation, and its exact uniques."""
    where = f"risk.population {show(population)}"
    columns = backend.columns("risk: population columns", population)
    missing = [q for q in qis if q not in columns]
    if missing:
        raise InputError(f"{where}: no column {missing[0]!r}; the population needs every QI of the input "
                         f"(columns: {', '.join(columns)})")
    refuse_nulls(backend, "risk.population", population, qis)
    sizes = class_size_distribution(backend, relation=population, qis=qis)
    size = sum(s["n_records"] for s in sizes)
    if size < n:
        raise InputError(f"{where}: the population holds {size} records, fewer than the sample's {n}; the "
                         "population is every person the sample was drawn from")
    row = backend.rows("risk: population", render("risk/population_risk.sql.j2", relation=relation,
                                                  population=population, qis=qis, thresholds=list(thresholds)))[0]
    m = dict(zip(POPULATION_MEASURES, row))
    if m["short_classes"]:
        raise InputError(f"{where}: {m['short_classes']} of the sample's {m['n_classes']} classes have fewer "
                         "records in the population than in the sample; the population must hold every sample "
                         "record (same QI values, spelled alike)")
    uniques = sum(s["n_classes"] for s in sizes if s["class_size"] == 1)
    return {
        "journalist": {"highest": m["journalist_risk_max"], "average": m["journalist_risk_avg"],
                       "records_at_risk": _at_risk(thresholds, row[len(POPULATION_MEASURES):])},
        "marketer": {"average": m["marketer_risk"]},
        "population": {"size": size, "uniques": uniques, "uniques_share": uniques / size,
                       "sample_uniques_unique_in_population": int(m["population_uniques_in_sample"])},
    }


def drivers(backend: Backend, *, relation: Relation, qis: Sequence[str]) -> dict[str, Any]:
    """Which QIs drive uniqueness: the sample uniques left when each QI, and each pair of QIs,
    is left out (the bigger the drop, the more generalizing it helps), and each QI's distinction
    (distinct values / records) and separation (share of record pairs it tells apart), from
    one GROUPING SETS pass."""
    qis = column_names("drivers", "qis", qis)
    singles = [[q] for q in qis]
    without = [[q for q in qis if q != left] for left in qis]
    pairs = [list(p) for p in itertools.combinations(qis, 2)]
    without_pair = [[q for q in qis if q not in p] for p in pairs]
    sets = list({_gid(qis, s): s for s in [qis] + singles + without + without_pair}.values())
    rows = backend.rows("risk: drivers", render("risk/class_sizes_by_set.sql.j2", relation=relation, qis=qis,
                                                sets=sets))
    histograms: dict[int, dict[int, int]] = {}
    for gid, size, count in rows:
        histograms.setdefault(int(gid), {})[int(size)] = int(count)
    n = sum(s * c for s, c in histograms[_gid(qis, qis)].items())
    uniques = histograms[_gid(qis, qis)].get(1, 0)

    def uniques_without(kept: list[str]) -> int:
        return histograms.get(_gid(qis, kept), {}).get(1, 0)

    per_qi = []
    for q, kept in zip(qis, without):
        histogram = histograms[_gid(qis, [q])]
        same = sum(c * s * (s - 1) for s, c in histogram.items())     # ordered pairs of records alike on q
        per_qi.append({"qi": q, "uniques_without": uniques_without(kept),
                       "uniques_drop": uniques - uniques_without(kept),
                       "distinct": sum(histogram.values()), "distinction": sum(histogram.values()) / n,
                       "separation": 1 - same / (n * (n - 1)) if n > 1 else None})
    per_pair = [{"qis": p, "uniques_without": uniques_without(kept), "uniques_drop": uniques - uniques_without(kept)}
                for p, kept in zip(pairs, without_pair)]
    return {"sample_uniques": uniques,
            "per_qi": sorted(per_qi, key=lambda d: -d["uniques_drop"]),
            "per_pair": sorted(per_pair, key=lambda d: -d["uniques_drop"])}


def _gid(qis: list[str], kept: Sequence[str]) -> int:
    """class_sizes_by_set's grouping id of a subset: bit set = QI not kept, first QI highest."""
    return sum(1 << (len(qis) - 1 - i) for i, q in enumerate(qis) if q not in kept)


def codes_risk(backend: Backend, *, relation: Relation, n_persons: int, m: int, k: int) -> dict[str, Any]:
    """Per m' = 1..m: the persons holding a set of at most m' codes that fewer than k persons
    hold, and that no other person holds, as counts and shares of all ``n_persons``."""
    positive_int("codes_risk", "m", m)
    positive_int("codes_risk", "k", k)
    row = backend.rows("risk: code sets", render("risk/itemset_risk.sql.j2", relation=relation, id="id", code="code",
                                                 m=int(m), k=int(k)))[0]
    by_m = [{"m": i + 1, "below_k_persons": int(row[2 * i]), "below_k_share": int(row[2 * i]) / n_persons,
             "unique_persons": int(row[2 * i + 1]), "unique_share": int(row[2 * i + 1]) / n_persons}
            for i in range(m)]
    return {"k": int(k), "m": int(m), "n_persons": n_persons, "by_m": by_m}


def events_risk(backend: Backend, *, relation: Relation, j_max: int) -> dict[str, Any]:
    """Persons with a unique (code, age) trajectory, and unique on their first j events, as
    counts and shares of the persons with events."""
    positive_int("events_risk", "j_max", j_max)
    rows = {int(j): (int(n), int(u)) for j, n, u in backend.rows(
        "risk: trajectories", render("risk/trajectory_risk.sql.j2", relation=relation, j_max=int(j_max)))}
    n_persons, unique = rows.get(0, (0, 0))

    def share(count: int) -> float | None:
        return count / n_persons if n_persons else None
    return {"n_persons": n_persons, "unique_trajectory_persons": unique, "unique_trajectory_share": share(unique),
            "first_events": [{"j": j, "unique_persons": rows.get(j, (0, 0))[1],
                              "unique_share": share(rows.get(j, (0, 0))[1])} for j in range(1, int(j_max) + 1)]}
