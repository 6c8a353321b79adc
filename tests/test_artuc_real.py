"""ArtUC on real data: INFORMS / MEPS 2005 (33,961 persons, 599 distinct 3-digit ICD-9 codes)
with the UC sets of fixtures/jobs/artuc_informs_uc*.toml (Table 6b shape). Every release must
verify (independent SQL checks), keep NCP <= δ, and show the paper's qualitative results:
ArtUC's NCP is far below the Baseline's. Numbers next to the paper's: docs/artuc.md."""
from __future__ import annotations

import dataclasses

import pytest

import anon_duck

pytestmark = pytest.mark.slow


def informs(job_file, uc: int, method: str = "artuc", **params):
    job = job_file(f"artuc_informs_uc{uc}.toml")
    p = {k: v for k, v in job.params.items() if k != "epsilon_share"}
    # ε: with S counted per cluster (spec A21) the paper's 6% of the distinct codes is far below
    # what any clustering of this data needs (docs/artuc.md), so the tests lift it; δ = 0.1 lets
    # the merging phase run (formation alone reaches 0.039); 4 merge candidates keep it fast.
    p.update({"epsilon": 1e9, "delta": 0.1, "merge_candidates": 4, **params})
    return dataclasses.replace(job, method=method, params=p)


def test_uc1_verifies_with_ncp_within_delta(con, job_file):
    job = informs(job_file, 1)
    result = anon_duck.run(con, job)
    f = result.facts
    assert result.verified and f["published_records"] == 33_961
    assert f["formation_ncp"] < f["ncp"] <= 0.1 + 1e-12 and f["merges"] > 0
    rep = anon_duck.report(con, job)
    assert rep["ncp"] == pytest.approx(f["ncp"], abs=1e-9) and rep["ul"] == pytest.approx(f["ul"], abs=1e-9)
    assert 0 < rep["are"]["W1"] < rep["are"]["W3"]          # demographics survive better than codes
    # every (class, itemset) check passed in SQL; the release carries no person id
    cols = [r[0] for r in con.execute("DESCRIBE artuc_informs_uc1_release").fetchall()]
    assert "pid" not in cols and "codes" in cols


def test_baseline_ncp_far_above_artuc(con, job_file):
    """§5.2: ArtUC's NCP is far lower than the Baseline's (paper: 662% on Informs)."""
    base = anon_duck.run(con, informs(job_file, 7, "artuc_baseline"))
    art = anon_duck.run(con, informs(job_file, 7, delta=0.04, merge_candidates=1))
    assert base.verified and art.verified
    assert art.facts["ncp"] <= 0.04 and base.facts["ncp"] > 5 * art.facts["ncp"]
    assert base.facts["ul"] < art.facts["ul"]      # and the Baseline keeps more codes (UL 138% lower)
