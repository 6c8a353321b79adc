"""What an equivalence class is before and after each method's release: the relation and the
columns the prosecutor-model risk groups on (anon_duck/risk.py).

Before a release the attacker matches a person on what they know of the input: the QI values
for a person table, the whole code set for a code-set release, the whole trajectory for a
longitudinal one. After it they match on what the release shows, which differs by shape:

* generalized tables (fulldomain, counterfeit, lkc, artuc and its variants): the generalized
  QI labels and bounds of ``<release>_release``, the classes the verifiers check;
* disassociation: the cluster (its records' chunks cannot be linked to one another);
* cba: the set of generalized code tokens a record shows;
* longitudinal: the generalized trajectory the record is published with.

A method not listed here (a plug-in) gets the generalized reading when its ``release`` table
holds every QI column, and no "after" side otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ..backend.base import Backend
from ..columns import bounds
from ..inputs import Inputs
from ..job import Job
from ..scratch import scratch
from ..sqlrender import render


@dataclass(frozen=True)
class ClassView:
    """``relation`` grouped on ``columns`` gives one class per row group; ``meaning`` says so."""

    relation: tuple[str, ...]
    columns: list[str]
    meaning: str


Tables = Mapping[str, tuple[str, ...]]


def before(backend: Backend, job: Job, inputs: Inputs) -> ClassView:
    """The input's classes for ``job``'s method."""
    if job.method in ("disassociation", "cba") and inputs.codes is not None:
        target = scratch("rp_code_sets")
        backend.run("report: code sets", render("report/code_sets.sql.j2", target=target, codes=inputs.codes))
        return ClassView(target, ["code_set"], "records with the same set of diagnosis codes")
    if job.method == "longitudinal" and inputs.events is not None:
        target = scratch("rp_trajectories")
        backend.run("report: trajectories", render("report/trajectories.sql.j2", target=target, events=inputs.events))
        return ClassView(target, ["trajectory"], "records with the same (diagnosis code, age) pairs")
    return ClassView(inputs.person, [q.column for q in job.dataset.qis], "records with the same QI values")


def after(backend: Backend, job: Job, tables: Tables) -> ClassView | None:
    """The release's classes (staged or published tables alike), or None when the method's
    release has no shape this module knows."""
    shaped = _AFTER.get(job.method)
    if shaped is not None:
        return shaped(backend, job, tables)
    return _generalized(backend, job, tables)


def _generalized(backend: Backend, job: Job, tables: Tables) -> ClassView | None:
    release = tables.get("release")
    if release is None or not job.dataset.qis:
        return None
    present = backend.columns("report: release columns", release)
    qis = [q.column for q in job.dataset.qis]
    if not all(c in present for c in qis):
        return None
    columns = [c for q in qis for c in (q, *bounds(q)) if c in present]
    return ClassView(release, columns, "records with the same generalized QI values")


def _clusters(backend: Backend, job: Job, tables: Tables) -> ClassView:
    target = scratch("rp_cluster_members")
    backend.run("report: cluster members", render("report/cluster_members.sql.j2", target=target,
                                                  clusters=tables["clusters"]))
    return ClassView(target, ["cluster_id"], "records of the same cluster (their chunks cannot be linked)")


def _token_sets(backend: Backend, job: Job, tables: Tables) -> ClassView:
    target = scratch("rp_token_sets")
    backend.run("report: token sets", render("report/token_sets.sql.j2", target=target,
                                             record_tokens=tables["record_tokens"], clusters=tables["clusters"]))
    return ClassView(target, ["tokens"], "records showing the same set of generalized code tokens")


def _trajectories(backend: Backend, job: Job, tables: Tables) -> ClassView:
    return ClassView(tables["patients"], ["trajectory"], "records published with the same generalized trajectory")


_AFTER: dict[str, Callable[[Backend, Job, Tables], ClassView | None]] = {
    "disassociation": _clusters,
    "cba": _token_sets,
    "longitudinal": _trajectories,
}
