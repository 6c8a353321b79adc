"""Copying a release table in release order (sql/lib/release_order.jinja): the seeded random
order of the release's seed, the same rows in the same order on every engine. Publication and
export both copy this way; a table beyond the engine's sort budget is copied in chunks."""
from __future__ import annotations

from typing import Any

from ..backend.base import Backend
from ..scratch import scratch
from ..sqlrender import render


def copy_in_order(backend: Backend, stage: str, target: tuple[str, ...], source: tuple[str, ...], seeded: bool,
                   seed: Any, *, grouped: bool = False) -> None:
    """Copy table ``source`` to a new table ``target``, its rows in release order
    (sql/lib/release_order.jinja): publication and export.

    One statement (release/publish_table), but for a seeded table beyond its engine's sort
    budget (:func:`chunk_count`), which is copied in chunks (:func:`copy_chunks`). A
    ``grouped`` table (``ReleaseTable.repeats``: mostly identical rows, as LKC's generalized
    release) is one statement that sorts its distinct rows only and repeats them."""
    columns = list(backend.columns(f"{stage}: columns", source).items())
    chunks = chunk_count(backend, stage, source, columns) if seeded and not grouped else None
    if chunks is None:
        backend.run(stage, render("release/publish_table.sql.j2", target=target, source=source, columns=columns,
                                  seeded=seeded, seed=seed, grouped=grouped))
        return
    copy_chunks(backend, stage, target, source, columns, seed, chunks)


def chunk_count(backend: Backend, stage: str, source: tuple[str, ...], columns: list[tuple[str, str]]) -> int | None:
    """How many chunks the seeded table ``source`` is copied in, each of at most about one sort
    budget of row text, or None for the one statement: on an engine without a sort budget
    (Spark's sort spills), and for a table whose whole row text is below one budget
    (release/row_bytes). DuckDB's sort of wide rows fails rather than spill under
    ``memory_limit`` (ArtUC's release holds 1.6 GB of code-set text at EHRD scale), but under
    DuckDB's default limit nearly every table fits, and the one statement then digests each row
    once where the chunks' keys digest it and join it back (the five tables of ArtUC's
    52K-record EHRD-like release: 1.56 CPU seconds, counting their text included, against 2.05 s
    as one chunk each)."""
    budget = backend.sort_budget()
    if budget is None:
        return None
    total = backend.scalar(f"{stage}: bytes", render("release/row_bytes.sql.j2", source=source, columns=columns))
    return None if total is None or total < budget else int(total) // budget + 1


def copy_chunks(backend: Backend, stage: str, target: tuple[str, ...], source: tuple[str, ...],
                 columns: list[tuple[str, str]], seed: Any, chunks: int) -> None:
    """Copy the seeded table ``source`` to ``target`` in release order in ``chunks`` ranges of
    consecutive digests: each row's digest is stored with its row id and its range
    (release/order_keys), then each range's rows are sorted by their stored digest and columns
    and appended (release/copy_chunk). The same rows in the same order as the one statement,
    and no sort holds much more than a budget of row text. ``source`` holds rows (its row text
    reached the budget), so at least one range holds rows, and the first creates ``target``."""
    keys = scratch("order_keys")
    backend.run(f"{stage}: keys", render("release/order_keys.sql.j2", target=keys, source=source, columns=columns,
                                         seed=seed, chunks=chunks))
    held = [c for (c,) in backend.rows(f"{stage}: chunks", render("release/order_chunks.sql.j2", keys=keys))]
    for i, chunk in enumerate(held):
        backend.run(f"{stage}: chunk {i + 1}/{len(held)}",
                    render("release/copy_chunk.sql.j2", target=target, source=source, keys=keys, columns=columns,
                           create=i == 0), {"chunk": chunk})
    backend.run(f"{stage}: drop keys", render("release/drop_table.sql.j2", target=keys))
