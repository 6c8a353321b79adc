"""Hierarchy builders and the scratch tables they produce."""
from __future__ import annotations

import pytest

from anon_duck.backend.duckdb import DuckDBBackend
from anon_duck.errors import JobError
from anon_duck.hierarchy import CLOSURE, LEVELS, NODES, arx_edges, build, interval_edges, read_builtin_rows
from anon_duck.job import HierarchySpec
from anon_duck.sqlrender import qualified

from conftest import FIXTURES


def _rows(con, table, where=""):
    return con.execute(f"SELECT * FROM {qualified(table)} {where} ORDER BY ALL").fetchall()


def test_dyadic_intervals_reproduce_fig3_of_seed_004():
    """Seed 004 Fig. 3: leaves 33..40; [33-34]..[39-40]; [33-36], [37-40]; root [33-40]."""
    edges = {e.node: e.parent for e in interval_edges(range(33, 41), width=2, levels=None, dyadic=True)}
    assert edges["33"] == "[33-34]" and edges["40"] == "[39-40]"
    assert edges["[33-34]"] == "[33-36]" and edges["[39-40]"] == "[37-40]"
    assert edges["[33-36]"] == "[33-40]" and edges["[37-40]"] == "[33-40]"
    assert edges["[33-40]"] is None and len(edges) == 15


def test_fixed_width_intervals_cover_the_domain_under_a_star_root():
    edges = {e.node: e for e in interval_edges([20, 24, 31], width=5, levels=None, dyadic=False)}
    assert set(k for k in edges if k.startswith("[")) == {"[20-24]", "[25-29]", "[30-31]"}
    assert edges["[30-31]"].hi == 31 and edges["*"].parent is None
    assert sum(1 for e in edges.values() if e.parent == "*") == 3
    assert len([k for k in edges if k.isdigit()]) == 12  # every integer of 20..31 is a leaf


def test_interval_rejects_non_integers():
    with pytest.raises(JobError, match="integer"):
        interval_edges([1.5, 2.0], width=2, levels=None, dyadic=False, name="bmi")


def test_arx_rejects_two_parents(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("a;x;*\nb;x;*\nc;y;*\nx;z;*\n")
    with pytest.raises(JobError, match="two parents"):
        arx_edges(p)


def test_arx_tables_closure_levels_and_bounds(con):
    b = DuckDBBackend(con)
    build(b, [HierarchySpec("age", "arx", path=FIXTURES / "adult/hierarchies/adult_hierarchy_age.csv"),
              HierarchySpec("sex", "arx", path=FIXTURES / "adult/hierarchies/adult_hierarchy_sex.csv")])
    root = _rows(con, NODES, "WHERE parent IS NULL")
    assert [(r[0], r[1], r[5]) for r in root] == [("age", "*", 100), ("sex", "*", 2)]  # 100 ages (1..100) in ARX's file
    node = con.execute(f"SELECT lo, hi, depth, n_leaves FROM {qualified(NODES)} WHERE node = '35-39'").fetchone()
    # ARX's Adult age file puts leaves 36..40 under the label "35-39": bounds come from the
    # leaves, not from parsing labels, so they tell the truth about what the node covers.
    assert node == (36.0, 40.0, 3, 5)
    levels = con.execute(f"SELECT level, node FROM {qualified(LEVELS)} WHERE hierarchy = 'age' AND leaf = '39' "
                         "ORDER BY level").fetchall()
    assert levels == [(0, "39"), (1, "35-39"), (2, "30-39"), (3, "20-39"), (4, "*")]
    # closure is reflexive and complete: every node reaches the root
    n_nodes = con.execute(f"SELECT count(*) FROM {qualified(NODES)}").fetchone()[0]
    n_to_root = con.execute(f"SELECT count(*) FROM {qualified(CLOSURE)} c JOIN {qualified(NODES)} n "
                            "ON n.hierarchy = c.hierarchy AND n.node = c.ancestor AND n.parent IS NULL").fetchone()[0]
    assert n_to_root == n_nodes


def test_builtin_icd9_cut_at_categories(con):
    b = DuckDBBackend(con)
    build(b, [HierarchySpec("icd9", "builtin", builtin="icd9cm", leaf_level="category")])
    leaf = con.execute(f"SELECT depth, is_leaf FROM {qualified(NODES)} WHERE node = '401'").fetchone()
    assert leaf == (3, True)
    ancestors = con.execute(f"SELECT ancestor FROM {qualified(CLOSURE)} WHERE node = '401' ORDER BY distance").fetchall()
    assert [a[0] for a in ancestors] == ["401", "401-405", "390-459", "ICD9CM"]
    n_leaves = con.execute(f"SELECT n_leaves FROM {qualified(NODES)} WHERE parent IS NULL").fetchone()[0]
    assert n_leaves == sum(1 for r in read_builtin_rows("icd9cm") if r["level_name"] == "category")


def test_builtin_icd10_tree_is_one_tree(con):
    b = DuckDBBackend(con)
    build(b, [HierarchySpec("icd10", "builtin", builtin="icd10cm")])
    roots = con.execute(f"SELECT node FROM {qualified(NODES)} WHERE parent IS NULL").fetchall()
    assert roots == [("ICD10CM",)]
    path = con.execute(f"SELECT ancestor FROM {qualified(CLOSURE)} WHERE node = 'A00.0' ORDER BY distance").fetchall()
    assert [a[0] for a in path] == ["A00.0", "A00", "A00-A09", "ch1", "ICD10CM"]


def test_edge_list_cycle_is_refused(con, tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("node,parent\nroot,\na,b\nb,a\n")
    with pytest.raises(JobError, match="hierarchy.h"):
        build(DuckDBBackend(con), [HierarchySpec("h", "edges", path=p)])


@pytest.mark.parametrize("label", [True, False])
def test_edges_from_a_table(con, label):
    """A hierarchy kept as a user table (node, parent[, label]) builds the same tree as a file."""
    cols = "node, parent, label" if label else "node, parent"
    vals = "('a', 'r', 'A'), ('b', 'r', 'B'), ('r', NULL, 'R')" if label else "('a', 'r'), ('b', 'r'), ('r', NULL)"
    con.execute(f"CREATE TABLE tree AS SELECT * FROM (VALUES {vals}) t({cols})")
    build(DuckDBBackend(con), [HierarchySpec("h", "edges", table="tree")])
    rows = con.execute(f"SELECT node, parent, label, n_leaves FROM {qualified(NODES)} ORDER BY node").fetchall()
    labels = ("A", "B", "R") if label else ("a", "b", "r")
    assert rows == [("a", "r", labels[0], 1), ("b", "r", labels[1], 1), ("r", None, labels[2], 2)]


def test_edge_list_delimiter_is_honoured(con, tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("node;parent\nr;\na;r\n")
    build(DuckDBBackend(con), [HierarchySpec("h", "edges", path=p, delimiter=";")])
    assert con.execute(f"SELECT count(*) FROM {qualified(NODES)}").fetchone()[0] == 2
