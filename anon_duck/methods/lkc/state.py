"""The PAIS working state in SQL: the TIPS of §4.2 of seed 003 as one scratch table.

``_ad_lkc_state(q<i>_raw, q<i>_cut, q<i>_nxt, sens, cnt)`` holds cells of identical raw QID
codes and sensitive code (spec §7.2, cells instead of records). Python keeps the
taxonomies and the loop; every set-based step is one templated statement and only aggregates
come back: building the cells, one scan per iteration that counts the records of ``T[Best]``
per path partition and next value (``_ad_lkc_parts``), the validity of every candidate from
those counts, and the refinement of ``T[Best]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ...backend.base import Backend
from ...errors import InputError
from ...hierarchy import NODES
from ...inputs import Inputs
from ...job import Job
from ...scratch import scratch
from ...sqlrender import render
from .params import LKCParams, check_root
from .taxonomy import Taxonomy

STATE, PARTS, CODES = scratch("lkc_state"), scratch("lkc_parts"), scratch("lkc_codes")


def cut_col(i: int) -> str:
    return f"q{i}_cut"


def nxt_col(i: int) -> str:
    return f"q{i}_nxt"


def raw_col(i: int) -> str:
    return f"q{i}_raw"


@dataclass(frozen=True)
class Validity:
    """Aggregates of a candidate's post-specialization groups (§4.3.2)."""

    min_n: int
    max_conf: float
    max_excess: float

    def merge(self, other: "Validity") -> "Validity":
        return Validity(min(self.min_n, other.min_n), max(self.max_conf, other.max_conf),
                        max(self.max_excess, other.max_excess))

    def valid(self, k: int) -> bool:
        """``|T[qid]| >= K`` and ``P(s|qid) <= C`` for every group (Definition 3.1)."""
        return self.min_n >= k and self.max_excess <= 0


class State:
    """The cells table plus the taxonomies, classes and sensitive values it was built from."""

    def __init__(self, backend: Backend, taxonomies: list[Taxonomy], classes: list[str],
                 sensitive: tuple[str, ...], n_rows: int) -> None:
        self.backend = backend
        self.taxonomies = taxonomies
        self.classes = classes
        self.sensitive = sensitive        # S, in code order 1..|S|
        self.n_rows = n_rows
        self.parts_attrs: list[int] = []  # attributes whose cut columns the last partition count has

    # -- Algorithm 1 lines 1-2 -------------------------------------------------------------
    @classmethod
    def build(cls, backend: Backend, job: Job, inputs: Inputs, params: LKCParams) -> "State":
        """Encode every QID and S; collapse the records into cells at the root. The class
        enters through the (value x class) histograms only (InfoGain)."""
        ds = job.dataset
        sens_counts = _values(backend, inputs, ds.sensitive) if ds.sensitive else {}
        s_set = params.sensitive_values if params.sensitive_values is not None else tuple(sens_counts)
        missing = [v for v in s_set if v not in sens_counts]
        if missing:
            raise InputError(f"method.sensitive_values: {missing[0]!r} does not occur in column "
                             f"{ds.sensitive!r} (values: {', '.join(list(sens_counts)[:10])})")
        check_root(params, inputs.n_rows, {v: sens_counts[v] for v in s_set})       # spec A9, before any work
        taxonomies = [_tree(backend, i, q.column, q.hierarchy, q.kind == "numeric") if q.hierarchy is not None
                      else _numeric(backend, inputs, params, i, q.column) for i, q in enumerate(ds.qis)]
        classes = list(_values(backend, inputs, ds.class_)) if ds.class_ else []
        sens_values = list(sens_counts)
        class_of = {c: i for i, c in enumerate(classes)} if classes else {"": 0}
        h = backend.fetch("lkc: value x class histograms (one scan)", render(
            "lkc/value_class_counts.sql.j2", relation=inputs.person, qis=[q.column for q in ds.qis],
            class_column=ds.class_))
        attr, value, raw = [], [], []
        runs: list[list[dict]] = []
        for t in taxonomies:
            mine = h["attr"].astype(np.int64) == t.attr
            index = {v: i for i, v in enumerate(t.values)}
            codes = np.array([index.get(str(v), -1) for v in h["value"][mine]], dtype=np.int64)
            if (codes < 0).any():
                raise InputError(f"input.qi column {t.column!r}: value {h['value'][mine][codes < 0][0]!r} is not "
                                 "covered by its taxonomy")
            t.set_counts(codes, np.array([class_of[str(c)] for c in h["cls"][mine]]), h["n"][mine],
                         len(class_of))
            t.expand(t.root)                                   # a grown root gets its split now
            every = np.arange(len(t.values), dtype=np.int64)
            runs.append(_runs(every, t.child_of(t.root, every)))
            if not t.dynamic:                                  # grown QIDs are ranked in SQL
                attr += [t.attr] * len(t.values)
                value += t.values
                raw += list(every)
        n_sens = len(sens_values)
        attr += [-2] * n_sens
        value += sens_values
        raw += [s_set.index(v) + 1 if v in s_set else 0 for v in sens_values]
        backend.write_table(CODES, {"attr": np.array(attr, dtype=np.int32), "value": np.array(value, dtype=object),
                                    "raw": np.array(raw, dtype=np.int32)})
        backend.run("lkc: working state (TIPS at the root)", render(
            "lkc/state.sql.j2", target=STATE, relation=inputs.person, codes=CODES,
            qis=[{"column": t.column, "ranked": t.dynamic, "runs": r} for t, r in zip(taxonomies, runs)],
            sensitive_column=ds.sensitive))
        state = cls(backend, taxonomies, classes, s_set, inputs.n_rows)
        lost = inputs.n_rows - int(state.sensitive_counts().sum())
        if lost:
            raise InputError(f"{lost} record(s) have a QID or sensitive value that could not be encoded")
        return state

    # -- queries -----------------------------------------------------------------------------
    def sensitive_counts(self) -> np.ndarray:
        """Records per sensitive code (index 0: values outside S)."""
        r = self.backend.fetch("lkc: sensitive counts", render("lkc/sensitive_counts.sql.j2", state=STATE))
        out = np.zeros(len(self.sensitive) + 1, dtype=np.int64)
        out[r["sens"].astype(np.int64)] = r["n"].astype(np.int64)
        return out

    def count_partitions(self, attrs: Sequence[int], active: set[int],
                         changed: tuple[int, int] | None = None) -> None:
        """Line 6's one scan: the records of ``T[Best]`` (``changed = (B, Best)``; all records
        when None) summed per (active cuts, b's cut, b's next value, sensitive code) for every
        attribute ``b`` in ``attrs``, into the small ``_ad_lkc_parts`` table. ``T[Best]`` is
        the range of raw codes Best covers, a bound filter."""
        sets = [{"attr": b, "cut": cut_col(b), "nxt": nxt_col(b), "group_by": [cut_col(j) for j in sorted(active | {b})]}
                for b in attrs]
        self.parts_attrs = sorted({j for s in sets for j in active | {s["attr"]}})
        where = None if changed is None else self.taxonomies[changed[0]].nodes[changed[1]]
        shape = (tuple(len(s["group_by"]) for s in sets), changed is None)
        self.backend.run("lkc: partition counts (one scan)", render(
            "lkc/partition_counts.sql.j2", shape=shape, target=PARTS, state=STATE, sets=sets,
            changed=None if changed is None else raw_col(changed[0])),
            None if where is None else {"lo": where.r0, "hi": where.r1})

    def validity(self, requests: Sequence[tuple[int, Sequence[Sequence[int]]]],
                 params: LKCParams) -> dict[tuple[int, int], Validity]:
        """§4.3.2 for the candidates of several attributes: for each request ``(A, others)``,
        group ``T[x]`` after ``x → child(x)`` over every QID subset ``{A} ∪ Q`` (``others``
        lists the ``Q``) and keep each candidate's smallest group, largest confidence and
        largest excess ``n_s · den − num · n`` (spec A17, exact in integers).

        Reads the partition counts of :meth:`count_partitions` (so only the records counted
        there), an aggregate of a few hundred to a few ten thousand rows: pulled once and
        grouped in numpy. As one SQL statement of GROUPING SETS per round it cost 25 ms on a
        quiet machine and 130 ms under load at 1M records (every set is its own hash table and
        thread hand-off), more than the scan of the cells that fills the table."""
        frac = params.c_fraction
        p = self.backend.fetch("lkc: partition cells", render(
            "lkc/partition_cells.sql.j2", shape=len(self.parts_attrs), parts=PARTS,
            cuts=[cut_col(i) for i in self.parts_attrs]))
        attr, nxt = p["attr"].astype(np.int64), p["nxt"].astype(np.int64)
        sens, cnt = p["sens"].astype(np.int64), p["cnt"].astype(np.int64)
        out: dict[tuple[int, int], Validity] = {}
        for a, others in requests:
            mine = (attr == a) & (nxt >= 0)          # no next value: a leaf or empty value, never a candidate
            if not mine.any():
                continue
            cut = {j: p[cut_col(j)][mine].astype(np.int64) for j in {a, *(j for q in others for j in q)}}
            for q in others:
                for x, v in group_validity([cut[a], nxt[mine], *(cut[j] for j in q)], sens[mine], cnt[mine],
                                           len(self.sensitive), frac).items():
                    out[(a, x)] = out[(a, x)].merge(v) if (a, x) in out else v
        return out

    def partition_sizes(self) -> dict[str, np.ndarray]:
        """The last partition counts without the sensitive split (Case 2 score)."""
        return self.backend.fetch("lkc: partition sizes", render(
            "lkc/partition_sizes.sql.j2", parts=PARTS, cuts=[cut_col(i) for i in self.parts_attrs]))

    # -- Algorithm 1 line 5 ------------------------------------------------------------------
    def perform(self, attr: int, best: int) -> None:
        """Refine ``T[Best]``: its records move to ``child(Best)`` (one UPDATE, §4.2)."""
        t = self.taxonomies[attr]
        raw, nxt = t.refinement(best)
        runs = _runs(raw, nxt)
        self.backend.run(f"lkc: perform {t.nodes[best].label} on {t.column}", render(
            "lkc/perform.sql.j2", shape=(len(runs), True), state=STATE, cut=cut_col(attr), nxt=nxt_col(attr),
            raw=raw_col(attr), runs=runs, move=True), {"best": int(best)})

    # -- numeric_split = 'best_valid' ----------------------------------------------------------
    def valid_thresholds(self, attr: int, x: int, others: Sequence[Sequence[int]], params: LKCParams) -> np.ndarray:
        """Which thresholds would split the grown interval ``x`` validly now: bool per raw
        code of ``x``'s range (True = no group of ``T[x]`` over the subsets ``{A} ∪ Q``, ``Q``
        in ``others``, breaks Definition 3.1 when split there). One statement per chunk of
        ``params.max_grouping_sets`` subsets."""
        node = self.taxonomies[attr].nodes[x]
        frac = params.c_fraction
        bad = np.zeros(node.r1 - node.r0 + 1, dtype=np.int64)        # +1 / -1 at the ends of invalid ranges
        sets = [[cut_col(j) for j in q] for q in others]
        for i in range(0, len(sets), params.max_grouping_sets):
            chunk = sets[i:i + params.max_grouping_sets]
            r = self.backend.fetch(f"lkc: split validity of {node.label}", render(
                "lkc/split_validity.sql.j2", state=STATE, raw=raw_col(attr), sets=chunk, n_sens=len(self.sensitive)),
                {"lo": node.r0, "hi": node.r1, "K": params.K, "c_num": frac.numerator, "c_den": frac.denominator})
            np.add.at(bad, r["lo_raw"].astype(np.int64) + 1 - node.r0, 1)       # t in (lo_raw, hi_raw]
            np.add.at(bad, r["hi_raw"].astype(np.int64) + 1 - node.r0, -1)
        return np.cumsum(bad)[:-1] == 0

    def repoint(self, attr: int, x: int) -> None:
        """After :meth:`Taxonomy.resplit`: the records of ``T[x]`` get ``x``'s new children as
        their next value (they stay at ``x``)."""
        t = self.taxonomies[attr]
        raw = np.arange(t.nodes[x].r0, t.nodes[x].r1, dtype=np.int64)
        self.backend.run(f"lkc: re-split {t.nodes[x].label} on {t.column}", render(
            "lkc/perform.sql.j2", state=STATE, cut=cut_col(attr), nxt=nxt_col(attr), raw=raw_col(attr),
            runs=_runs(raw, t.child_of(x, raw)), move=False), {"best": int(x)})


def _runs(raw: np.ndarray, nxt: np.ndarray) -> list[dict]:
    """``nxt`` over consecutive raw codes as runs of equal values: ``{"below": first raw code
    after the run (None for the last), "nxt": value (None for no child)}``."""
    starts = np.flatnonzero(np.diff(nxt)) + 1
    return [{"below": int(raw[e]) if e < len(raw) else None, "nxt": None if nxt[s] < 0 else int(nxt[s])}
            for s, e in zip(np.r_[0, starts], np.r_[starts, len(raw)])]


def group_validity(key: Sequence[np.ndarray], sens: np.ndarray, cnt: np.ndarray, n_sens: int,
                   c: Fraction) -> dict[int, Validity]:
    """The groups of the rows by ``key`` (columns of codes, the candidate's cut first), each of
    ``cnt`` records with sensitive code ``sens``, reduced per candidate: smallest group, largest
    ``P(s|group)`` over s in 1..n_sens, largest ``n_s · den − num · n`` (exact: int64 while it
    cannot overflow, Python integers beyond)."""
    group = _group_ids(key)
    n = np.bincount(group, weights=cnt).astype(np.int64)             # exact below 2^53 records
    n_s = np.zeros_like(n)
    for s in range(1, n_sens + 1):
        hit = sens == s
        n_s = np.maximum(n_s, np.bincount(group[hit], weights=cnt[hit], minlength=len(n)).astype(np.int64))
    candidate = np.zeros(len(n), dtype=np.int64)
    candidate[group] = key[0]                  # the cut leads the key: groups come by candidate
    starts = np.flatnonzero(np.r_[True, candidate[1:] != candidate[:-1]])
    wide = max(c.numerator, c.denominator) * int(n.max()) >= 2 ** 62
    excess = (n_s.astype(object) if wide else n_s) * c.denominator - c.numerator * (n.astype(object) if wide else n)
    min_n, max_conf = np.minimum.reduceat(n, starts), np.maximum.reduceat(n_s / n, starts)
    max_excess = np.maximum.reduceat(excess, starts)
    return {int(x): Validity(int(min_n[i]), float(max_conf[i]), float(max_excess[i]))
            for i, x in enumerate(candidate[starts])}


def _group_ids(columns: Sequence[np.ndarray]) -> np.ndarray:
    """A group number per row for the rows' tuples of (small, non-negative or -1) codes,
    numbered in the tuples' lexicographic order (so the first column's groups are contiguous)."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    span = 1
    for c in columns:
        width = int(c.max()) + 2 if len(c) else 1
        span *= width
        if span >= 2 ** 62:                    # too many combinations for one integer key
            return np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)[1].ravel()
        key = key * width + (c + 1)
    return np.unique(key, return_inverse=True)[1].ravel()


def _tree(backend: Backend, i: int, column: str, hierarchy: str, numeric: bool) -> Taxonomy:
    r = backend.fetch(f"lkc: taxonomy {hierarchy}", render("lkc/taxonomy_nodes.sql.j2", node_table=NODES),
                      {"hierarchy": hierarchy})
    parent = [None if p is None else str(p) for p in np.asarray(r["parent"], dtype=object)]
    return Taxonomy.from_tree(i, column, [str(v) for v in r["node"]], parent, [str(v) for v in r["label"]],
                              [float(v) for v in r["lo"]], interval_leaves=numeric)


def _values(backend: Backend, inputs: Inputs, column: str) -> dict[str, int]:
    """Distinct values of the class or sensitive column (sorted) with their record counts."""
    r = backend.fetch(f"lkc: values of {column}", render("lkc/distinct_values.sql.j2", relation=inputs.person,
                                                         column=column))
    return {str(v): int(n) for v, n in zip(r["value"], r["n"])}


def _numeric(backend: Backend, inputs: Inputs, params: LKCParams, i: int, column: str) -> Taxonomy:
    r = backend.fetch(f"lkc: values of {column}", render("lkc/numeric_values.sql.j2", relation=inputs.person,
                                                         column=column))
    root = params.root_for(column)
    numbers = r["number"].astype(float)
    if root is not None and (numbers[0] < root[0] or numbers[-1] >= root[1]):
        raise InputError(f"method.root_interval.{column} = [{root[0]:g}, {root[1]:g}): column {column!r} has "
                         f"values {numbers[0]:g}..{numbers[-1]:g} outside it")
    return Taxonomy.from_numbers(i, column, [str(v) for v in r["value"]], numbers, root)
