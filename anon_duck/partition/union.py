"""The union of the fragments' releases: one staged table per release table, ids made unique.

Each fragment's staged tables are appended to a union table tagged with the fragment
(:func:`collect`); when all are in, every id domain the method declares
(:class:`~anon_duck.methods.base.Partitioning`) is renumbered over the union in a keyed random
order (:func:`renumber`), so ids stay unique and carry neither the fragment nor the input
order. The publisher orders rows by their content (sql/lib/release_order.jinja), so the
order in which fragments were appended never shows. The facts of the fragments are combined
by :func:`combine_facts`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..backend.base import Backend
from ..methods.base import Partitioning, ReleaseTable
from ..scratch import scratch
from ..sqlrender import render
from .fragments import Fragments


def union_table(suffix: str) -> tuple[str, str, str]:
    return scratch(f"part_union_{suffix}")


def block_digits(cores: int) -> int:
    """How many leading hex digits of an id's hash make its block in the renumbering's ranks
    (sql/partition/id_map.sql.j2): the fewest that give at least four blocks per core, and at
    least 2. 256 blocks up to 64 cores, 4,096 up to 1,024: the window is spread over every core
    of a cluster of any size, and what stays in one task is 16^digits block counts."""
    digits = 2
    while 16 ** digits < 4 * cores:
        digits += 1
    return digits


def collect(backend: Backend, tables: Sequence[ReleaseTable], f: int) -> None:
    """Append fragment ``f``'s staged tables to the union tables (fragment 0 creates them)."""
    for t in tables:
        backend.run(f"partition: collect {t.suffix}", render(
            "partition/collect.sql.j2", target=union_table(t.suffix), source=t.staged, fragment=f, first=f == 0))


def renumber(backend: Backend, partitioning: Partitioning, tables: Sequence[ReleaseTable], fragments: Fragments,
             seed: int) -> list[ReleaseTable]:
    """The staged release of the whole input: the union ``tables`` (each fragment's rows tagged
    with ``_fragment``) with every declared id domain renumbered (sql/partition/id_map.sql.j2,
    renumber.sql.j2)."""
    union = {t.suffix: t.staged for t in tables}
    key = backend.scalar("partition: id key", render("partition/id_key.sql.j2", fragments=fragments.table),
                         {"seed": str(seed)})
    maps: dict[tuple[str, str], tuple[str, ...]] = {}     # (suffix, column) -> its domain's map
    for domain, holders in partitioning.ids.items():
        target = scratch(f"part_ids_{domain}")
        backend.run(f"partition: ids {domain}", render(
            "partition/id_map.sql.j2", target=target, domain=domain, digits=block_digits(backend.threads()),
            columns=[(union[suffix], column) for suffix, column in holders]), {"key": key})
        maps.update({holder: target for holder in holders})
    out = []
    for t in tables:
        source = t.staged
        columns = [c for c in backend.columns(f"partition: columns of {t.suffix}", source) if c != "_fragment"]
        target = scratch(f"part_release_{t.suffix}")
        if t.sums:      # counts over disjoint fragments of the persons: their sum per key
            backend.run(f"partition: sums {t.suffix}", render(
                "partition/sum_union.sql.j2", target=target, source=source, keys=list(t.sums),
                values=[c for c in columns if c not in t.sums]))
        else:
            backend.run(f"partition: release {t.suffix}", render(
                "partition/renumber.sql.j2", target=target, source=source, columns=columns,
                maps={c: maps[(t.suffix, c)] for c in columns if (t.suffix, c) in maps}))
        out.append(ReleaseTable(t.suffix, target, t.shuffle, sums=t.sums))
    return out


def combine_facts(partitioning: Partitioning, facts: Sequence[Mapping[str, Any]], fragments: Fragments,
                  size: int) -> dict[str, Any]:
    """The run's facts from the fragments' facts: a key the method declares (``facts``) is
    combined as declared (``sum`` of counts over the disjoint persons, ``min``, ``max``, or
    ``mean`` weighted by the fragments' persons); any other key is kept when every fragment
    has the same value, else listed per fragment under ``partition.per_fragment`` (a number
    such as the distinct codes of a fragment says nothing of the union). Then the partition
    itself: ``partition_size``, the number of fragments, the smallest and largest."""
    out: dict[str, Any] = {}
    per_fragment: dict[str, list[Any]] = {}
    weights = fragments.sizes
    for key in dict.fromkeys(k for f in facts for k in f):
        values = [f.get(key) for f in facts]
        rule = partitioning.facts.get(key)
        if rule == "sum":
            out[key] = sum(values)
        elif rule in ("min", "max"):
            out[key] = min(values) if rule == "min" else max(values)
        elif rule == "mean":
            out[key] = sum(v * w for v, w in zip(values, weights)) / sum(weights)
        elif all(v == values[0] for v in values):
            out[key] = values[0]
        else:
            per_fragment[key] = values
    out["partition"] = {"partition_size": size, "fragments": fragments.count, "min_fragment": min(fragments.sizes),
                        "max_fragment": max(fragments.sizes), "split_rounds": fragments.rounds,
                        "per_fragment": per_fragment}
    return out
