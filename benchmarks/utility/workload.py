"""The fixed workload of the utility benchmark and its true answers on the input CDM.

200 cohort counts, a third of each kind: persons with code X; persons with X and Y; persons
with X born in decade Z (an age band at any fixed date). X and Y are drawn from the 50 codes
held by the most persons, Z from the input's birth decades, by numpy's generator with a fixed
seed, so the same CDM gives the same workload. It lives in table ``workload(query_id, kind,
code_x, code_y, band_lo, band_hi)`` (NULL where a kind has no Y or no band)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from anon_duck.backend.base import Backend
from anon_duck.sqlrender import render

QUERIES = 200
FREQUENT = 50            # X and Y are drawn from the codes held by the most persons
SEED = 32                # issue #32
KINDS = ("code", "pair", "band")
KIND_TEXT = {"code": "persons with X", "pair": "persons with X and Y", "band": "persons with X born in decade Z"}

WORKLOAD, DRAWN = ("utility_workload",), ("utility_workload_drawn",)
PERSON, CONDITIONS, ANCESTORS = ("utility_person",), ("utility_conditions",), ("utility_ancestors",)


@dataclass(frozen=True)
class Input:
    """The CDM's tables the benchmark reads beside the release (loaded from its Parquet files)."""

    person: tuple[str, ...] = PERSON
    conditions: tuple[str, ...] = CONDITIONS
    ancestors: tuple[str, ...] = ANCESTORS


def load_input(backend: Backend, cdm: Path) -> Input:
    """Load person, condition_occurrence and concept_ancestor of the CDM in ``cdm``."""
    found = Input()
    for target, table in ((found.person, "person"), (found.conditions, "condition_occurrence"),
                          (found.ancestors, "concept_ancestor")):
        backend.run(f"utility: load {table}", render("bench/load_parquet.sql.j2", target=target),
                    {"path": str(cdm / f"{table}.parquet")})
    return found


def build(backend: Backend, cdm: Input, *, queries: int = QUERIES, frequent: int = FREQUENT,
          seed: int = SEED) -> tuple[str, ...]:
    """Draw the workload on ``cdm`` and write it to :data:`WORKLOAD`."""
    rows = backend.rows("utility: frequent codes", render("bench/utility/frequent_codes.sql.j2",
                                                          conditions=cdm.conditions, person=cdm.person), {"n": frequent})
    codes = [v for what, v in rows if what == "code"]
    decades = [int(v) for what, v in rows if what == "decade"]
    if len(codes) < 2 or not decades:
        raise ValueError(f"utility workload: the CDM has {len(codes)} codes and {len(decades)} birth decades; "
                         "it needs at least 2 codes and 1 decade")
    rng = np.random.default_rng(seed)
    kinds = [KINDS[i * len(KINDS) // queries] for i in range(queries)]
    x, y, lo = [], [], []
    for kind in kinds:
        first, second = rng.choice(len(codes), size=2, replace=False)
        decade = decades[int(rng.integers(len(decades)))]
        x.append(codes[first])
        y.append(codes[second] if kind == "pair" else "")
        lo.append(decade if kind == "band" else -1)
    backend.write_table(DRAWN, {"query_id": np.arange(queries, dtype=np.int64), "kind": np.array(kinds),
                                "code_x": np.array(x), "code_y": np.array(y), "band_lo": np.array(lo, dtype=np.int64)})
    backend.run("utility: workload", render("bench/utility/workload.sql.j2", target=WORKLOAD, drawn=DRAWN))
    return WORKLOAD


def truth(backend: Backend, cdm: Input, workload: tuple[str, ...] = WORKLOAD) -> dict[int, int]:
    """Each query's answer on the input: query_id -> persons."""
    rows = backend.rows("utility: true answers", render("bench/utility/truth.sql.j2", workload=workload,
                                                        conditions=cdm.conditions, person=cdm.person))
    return {int(q): int(n) for q, n in rows}
