"""Full-domain generalization k-anonymity, minimum-LM node (the comparator "[16]" of seed 002).

Every QI is generalized to one level of its hierarchy for the whole table (a node of the
generalization lattice). The search walks the lattice bottom-up by height; a node is
k-anonymous iff its smallest equivalence class has >= k records, and k-anonymity is
monotone along lattice edges, so a node with a k-anonymous child is k-anonymous without a
check and is never minimal. Among the minimal k-anonymous nodes the one with the lowest loss
metric LM wins (ties: lowest height, then lexicographic level vector).

Record suppression (ARX's suppression limit): with ``suppression_limit = s`` a node is
acceptable when the records in its classes smaller than k number at most ``floor(s * n)``;
those records are left out of the release. Generalizing further only merges classes, so the
records in small classes can only decrease along a lattice edge: acceptability stays
monotone. A suppressed record counts as fully generalized (LM 1 on every QI, as in ARX), so a
node that suppresses much cannot win on LM for free; LM is then no longer monotone, so the
search checks every node and publishes the acceptable node with the least LM. ``s = 0`` (the
default) is the plain search.

LM of a record on attribute A (Iyengar 2002, as seed 002 §2.9.1 uses it):
``(n_leaves(node) - 1) / (n_leaves(root) - 1)``; LM of the table is the mean over records
and attributes. It is additive over attributes, so each node's LM is a sum of per-level
terms computed once.

l-diversity and t-closeness (``l_diversity``, ``t_closeness`` job keys,
:mod:`.privacy_models`) are further predicates on a node, as in ARX: a class is acceptable when
it has >= k records and satisfies every declared model; a node when the records of its
unacceptable classes (suppressed) number at most the budget. Each model is monotone along
lattice edges (merging classes keeps distinct and entropy l-diversity, recursive (c, l)
(Machanavajjhala et al. 2007, Section 4.3) and an EMD at most the larger of the two (Li et al.
2007, Section 4.3)), so predictive tagging stays sound; the frequency set then also groups on
the sensitive value.

Set-based work (frequency set, release) is SQL; the lattice walk runs in numpy over the
frequency set, which is an aggregate (one row per distinct QI combination).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..backend.base import Backend
from ..columns import bounds
from ..hierarchy import LEVELS, NODES
from ..inputs import Inputs, prepare
from ..errors import InfeasibleError
from ..job import Job
from ..retention import qi_retention
from ..scratch import scratch
from ..sqlrender import render
from ..verifiers import CheckResult, k_anonymity, suppression
from .base import Param, Progress, ReleaseTable, Staged, check_k, parse_params, release_view, require_roles
from .lattice import bottom_up, children
from .papers import cite
from .privacy_models import PARAMS as MODEL_PARAMS
from .privacy_models import Models, class_ok, ordered_distance, parse_models, verify_models
from .reporting import generalized_report

PARAMS = (Param("k", int, lo=2, doc="minimum equivalence-class size"),
          Param("suppression_limit", float, default=0.0, lo=0.0, hi=1.0,
                doc="largest share of records that may be left out (ARX's suppression limit)"),
          *MODEL_PARAMS)


@dataclass(frozen=True)
class FullDomainParams:
    k: int
    suppression_limit: float = 0.0
    models: Models = Models()


@dataclass(frozen=True)
class Sensitive:
    """The sensitive value of each frequency-set row (codes in value order) and the input's
    distribution over the codes: what the l-diversity / t-closeness predicates read."""

    code: np.ndarray
    reference: np.ndarray
    ordered: bool


@dataclass(frozen=True)
class LatticeResult:
    levels: tuple[int, ...]
    lm: float
    min_class: int
    n_classes: int
    nodes_checked: int
    nodes_total: int
    suppressed: int = 0


class FullDomain:
    name = "fulldomain"
    summary = f"full-domain generalization k-anonymity, minimum-LM lattice node (the comparator of {cite('counterfeit')})"
    views = release_view("release")

    def check_params(self, job: Job) -> FullDomainParams:
        require_roles(job, qis=True, hierarchies=True)
        values = parse_params(job, PARAMS)
        return FullDomainParams(values["k"], values["suppression_limit"], parse_models(job, values))

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: FullDomainParams,
                  progress: Progress) -> Staged:
        check_k(params.k, inputs.n_rows)
        qis = job.dataset.qis
        models = params.models
        freq = backend.fetch("fulldomain: frequency set",
                             render("fulldomain/frequency_set.sql.j2", relation=inputs.person,
                                    qis=[q.column for q in qis], sensitive=job.dataset.sensitive if models else None))
        maps = [_level_map(backend, q.hierarchy, freq[f"q{i}"]) for i, q in enumerate(qis)]
        cnt = freq["cnt"].astype(np.int64)
        sensitive = None
        if models:
            _, code = np.unique(freq["s"], return_inverse=True)
            sensitive = Sensitive(code, np.bincount(code, weights=cnt) / cnt.sum(),
                                  ordered_distance(backend, models, inputs.person, job.dataset.sensitive))
        best = search(cnt, maps, params.k, progress,
                      budget=suppression_budget(params.suppression_limit, inputs.n_rows),
                      models=models, sensitive=sensitive)
        dropped = None
        if best.suppressed and models:
            # classes that fail l / t are suppressed too: the release leaves out exactly the
            # frequency-set rows the search counted, named by their raw values
            key = _class_keys(maps, best.levels)
            bad = ~_acceptable(key, cnt, params.k, models, sensitive)
            dropped = scratch("fd_dropped")
            backend.write_table(dropped, {**{f"q{i}": freq[f"q{i}"][bad[key]] for i in range(len(qis))},
                                          "s": freq["s_text"][bad[key]]})
        target = scratch("fd_release")
        passthrough = [c for c in (job.dataset.sensitive, job.dataset.class_, *job.dataset.keep) if c]
        backend.run("fulldomain: release", render(
            "fulldomain/release.sql.j2", target=target, relation=inputs.person, level_table=LEVELS,
            node_table=NODES, passthrough=passthrough,
            k=params.k if best.suppressed and dropped is None else None, dropped=dropped, sensitive=job.dataset.sensitive,
            qis=[{"column": q.column, "hierarchy": q.hierarchy, "level": lvl, "numeric": q.kind == "numeric"}
                 for q, lvl in zip(qis, best.levels)]))
        facts = {"levels": dict(zip((q.column for q in qis), best.levels)), "lm": best.lm,
                 "min_class": best.min_class, "classes": best.n_classes,
                 "nodes_checked": best.nodes_checked, "lattice_size": best.nodes_total}
        if params.suppression_limit:
            facts["suppressed"] = best.suppressed
        facts |= params.models.facts()
        return Staged([ReleaseTable("release", target), qi_retention(backend, job, inputs, target)], facts)

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]],
               params: FullDomainParams) -> list[CheckResult]:
        # A numeric QI is published as its label and its bounds; a class is what an analyst
        # can tell apart, so the verifier groups on all three.
        qis = [c for q in job.dataset.qis
               for c in ((q.column, *bounds(q.column)) if q.kind == "numeric" else (q.column,))]
        checks = [k_anonymity(backend, relation=tables["release"], qis=qis, k=params.k)]
        person = None
        if params.suppression_limit:
            person = scratch("input")   # the prepared input during a run; re-read for anon-duck verify
            if not backend.scratch_exists(person):
                person = prepare(backend, job).person
            checks.append(suppression(backend, relation=tables["release"], original=person,
                                      limit=params.suppression_limit))
        # t-closeness is measured against the input's distribution, which a release that left
        # records out no longer shows
        return checks + verify_models(backend, job, params.models, tables["release"], qis, reference=person)

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: FullDomainParams) -> dict[str, Any]:
        out = generalized_report(backend, job, inputs, tables["release"], k=params.k)
        if params.suppression_limit:
            released = int(backend.scalar("report: released rows", render(
                "util/count_rows.sql.j2", relation=tables["release"])))
            out["suppressed"] = inputs.n_rows - released
        return out


@dataclass(frozen=True)
class _LevelMap:
    """For one QI: node id of each frequency-set row at each level, and LM of each level."""

    node_ids: np.ndarray   # (n_levels, n_rows) int64
    lm_terms: np.ndarray   # (n_levels, n_rows) float: per-record LM of that row's node


def _level_map(backend: Backend, hierarchy: str | None, values: np.ndarray) -> _LevelMap:
    m = backend.fetch(f"fulldomain: levels of {hierarchy}", render("fulldomain/level_map.sql.j2",
                                                                   level_table=LEVELS, node_table=NODES),
                      {"hierarchy": hierarchy})
    n_levels = int(m["level"].max()) + 1
    leaves = np.unique(m["leaf"])
    leaf_pos = np.searchsorted(leaves, values)
    _, node_codes = np.unique(m["node"], return_inverse=True)
    order = np.lexsort((m["level"], np.searchsorted(leaves, m["leaf"])))
    node_by = node_codes[order].reshape(len(leaves), n_levels).T          # (levels, leaves)
    root = float(m["root_leaves"][0])
    lm = ((m["n_leaves"][order].astype(float) - 1) / (root - 1 if root > 1 else 1)).reshape(len(leaves), n_levels).T
    return _LevelMap(node_by[:, leaf_pos].astype(np.int64), lm[:, leaf_pos])


def suppression_budget(limit: float, n_rows: int) -> int:
    """How many records a node may leave out: ``floor(limit * n_rows)`` (ARX's rule)."""
    return int(np.floor(limit * n_rows + 1e-9))


def _acceptable(key: np.ndarray, cnt: np.ndarray, k: int, models: Models,
                sensitive: Sensitive | None) -> np.ndarray:
    """Per class (dense ``key`` of the frequency-set rows): >= k records and every declared
    model holds."""
    sizes = np.bincount(key, weights=cnt).astype(np.int64)
    ok = sizes >= k
    if models:
        ok &= class_ok(models, key, sensitive.code, cnt, sizes.size, sensitive.reference, sensitive.ordered)
    return ok


def search(cnt: np.ndarray, maps: list[_LevelMap], k: int, progress: Progress, *, budget: int = 0,
           models: Models = Models(), sensitive: Sensitive | None = None) -> LatticeResult:
    """Bottom-up lattice walk with predictive tagging (a node above an acceptable node is
    acceptable and not minimal); returns the minimal acceptable node with the least LM. A node
    is acceptable when the records in its unacceptable classes (smaller than ``k``, or failing
    a declared l-diversity / t-closeness model: :func:`_acceptable`), which would be
    suppressed, number at most ``budget``; with budget 0, when every class is acceptable.

    With a budget, LM is no longer monotone along the lattice (a parent may keep records its
    child suppresses, at LM below 1), so every node is checked and the acceptable node with
    the least LM wins, as ARX's optimum does."""
    heights = [m.node_ids.shape[0] - 1 for m in maps]
    n_total = int(cnt.sum())
    lm_level = [(m.lm_terms * cnt).sum(axis=1) / n_total for m in maps]
    nodes = bottom_up(heights)
    anonymous: set[tuple[int, ...]] = set()
    minimal: list[tuple[float, int, tuple[int, ...], int, int]] = []
    checked = 0
    for i, node in enumerate(nodes):
        if i % 256 == 0:
            progress("lattice", i, len(nodes))
        if not budget and any(c in anonymous for c in children(node)):
            anonymous.add(node)
            continue
        checked += 1
        key = _class_keys(maps, node)
        sizes = np.bincount(key, weights=cnt).astype(np.int64)
        small = ~_acceptable(key, cnt, k, models, sensitive)
        suppressed = int(sizes[small].sum())
        if suppressed <= budget:
            anonymous.add(node)
            if suppressed:     # a suppressed record is fully generalized: LM 1 on every QI
                kept = cnt * ~small[key]
                lm = float(np.mean([((m.lm_terms[lvl] * kept).sum() + suppressed) / n_total
                                    for m, lvl in zip(maps, node)]))
            else:
                lm = float(np.mean([lm_level[j][lvl] for j, lvl in enumerate(node)]))
            published = sizes[~small]
            minimal.append((lm, sum(node), node, int(published.min(initial=n_total)) if published.size else 0,
                            int(published.size), suppressed))
    progress("lattice", len(nodes), len(nodes))
    if not minimal:
        # only a declared model can fail the top node: it puts every row in one class, and
        # check_k ensured k <= rows
        raise InfeasibleError(
            f"no lattice node satisfies the declared models ({_describe(models)}) with at most {budget} record(s) "
            "suppressed, not even the most general one (one class of every record): lower method.l_diversity.l, "
            "raise method.t_closeness, or raise method.suppression_limit")
    lm, _, node, min_class, n_classes, suppressed = min(minimal)
    return LatticeResult(node, lm, min_class, n_classes, checked, len(nodes), suppressed)


def _describe(models: Models) -> str:
    return ", ".join(f"{key} = {value}" for key, value in models.facts().items())


def _class_sizes(cnt: np.ndarray, maps: list[_LevelMap], node: tuple[int, ...]) -> np.ndarray:
    """Sizes of the equivalence classes at ``node``: roll the frequency set up to the node."""
    return np.bincount(_class_keys(maps, node), weights=cnt).astype(np.int64)


def _class_keys(maps: list[_LevelMap], node: tuple[int, ...]) -> np.ndarray:
    """The equivalence class (a dense id) of each frequency-set row at ``node``."""
    key = np.zeros(maps[0].node_ids.shape[1], dtype=np.int64)
    for m, lvl in zip(maps, node):
        ids = m.node_ids[lvl]
        # re-densify after each attribute so the combined key never overflows int64
        _, key = np.unique(key * (int(ids.max()) + 1) + ids, return_inverse=True)
    return key


METHOD = FullDomain()
