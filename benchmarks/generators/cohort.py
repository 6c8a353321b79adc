"""Seeded synthetic cohorts shaped like seed 004's Table I (the VUMC cohorts are not public).

Not from the paper: spec longitudinal.md §7.5 item 9, calibrated to what Table I and
Section V-A imply. Each patient gets ``c`` distinct codes and ``a`` consecutive ages (from a
uniform start age), ``c - 1`` and ``a - 1`` Poisson around Table I's "Avg. ICD per T" and
"Avg. Age per T" (distinct counts, spec A15). A code is recorded at each of the patient's
ages with probability ``RECURRENCE`` (every code at one age at least, every age with one
code at least, so the distinct counts stay Table I's): a trajectory is the (code, age) grid
read age by age, codes in code order within an age (spec A9), ``c * a * RECURRENCE``
pairs on average, not ``max(c, a)``. Why the recurrence: D4^Pop is D50^Pop restricted to
four codes, and it keeps 2.78 of D50's 3.10 distinct ages per patient with only 1.65 codes,
so each code must recur at most of a patient's ages (``RECURRENCE`` reproduces that ratio,
``tests/test_longitudinal_data.py``). Code popularity is Zipf with exponent ``ZIPF``, flat
enough that each of the 50 codes occurs in at least 5% of the trajectories (Section V-A).
Use the cohorts for scale and for the qualitative trends of Appendix A, never as the
paper's data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anon_duck.hierarchy import read_builtin_rows

D4_CODES = ("250", "272", "401", "724")   # Section V-A: the four comorbid codes of [43]


@dataclass(frozen=True)
class CohortSpec:
    name: str
    n_patients: int
    n_codes: int
    mean_codes: float     # Table I "Avg. ICD per T"
    mean_ages: float      # Table I "Avg. Age per T"
    n_ages: int           # Table I |Age|: the age range is 0 .. n_ages - 1


TABLE_I = {
    "D50_pop": CohortSpec("D50_pop", 27639, 50, 5.88, 3.10, 102),
    "D4_pop": CohortSpec("D4_pop", 16052, 4, 1.65, 2.78, 97),
    "D4_smp": CohortSpec("D4_smp", 1896, 4, 1.96, 4.04, 90),
}


def cohort_codes(n_codes: int, seed: int) -> list[str]:
    """The cohort's code set: the four D4 codes first, then seeded ICD-9-CM categories."""
    if n_codes <= len(D4_CODES):
        return list(D4_CODES[:n_codes])
    categories = sorted(r["node"] for r in read_builtin_rows("icd9cm")
                        if r["level_name"] == "category" and r["node"] not in D4_CODES and r["node"][0].isdigit())
    extra = np.random.default_rng(seed).choice(len(categories), n_codes - len(D4_CODES), replace=False)
    return list(D4_CODES) + [categories[i] for i in sorted(extra)]


RECURRENCE = 0.8   # P(a code of the patient is recorded at a given age of the patient)
ZIPF = 0.5         # code popularity ~ rank ** -ZIPF


def generate(spec: CohortSpec, *, n_patients: int | None = None, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """``{"patients": {id, payload}, "events": {id, position, code, age}}`` as numpy columns."""
    rng = np.random.default_rng(seed)
    n = spec.n_patients if n_patients is None else n_patients
    codes = np.array(cohort_codes(spec.n_codes, seed))
    c = np.minimum(1 + rng.poisson(spec.mean_codes - 1, n), spec.n_codes)
    a = np.minimum(1 + rng.poisson(spec.mean_ages - 1, n), spec.n_ages)
    # Zipf popularity without replacement: Gumbel top-c of log p (rank r has p ~ r ** -ZIPF)
    logp = -ZIPF * np.log(np.arange(1, spec.n_codes + 1))
    picked = np.argsort(-(logp[None, :] + rng.gumbel(size=(n, spec.n_codes))), axis=1)
    width_c, width_a = int(c.max()), int(a.max())
    by_name = np.argsort(codes)                                                 # code order in an age (spec A9)
    rank = np.argsort(by_name)
    slot = np.where(np.arange(spec.n_codes) < c[:, None], rank[picked], spec.n_codes)
    slot = np.sort(slot, axis=1)[:, :width_c]                                   # the patient's codes, in code order
    in_c = np.arange(width_c)[None, :, None] < c[:, None, None]
    in_a = np.arange(width_a)[None, None, :] < a[:, None, None]
    grid = (rng.random((n, width_c, width_a)) < RECURRENCE) & in_c & in_a      # grid[p, code slot, age slot]
    lonely = ~grid.any(axis=2) & in_c[:, :, 0]                                  # a code at no age: one random age
    p, h = np.nonzero(lonely)
    grid[p, h, rng.integers(0, a[p])] = True
    lonely = ~grid.any(axis=1) & in_a[:, 0, :]                                  # an age with no code: one random code
    p, t = np.nonzero(lonely)
    grid[p, rng.integers(0, c[p]), t] = True
    start = rng.integers(0, spec.n_ages - a + 1)
    p, t, h = np.nonzero(grid.transpose(0, 2, 1))                              # age by age, codes in order
    length = np.bincount(p, minlength=n)
    events = {"id": p + 1, "position": np.arange(p.size) - np.repeat(np.cumsum(length) - length, length) + 1,
              "code": codes[by_name][slot[p, h]], "age": start[p] + t}
    payload = np.char.add("P", rng.integers(0, 10 ** 9, n).astype(str))
    return {"patients": {"id": np.arange(1, n + 1), "payload": payload}, "events": events}


def job_text(spec: CohortSpec, *, k: int, alignment: str = "ags", release: str = "anon_cohort") -> str:
    """A job over tables ``cohort_patients`` / ``cohort_events`` with the built-in ICD-9 tree
    cut at categories and dyadic age intervals (spec A3)."""
    return f"""
[input]
table = "cohort_patients"
id = "id"
keep = ["payload"]
[input.events]
table = "cohort_events"
id = "id"
position = "position"
code = "code"
age = "age"
code_hierarchy = "icd9"
age_hierarchy = "age"
[hierarchy.icd9]
type = "builtin"
name = "icd9cm"
leaf_level = "category"
[hierarchy.age]
type = "interval"
width = 2
dyadic = true
[method]
name = "longitudinal"
k = {int(k)}
alignment = "{alignment}"
[release]
name = "{release}"
seed = 1
"""
