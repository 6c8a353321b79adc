"""Seeded INFORMS-like data at any size, calibrated to INFORMS/MEPS 2005 as shipped in
``fixtures/informs`` (33,961 persons, 96,766 (person, 3-digit ICD-9) pairs, 599 codes).

Each demographic column is drawn from its marginal in the fixture (independently: the
fixture's joint distribution is not copied, so no real person is reproduced); a person's
number of codes from the fixture's code-set sizes (persons without codes included); the codes
of a person without replacement, weighted by the fixture's code frequencies.

Columns: the fixture's (``pid`` text, ``dobmm``, ``dobyy``, ``sex``, ``racex``, ``educyear``,
``marry``, ``income``, ``poverty``), ``codes(pid, code)``.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

from anon_duck.sqlrender import render
from . import Dataset, write_dataset

N_PERSONS = 33_961


def _table(path: Path) -> dict[str, np.ndarray]:
    with duckdb.connect() as con:
        con.execute(render("bench/load_parquet.sql.j2", target=("t",)), {"path": str(path)})
        return {k: np.asarray(v) for k, v in con.execute(render("bench/select_all.sql.j2", relation=("t",))).fetchnumpy().items()}


def generate(out_dir: Path, n: int = N_PERSONS, seed: int = 0, source: Path | None = None) -> Dataset:
    from anon_duck.demo import FIXTURES
    source = source or FIXTURES / "informs"
    persons = _table(source / "demographics.parquet")
    pairs = _table(source / "diagnoses.parquet")
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {"pid": np.array([f"P{i:08d}" for i in range(n)])}
    for column, values in persons.items():
        if column != "pid":
            out[column] = rng.choice(values, size=n)            # the marginal, value for value
    _, per_person = np.unique(pairs["pid"].astype(object), return_counts=True)
    sizes_real = np.concatenate([per_person, np.zeros(persons["pid"].size - per_person.size, dtype=np.int64)])
    labels, freq = np.unique(pairs["code"].astype(object), return_counts=True)
    sizes = rng.choice(sizes_real, size=n)
    code_of = _weighted_without_replacement(rng, freq / freq.sum(), sizes)
    owner = np.repeat(np.arange(n), sizes)
    return write_dataset(out_dir, out, {"pid": out["pid"][owner], "code": labels[code_of].astype(str)})


def _weighted_without_replacement(rng: np.random.Generator, p: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """For person i, ``sizes[i]`` distinct code indexes drawn with probabilities ``p``
    (successive sampling), concatenated in person order."""
    out = np.empty(int(sizes.sum()), dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(sizes)])
    for size in np.unique(sizes[sizes > 0]):
        for who in np.array_split(np.flatnonzero(sizes == size), -(-int((sizes == size).sum()) // 8192)):
            # Efraimidis-Spirakis: the `size` smallest Exp(1)/p keys are a weighted sample without replacement
            keys = rng.exponential(size=(who.size, p.size)) / p[None, :]
            best = np.argpartition(keys, size - 1, axis=1)[:, :size]
            out[(start[who][:, None] + np.arange(size)).ravel()] = np.sort(best, axis=1).ravel()
    return out
