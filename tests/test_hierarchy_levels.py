"""Issue #16 item 1: every level of every hierarchy partitions the leaves (ARX's rule: a shorter
branch repeats a node), whatever the hierarchy type; one validator checks it at load time."""
from __future__ import annotations

import random
from collections import defaultdict

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anon_duck
from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import JobError
from anon_duck.hierarchy import CLOSURE, LEVELS, NODES, build
from anon_duck.job import HierarchySpec, load_job
from anon_duck.sqlrender import qualified


def _levels(con, hierarchy: str) -> dict[int, dict[str, str]]:
    """level -> {leaf: node}."""
    out: dict[int, dict[str, str]] = defaultdict(dict)
    for level, leaf, node in con.execute(f"SELECT level, leaf, node FROM {qualified(LEVELS)} WHERE hierarchy = ?",
                                         [hierarchy]).fetchall():
        out[level][leaf] = node
    return out


def assert_levels_partition(con, hierarchy: str) -> None:
    """At every level each leaf has exactly one node, each node used covers exactly the leaves
    mapped to it, and the numeric bounds of the nodes used do not overlap."""
    leaves_of: dict[str, set[str]] = defaultdict(set)
    for node, leaf in con.execute(
            f"SELECT c.ancestor, c.node FROM {qualified(CLOSURE)} c JOIN {qualified(NODES)} n "
            f"ON n.hierarchy = c.hierarchy AND n.node = c.node AND n.is_leaf WHERE c.hierarchy = ?",
            [hierarchy]).fetchall():
        leaves_of[node].add(leaf)
    all_leaves = set().union(*leaves_of.values())
    bounds = {n: (lo, hi) for n, lo, hi in con.execute(
        f"SELECT node, lo, hi FROM {qualified(NODES)} WHERE hierarchy = ?", [hierarchy]).fetchall()}
    levels = _levels(con, hierarchy)
    assert sorted(levels) == list(range(len(levels)))
    for level, mapping in levels.items():
        assert set(mapping) == all_leaves, level
        used: dict[str, set[str]] = defaultdict(set)
        for leaf, node in mapping.items():
            used[node].add(leaf)
        for node, leaves in used.items():
            assert leaves == leaves_of[node], (level, node)
        spans = sorted(bounds[n] for n in used if bounds[n][0] is not None)
        for (_, hi), (lo, _) in zip(spans, spans[1:]):
            assert lo > hi, (level, spans)
    assert levels[0] == {leaf: leaf for leaf in all_leaves}
    assert len(set(levels[max(levels)].values())) == 1            # the root


def _build_interval(values, **spec) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE v AS SELECT unnest(?::INTEGER[]) AS x", [list(values)])
    build(DuckDBBackend(con), [HierarchySpec("h", "interval", **spec)], values_for={"h": [("v", "x")]})
    return con


def test_the_issue_example_publishes_one_partition_per_level():
    """Ages 18..90, width 5, dyadic: [88-90] would equal its width-10 parent; it stays at level
    2 instead of leaving 88..90 one level shallower under [78-90]."""
    con = _build_interval(range(18, 91), width=5, dyadic=True)
    assert_levels_partition(con, "h")
    level2 = set(_levels(con, "h")[2].values())
    assert {"[78-87]", "[88-90]"} <= level2 and "[78-90]" not in level2
    assert _levels(con, "h")[3]["88"] == "[78-90]"


@pytest.mark.parametrize("k, level", [(3, 0), (15, 1), (30, 2), (60, 3), (120, 4), (200, 5)])
def test_fulldomain_on_the_issue_example_publishes_one_partition_per_level(tmp_path, k, level):
    """The issue's job: ages 18..90, width 5, dyadic, lo/hi from the data. Ages 18..87 three
    times each and 88..90 twenty times each make the smallest class grow level by level
    (3, 15, 30, 60, 120, 270 rows), so each k below picks one level of the lattice and every
    level is published once. Each release's age intervals must tile 18..90: before the fix,
    level 2 published [78-87] (30 rows) next to [78-90] (60 rows)."""
    ages = [a for a in range(18, 88) for _ in range(3)] + [a for a in range(88, 91) for _ in range(20)]
    con = duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT row_number() OVER () AS pid, age, 'x' AS disease "
                "FROM (SELECT unnest(?::INTEGER[]) AS age)", [ages])
    job_file = tmp_path / "job.toml"
    job_file.write_text('[input]\ntable = "people"\nid = "pid"\nsensitive = "disease"\n'
                        '[[input.qi]]\ncolumn = "age"\nkind = "numeric"\nhierarchy = "age"\n'
                        '[hierarchy.age]\ntype = "interval"\nwidth = 5\ndyadic = true\n'
                        f'[method]\nname = "fulldomain"\nk = {k}\n[release]\nname = "r"\nseed = 1\n')
    result = anon_duck.run(con, load_job(job_file))
    assert result.facts["levels"] == {"age": level}
    spans = con.execute("SELECT DISTINCT age__lo::INTEGER, age__hi::INTEGER FROM r_release ORDER BY 1").fetchall()
    assert spans[0][0] == 18 and spans[-1][1] == 90, spans
    for (_, hi), (lo, _) in zip(spans, spans[1:]):
        assert lo == hi + 1, spans      # neither overlapping nor leaving a gap: one partition
    labels = con.execute("SELECT count(DISTINCT age) FROM r_release").fetchone()[0]
    assert labels == len(spans)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lo=st.integers(0, 40), span=st.integers(0, 90), width=st.integers(1, 12), dyadic=st.booleans(),
       levels=st.one_of(st.none(), st.integers(1, 4)))
def test_interval_levels_partition(lo, span, width, dyadic, levels):
    con = _build_interval(range(lo, lo + span + 1), width=width, dyadic=dyadic, levels=levels)
    assert_levels_partition(con, "h")


def _random_tree(rng: random.Random) -> list[tuple[str, str | None]]:
    """A random unbalanced tree: each inner node gets 1-3 children, each child is a leaf with
    some probability, depth at most 5. Leaves are numbered 1, 2, ... depth first, so every
    node's leaves are consecutive numbers and its bounds an interval, as a numeric hierarchy's."""
    children: dict[str, list[str]] = {}
    frontier = [("root", 0)]
    n = 0
    while frontier:
        node, depth = frontier.pop()
        children[node] = []
        for _ in range(rng.randint(1, 3)):
            n += 1
            child = f"n{n}"
            children[node].append(child)
            if depth < 4 and rng.random() < 0.5:
                frontier.append((child, depth + 1))
    edges: list[tuple[str, str | None]] = []
    leaf_number = iter(range(1, n + 1))

    def walk(node: str, parent: str | None) -> None:
        if node in children:
            edges.append((node, parent))
            for child in children[node]:
                walk(child, node)
        else:
            edges.append((str(next(leaf_number)), parent))
    walk("root", None)
    return edges


@pytest.mark.parametrize("seed", range(25))
def test_unbalanced_edge_trees_partition_at_every_level(tmp_path, seed):
    edges = _random_tree(random.Random(seed))
    path = tmp_path / "tree.csv"
    path.write_text("node,parent\n" + "".join(f"{n},{p or ''}\n" for n, p in edges))
    con = duckdb.connect()
    build(DuckDBBackend(con), [HierarchySpec("t", "edges", path=path)])
    assert_levels_partition(con, "t")


def test_a_node_listed_twice_is_refused(tmp_path):
    """A repeated line used to build the node twice: the root counted 9 leaves instead of 2."""
    path = tmp_path / "tree.csv"
    path.write_text("node,parent\nr,\na,r\na,r\nb,r\n")
    with pytest.raises(JobError, match=r"hierarchy.h: node 'a' is listed 2 times — .*each node once"):
        build(DuckDBBackend(duckdb.connect()), [HierarchySpec("h", "edges", path=path)])


def test_every_offending_node_is_named_at_once(tmp_path):
    path = tmp_path / "tree.csv"
    path.write_text("node,parent\nr,\ns,\na,r\na,s\nb,r\nb,x\n")
    with pytest.raises(JobError) as err:
        build(DuckDBBackend(duckdb.connect()), [HierarchySpec("h", "edges", path=path)])
    message = str(err.value)
    for part in ("node 'a' has 2 parents (r, s)", "node 'b' has 2 parents (r, x)", "node 'r' has no parent "
                 "(one of 2 roots)", "node 'b' has parent x, which is not a node"):
        assert part in message, message


def test_the_validator_refuses_a_builder_that_breaks_the_level_rule(monkeypatch):
    """The one check runs for every type at load time: a builder (here a mutant interval
    builder putting [1-2] at level 1 under a level-1 root) is refused with the nodes named."""
    from anon_duck import hierarchy
    from anon_duck.hierarchy import Edge

    def broken(values, **_):
        return [Edge("1", "[1-2]", level=0), Edge("2", "[1-2]", level=0), Edge("[1-2]", "*", level=1),
                Edge("3", "*", level=1), Edge("*", None, level=1)]
    monkeypatch.setattr(hierarchy, "interval_edges", broken)
    with pytest.raises(JobError) as err:
        _build_interval([1, 2, 3], width=2)
    message = str(err.value)
    assert message.startswith("hierarchy.h: ") and message.endswith("every level partitions the leaves")
    for part in ("node '3' is a leaf at level 1", "node '[1-2]' is at level 1, not below its parent * (level 1)"):
        assert part in message, message


def test_a_shorter_arx_line_repeats_its_value(tmp_path):
    """ARX repeats a value that is not generalized at a level: 'b;b;*' keeps b at level 1."""
    path = tmp_path / "h.csv"
    path.write_text("a;x;*\nc;x;*\nb;b;*\n")
    con = duckdb.connect()
    build(DuckDBBackend(con), [HierarchySpec("h", "arx", path=path)])
    assert_levels_partition(con, "h")
    assert _levels(con, "h")[1] == {"a": "x", "c": "x", "b": "b"}


def test_an_arx_value_starting_at_two_levels_is_refused(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("a;x;x;*\nb;b;x;*\n")
    with pytest.raises(JobError, match="'x' starts at column 3, on an earlier line at column 2"):
        build(DuckDBBackend(duckdb.connect()), [HierarchySpec("h", "arx", path=path)])


def test_builtin_icd_tree_levels_partition():
    con = duckdb.connect()
    build(DuckDBBackend(con), [HierarchySpec("icd", "builtin", builtin="icd9cm", leaf_level="category")])
    assert_levels_partition(con, "icd")


@pytest.mark.parametrize("name", ["toy_fulldomain.toml", "counterfeit_toy.toml", "counterfeit_toy_intervals.toml",
                                  "lkc_toy.toml", "artuc_toy.toml", "longitudinal_toy.toml", "adult_fulldomain.toml"])
def test_every_hierarchy_of_the_fixture_jobs_partitions(job_file, name):
    """The hierarchies the shipped jobs use, as their runs build them (ARX files, intervals
    with and without lo/hi, ICD trees under codes and events)."""
    from anon_duck.inputs import prepare
    job = job_file(name)
    con = duckdb.connect()
    prepare(DuckDBBackend(con), job)
    built = [h for (h,) in con.execute(f"SELECT DISTINCT hierarchy FROM {qualified(NODES)} ORDER BY 1").fetchall()]
    assert built
    for hierarchy in built:
        assert_levels_partition(con, hierarchy)
