"""Jobs of the ArtUC (seed 000) bench cases on generated data (``generators``), cached as
Parquet under the bench data folder."""
from __future__ import annotations

import dataclasses

from anon_duck.job import Job, Source, job_from_dict, load_job
from .generators import DATA, cached, ehrd_like, informs_like


def ehrd_job(n: int, *, k: int = 10, m: int = 2, delta: float = 0.04, merge_candidates: int = 4) -> Job:
    """UC1 of Table 6a on EHRD-like data: 12-year Age bands, Gender All, ICD-9 chapters."""
    from anon_duck.demo import FIXTURES
    data = cached((DATA / f"ehrd_like_{n}").resolve(), lambda out: ehrd_like.generate(out, n))
    doc = {
        "input": {"path": str(data.persons), "id": "pid",
                  "qi": [{"column": "age", "kind": "numeric"}, {"column": "gender", "hierarchy": "gender"}],
                  "codes": {"path": str(data.codes), "id": "pid", "code": "code", "hierarchy": "icd9"}},
        "hierarchy": {"gender": {"type": "edges", "path": str(FIXTURES / "000" / "ehrd_gender.csv")},
                      "icd9": {"type": "builtin", "name": "icd9cm"}},
        "method": {"name": "artuc", "k": k, "m": m, "delta": delta, "epsilon": 1e12,
                   "merge_candidates": merge_candidates,
                   "constraint_grid": {"age": {"lo": 0, "width": 12}, "gender": ["*"], "code_level": "chapter"}},
        "release": {"name": "bench_artuc_ehrd", "seed": 1},
    }
    return job_from_dict(doc, base_dir=FIXTURES / "000")


def informs_like_job(n: int, *, k: int = 10, m: int = 2, delta: float = 0.06, merge_candidates: int = 4) -> Job:
    """``fixtures/jobs/artuc_informs_uc1.toml`` on ``n`` INFORMS-like persons, with δ = 0.06 and
    4 merge partners. The generated demographics are independent, so cluster formation alone
    reaches NCP ≈ 0.055 at ×1 (lower at larger sizes), above the real data's 0.039: δ = 0.06 sits
    just above it, as the paper's δ = 0.04 sits just above the real data's."""
    from anon_duck.demo import FIXTURES
    data = cached((DATA / f"informs_like_{n}").resolve(), lambda out: informs_like.generate(out, n))
    job = load_job(FIXTURES / "jobs" / "artuc_informs_uc1.toml")
    params = {key: v for key, v in job.params.items() if key != "epsilon_share"}
    params.update(k=k, m=m, delta=delta, merge_candidates=merge_candidates, epsilon=1e12)
    codes = dataclasses.replace(job.dataset.codes, source=dataclasses.replace(job.dataset.codes.source, path=data.codes))
    dataset = dataclasses.replace(job.dataset, source=Source(path=data.persons), codes=codes)
    return dataclasses.replace(job, dataset=dataset, params=params)
