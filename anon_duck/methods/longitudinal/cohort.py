"""Seeded synthetic cohorts shaped like seed 004's Table I (the VUMC cohorts are not public).

Not from the paper: spec longitudinal.md §7.5 item 9. Each patient gets ``c`` distinct codes
(Zipf popularity over the cohort's code set, drawn without replacement) and ``a`` consecutive
ages from a uniform start age, ``c - 1`` and ``a - 1`` Poisson around Table I's "Avg. ICD per
T" and "Avg. Age per T" (distinct counts, spec A15). The trajectory has ``max(c, a)`` pairs:
every code and every age occurs at least once, pairs sorted by age. Use it for scale and for
the qualitative trends of Appendix A, never as the paper's data.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...hierarchy import read_builtin_rows

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


def generate(spec: CohortSpec, *, n_patients: int | None = None, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """``{"patients": {id, payload}, "events": {id, position, code, age}}`` as numpy columns."""
    rng = np.random.default_rng(seed)
    n = spec.n_patients if n_patients is None else n_patients
    codes = np.array(cohort_codes(spec.n_codes, seed))
    c = np.minimum(1 + rng.poisson(spec.mean_codes - 1, n), spec.n_codes)
    a = np.minimum(1 + rng.poisson(spec.mean_ages - 1, n), spec.n_ages)
    # Zipf popularity without replacement: Gumbel top-c of log p (rank r has p ~ 1 / r)
    logp = -np.log(np.arange(1, spec.n_codes + 1))
    picked = np.argsort(-(logp[None, :] + rng.gumbel(size=(n, spec.n_codes))), axis=1)
    length = np.maximum(c, a)
    width = int(length.max())
    j = np.arange(width)[None, :]
    valid = j < length[:, None]
    code_idx = np.take_along_axis(picked, j % c[:, None], axis=1)           # every code at least once
    start = rng.integers(0, spec.n_ages - a + 1)
    extra_age = rng.integers(0, a[:, None], size=(n, width))
    age_off = np.where(j < a[:, None], j, extra_age)                           # every age at least once
    age = start[:, None] + age_off
    order = np.lexsort((np.where(valid, code_idx, 0), np.where(valid, age, np.iinfo(np.int64).max)), axis=1)
    age = np.take_along_axis(age, order, axis=1)
    code_idx = np.take_along_axis(code_idx, order, axis=1)
    pid = np.repeat(np.arange(1, n + 1), length)
    events = {"id": pid, "position": (np.arange(valid.sum()) - np.repeat(np.cumsum(length) - length, length)) + 1,
              "code": codes[code_idx[valid]], "age": age[valid]}
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
