"""A DuckDB-dialect statement as the PostgreSQL statements that do the same.

* scratch tables ``("temp", "main", "_ad_x")`` are the session's TEMP tables ``pg_temp._ad_x``; DuckDB's default schema ``main``
  is the connection's current schema (the first of its ``search_path``);
* ``CREATE OR REPLACE [TEMP] TABLE`` is a drop and a create;
* parameters ``$name`` become ``$1, $2, ...`` cast to the bound value's type (the names in
  order come back with the text, so the backend binds them positionally).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Sequence

import sqlglot
from sqlglot import exp

from .dialect import AnonDuckPostgres, by_all

SCRATCH_CATALOG = "temp"
DEFAULT_SCHEMA = "main"
TEMP_SCHEMA = "pg_temp"


@dataclass(frozen=True)
class Statement:
    """One PostgreSQL statement and the parameter names its ``$1, $2, ...`` stand for. A
    statement with a ``* EXCLUDE (...)`` keeps its ``tree`` and no text until the backend
    names the columns of the relations it reads (:func:`resolved`)."""

    text: str
    names: tuple[str, ...] = ()
    tree: exp.Expression | None = field(default=None, compare=False, hash=False, repr=False)
    types: tuple[tuple[str, str], ...] = ()


@functools.lru_cache(maxsize=8192)
def to_postgres(sql: str, types: tuple[tuple[str, str], ...] = ()) -> tuple[Statement, ...]:
    """A DuckDB-dialect statement (or several, ``;``-separated) as PostgreSQL statements;
    ``types``: (parameter name, PostgreSQL type) of the values to be bound."""
    typed = dict(types)
    return tuple(out for tree in sqlglot.parse(sql, read="duckdb") if tree is not None
                 for out in _statement(tree.transform(_adapt).transform(by_all), typed))


def _statement(tree: exp.Expression, types: dict[str, str]) -> tuple[Statement, ...]:
    if isinstance(tree, exp.Create) and tree.kind == "TABLE" and tree.args.get("replace"):
        tree = tree.copy()
        tree.set("replace", False)
        target = tree.this if isinstance(tree.this, exp.Table) else tree.this.this
        drop = exp.Drop(tables=[target.copy()], kind="TABLE", exists=True)
        query = tree.expression
        if query is None or not any(t.name == target.name and t.db == target.db for t in query.find_all(exp.Table)):
            return (_written(drop, types), _written(tree, types))
        # the query reads the table it replaces (DuckDB reads the old rows): made under a new
        # name, then put in the old one's place
        fresh = target.copy()
        fresh.set("this", exp.to_identifier(target.name + "__ad_new", quoted=True))
        tree.set("this", fresh)
        rename = exp.Alter(this=fresh.copy(), kind="TABLE", actions=[
            exp.AlterRename(this=exp.Table(this=exp.to_identifier(target.name, quoted=True)))])
        return (_written(tree, types), _written(drop, types), _written(rename, types))
    return (_written(tree, types),)


def _written(tree: exp.Expression, types: dict[str, str]) -> Statement:
    if any(star.args.get("except_") for star in tree.find_all(exp.Star)):
        return Statement("", (), tree, tuple(types.items()))
    names: list[str] = []

    def number(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.this:
            if node.name not in names:
                names.append(node.name)
            marker = exp.Parameter(this=exp.Literal.number(names.index(node.name) + 1))
            kind = types.get(node.name)
            return exp.cast(marker, exp.DataType.build(kind, dialect="postgres")) if kind else marker
        return node
    text = tree.transform(number).sql(dialect=AnonDuckPostgres)
    return Statement(text, tuple(names))


def resolved(statement: Statement, columns_of: Callable[[exp.Table], Sequence[str]]) -> Statement:
    """A statement with ``* EXCLUDE (...)`` written with the star's columns named: those of the
    relation it reads (``columns_of`` a table; a CTE's from its projections) but the excluded."""
    if statement.tree is None:
        return statement
    tree = statement.tree.copy()
    for star in list(tree.find_all(exp.Star)):
        excluded = {c.name for c in star.args.get("except_") or []}
        if not excluded:
            continue
        holder = star.parent if isinstance(star.parent, exp.Column) else star
        select = holder.find_ancestor(exp.Select)
        qualifier = holder.table if holder is not star else None
        sources = [select.args["from_"].this] + [j.this for j in select.args.get("joins") or []]
        source = next(t for t in sources if qualifier is None or t.alias_or_name == qualifier)
        ctes = {cte.alias: cte.this for cte in tree.find_all(exp.CTE)}
        names = ctes[source.name].named_selects if isinstance(source, exp.Table) and source.name in ctes \
            and not source.db else list(columns_of(source))
        kept = [exp.column(n, table=qualifier, quoted=True) for n in names if n not in excluded]
        select.set("expressions", [c for e in select.expressions for c in (kept if e is holder else [e])])
    return _written(tree, dict(statement.types))


def _adapt(node: exp.Expression) -> exp.Expression:
    """Scratch tables in the session's temporary schema ``pg_temp``, DuckDB's ``main`` schema
    as the current one (a bare name)."""
    if isinstance(node, exp.Table) and node.catalog == SCRATCH_CATALOG:
        node = node.copy()
        node.set("catalog", None)
        node.set("db", exp.to_identifier(TEMP_SCHEMA))
    elif isinstance(node, exp.Table) and node.db == DEFAULT_SCHEMA and not node.catalog:
        node = node.copy()
        node.set("db", None)
    return node


def quoted(name: str) -> str:
    """One identifier as PostgreSQL quotes it."""
    return exp.to_identifier(name, quoted=True).sql(dialect=AnonDuckPostgres)
