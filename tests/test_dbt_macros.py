"""The dbt package's macros (macros/*.sql) against brute-force Python enumerations on random
tables: every violating group, every rare itemset and every risk number, exactly. These are the
macros both the Python verifiers and dbt run, so this is the check of the check."""
from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict

import duckdb
import pytest
import sqlglot

from anon_duck.errors import InputError
from anon_duck.sqlrender import dbt_macros, ident

M = dbt_macros("duckdb")
SEEDS = range(12)


def _table(con, rng: random.Random, n: int, cols: dict[str, int]) -> list[dict]:
    """A random table t with n rows; each column draws from that many values (small, so classes
    repeat). Column names carry a quote, a space and a keyword to exercise quoting."""
    rows = [{c: f"v{rng.randrange(size)}" for c, size in cols.items()} for _ in range(n)]
    con.execute("CREATE OR REPLACE TABLE t (" + ", ".join(f"{ident(c)} VARCHAR" for c in cols) + ")")
    if rows:
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' for _ in cols)})",
                        [[r[c] for c in cols] for r in rows])
    return rows


QIS = {'a"q': 3, "b c": 2, "select": 3}


@pytest.mark.parametrize("seed", SEEDS)
def test_k_anonymity_violations_are_the_small_classes(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    rows = _table(con, rng, rng.randrange(0, 40), QIS)
    k = rng.randrange(1, 5)
    sizes = Counter(tuple(r[c] for c in QIS) for r in rows)
    want = sorted((key, n) for key, n in sizes.items() if n < k)
    got = sorted((tuple(r[:3]), r[3]) for r in con.execute(M.k_anonymity_violations('"t"', list(QIS), k)).fetchall())
    assert got == want


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("entropy", [False, True])
def test_l_diversity_violations_distinct_and_entropy(seed, entropy):
    rng = random.Random(seed)
    con = duckdb.connect()
    cols = {"q1": 2, "q2": 2, "s": 4}
    rows = _table(con, rng, rng.randrange(1, 40), cols)
    l = rng.randrange(1, 4)
    classes: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        classes[(r["q1"], r["q2"])][r["s"]] += 1

    def violates(counts: Counter) -> bool:
        if not entropy:
            return len(counts) < l
        n = sum(counts.values())
        return -sum(c / n * math.log(c / n) for c in counts.values()) < math.log(l) - 1e-9
    want = sorted((key, sum(c.values()), len(c)) for key, c in classes.items() if violates(c))
    sql = M.l_diversity_violations('"t"', ["q1", "q2"], "s", l, entropy=entropy)
    got = sorted(((r[0], r[1]), r[2], r[3]) for r in con.execute(sql).fetchall())
    assert got == want


def _rare_itemsets(records: dict, k: int, m: int) -> list[tuple]:
    """(group, itemset) with support < k, by enumeration: records maps (group, id) -> codes."""
    support: Counter = Counter()
    for (group, _), codes in records.items():
        for size in range(1, m + 1):
            for items in itertools.combinations(sorted(set(codes)), size):
                support[(group, items)] += 1
    return sorted((g, items, n) for (g, items), n in support.items() if n < k)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("grouped", [False, True])
def test_km_anonymity_violations_are_the_rare_itemsets(seed, grouped):
    rng = random.Random(seed)
    con = duckdb.connect()
    k, m = rng.randrange(2, 4), rng.randrange(1, 4)
    records = {}
    for pid in range(rng.randrange(1, 15)):
        group = f"g{rng.randrange(2)}" if grouped else None
        records[(group, pid)] = rng.sample([f"c{i}" for i in range(6)], rng.randrange(1, 5))
    con.execute('CREATE TABLE t ("grp" VARCHAR, "pid" INTEGER, "co de" VARCHAR)')
    con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                    [(g, pid, c) for (g, pid), codes in records.items() for c in codes])
    groups = ["grp"] if grouped else []
    sql = M.km_anonymity_violations('"t"', "pid", "co de", k, m, group_columns=groups)
    width = len(groups)
    got = sorted((r[0] if grouped else None, tuple(r[width + 1:width + 1 + r[width]]), r[-1])
                 for r in con.execute(sql).fetchall())
    assert got == _rare_itemsets(records, k, m)
    # the same sets from one LIST column per record
    con.execute('CREATE TABLE l AS SELECT "grp", "pid", list("co de") AS "co de" FROM t GROUP BY ALL')
    sql = M.km_anonymity_violations('"l"', "pid", "co de", k, m, group_columns=groups, code_is_list=True)
    assert sorted((r[0] if grouped else None, tuple(r[width + 1:width + 1 + r[width]]), r[-1])
                  for r in con.execute(sql).fetchall()) == got


@pytest.mark.parametrize("seed", SEEDS)
def test_kkm_anonymity_violations_are_small_classes_and_their_rare_itemsets(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    k, m = rng.randrange(2, 4), rng.randrange(1, 3)
    people = {pid: (f"a{rng.randrange(2)}", f"s{rng.randrange(2)}") for pid in range(rng.randrange(1, 20))}
    codes = {pid: rng.sample([f"c{i}" for i in range(5)], rng.randrange(0, 4)) for pid in people}
    con.execute('CREATE TABLE p ("id" INTEGER, "age" VARCHAR, "sex" VARCHAR)')
    con.executemany("INSERT INTO p VALUES (?, ?, ?)", [(pid, *qi) for pid, qi in people.items()])
    con.execute('CREATE TABLE c ("id" INTEGER, "code" VARCHAR)')
    con.executemany("INSERT INTO c VALUES (?, ?)", [(pid, c) for pid, cs in codes.items() for c in cs] or [(-1, "x")])
    size = Counter(people.values())
    want = sorted(("class", qi, size[qi], None, None) for qi in size if size[qi] < k)
    big = {(qi, pid): codes[pid] for pid, qi in people.items() if size[qi] >= k}
    want += sorted(("itemset", g, size[g], items, n) for g, items, n in _rare_itemsets(big, k, m))
    sql = M.kkm_anonymity_violations('"p"', ["age", "sex"], "id", "code", k, m, codes_relation='"c"')
    got = sorted((r[0], (r[1], r[2]), r[3], None if r[4] is None else tuple(r[5:5 + r[4]]), r[-1])
                 for r in con.execute(sql).fetchall())
    assert sorted(got, key=str) == sorted(want, key=str)


@pytest.mark.parametrize("seed", SEEDS)
def test_lkc_violations_over_every_subset(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    cols = {"x": 3, "y": 2, "z": 2, "s": 3}
    rows = _table(con, rng, rng.randrange(1, 40), cols)
    L, K = rng.randrange(1, 4), rng.randrange(1, 4)
    num, den = rng.choice([(1, 2), (1, 3), (2, 3), (1, 1)])
    S = rng.choice([None, ["v0"], ["v1", "v2"]])
    qis = ["x", "y", "z"]
    sets = M.lkc_subsets(qis, L)
    want = []
    for subset in sets:
        groups: dict[tuple, Counter] = defaultdict(Counter)
        for r in rows:
            groups[tuple(r[q] for q in subset)][r["s"]] += 1
        for key, counts in groups.items():
            n = sum(counts.values())
            values = dict(zip(subset, key))
            qid = tuple(values.get(q) for q in qis)
            if n < K:
                want.append((qid, n, None, "K"))
            for s, n_s in counts.items():
                if (S is None or s in S) and n_s * den > num * n:
                    want.append((qid, n, s, "C"))
    sql = M.lkc_violations('"t"', qis, "s", S, K, num, den, sets)
    got = [(tuple(r[1:4]), r[4], r[5], r[7]) for r in con.execute(sql).fetchall()]
    assert sorted(got, key=str) == sorted(want, key=str)


def test_lkc_subsets_and_fractions():
    for n in range(7):
        columns = [f"c{i}" for i in range(n)]
        for L in range(1, 8):
            assert M.lkc_subsets(columns, L) == [list(c) for c in itertools.combinations(columns, min(L, n))]
    assert M.fraction_parts(0.5) == [5, 10] and M.fraction_parts("1/3") == [1, 3] and M.fraction_parts(1) == [1, 1]
    for bad in (0, 1.5, "abc", "2/1", True, "1e-3"):
        with pytest.raises(InputError, match="argument C"):
            M.fraction_parts(bad)


@pytest.mark.parametrize("seed", SEEDS)
def test_risk_measures_and_class_sizes(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    rows = _table(con, rng, rng.randrange(1, 50), QIS)
    k = rng.randrange(1, 6)
    sizes = Counter(tuple(r[c] for c in QIS) for r in rows)
    n = len(rows)
    got = con.execute(M.risk_measures('"t"', list(QIS), k=k)).fetchone()
    want = (n, len(sizes), min(sizes.values()), max(sizes.values()), 1 / min(sizes.values()), len(sizes) / n,
            sum(s for s in sizes.values() if s < k) / n, sum(1 for s in sizes.values() if s == 1))
    assert got[:4] == want[:4] and got[7] == want[7]
    assert got[4:7] == pytest.approx(want[4:7], rel=1e-12)
    dist = Counter(sizes.values())
    assert sorted(con.execute(M.class_size_distribution('"t"', list(QIS))).fetchall()) == \
        sorted((s, c, s * c) for s, c in dist.items())


def test_risk_measures_of_an_empty_table():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a VARCHAR)")
    assert con.execute(M.risk_measures('"t"', ["a"])).fetchone() == (0, 0, None, None, None, None, None, 0)


@pytest.mark.parametrize("name", ['x"; DROP TABLE t; --', "select", "année", "a b", "a.b", "`x`", 'a""b'])
def test_macro_quoting_is_sqlglot_quoting(name):
    assert M.quote_identifier(name) == ident(name)
    tree = sqlglot.parse_one(f"SELECT {M.quote_identifier(name)} FROM t", read="duckdb")
    assert [c.name for c in tree.find_all(sqlglot.exp.Column)] == [name]
    spark = dbt_macros("spark").quote_identifier(name)
    assert [c.name for c in sqlglot.parse_one(f"SELECT {spark} FROM t", read="spark").find_all(sqlglot.exp.Column)] \
        == [name]


@pytest.mark.parametrize("value", ["O'Hara", "back\\slash", "it''s", "ünï"])
def test_string_literals_read_back_as_the_value(value):
    assert duckdb.connect().execute(f"SELECT {M.string_literal(value)}").fetchone()[0] == value
    spark = dbt_macros("spark").string_literal(value)
    assert sqlglot.parse_one(f"SELECT {spark}", read="spark").expressions[0].this == value


@pytest.mark.parametrize("call, message", [
    (lambda: M.k_anonymity_violations('"t"', ["a"], 0), "argument k must be an integer >= 1; got 0"),
    (lambda: M.k_anonymity_violations('"t"', ["a"], True), "argument k must be an integer"),
    (lambda: M.k_anonymity_violations('"t"', ["a"], "3"), "argument k must be an integer"),
    (lambda: M.k_anonymity_violations('"t"', "a", 2), "argument columns must be a list of column names"),
    (lambda: M.k_anonymity_violations('"t"', [], 2), "argument columns must name at least one column"),
    (lambda: M.k_anonymity_violations('"t"', ["a", "a"], 2), "names a column twice"),
    (lambda: M.l_diversity_violations('"t"', ["a"], "a", 2), "argument sensitive (a) is also one of the columns"),
    (lambda: M.km_anonymity_violations('"t"', "id", "c", 2, 0), "argument m must be an integer >= 1"),
    (lambda: M.lkc_violations('"t"', ["a"], None, None, 0, 1, 2, [["a"]]), "argument K must be an integer >= 1"),
])
def test_bad_arguments_name_the_argument(call, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_only_verifier_and_risk_templates_call_the_package():
    """The anonymizers must not share SQL with their checks: only sql/verify/ and sql/risk/
    render the dbt package's macros (a bug there would otherwise fool a method and its check)."""
    from anon_duck.sqlrender import SQL_DIR
    callers = {p.relative_to(SQL_DIR).parts[0] for p in SQL_DIR.rglob("*") if p.is_file()
               and "anon_duck." in p.read_text()}
    assert callers == {"verify", "risk"}
