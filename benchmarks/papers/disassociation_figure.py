"""A readable rendering of a disassociated release, laid out like seed 001 Fig. 4 / Fig. 10.

One block per cluster: its size |P| and joint cluster, each record chunk as its distinct
subrecords with multiplicities (``{a,b}x3``; ``{}`` is the empty subrecord), the item chunk
(codes only, as published), then every shared chunk with the clusters it spans. Reads only the
published tables, so it shows exactly what a data recipient sees.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping

from anon_duck.backend.base import Backend
from anon_duck.sqlrender import render


def render_release(backend: Backend, tables: Mapping[str, tuple[str, ...]], n_clusters: int = 10) -> str:
    """Text of the first ``n_clusters`` clusters (by cluster_id) and the shared chunks over them."""
    names = {s: tables[s] for s in ("clusters", "record_chunks", "shared_chunks", "shared_scope", "item_chunks")}
    chunks = backend.rows("figure: chunks", render("disassociation/figure_chunks.sql.j2", **names),
                          {"n_clusters": n_clusters})
    heads = backend.rows("figure: clusters", render("disassociation/figure_clusters.sql.j2", **names),
                         {"n_clusters": n_clusters})
    record: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    shared: dict[int, list[str]] = defaultdict(list)
    for kind, cluster, chunk, codes, n in chunks:
        (record[cluster][chunk] if kind == "record" else shared[chunk]).append(_subrecord(codes, n))
    lines = []
    for kind, ident, n_records, joint, codes in heads:
        if kind != "cluster":
            continue
        lines.append(f"cluster {ident}  |P|={n_records}  joint {joint}")
        for j, chunk in enumerate(sorted(record[ident]), start=1):
            lines.append(f"  C{j}: " + " ".join(record[ident][chunk]))
        lines.append("  item chunk: " + ("{" + ", ".join(codes) + "}" if codes else "{}"))
    for kind, ident, _, _, scope in heads:
        if kind == "scope":
            lines.append(f"shared chunk {ident} over clusters {','.join(scope)}: " + " ".join(shared[ident]))
    return "\n".join(lines)


def _subrecord(codes: list[str], n: int) -> str:
    text = "{" + ",".join(codes) + "}"
    return f"{text}x{n}" if n > 1 else text
