"""ArtUC: (k, k^m)-anonymity of RT-datasets (demographics + diagnosis codes) under utility
constraints (seed 000_c77b3add30ffea1b), with the paper's comparators Baseline and (an
approximation of) RmR. See docs/artuc.md for the paper-to-code map.

Modules: ``params`` (job parameters, Definition 8 in TOML), ``constraints`` (U in the database:
validation, Step 1), ``generalize`` (Definitions 2-4 in numpy), ``algorithm`` (Algorithms 1
and 2), ``staging`` (pull once, write the release), ``report`` (NCP, UL, ARE), ``method``
(the plug-ins). GenDiag lives in :mod:`anon_duck.methods.gendiag` (shared with seed 001).
"""
from .method import BASELINE, METHOD, RMR

__all__ = ["METHOD", "BASELINE", "RMR"]
