"""A DuckDB-dialect statement as the Spark steps that do the same.

Scratch relations are ``("temp", "main", "_ad_<name>")`` in the templates (anon_duck/scratch.py).
Spark has no TEMP tables, and a view would be recomputed on every read (and change when a table
it reads is replaced), so on the tree a statement becomes :class:`Action` steps:

* ``CREATE [OR REPLACE] TEMP TABLE temp.main._ad_x AS q`` is a *snapshot*: the rows of ``q``,
  checkpointed locally and registered as the session-local view ``_ad_x``;
* ``INSERT INTO`` and ``UPDATE`` of a scratch table build its next snapshot;
* a read of ``temp.main._ad_x`` reads the session-local ``_ad_x``; a DROP drops the view.

Like DuckDB's TEMP tables these live only in the session that made them, so two runs on two
sessions never see each other's scratch and a killed driver leaves nothing in the warehouse.
The SQL of each step is written by :class:`~.dialect.AnonDuckSpark`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Sequence

import sqlglot
from sqlglot import exp

from .dialect import AnonDuckSpark

SCRATCH_CATALOG = "temp"
DEFAULT_SCHEMA = "main"
# Scratch tables keep this catalog through the rewrite so _statement can tell them apart; it is
# dropped from every table it still marks before any SQL is written.
LOCAL_MARK = "__ad_local__"


@dataclass(frozen=True)
class Action:
    """One step of a statement on Spark: ``sql`` (run ``text``), ``snapshot`` (scratch table
    ``name`` := the rows of query ``text``), ``append`` (add the rows of ``text`` to scratch
    ``name``), ``drop`` (drop scratch ``name``), ``update`` (scratch ``name`` := its rows with
    the columns of ``sets`` (column, Spark expression) set where the condition ``text`` holds,
    all right-hand sides reading the old row, as an UPDATE does; ``tree`` is the UPDATE,
    which :func:`update_query` turns into that query once the table's columns are known)."""

    kind: str
    text: str = ""
    name: str = ""
    sets: tuple[tuple[str, str], ...] = ()
    tree: exp.Expression | None = field(default=None, compare=False, hash=False, repr=False)


@functools.lru_cache(maxsize=8192)
def to_spark(sql: str) -> tuple[Action, ...]:
    """A DuckDB-dialect statement (or several, ``;``-separated) as the Spark steps that do the
    same."""
    return tuple(out for tree in sqlglot.parse(sql, read="duckdb") if tree is not None
                 for out in _statement(tree))


def _statement(tree: exp.Expression) -> tuple[Action, ...]:
    tree = tree.transform(_adapt)
    if isinstance(tree, exp.Create) and tree.kind == "TABLE" and isinstance(tree.this, exp.Table) \
            and tree.expression is not None:
        if tree.this.catalog == LOCAL_MARK:
            return (Action("snapshot", text(tree.expression), tree.this.name),)
        if tree.args.get("replace"):        # Spark's file tables cannot be replaced in place
            tree = tree.copy()
            tree.set("replace", False)
            drop = exp.Drop(tables=[tree.this.copy()], kind="TABLE", exists=True)
            return (Action("sql", text(drop)), Action("sql", text(tree)))
    if isinstance(tree, exp.Update) and isinstance(tree.this, exp.Table) and tree.this.catalog == LOCAL_MARK:
        where = tree.args.get("where")
        return (Action("update", text(where.this) if where is not None else "", tree.this.name,
                       tuple((eq.this.name, text(eq.expression)) for eq in tree.expressions), tree),)
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Table) and tree.this.catalog == LOCAL_MARK:
        return (Action("append", text(tree.expression), tree.this.name),)
    tables = tree.args.get("tables") or [] if isinstance(tree, exp.Drop) else []
    if isinstance(tree, exp.Drop) and tree.kind == "TABLE" and len(tables) == 1 and tables[0].catalog == LOCAL_MARK:
        return (Action("drop", name=tables[0].name),)
    return (Action("sql", text(tree)),)


def update_query(step: Action, columns: Sequence[str]) -> str:
    """The rows of scratch table ``step.name`` after the UPDATE ``step`` (a snapshot of a
    query, since a scratch table is one): every column as it was, except those set, which
    take their new value where the condition holds."""
    update = step.tree
    where = update.args.get("where")
    sets = {eq.this.name.lower(): eq.expression for eq in update.expressions}
    projection = []
    for column in columns:
        value = sets.get(column.lower())
        kept = exp.column(column, quoted=True)
        if value is not None and where is not None:
            value = exp.Case(ifs=[exp.If(this=where.this.copy(), true=value.copy())], default=kept)
        projection.append(exp.alias_(value.copy(), column, quoted=True) if value is not None else kept)
    return text(exp.select(*projection).from_(exp.Table(this=exp.to_identifier(step.name, quoted=True))))


def text(tree: exp.Expression) -> str:
    """Spark SQL of a (sub)tree, scratch tables by their bare session-local name."""
    def unmark(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.catalog == LOCAL_MARK:
            node = node.copy()
            node.set("catalog", None)
        return node
    return tree.transform(unmark).sql(dialect=AnonDuckSpark)


def _adapt(node: exp.Expression) -> exp.Expression:
    """On the syntax tree: scratch tables by their session-local name and DuckDB's default
    schema ``main`` as the session's current database."""
    if isinstance(node, exp.Table) and node.catalog == SCRATCH_CATALOG:
        local = exp.Table(this=exp.to_identifier(node.name, quoted=True), catalog=exp.to_identifier(LOCAL_MARK))
        if node.alias:
            local.set("alias", node.args.get("alias"))
        return local
    if isinstance(node, exp.Table) and node.db == DEFAULT_SCHEMA and not node.catalog:
        node = node.copy()
        node.set("db", None)
        return node
    return node


def quoted(name: str) -> str:
    """One identifier as Spark quotes it."""
    return exp.to_identifier(name, quoted=True).sql(dialect=AnonDuckSpark)
