"""Dense integer encoding of the set-valued input (digest §7.1, "load and normalise").

HORPART and VERPART work on records, so they need the (record, code) incidence itself, not an
aggregate of it; SQL hands it over as two integer columns (no person id, no code text):
``rid`` numbers the persons (ordered by their id text, so the numbering is reproducible) and
``cid`` numbers the distinct codes in code-string order, which makes "smallest code index"
the digest's tie-break "smallest code string" (A5). Persons without codes are records with no
pairs (A21); duplicate (person, code) rows were collapsed by the input loader.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend.base import Backend
from ...scratch import scratch
from ...sqlrender import render

RECORD, CODE, PAIR = scratch("dis_record"), scratch("dis_code"), scratch("dis_pair")


@dataclass(frozen=True)
class Records:
    """The dataset D: ``n`` records, code strings by index, and the pairs sorted by (rid, cid)."""

    n: int
    codes: np.ndarray          # code string of each cid (object array, sorted)
    rid: np.ndarray            # int64, one entry per (record, code) pair
    cid: np.ndarray            # int64

    @property
    def n_codes(self) -> int:
        return int(self.codes.size)

    def index_of(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.codes.tolist())}

    def support(self) -> np.ndarray:
        """The records holding each code (by cid)."""
        return np.bincount(self.cid, minlength=self.n_codes)


def encode(backend: Backend, person: tuple[str, ...], id_col: str, codes: tuple[str, ...]) -> Records:
    """Number persons and codes in SQL (scratch tables ``dis_record``, ``dis_code``,
    ``dis_pair``) and fetch the integer pairs."""
    backend.run("disassociation: number records", render(
        "disassociation/encode_records.sql.j2", target=RECORD, person=person, id=id_col))
    backend.run("disassociation: number codes", render(
        "disassociation/encode_codes.sql.j2", target=CODE, codes=codes))
    backend.run("disassociation: pairs", render(
        "disassociation/encode_pairs.sql.j2", target=PAIR, codes=codes, record=RECORD, code=CODE))
    n = int(backend.scalar("disassociation: records", render("util/count_rows.sql.j2", relation=RECORD)))
    dictionary = backend.fetch("disassociation: code dictionary", render(
        "disassociation/code_dictionary.sql.j2", code=CODE))
    pairs = backend.fetch("disassociation: pairs", render("disassociation/pairs.sql.j2", pair=PAIR))
    return Records(n, np.asarray(dictionary["code"], dtype=object),
                   pairs["rid"].astype(np.int64), pairs["cid"].astype(np.int64))
