"""From the checked inputs to what MDAV' works on: DGH cost tables and distinct trajectories.

All set-based work is SQL (domain nodes, record numbering, pair ids, grouping of equal
trajectories); Python pulls one row per DGH node, one row per record (its trajectory id) and
the pairs of each distinct trajectory once.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...backend.base import Backend
from ...errors import InputError
from ...hierarchy import CLOSURE, NODES
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .costs import CostModel, load_dgh
from .mdav import Trajectories
from .params import LongitudinalParams

NODE_TABLE = scratch("lg_node")
PERSONS = scratch("lg_person")
PAIRS = scratch("lg_pair")
KEYS = scratch("lg_traj")


@dataclass(frozen=True)
class Loaded:
    model: CostModel
    trajs: Trajectories
    n_pairs: int            # p of Algorithm 3 step 1


def build_domain(backend: Backend, job: Job, inputs: Inputs, params: LongitudinalParams) -> tuple[str, ...]:
    """The two DGHs restricted to their LM domain (``sql/longitudinal/domain_nodes.sql.j2``).
    Also used by ``report`` so that AvgRE reads the same |ICD| and |Age| as the anonymizer."""
    events = job.dataset.events
    assert events is not None and inputs.events is not None
    backend.run("longitudinal: DGH domains", render(
        "longitudinal/domain_nodes.sql.j2", target=NODE_TABLE, events=inputs.events, node_table=NODES,
        closure_table=CLOSURE), {"code_hierarchy": events.code_hierarchy, "age_hierarchy": events.age_hierarchy,
                                 "code_observed": params.code_domain == "observed",
                                 "age_observed": params.age_domain == "observed"})
    return NODE_TABLE


def load(backend: Backend, job: Job, inputs: Inputs, params: LongitudinalParams) -> Loaded:
    """Check the event order, build the cost model and the distinct trajectories of D."""
    assert inputs.events is not None and job.dataset.id is not None
    n_dup, dup_ids, n_dec, dec_ids = backend.rows("longitudinal: event order", render(
        "longitudinal/order_problems.sql.j2", events=inputs.events))[0]
    if n_dup:
        raise InputError(f"input.events: {n_dup} person(s) have two events at the same position, "
                         f"e.g. id {', '.join(dup_ids)}; positions must be unique within a person")
    if n_dec:
        raise InputError(f"input.events: {n_dec} person(s) have an age that decreases along the positions, "
                         f"e.g. id {', '.join(dec_ids)}; seed 004 orders each trajectory by age "
                         "(give positions in age order, or omit input.events.position)")
    nodes = build_domain(backend, job, inputs, params)
    model = CostModel.create(load_dgh(backend, nodes, "code", params.lm_convention),
                             load_dgh(backend, nodes, "age", params.lm_convention), params.w_icd, params.w_age)
    backend.run("longitudinal: records", render("longitudinal/persons.sql.j2", target=PERSONS, person=inputs.person,
                                                person_id=job.dataset.id))
    backend.run("longitudinal: pairs", render("longitudinal/pairs.sql.j2", target=PAIRS, events=inputs.events,
                                              persons=PERSONS, nodes=nodes))
    backend.run("longitudinal: distinct trajectories", render("longitudinal/trajectory_keys.sql.j2", target=KEYS,
                                                              persons=PERSONS, pairs=PAIRS))
    of_record = backend.fetch("longitudinal: record values", render("longitudinal/record_trajectories.sql.j2",
                                                                     keys=KEYS))
    pairs = backend.fetch("longitudinal: value pairs", render("longitudinal/trajectory_pairs.sql.j2", keys=KEYS,
                                                               pairs=PAIRS))
    trajs = Trajectories.from_pairs(pairs["traj"].astype("int64"), pairs["seq"].astype("int64"),
                                    pairs["code_id"].astype("int64"), pairs["age_id"].astype("int64"),
                                    of_record["traj"].astype("int64"))
    n_pairs = int(trajs.length[trajs.of_record].sum())
    return Loaded(model, trajs, n_pairs)
