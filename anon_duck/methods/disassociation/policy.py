"""Utility policies U (seed 001 §3.1, §6.1; digest §5.5 and decision A15).

A policy is a set of pairwise-disjoint utility constraints, here one number per code:
``constraint_of[cid]`` is the constraint of code ``cid`` or -1 (codes need not be covered).

* ``explicit``: the job's ``[method.constraints]`` table (the paper's Fig. 3b).
* ``level1/2/3`` (hierarchy-based): one constraint per ancestor at ICD depth 3/2/1
  (category / section / chapter of the built-in trees); a code shallower than that depth is
  its own constraint (3-digit data under level 1).
* ``sim`` (similarity-based): codes in ICD order cut into consecutive blocks of ``sim_size``.
* ``sup`` (frequency-based): frequent itemsets at ``sup_percent`` % of the records, mined
  level-wise in SQL, kept greedily by (size desc, support desc, codes asc) when disjoint from
  those already kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...backend.base import Backend
from ...errors import InputError
from ...hierarchy import CLOSURE, NODES
from ...inputs import Inputs
from ...job import Job
from ...sqlrender import render
from .encoding import CODE, Records
from .frequent import frequent_itemsets


class PolicyParams(Protocol):
    """The parameters a policy is built from (shared by ``disassociation`` and ``cba``)."""

    policy: str
    constraints: tuple[tuple[str, tuple[str, ...]], ...]
    sim_size: int
    sup_percent: float

_LEVEL_DEPTH = {"level1": 3, "level2": 2, "level3": 1}


@dataclass(frozen=True)
class Policy:
    constraint_of: np.ndarray      # int64 per cid, -1 = no constraint
    names: list[str]               # constraint id of each constraint number

    @property
    def n_constraints(self) -> int:
        return len(self.names)


def build_policy(backend: Backend, job: Job, params: PolicyParams, rec: Records, *, fragment: bool = False) -> Policy:
    """The policy over the codes of ``rec``; ``fragment``: ``rec`` is one fragment of a
    partitioned run (:func:`_explicit`)."""
    if params.policy == "none":
        return Policy(np.full(rec.n_codes, -1, dtype=np.int64), [])
    if params.policy == "explicit":
        return _explicit(params, rec, fragment)
    if params.policy in _LEVEL_DEPTH:
        g = backend.fetch(f"disassociation: policy {params.policy}", render(
            "disassociation/policy_level.sql.j2", code=CODE, closure=CLOSURE, node=NODES),
            {"hierarchy": job.dataset.codes.hierarchy, "depth": _LEVEL_DEPTH[params.policy]})
        return _from_groups(rec, g["cid"], g["grp"].astype(str))
    if params.policy == "sim":
        g = backend.fetch("disassociation: policy sim", render("disassociation/policy_sim.sql.j2", code=CODE),
                          {"s": params.sim_size})
        return _from_groups(rec, g["cid"], np.char.add("sim", g["grp"].astype(str)))
    return _frequent_itemsets(backend, rec, params.sup_percent)


def _explicit(params: PolicyParams, rec: Records, fragment: bool) -> Policy:
    """The job's constraints over the codes of ``rec``. A named code that no record holds is
    a typo, unless ``rec`` is one fragment of a partitioned run: the code was then found in the
    whole input (:func:`check_constraint_codes`, before the cut), and each constraint keeps
    the codes the fragment holds. That is the policy the method applies on the fragment
    anyway: HORPART picks among the partition's codes (Fig. 8 line 5: (T \\ ignore) ∩ T_U),
    VERPART among the cluster's codes of support >= k, and its drop rule (lines 15-17) reads
    only codes still in ``remain``, so a code absent from the fragment never takes part."""
    index = rec.index_of()
    constraint_of = np.full(rec.n_codes, -1, dtype=np.int64)
    unknown = []
    for u, (uid, codes) in enumerate(params.constraints):
        for c in codes:
            if c in index:
                constraint_of[index[c]] = u
            else:
                unknown.append((uid, c))
    if unknown and not fragment:
        raise _unknown_codes(unknown)
    return Policy(constraint_of, [uid for uid, _ in params.constraints])


def check_constraint_codes(backend: Backend, job: Job, inputs: Inputs, params: PolicyParams) -> None:
    """Before a partitioned run is cut: every code an explicit policy names occurs in the
    whole input (a fragment alone cannot tell a typo from a code held elsewhere), in SQL, so
    the input's codes never come into Python."""
    if params.policy != "explicit":
        return
    rows = backend.rows("disassociation: constraint codes", render(
        "disassociation/unknown_constraint_codes.sql.j2", codes=inputs.codes,
        named=[(uid, c) for uid, codes in params.constraints for c in codes]))
    if rows:
        raise _unknown_codes([(uid, c) for uid, c in rows])


def _unknown_codes(unknown: list[tuple[str, str]]) -> InputError:
    """The error of named codes found in no record: (constraint id, code) pairs, in the job's order."""
    return InputError(f"method.constraints: {len(unknown)} code(s) occur in no record, e.g. "
                      + ", ".join(f"{c!r} (method.constraints.{uid})" for uid, c in unknown[:5])
                      + "; a utility constraint is a set of codes of the data")


def _from_groups(rec: Records, cid: np.ndarray, group: np.ndarray) -> Policy:
    names, number = np.unique(group, return_inverse=True)
    constraint_of = np.full(rec.n_codes, -1, dtype=np.int64)
    constraint_of[cid.astype(np.int64)] = number
    return Policy(constraint_of, names.tolist())


def _frequent_itemsets(backend: Backend, rec: Records, sup_percent: float) -> Policy:
    """Digest A15 "sup x": all frequent itemsets (level-wise, :mod:`.frequent`), greedy
    disjoint selection."""
    sigma = max(1, math.ceil(sup_percent / 100.0 * rec.n))
    found = [(len(items), support, items) for level in frequent_itemsets(backend, sigma)
             for items, support in level]                    # (size, support, cids)
    found.sort(key=lambda f: (-f[0], -f[1], f[2]))
    constraint_of = np.full(rec.n_codes, -1, dtype=np.int64)
    names: list[str] = []
    for _, _, items in found:
        if all(constraint_of[c] < 0 for c in items):
            constraint_of[list(items)] = len(names)
            names.append("{" + ",".join(rec.codes[list(items)].tolist()) + "}")
    return Policy(constraint_of, names)
