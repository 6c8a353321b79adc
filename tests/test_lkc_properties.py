"""PAIS against a brute-force oracle on random small tables (spec lkc_privacy §7.7 item 9).

The oracle is Algorithm 1 written the slow, obvious way: every round it rebuilds every
candidate's hypothetical table and checks Definition 3.1 on *every* QID subset of size 1..L
(no active-attribute reduction, no incremental re-check, no cells), grows numeric intervals
by its own threshold search (or, for ``numeric_split = 'best_valid'``, the best threshold whose
split keeps the table private, every round), scores by Eq. 2, by ΔDC or by dc_after
(``dc_score = 'paper_after'``), and breaks ties as spec §3.4 says. PAIS must take the same
specializations in the same order; its release must pass the verifier; and at the end no candidate may be valid
(maximality, checked by the oracle's own validity test).
"""
from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from itertools import combinations

import duckdb
import pytest

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import InfeasibleError
from anon_duck.job import Job, Source
from anon_duck.verifiers import lkc_privacy

from conftest import table_fingerprint
from test_lkc import TOY, run_pais

# Figure 2 (spec §4.2); Age's leaves are the intervals, raw ages map into them
PARENT = {
    "Job": {"Blue-collar": "ANY_Job", "White-collar": "ANY_Job", "Non-Technical": "Blue-collar",
            "Technical": "Blue-collar", "Manager": "White-collar", "Professional": "White-collar",
            "Janitor": "Non-Technical", "Mover": "Non-Technical", "Carpenter": "Technical",
            "Technician": "Technical", "Accountant": "Manager", "Doctor": "Professional", "Lawyer": "Professional"},
    "Sex": {"M": "ANY_Sex", "F": "ANY_Sex"},
    "Age": {"[1-60)": "[1-99)", "[60-99)": "[1-99)", "[1-30)": "[1-60)", "[30-60)": "[1-60)"},
}
ROOT = {"Job": "ANY_Job", "Sex": "ANY_Sex", "Age": "[1-99)"}
QID = ["Job", "Sex", "Age"]
AGE_LEAF = {24: "[1-30)", 34: "[30-60)", 44: "[30-60)", 58: "[30-60)", 63: "[60-99)"}
JOBS = ["Janitor", "Mover", "Carpenter", "Technician", "Doctor", "Lawyer"]


def children(attr: str, v: str) -> list[str]:
    return sorted(c for c, p in PARENT[attr].items() if p == v)


def preorder(attr: str) -> list[str]:
    out, stack = [], [ROOT[attr]]
    while stack:
        v = stack.pop()
        out.append(v)
        stack.extend(reversed(children(attr, v)))
    return out


def path(attr: str, leaf: str) -> list[str]:
    out = [leaf]
    while out[-1] in PARENT[attr]:
        out.append(PARENT[attr][out[-1]])
    return out


def entropy(counts) -> float:
    n = sum(counts)
    return -sum(c / n * math.log2(c / n) for c in counts if c) if n else 0.0


def grown_split(rows: list[dict], iv: tuple[int, int], accept=None) -> list[tuple[int, int]]:
    """§3.2.1 / spec §2.6 by brute force: the binary split of [lo, hi) with the largest
    InfoGain over the observed ages except the smallest (ties: smallest threshold); with
    ``accept``, the best split it accepts (``numeric_split = 'best_valid'``)."""
    inside = [r for r in rows if iv[0] <= r["Age"] < iv[1]]
    ages = sorted({r["Age"] for r in inside})
    best = None
    for t in ages[1:]:
        parts = [[r["Transfuse"] for r in inside if r["Age"] < t], [r["Transfuse"] for r in inside if r["Age"] >= t]]
        gain = entropy(Counter(r["Transfuse"] for r in inside).values()) - sum(
            len(p) / len(inside) * entropy(Counter(p).values()) for p in parts)
        split = [(iv[0], t), (t, iv[1])]
        if (best is None or gain > best[0] + 1e-12) and (accept is None or accept(split)):
            best = (gain, t)
    return [] if best is None else [(iv[0], best[1]), (best[1], iv[1])]


def label(v) -> str:
    return f"[{v[0]}-{v[1]})" if isinstance(v, tuple) else v


def oracle(rows: list[dict], L: int, K: int, C: Fraction, S: set[str], mode: str,
           grown: bool = False, best_valid: bool = False) -> list[str] | None:
    """Algorithm 1 by brute force; returns the labels of Best in order, None if infeasible.
    ``mode``: infogain, discernibility (ΔDC) or paper_after (dc_after maximized).
    ``grown``: Age is numeric without a taxonomy, its intervals grown from the root [1, 99);
    ``best_valid``: an interval's split is, every round, the best one valid on the current table."""
    leaf = [{"Job": r["Job"], "Sex": r["Sex"], "Age": AGE_LEAF[r["Age"]]} for r in rows]
    root = {**ROOT, "Age": (1, 99)} if grown else ROOT
    cut = [{a: root[a] for a in QID} for _ in rows]

    def kids(attr, v):
        if not (grown and attr == "Age"):
            return children(attr, v)
        if not best_valid:
            return grown_split(rows, v)
        return grown_split(rows, v, lambda split: private(
            [{**rec, "Age": next(c for c in split if c[0] <= rows[i]["Age"] < c[1])} if rec["Age"] == v else rec
             for i, rec in enumerate(cut)]))

    def order(attr, v):
        return v[0] if isinstance(v, tuple) else preorder(attr).index(v)

    def private(table) -> bool:
        for size in range(1, min(L, len(QID)) + 1):
            for sub in combinations(QID, size):
                groups: dict[tuple, list] = {}
                for rec, r in zip(table, rows):
                    groups.setdefault(tuple(rec[a] for a in sub), []).append(r["Surgery"])
                for sens in groups.values():
                    if len(sens) < K or any(Fraction(sens.count(s), len(sens)) > C for s in S):
                        return False
        return True

    def child_on_path(attr, x, i):
        if isinstance(x, tuple):
            return next(c for c in kids(attr, x) if c[0] <= rows[i]["Age"] < c[1])
        p = path(attr, leaf[i][attr])
        return p[p.index(x) - 1]

    def specialize(attr, x):
        return [{**rec, attr: child_on_path(attr, x, i)} if rec[attr] == x else rec for i, rec in enumerate(cut)]

    def dc(table, attr, x):
        sizes = Counter(tuple(rec[a] for a in QID) for rec in table if rec[attr] == x or
                        (rec[attr] in kids(attr, x)))
        return sum(v * v for v in sizes.values())

    if not private(cut):
        return None
    done: list[str] = []
    while True:
        cands = sorted({(a, rec[a]) for rec in cut for a in QID if kids(a, rec[a])},
                       key=lambda k: (QID.index(k[0]), order(*k)))
        valid = [(a, x) for a, x in cands if private(specialize(a, x))]
        if not valid:
            return done
        scores = {}
        for a, x in valid:
            after = specialize(a, x)
            if mode == "discernibility":
                scores[(a, x)] = dc(cut, a, x) - dc(after, a, x)
            elif mode == "paper_after":
                scores[(a, x)] = dc(after, a, x)
            else:
                split = Counter((after[i][a], rows[i]["Transfuse"]) for i in range(len(rows)) if cut[i][a] == x)
                total = Counter(rows[i]["Transfuse"] for i in range(len(rows)) if cut[i][a] == x)
                n = sum(total.values())
                gain = entropy(total.values()) - sum(
                    sum(v for (c2, _), v in split.items() if c2 == c) / n *
                    entropy([v for (c2, _), v in split.items() if c2 == c]) for c in {c for c, _ in split})
                scores[(a, x)] = gain
        top = max(scores.values())
        best = next(k for k in valid if scores[k] >= top - 1e-12)   # valid is in tie order
        done.append(label(best[1]))
        cut = specialize(*best)


def random_case(seed: int):
    rnd = random.Random(seed)
    n = rnd.randint(8, 30)
    rows = [{"ID": i, "Job": rnd.choice(JOBS), "Sex": rnd.choice("MF"), "Age": rnd.choice(list(AGE_LEAF)),
             "Transfuse": rnd.choice("YN"), "Surgery": rnd.choice(["Transgender", "Plastic", "Urology"])}
            for i in range(n)]
    rows[0]["Surgery"] = "Transgender"                     # S must occur (else a clear InputError)
    L = rnd.choice([1, 2, 3])
    K = rnd.choice([1, 2, 3])
    C = rnd.choice(["0.5", "0.67", "1.0", "0.8"])
    return rows, L, K, C


def table_job(con: duckdb.DuckDBPyConnection, job_file: Callable[[str], Job], rows: list[dict],
              grown: bool | str) -> Job:
    """The toy job on ``rows`` (written to table ``t``). ``grown``: Age without its taxonomy,
    intervals grown at run time from [1, 99), by the InfoGain split (True) or the best valid
    one (``"best_valid"``)."""
    con.execute('CREATE TABLE t ("ID" INTEGER, "Job" VARCHAR, "Sex" VARCHAR, "Age" INTEGER, '
                '"Transfuse" VARCHAR, "Surgery" VARCHAR)')
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", [tuple(r.values()) for r in rows])
    job = job_file(TOY)
    job = dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, source=Source(table="t")))
    if not grown:
        return job
    qis = tuple(dataclasses.replace(q, hierarchy=None) if q.column == "Age" else q for q in job.dataset.qis)
    return dataclasses.replace(job, dataset=dataclasses.replace(job.dataset, qis=qis)).with_params(
        root_interval={"Age": [1, 99]}, numeric_split="best_valid" if grown == "best_valid" else "infogain")


# each option crossed with the other's default: scores × Age (static, grown), plus best_valid
MODES = [(m, g) for m in ("infogain", "discernibility", "paper_after") for g in (False, True)] + \
        [("infogain", "best_valid"), ("discernibility", "best_valid")]


@pytest.mark.parametrize("mode,grown", MODES)
@pytest.mark.parametrize("seed", range(6))
def test_pais_agrees_with_the_brute_force_oracle(con, job_file, seed, mode, grown):
    rows, L, K, C = random_case(seed * 7 + (mode != "infogain") + 3 * (mode == "paper_after") + 100 * bool(grown)
                                + 1000 * (grown == "best_valid"))
    job = table_job(con, job_file, rows, grown).with_params(
        L=L, K=K, C=float(C), score="infogain" if mode == "infogain" else "discernibility",
        dc_score="paper_after" if mode == "paper_after" else "delta")
    want = oracle(rows, L, K, Fraction(C), {"Transgender"}, mode, bool(grown), grown == "best_valid")
    if want is None:
        with pytest.raises(InfeasibleError):
            anon_duck.run(con, job)
        return
    assert anon_duck.run(con, job).verified
    assert [r[0] for r in con.execute("SELECT value FROM lkc_toy_trace ORDER BY iteration").fetchall()] == want
    paranoid = lkc_privacy(DuckDBBackend(con), relation="lkc_toy_release", qis=QID, sensitive="Surgery",
                           sensitive_values=["Transgender"], L=L, K=K, C=C, paranoid=True)
    assert paranoid.passed


def _outcome(con: duckdb.DuckDBPyConnection, job: Job) -> tuple[list, list, tuple, int]:
    """What PAIS decided and published: every round's candidates with their score inputs and
    validity (min group, max confidence), the published trace, the release (order-free
    fingerprint), and how many validity statements ran."""
    _, result = run_pais(con, job)
    rounds = [sorted(r, key=lambda e: (e.attribute, e.value)) for r in result.rounds]
    run = anon_duck.run(con, job)
    trace = con.execute("SELECT * FROM lkc_toy_trace ORDER BY iteration").fetchall()
    statements = sum(stage.startswith(("lkc: validity", "lkc: split validity")) for stage, _ in run.stages)
    return rounds, trace, table_fingerprint(con, "lkc_toy_release"), statements


@pytest.mark.parametrize("case", ["toy", "random"])
def test_one_grouping_set_per_statement_changes_nothing(con, job_file, case):
    """``max_grouping_sets`` only splits the split-validity statements of best_valid (spec
    §7.3; candidate validity is grouped in numpy, ``State.validity``): with 1, every QID
    subset is its own statement, and the threshold search merges them
    (``State.valid_thresholds``). The toy and a random table with Age grown by best_valid
    (seed 248: 21 rows, K=1, C=0.8; L=2, so once all three QIDs are active a candidate is
    checked on two subsets) give the same rounds, trace and release as with the default 256,
    where everything fits in one statement. The random table is chosen so that dropping the
    merge in ``State.valid_thresholds`` changes its rounds (checked by mutation; dropping the
    per-subset merge of ``State.validity`` fails test_lkc's grown-split trace)."""
    if case == "toy":
        job = job_file(TOY)
    else:
        rows, _, K, C = random_case(248)
        job = table_job(con, job_file, rows, "best_valid").with_params(L=2, K=K, C=float(C))
    default = _outcome(con, job)
    one = _outcome(con, job.with_params(max_grouping_sets=1))
    assert one[:3] == default[:3]
    assert len(default[1]) == 7
    assert one[3] > default[3] if case == "random" else one[3] == default[3] == 0


@pytest.mark.parametrize("c", [Fraction(1, 3), Fraction(10 ** 17 - 1, 10 ** 17)], ids=["small", "wide"])
def test_group_validity_is_exact_per_candidate(c):
    """``State.validity``'s numpy grouping against plain Python on random rows (candidate cut,
    next value, one other cut, sensitive code, counts up to 10^6 so that with C's denominator
    10^17 the excess n_s·den − num·n leaves int64 and takes the Python-integer path): every
    candidate's smallest group, largest confidence and largest excess, and its verdict."""
    import numpy as np

    from anon_duck.methods.lkc.state import group_validity
    rng = random.Random(7)
    rows = [(rng.choice([3, 5, 9]), rng.randint(0, 2), rng.choice([-1, 0, 4]), rng.randint(0, 2),
             rng.randint(1, 10 ** 6)) for _ in range(300)]
    groups: dict[tuple, Counter] = {}
    for x, nxt, other, s, n in rows:
        groups.setdefault((x, nxt, other), Counter())[s] += n
    want: dict[int, tuple] = {}
    for (x, _, _), by_s in groups.items():
        n, n_s = sum(by_s.values()), max(by_s[1], by_s[2])
        got = (n, n_s / n, n_s * c.denominator - c.numerator * n)
        old = want.get(x, got)
        want[x] = (min(old[0], got[0]), max(old[1], got[1]), max(old[2], got[2]))
    cols = list(zip(*rows))
    got = group_validity([np.array(cols[i], dtype=np.int64) for i in range(3)], np.array(cols[3], dtype=np.int64),
                         np.array(cols[4], dtype=np.int64), 2, c)
    assert sorted(got) == [3, 5, 9]
    for x, (min_n, conf, excess) in want.items():
        assert (got[x].min_n, got[x].max_conf, got[x].max_excess) == (min_n, conf, float(excess))
        assert got[x].valid(1) == (excess <= 0)
