"""Cut the persons into fragments of at most ``partition_size`` similar persons (docs/scale.md).

Two rules, both in SQL (sql/partition/), Python driving only the rounds of the first and
pulling counts:

* ``codes`` (disassociation): HORPART's own first splits (seed 001 Fig. 8, without utility
  constraints): every group of more than ``partition_size`` persons is split on its most
  frequent code not yet split on, D1 (holders) before D2 (the rest), until no group is larger
  or none can split; the persons are then ordered by their split path, so persons sharing
  frequent codes stay together. A round reads and rewrites only the persons (integer numbers)
  of the groups still open and their live pairs: a group of at most ``partition_size`` persons
  is final and leaves the working tables, and the paths are kept per group, not per person.
  A round applies several levels of each group's chain of D2 splits, as many as a guess
  (the group's codes by frequency) gets right, checked exactly: BMS-WebView-1 ×20 takes 51
  rounds instead of 221 at 50,000 persons per fragment, with the same fragments.
* ``sort`` (artuc, longitudinal): the persons ordered by the method's leading key when it
  declares one (:attr:`~anon_duck.methods.base.Partitioning.lead`; ArtUC: each person's
  utility-constraint box, since ArtUC clusters and merges only inside a box), then by their
  quasi-identifiers, then by their codes keyed by frequency (the holders of the most frequent
  code first, among them the holders of the next, ...) or their event sequence, then id, so
  persons with equal demographics who share frequent codes are neighbours.

The ordered persons are then cut into ``ceil(n / partition_size)`` runs of equal size (within
one person): never more than ``partition_size``, and never fewer than half of it when there
are two or more, which is what keeps every fragment anonymizable when the size is at least
``2k`` (checked in :func:`anon_duck.partition.check`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..backend.base import Backend
from ..inputs import Inputs
from ..job import Job
from ..methods.base import Progress
from ..scratch import scratch
from ..sqlrender import render

FRAGMENTS = scratch("part_fragment")
# the "codes" rule's working tables (sql/partition/split_*.sql.j2)
PERSONS, GROUPS, MEMBERS = scratch("part_person"), scratch("part_group"), scratch("part_member")
LIVE, DONE, MOVED = scratch("part_live"), scratch("part_done"), scratch("part_moved")
SPLITS, PATHS = scratch("part_split"), scratch("part_path")
CHAIN = 8
"""Candidate codes per group and round of the ``codes`` rule: a round applies up to
``CHAIN + 1`` levels of a group's chain of D2 splits, those its guess got right
(sql/partition/split_choose.sql.j2)."""


@dataclass(frozen=True)
class Fragments:
    """``table`` maps each person id (VARCHAR) to its fragment (0 ..); ``sizes[f]`` is the
    number of persons of fragment ``f``; ``rounds`` the split rounds of the ``codes`` rule."""

    table: tuple[str, ...]
    sizes: list[int]
    rounds: int = 0

    @property
    def count(self) -> int:
        return len(self.sizes)


def fragment(backend: Backend, job: Job, inputs: Inputs, size: int, split: str, progress: Progress,
             lead: tuple[tuple[str, ...], str] | None = None) -> Fragments:
    """The fragments of the prepared ``inputs`` under rule ``split`` (``codes`` or ``sort``);
    ``lead``, a relation (id VARCHAR, ...) and its column, leads the ``sort`` rule's order."""
    ds = job.dataset
    rounds = 0
    if split == "codes":
        assert inputs.codes is not None
        tables = {"persons": PERSONS, "groups": GROUPS, "members": MEMBERS, "live": LIVE, "done": DONE}
        backend.run("partition: split start", render("partition/split_start.sql.j2", person=inputs.person, id=ds.id,
                                                     codes=inputs.codes, **tables))
        while True:
            backend.run("partition: split choose", render("partition/split_choose.sql.j2", target=SPLITS,
                                                          groups=GROUPS, live=LIVE, depth=CHAIN), {"size": size})
            if int(backend.scalar("partition: splits", render("util/count_rows.sql.j2", relation=SPLITS))) == 0:
                break
            rounds += 1
            progress("partition: split", rounds, rounds + 1)
            backend.run("partition: split apply", render("partition/split_apply.sql.j2", splits=SPLITS, moved=MOVED,
                                                         **tables))
        backend.run("partition: split paths", render("partition/split_paths.sql.j2", target=PATHS, **tables))
    n = inputs.n_rows
    count = max(1, math.ceil(n / size))
    backend.run("partition: fragments", render(
        "partition/fragments.sql.j2", target=FRAGMENTS, person=inputs.person, id=ds.id,
        paths=PATHS if split == "codes" else None,
        lead=lead[0] if lead and split == "sort" else None, lead_column=lead[1] if lead else None,
        qis=[q.column for q in ds.qis] if split == "sort" else [],
        codes=inputs.codes if split == "sort" else None, events=inputs.events if split == "sort" else None),
        {"fragments": count, "n": n})
    sizes = backend.fetch("partition: sizes", render("partition/fragment_sizes.sql.j2", fragments=FRAGMENTS))
    return Fragments(FRAGMENTS, [int(v) for v in sizes["persons"]], rounds)


def domains(backend: Backend, job: Job, inputs: Inputs) -> dict[str, tuple[float, float]]:
    """The (min, max) of each numeric quasi-identifier over the whole input, which each
    fragment's :class:`~anon_duck.inputs.Inputs` carries (:func:`restrict`): NCP divides by the
    domain of the data set, and the data set of a fragment's release is the union (a fragment's
    own, narrower domain made every generalization cost more, and ArtUC's δ bound stopped its
    merges early: docs/scale.md)."""
    out = {}
    for q in job.dataset.qis:
        if q.kind == "numeric":
            lo, hi = backend.rows(f"partition: domain of {q.column}", render(
                "metrics/domain.sql.j2", relation=inputs.person, column=q.column))[0]
            if lo is not None:
                out[q.column] = (float(lo), float(hi))
    return out


def tag(backend: Backend, job: Job, inputs: Inputs, fragments: Fragments) -> dict[str, tuple[str, ...]]:
    """Each input relation (``input``, ``codes``, ``events``) once, its rows tagged with their
    fragment and stored in fragment order: a fragment's rows are then one contiguous run that
    DuckDB's zone maps find without reading the rest, where selecting them by a join with the
    fragments read the whole input once per fragment (239 passes over BMS x20)."""
    assert job.dataset.id is not None
    tagged = {}
    for name, relation, id_column in (("input", inputs.person, job.dataset.id), ("codes", inputs.codes, "id"),
                                      ("events", inputs.events, "id")):
        if relation is not None:
            tagged[name] = scratch(f"part_tagged_{name}")
            backend.run(f"partition: rows of {name}", render(
                "partition/tagged_rows.sql.j2", target=tagged[name], relation=relation, id=id_column,
                fragments=fragments.table, ordered=True))
    return tagged


def restrict(backend: Backend, inputs: Inputs, tagged: dict[str, tuple[str, ...]], fragments: Fragments,
             f: int) -> Inputs:
    """The inputs of fragment ``f`` only (from :func:`tag`'s relations), as scratch tables
    beside the whole ones (which the verifier and the report keep reading), with the whole
    ``inputs``' numeric domains."""
    def rows(name: str) -> tuple[str, ...] | None:
        if name not in tagged:
            return None
        target = scratch(f"part_{name}")
        backend.run(f"partition: fragment {name}", render("partition/fragment_rows.sql.j2", target=target,
                                                          tagged=tagged[name]), {"fragment": f})
        return target
    person = rows("input")
    assert person is not None
    return Inputs(person, fragments.sizes[f], rows("codes"), rows("events"), inputs.coverage, fragment=True,
                  domains=inputs.domains)
