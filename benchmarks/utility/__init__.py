"""The utility benchmark of issue #32 (item 3): what each method keeps of an OMOP-shaped CDM.

For every method at k = 5 and k = 10, on the generated CDM (benchmarks/generators/omop_cdm.py):
the share of the input's (person, code) pairs the release shows exactly, only generalized, only
without counts, or not at all (from ``<release>_retention``); the NCP of the released
demographics; and the average relative error of a fixed, seeded workload of 200 cohort counts
answered from the release the way an analyst would (one estimator per release shape). The
modules: :mod:`.workload` (the queries and their true answers), :mod:`.estimate` (the answers
from a release), :mod:`.cases` (the bench cases, one per method and k), :mod:`.table` (the
table BENCHMARKS.md shows). benchmarks/utility.md documents the workload and the estimators.
"""
