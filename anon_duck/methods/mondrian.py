"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006): local
recoding by recursive median cuts, with strict or relaxed partitioning, and optional
l-diversity and t-closeness constraints on the sensitive attribute (docs/mondrian.md).

Fig. 4 of the paper, ``Anonymize(partition)``: if no allowable multidimensional cut exists for
the partition, it becomes one equivalence class; else choose the dimension with the widest
normalized range (choose_dimension), split at the median (frequency_set / find_median) and
recurse on both halves. Here the recursion runs breadth-first: one round cuts every open
partition at once, in set-based statements (sql/mondrian/):

* ``stats.sql.j2``: each open partition's size, ranges, categorical lowest common ancestors
  and normalized ranges (one GROUP BY);
* ``sides.sql.j2``: for each record of an open partition and each QI, the side of that QI's
  candidate cut (numeric: the median split, strict or relaxed; categorical: the children of the
  partition's lowest common ancestor in the QI's hierarchy, Section 4.2);
* ``choice.sql.j2``: the allowable cuts (>= 2 sides, every side >= k records and satisfying
  the declared l-diversity / t-closeness, with its own SQL, apart from the verifiers') and, per
  partition, the one on the widest dimension;
* ``apply.sql.j2``: the records move to their sides (a new assignment of record keys to
  partitions, ``assign.sql.j2``'s layout); partitions without a cut are final.

The records carry what the rounds compare as integers, computed once (``records.sql.j2``): a
numeric QI's rank in (value, id) order, a categorical QI's root path as node ids with each
node's leaf count, so that a lowest common ancestor is a per-level min = max test rather than a
walk of the hierarchy's closure every round; a round writes only the narrow assignment and the
sides, never the records' columns. Python only counts the cuts of a round (an aggregate) to know when to
stop: at most about log2(n / k) rounds for numeric cuts. The release (``release.sql.j2``)
recodes each final partition as its numeric ranges and categorical lowest common ancestors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..backend.base import Backend
from ..columns import bounds
from ..errors import JobError
from ..hierarchy import CLOSURE, NODES
from ..inputs import Inputs
from ..job import Job
from ..scratch import scratch
from ..sqlrender import render
from ..verifiers import CheckResult, k_anonymity
from .base import Param, Partitioning, Progress, ReleaseTable, Staged, check_k, parse_params, release_view, require_roles
from .papers import cite
from .privacy_models import PARAMS as MODEL_PARAMS
from .privacy_models import Models, ordered_distance, parse_models, verify_models
from .reporting import generalized_report

MODES = ("strict", "relaxed")
PARAMS = (Param("k", int, lo=2, doc="minimum equivalence-class size"),
          Param("mode", str, default="strict", choices=MODES,
                doc="strict: the two halves of a numeric cut do not overlap; relaxed: records equal to the "
                    "median may go to either half (Section 3.1)"),
          *MODEL_PARAMS)


@dataclass(frozen=True)
class MondrianParams:
    k: int
    mode: str = "strict"
    models: Models = Models()


def _refuse_t_closeness(backend: Backend, job: Job, inputs: Inputs, params: MondrianParams) -> None:
    """A fragment's classes would be measured against the fragment's distribution, not the
    input's that the verifier reads: t-closeness does not survive the union."""
    if params.models.t_closeness is not None:
        raise JobError("settings.partition_size with method.t_closeness: each fragment would measure its classes "
                       "against its own distribution, not the input's; remove one of the two keys")


class Mondrian:
    name = "mondrian"
    summary = ("multidimensional local recoding k-anonymity by median cuts, with l-diversity / t-closeness "
               f"(Mondrian, {cite('mondrian')})")
    views = release_view("release")
    # k-anonymity and l-diversity hold per class, so releases of disjoint fragments (contiguous
    # in the QIs' sort order: coarse first cuts) union into one (docs/mondrian.md)
    partitioning = Partitioning("sort", {}, {"classes": "sum", "min_class": "min", "max_class": "max",
                                             "rounds": "max"}, check=_refuse_t_closeness)

    def check_params(self, job: Job) -> MondrianParams:
        require_roles(job, qis=True)
        for i, q in enumerate(job.dataset.qis):
            if q.kind == "date":
                raise JobError(f"input.qi[{i}] ({q.column!r}): method 'mondrian' cuts numeric and categorical QIs; "
                               "declare the date as kind = 'numeric' (e.g. a year) or 'categorical' with a hierarchy")
            if q.kind == "categorical" and not q.hierarchy:
                raise JobError(f"input.qi[{i}] ({q.column!r}): method 'mondrian' cuts a categorical QI along its "
                               "hierarchy: give it one (a flat one is type = 'mask' or an ARX file with one level)")
        values = parse_params(job, PARAMS)
        return MondrianParams(values["k"], values["mode"], parse_models(job, values))

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: MondrianParams,
                  progress: Progress) -> Staged:
        check_k(params.k, inputs.n_rows)
        ds = job.dataset
        shape = _shape(backend, job)
        numeric, categorical = shape["numeric"], shape["categorical"]
        spans = {}
        for i, col in enumerate(numeric):
            lo, hi = backend.rows(f"mondrian: range of {col}", render("metrics/domain.sql.j2", relation=inputs.person,
                                                                      column=col))[0]
            spans[f"span_{i}"] = float(hi - lo) if hi > lo else 1.0
        models = params.models
        t_close = None
        if models.t_closeness is not None:
            t_close = {"t": models.t_closeness,
                       "ordered": ordered_distance(backend, models, inputs.person, ds.sensitive)}
        l_div = vars(models.l_diversity) if models.l_diversity else None
        records, node_ids = _records(backend, job, inputs, shape, sensitive=bool(models))
        assign = [scratch("mondrian_assign_a"), scratch("mondrian_assign_b")]
        stats, sides, choice = scratch("mondrian_stats"), scratch("mondrian_sides"), scratch("mondrian_choice")
        backend.run("mondrian: assign", render("mondrian/assign.sql.j2", target=assign[0], records=records,
                                               given=None))
        # the rounds' statements differ only in which of the two assignment tables they read and
        # write: each is rendered (and parsed by sqlglot) once per table, before the loop
        key = (len(numeric), tuple((q["height"], q["root_leaves"] > 1) for q in categorical), params.mode,
               repr(l_div), repr(t_close))
        rounds_sql = [{
            "stats": render("mondrian/stats.sql.j2", shape=key, target=stats, assign=assign[cur], records=records,
                            **shape),
            "sides": render("mondrian/sides.sql.j2", shape=key, target=sides, assign=assign[cur], records=records,
                            stats=stats, relaxed=params.mode == "relaxed", **shape),
            "choice": render("mondrian/choice.sql.j2", shape=key, target=choice, sides=sides, stats=stats,
                             records=records, n_dims=len(ds.qis), k=params.k, l_diversity=l_div,
                             t_closeness=t_close),
            "apply": render("mondrian/apply.sql.j2", shape=key, target=assign[1 - cur], assign=assign[cur],
                            sides=sides, choice=choice, n_dims=len(ds.qis))} for cur in (0, 1)]
        cuts = render("util/count_rows.sql.j2", relation=choice)
        cur, rounds = 0, 0
        while True:
            progress("mondrian: rounds", rounds, rounds + 1)
            sql = rounds_sql[cur]
            backend.run("mondrian: stats", sql["stats"], spans)
            backend.run("mondrian: sides", sql["sides"])
            backend.run("mondrian: choice", sql["choice"])
            if int(backend.scalar("mondrian: cuts", cuts)) == 0:
                break
            backend.run("mondrian: apply", sql["apply"])
            cur, rounds = 1 - cur, rounds + 1
        progress("mondrian: rounds", rounds, rounds)
        n_classes, min_class, max_class = backend.rows("mondrian: classes", render("mondrian/summary.sql.j2",
                                                                                   assign=assign[cur]))[0]
        target = _release(backend, job, inputs, shape, records, node_ids, assign[cur])
        facts = {"classes": int(n_classes), "min_class": int(min_class), "max_class": int(max_class),
                 "rounds": rounds, "mode": params.mode, **models.facts()}
        return Staged([ReleaseTable("release", target, repeats=True)], facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: MondrianParams) -> list[CheckResult]:
        # a class is what an analyst can tell apart: every QI label, and a numeric QI's bounds
        qis = [c for q in job.dataset.qis
               for c in ((q.column, *bounds(q.column)) if q.kind == "numeric" else (q.column,))]
        return [k_anonymity(backend, relation=tables["release"], qis=qis, k=params.k),
                *verify_models(backend, job, params.models, tables["release"], qis)]

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: MondrianParams) -> dict[str, Any]:
        return generalized_report(backend, job, inputs, tables["release"], k=params.k)


def _shape(backend: Backend, job: Job) -> dict[str, Any]:
    """What shapes the templates: the numeric QI columns and, per categorical QI, its
    hierarchy's leaf count and height (the number of path levels its records carry)."""
    categorical = []
    for q in job.dataset.qis:
        if q.kind == "categorical":
            root_leaves, height = backend.rows(f"mondrian: shape of {q.hierarchy}", render(
                "mondrian/hierarchy_root.sql.j2", node_table=NODES), {"hierarchy": q.hierarchy})[0]
            categorical.append({"column": q.column, "hierarchy": q.hierarchy, "root_leaves": int(root_leaves),
                                "height": int(height)})
    return {"numeric": [q.column for q in job.dataset.qis if q.kind == "numeric"], "categorical": categorical}


def _records(backend: Backend, job: Job, inputs: Inputs, shape: Mapping[str, Any], *,
             sensitive: bool) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    """The records as the rounds read them (records.sql.j2) and the node ids they use."""
    records, node_ids = scratch("mondrian_records"), scratch("mondrian_node_ids")
    backend.run("mondrian: node ids", render("mondrian/node_ids.sql.j2", target=node_ids, node_table=NODES))
    backend.run("mondrian: records", render("mondrian/records.sql.j2", target=records, relation=inputs.person,
                                            closure=CLOSURE, node_ids=node_ids, id=job.dataset.id, **shape,
                                            sensitive=job.dataset.sensitive if sensitive else None))
    return records, node_ids


def _release(backend: Backend, job: Job, inputs: Inputs, shape: Mapping[str, Any], records: tuple[str, str, str],
             node_ids: tuple[str, str, str], assign: tuple[str, str, str]) -> tuple[str, str, str]:
    """Each final partition of ``assign`` recoded as its ranges and LCAs (release.sql.j2)."""
    ds = job.dataset
    target = scratch("mondrian_release")
    backend.run("mondrian: release", render(
        "mondrian/release.sql.j2", target=target, relation=inputs.person, assign=assign, records=records,
        node_ids=node_ids, id=ds.id, **shape, qi_order=[q.column for q in ds.qis],
        passthrough=[c for c in (ds.sensitive, ds.class_, *ds.keep) if c]))
    return target


def recode(backend: Backend, job: Job, inputs: Inputs, partitions: tuple[str, ...]) -> tuple[str, str, str]:
    """Publish a partitioning made elsewhere, ``partitions`` a table of (rid: the job's id as
    text, part: any integer) covering the input, exactly as Mondrian publishes its own final
    partitions (numeric ranges, categorical lowest common ancestors on the job's hierarchies).
    Why: a peer's partitions (the benchmark's anonypy Mondrian) then get the same recoding and
    the same NCP and class counts as ours, measured by the same code. Returns the release's
    scratch table; the caller's job must have been prepared (``inputs``) on ``backend``."""
    shape = _shape(backend, job)
    records, node_ids = _records(backend, job, inputs, shape, sensitive=False)
    assign = scratch("mondrian_assign_given")
    backend.run("mondrian: given partitions", render("mondrian/assign.sql.j2", target=assign, records=records,
                                                     given=partitions))
    return _release(backend, job, inputs, shape, records, node_ids, assign)


METHOD = Mondrian()
