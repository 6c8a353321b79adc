"""Algorithm 1 line 8 of seed 003: output T (generalized) and ∪Cut_i.

Three staged tables: ``release`` (T' with labels, spec §7.5), ``cut`` (the final cut with
record counts per value) and ``trace`` (one row per performed specialization). Per-candidate
diagnostics (validity of refused specializations, their smallest groups) stay out of the
release: a refused candidate's "min n = 1" would reveal a group that the release hides.
"""
from __future__ import annotations

import numpy as np

from ...backend.base import Backend
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from ..base import ReleaseTable
from .pais import PAISResult
from .state import State

RECODE, RELEASE, CUT, TRACE = (scratch("lkc_recode"), scratch("lkc_release"), scratch("lkc_cut"),
                               scratch("lkc_trace"))


def stage(backend: Backend, job: Job, inputs: Inputs, state: State, result: PAISResult,
          with_dc: bool) -> list[ReleaseTable]:
    """Write the recoding map, build T' (a join per taxonomy QID, a CASE over the interval
    bounds per grown QID), and the cut and trace tables."""
    attr, value, label = [], [], []
    qis, binds = [], {}
    for t, cut in zip(state.taxonomies, result.cuts):
        if t.dynamic:
            intervals = sorted((t.nodes[x] for x in cut), key=lambda n: n.lo)
            qis.append({"column": t.column, "attr": t.attr, "interval": True,
                        "highs": [float(n.hi) for n in intervals[:-1]]})
            binds |= {f"label_{t.attr}": [n.label for n in intervals], f"lo_{t.attr}": [float(n.lo) for n in intervals],
                      f"hi_{t.attr}": [float(n.hi) for n in intervals]}
            continue
        qis.append({"column": t.column, "attr": t.attr, "interval": False})
        attr += [t.attr] * len(t.values)
        value += t.values
        label += [t.nodes[x].label for x in t.cut_of(cut)]
    backend.write_table(RECODE, {"attr": np.array(attr, dtype=np.int32), "value": np.array(value, dtype=object),
                                 "label": np.array(label, dtype=object)})
    ds = job.dataset
    passthrough = [c for c in (ds.sensitive, ds.class_, *ds.keep) if c]
    backend.run("lkc: release (line 8)", render(
        "lkc/release.sql.j2", target=RELEASE, relation=inputs.person, recode=RECODE, passthrough=passthrough,
        qis=qis), binds or None)

    cut_attr, cut_value, cut_n = [], [], []
    for t, cut in zip(state.taxonomies, result.cuts):
        for x in sorted(cut, key=lambda x: t.nodes[x].r0):
            cut_attr.append(t.column)
            cut_value.append(t.nodes[x].label)
            cut_n.append(t.size(x))
    backend.write_table(CUT, {"attribute": np.array(cut_attr, dtype=object),
                              "value": np.array(cut_value, dtype=object),
                              "n_records": np.array(cut_n, dtype=np.int64)})
    steps = result.trace
    columns = {"iteration": np.array([s.iteration for s in steps], dtype=np.int64),
               "attribute": np.array([s.attribute for s in steps], dtype=object),
               "value": np.array([s.value for s in steps], dtype=object),
               "children": np.array([" | ".join(s.children) for s in steps], dtype=object),
               "score": np.array([s.score for s in steps], dtype=float),
               "info_gain": np.array([s.info_gain for s in steps], dtype=float),
               "n_valid_candidates": np.array([s.n_valid_candidates for s in steps], dtype=np.int64),
               "n_records": np.array([s.n_records for s in steps], dtype=np.int64)}
    if with_dc:
        columns["dc_before"] = np.array([s.dc_before for s in steps], dtype=np.int64)
        columns["dc_after"] = np.array([s.dc_after for s in steps], dtype=np.int64)
    backend.write_table(TRACE, columns)
    return [ReleaseTable("release", RELEASE, repeats=not ds.keep),  # generalized: ~30K distinct rows of 1M
            ReleaseTable("cut", CUT, shuffle=False),      # sorted by attribute, value
            ReleaseTable("trace", TRACE, shuffle=False)]  # sorted by iteration
