"""Partitioned anonymization (``[settings] partition_size``, docs/scale.md).

A method whose core is a Python loop over arrays pulled into one process (ArtUC, disassociation,
longitudinal) needs memory in proportion to its input. With ``partition_size = N`` the persons
are cut into fragments of at most N similar persons (:mod:`.fragments`), each fragment is
anonymized apart by the method as it is, and the fragments' releases are unioned with their
ids renumbered (:mod:`.union`). The orchestration around it does not change: the method's
verifier checks the union, the gate stops a failing one, the publisher writes it. A backend with
the ``anonymize_fragments`` capability runs the fragments its own way, each on an in-memory
DuckDB of its own (DuckDB: in worker processes, one per core, from 20,000 persons on,
anon_duck/backend/duckdb_fragments.py; Spark: in executor tasks, anon_duck/backend/spark/fragments.py);
otherwise (PostgreSQL, a small DuckDB input) they run one after another on the run's connection.
Either way a process holds one fragment's arrays at a time, so Python's memory follows N, not
the input.

Only a method that declares a :class:`~anon_duck.methods.base.Partitioning` (its privacy model
holds per cluster, so a union of disjoint releases keeps it) can run partitioned.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..backend.base import Backend
from ..errors import JobError
from ..inputs import Inputs
from ..job import Job
from ..methods.base import FRAGMENTS_PHASE, Method, Partitioning, Progress, ReleaseTable, Staged
from .fragments import Fragments, domains, fragment, restrict, tag
from .union import collect, combine_facts, renumber, union_table


def check(job: Job, method: Method, params: Any) -> None:
    """Refuse ``settings.partition_size`` for a method that cannot run partitioned, or a size
    that could leave a fragment with fewer than k persons (fragments hold at least half of
    the size, fragments.py), before anything is read."""
    size = job.settings.partition_size
    if size is None:
        return
    if getattr(method, "partitioning", None) is None:
        raise JobError(f"settings.partition_size = {size}: method {job.method!r} cannot run partitioned (its "
                       "privacy model is not checked to survive a union of fragments; docs/scale.md lists the "
                       "methods that can); remove the key")
    k = getattr(params, "k", 1)
    if size < 2 * k:
        raise JobError(f"settings.partition_size = {size}: must be at least 2 × method.k = {2 * k}, so that "
                       "every fragment holds k persons or more")


def anonymize(backend: Backend, job: Job, method: Method, inputs: Inputs, params: Any, progress: Progress) -> Staged:
    """``method.anonymize`` of the whole input, partitioned when the job says so. A single
    fragment is the whole input: the release is then the unpartitioned one, to the byte."""
    size = job.settings.partition_size
    if size is None:
        return method.anonymize(backend, job, inputs, params, progress)
    partitioning: Partitioning = method.partitioning    # check() refused a method without one
    if partitioning.check is not None:
        partitioning.check(backend, job, inputs, params)
    # the whole input's numeric domains, read once: the lead's boxes and every fragment's NCP use them
    inputs = dataclasses.replace(inputs, domains=domains(backend, job, inputs))
    lead = partitioning.lead(method, backend, job, inputs, params) if partitioning.lead is not None else None
    fragments = fragment(backend, job, inputs, size, partitioning.split, progress, lead)
    if fragments.count == 1:
        staged = method.anonymize(backend, job, inputs, params, progress)
        return Staged(staged.tables, combine_facts(partitioning, [staged.facts], fragments, size))
    runner = getattr(backend, "anonymize_fragments", None)     # backend/base.py: FragmentRunner
    union = runner(job, method, inputs, params, fragments, progress) if runner is not None else None
    if union is None:
        union = _one_after_another(backend, job, method, inputs, params, fragments, progress)
    tables, facts = union
    return Staged(renumber(backend, partitioning, tables, fragments, job.release.seed),
                  combine_facts(partitioning, facts, fragments, size))


def _one_after_another(backend: Backend, job: Job, method: Method, inputs: Inputs, params: Any,
                       fragments: Fragments, progress: Progress) -> tuple[list[ReleaseTable], list[dict[str, Any]]]:
    """Each fragment on the run's connection in turn, its staged tables appended to the union
    before the next fragment's run replaces them."""
    facts, tables = [], []
    tagged = tag(backend, job, inputs, fragments)
    for f in range(fragments.count):
        progress(FRAGMENTS_PHASE, f, fragments.count)
        staged = method.anonymize(backend, job, restrict(backend, inputs, tagged, fragments, f), params, _quiet)
        collect(backend, staged.tables, f)
        facts.append(staged.facts)
        tables = staged.tables
    progress(FRAGMENTS_PHASE, fragments.count, fragments.count)
    return [ReleaseTable(t.suffix, union_table(t.suffix), t.shuffle, sums=t.sums) for t in tables], facts


def _quiet(phase: str, done: int, total: int) -> None:
    """A fragment's own progress is not shown: the bar counts fragments."""
