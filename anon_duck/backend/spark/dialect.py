"""Spark SQL as anon_duck writes it: sqlglot's Spark dialect, plus the DuckDB constructs that
sqlglot would write for Spark with another meaning, spelled the way Spark gives DuckDB's answer.

The rules are data, as sqlglot keeps its own dialects: :data:`RULES` maps an expression type to
a rewrite of the node (or None: not this rule's shape), and :class:`AnonDuckSpark`'s
``Generator.TRANSFORMS`` applies them while the SQL is written. A rewrite's parts are written by
the same generator, so a DuckDB construct inside a rewritten one is spelled too.

* a list slice ``l[a:b]`` (1-based, both ends included) is ``slice(l, a, b - a + 1)``
  (sqlglot keeps the brackets, which Spark cannot parse);
* a list element ``l[i]`` (1-based; NULL out of range) is ``try_element_at(l, i)``
  (sqlglot shifts a literal index to Spark's 0-based brackets but not a computed one);
* an ordered list ``list(x ORDER BY k...)`` sorts what ``collect_list`` gathered (sqlglot
  drops the ORDER BY: the same list in another order), by ``x`` itself or by a struct of
  the keys, then ``x``;
* ``WITH x AS MATERIALIZED (...)`` is a plain CTE (Spark has no such hint; the rows are
  the same);
* HUGEINT (sums of squared class sizes that overflow BIGINT) is ``DECIMAL(38, 0)``;
* the aggregate ``product(x)`` (Spark SQL has none) folds the gathered values by
  multiplication, NULL for a group without values as on DuckDB;
* ``md5_number(x) >> n`` (a number from the top bits of the digest, read little-endian
  as DuckDB reads it) is read from the hex digest's last bytes, reversed: the same number;
* ``grouping(a, b, ...)`` of several columns (DuckDB's bit mask) is Spark's ``grouping_id``;
* ``list_select(l, positions)`` picks ``element_at(l, i)`` for each position;
* ``string_agg(DISTINCT x, sep ORDER BY x)`` joins the sorted ``collect_set``: Spark's own
  ``LISTAGG(DISTINCT ...) WITHIN GROUP`` fails in its optimizer next to another DISTINCT
  aggregate (Spark 4.3: ClassCastException in RewriteDistinctAggregates).
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark

from ...errors import AnonDuckError
from ..rules import Rewrite, by_name, md5_top_hex, transforms

def _slice_or_element(node: exp.Bracket) -> exp.Expression | None:
    if len(node.expressions) != 1:
        return None
    index = node.expressions[0]
    if isinstance(index, exp.Slice):
        lo, hi = index.this, index.expression
        if lo is None or hi is None:
            raise AnonDuckError(f"an open list slice has no Spark spelling here: {node.sql('duckdb')}")
        length = exp.Add(this=exp.Sub(this=hi.copy(), expression=lo.copy()), expression=exp.Literal.number(1))
        return exp.Anonymous(this="slice", expressions=[node.this.copy(), lo.copy(), length])
    if not index.is_string:
        return exp.Anonymous(this="try_element_at", expressions=[node.this.copy(), index.copy()])
    return None


def _plain_cte(node: exp.CTE) -> exp.Expression | None:
    if node.args.get("materialized") is None:
        return None
    node = node.copy()
    node.set("materialized", None)
    return node


def _product(node: exp.Anonymous) -> exp.Expression | None:
    if len(node.expressions) != 1:
        return None
    value = exp.cast(node.expressions[0].copy(), "DOUBLE")
    folded = exp.Anonymous(this="aggregate", expressions=[
        exp.Anonymous(this="collect_list", expressions=[value]), exp.cast(exp.Literal.number(1), "DOUBLE"),
        exp.Lambda(this=exp.Mul(this=exp.column("_ad_acc"), expression=exp.column("_ad_v")),
                   expressions=[exp.to_identifier("_ad_acc"), exp.to_identifier("_ad_v")])])
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=exp.Count(this=value.copy()), expression=exp.Literal.number(0)),
                                true=exp.Null())], default=folded)


def _list_select(node: exp.Anonymous) -> exp.Expression | None:
    if len(node.expressions) != 2:
        return None
    values, positions = (e.copy() for e in node.expressions)
    return exp.Anonymous(this="transform", expressions=[positions, exp.Lambda(
        this=exp.Anonymous(this="element_at", expressions=[values, exp.column("_ad_i")]),
        expressions=[exp.to_identifier("_ad_i")])])


# DuckDB functions Spark SQL lacks, by name
FUNCTIONS: dict[str, Rewrite] = {"product": _product, "list_select": _list_select}


def _md5_shift(node: exp.BitwiseRightShift) -> exp.Expression | None:
    """DuckDB's ``md5_number(value) >> shift``: its hex digits (rules.md5_top_hex) read by conv."""
    digits = md5_top_hex(node, "Spark")
    if digits is None:
        return None
    return exp.cast(exp.Anonymous(this="conv", expressions=[digits, exp.Literal.number(16), exp.Literal.number(10)]),
                    "DECIMAL(38, 0)")


def _grouping_id(node: exp.Grouping) -> exp.Expression | None:
    if len(node.expressions) < 2:
        return None
    return exp.Anonymous(this="grouping_id", expressions=[e.copy() for e in node.expressions])


def _filtered_list(node: exp.Filter) -> exp.Expression | None:
    if isinstance(node.this, exp.ArrayAgg) and isinstance(node.this.this, exp.Order):
        return _ordered_list(node.this.this, node.expression)
    return None


def _list(node: exp.ArrayAgg) -> exp.Expression | None:
    return _ordered_list(node.this, None) if isinstance(node.this, exp.Order) else None


def _distinct_join(node: exp.GroupConcat) -> exp.Expression | None:
    if not (isinstance(node.this, exp.Order) and isinstance(node.this.this, exp.Distinct)
            and len(node.this.this.expressions) == 1):
        return None
    value = node.this.this.expressions[0]
    keys = node.this.expressions
    if len(keys) != 1 or keys[0].this != value or keys[0].args.get("desc"):
        return None
    gathered = exp.Anonymous(this="collect_set", expressions=[value.copy()])
    return exp.Anonymous(this="array_join", expressions=[
        exp.Anonymous(this="array_sort", expressions=[gathered]),
        node.args.get("separator") or exp.Literal.string(",")])


def _ordered_list(order: exp.Order, where: exp.Where | None) -> exp.Expression:
    """``list([DISTINCT] x ORDER BY keys) [FILTER (WHERE ...)]`` for Spark: gather with
    ``collect_list`` (``collect_set`` for DISTINCT), filtered as asked, then sort what was
    gathered: by ``x`` itself, or as structs of the keys and ``x``. Both engines' lists skip no
    value here but NULL: Spark's collect functions drop NULLs, which no template lists."""
    value, keys = order.this, order.expressions
    distinct = isinstance(value, exp.Distinct)
    if distinct:
        value = value.expressions[0]

    def gather(what: exp.Expression) -> exp.Expression:
        agg = exp.Anonymous(this="collect_set" if distinct else "collect_list", expressions=[what])
        return exp.Filter(this=agg, expression=where.copy()) if where is not None else agg

    if len(keys) == 1 and keys[0].this == value:
        return exp.Anonymous(this="sort_array" if keys[0].args.get("desc") else "array_sort",
                             expressions=[gather(value.copy())] + ([exp.false()] if keys[0].args.get("desc") else []))
    if any(k.args.get("desc") for k in keys) or distinct:
        raise AnonDuckError(f"this ordered list has no Spark spelling here: {order.sql('duckdb')}")
    fields = [exp.alias_(k.this.copy(), f"k{i}") for i, k in enumerate(keys)] + [exp.alias_(value.copy(), "v")]
    return exp.Anonymous(this="transform", expressions=[
        exp.Anonymous(this="array_sort", expressions=[gather(exp.Struct(expressions=fields))]),
        exp.Lambda(this=exp.Dot(this=exp.column("p"), expression=exp.to_identifier("v")),
                   expressions=[exp.to_identifier("p")])])


# expression type -> the rewrite that gives it DuckDB's meaning on Spark (None: written as is)
RULES: dict[type[exp.Expression], Rewrite] = {
    exp.Bracket: _slice_or_element, exp.CTE: _plain_cte, exp.Anonymous: by_name(FUNCTIONS),
    exp.BitwiseRightShift: _md5_shift, exp.Grouping: _grouping_id, exp.Filter: _filtered_list,
    exp.ArrayAgg: _list, exp.GroupConcat: _distinct_join}


class AnonDuckSpark(Spark):
    """Spark SQL with :data:`RULES` applied as it is written (``tree.sql(dialect=AnonDuckSpark)``)."""

    class Generator(Spark.Generator):
        TRANSFORMS = transforms(Spark.Generator.TRANSFORMS, RULES)
        TYPE_MAPPING = {**Spark.Generator.TYPE_MAPPING,
                        exp.DataType.Type.INT128: "DECIMAL(38, 0)", exp.DataType.Type.UINT128: "DECIMAL(38, 0)"}
