"""PostgreSQL as anon_duck writes it: sqlglot's Postgres dialect, plus the DuckDB constructs
sqlglot would write for Postgres with another meaning (or not at all), spelled the way
PostgreSQL gives DuckDB's answer. As for Spark (backend/spark/dialect.py) the rules are data:
:data:`RULES` maps an expression type to a rewrite, applied by ``Generator.TRANSFORMS``.

* ``md5_number(x) >> n`` (the digest read as a little-endian 128-bit number, its top bits) is
  the digest's last bytes in reverse order, read as a bit string: the same number;
* HUGEINT is ``NUMERIC(38, 0)``;
* ``GROUP BY ALL`` / ``ORDER BY ALL`` by the projections' ordinals (:func:`by_all`, a pass
  over the statement);
* ``TRY_CAST(x AS t)`` is NULL where ``x`` does not read as a ``t`` (``pg_input_is_valid``,
  PostgreSQL 16 or later);
* ``unnest(range(...))`` is the set ``generate_series(...)``;
* ``arg_max``/``arg_min`` are the first of an ordered ``array_agg``;
* ``f(...)[i]`` as ``(f(...))[i]``; ``array_sort``/``list_sort`` and ``array_distinct`` (NULLs
  dropped) by unnesting;
* an empty list ``[]`` is ``'{}'`` (typed by its context);
* the aggregate ``product(x)`` as ``exp(sum(ln |x|))`` with its sign (within rounding);
* ``is_nan(x)`` is ``x = 'NaN'`` (PostgreSQL's NaN equals itself);
* ``list_select(l, positions)`` is the array of ``l[i]`` for each position, in order;
* a parameter ``$name`` is PostgreSQL's positional ``$n`` cast to the type of the value bound
  (:mod:`.statements` numbers them): PostgreSQL cannot infer the type of ``$1 || ':'``.
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from ...errors import AnonDuckError
from ..rules import Rewrite, by_name, md5_top_hex, transforms


def _md5_shift(node: exp.BitwiseRightShift) -> exp.Expression | None:
    """DuckDB's ``md5_number(value) >> shift``: its hex digits (rules.md5_top_hex) read as a bit string."""
    digits = md5_top_hex(node, "PostgreSQL")
    if digits is None:
        return None
    bits = exp.cast(exp.DPipe(this=exp.Literal.string("x"), expression=digits),
                    exp.DataType.build(f"BIT({8 * len(digits.expressions)})", dialect="postgres"))
    return exp.cast(bits, "BIGINT")


def _is_nan(node: exp.IsNan) -> exp.Expression | None:
    return exp.EQ(this=node.this.copy(), expression=exp.cast(exp.Literal.string("NaN"), "DOUBLE"))


def _list_select(node: exp.Anonymous) -> exp.Expression | None:
    if len(node.expressions) != 2:
        return None
    values, positions = (e.copy() for e in node.expressions)
    element = exp.Bracket(this=values, expressions=[exp.column("_ad_i")], offset=1)
    picked = exp.select(element).from_(exp.Unnest(expressions=[positions], alias=exp.TableAlias(
        this=exp.to_identifier("_ad_p"), columns=[exp.to_identifier("_ad_i")]), offset=exp.to_identifier("_ad_o"))
    ).order_by("_ad_o")
    return exp.Array(expressions=[picked])


def by_all(node: exp.Expression) -> exp.Expression:
    """``GROUP BY ALL`` (every projection without an aggregate) and ``ORDER BY ALL`` (every
    projection, in order) as the projections' ordinals. A pass over the whole statement before
    it is written (:mod:`.statements`): a star over a CTE is expanded from the CTE's columns."""
    if not isinstance(node, exp.Select):
        return node
    group, order = node.args.get("group"), node.args.get("order")
    group_all = group is not None and group.args.get("all")
    order_all = order is not None and len(order.expressions) == 1 and isinstance(order.expressions[0].this, exp.Var) \
        and order.expressions[0].this.name.upper() == "ALL"
    if not (group_all or order_all):
        return node
    if group_all and any(isinstance(e, exp.Star) for e in node.expressions):
        _expand_stars(node)
    positions = range(1, len(node.expressions) + 1)
    if group_all:
        keys = [exp.Literal.number(i) for i, e in zip(positions, node.expressions) if not _aggregates(e)]
        node.set("group", exp.Group(expressions=keys) if keys else None)
    if order_all:
        ordered = order.expressions[0]
        node.set("order", exp.Order(expressions=[
            exp.Ordered(this=exp.Literal.number(i), desc=ordered.args.get("desc"),
                        nulls_first=ordered.args.get("nulls_first")) for i in positions]))
    return node


# DuckDB aggregates sqlglot parses as plain functions (exp.Anonymous): not grouping keys
ANONYMOUS_AGGREGATES = frozenset({"product"})


def _aggregates(node: exp.Expression) -> bool:
    """Whether a projection aggregates (or is a window): GROUP BY ALL leaves it out of the keys."""
    return node.find(exp.AggFunc, exp.Window) is not None or any(
        str(f.this).lower() in ANONYMOUS_AGGREGATES for f in node.find_all(exp.Anonymous))


def _try_cast(node: exp.TryCast) -> exp.Expression | None:
    """NULL where the value does not read as the type (PostgreSQL 16's pg_input_is_valid)."""
    kind = node.to.sql(dialect="postgres")
    text = exp.cast(node.this.copy(), "TEXT")
    valid = exp.Anonymous(this="pg_input_is_valid", expressions=[text, exp.Literal.string(kind)])
    return exp.Case(ifs=[exp.If(this=valid, true=exp.Cast(this=node.this.copy(), to=node.to.copy()))])


def _unnest_series_list(node: exp.Unnest) -> exp.Expression | None:
    """``unnest(range(...))`` in FROM: the series as an array to unnest."""
    if not any(isinstance(e, exp.GenerateSeries) for e in node.expressions):
        return None
    node = node.copy()
    node.set("expressions", [exp.Array(expressions=[exp.select(e)]) if isinstance(e, exp.GenerateSeries) else e
                             for e in node.expressions])
    return node


def _unnest_series(node: exp.Explode) -> exp.Expression | None:
    """``unnest(range(...))`` in a projection: PostgreSQL's generate_series is a set already."""
    return node.this.copy() if isinstance(node.this, exp.GenerateSeries) else None


def _arg_extreme(node: exp.Expression) -> exp.Expression | None:
    """``arg_max(x, y)`` / ``arg_min(x, y)``: the first of the ``x`` ordered by ``y`` (rows
    with a NULL ``y`` left out, as DuckDB leaves them out)."""
    key = node.expression.copy()
    ordered = exp.Ordered(this=key, desc=isinstance(node, exp.ArgMax), nulls_first=False)
    gathered = exp.ArrayAgg(this=exp.Order(this=node.this.copy(), expressions=[ordered]))
    kept = exp.Filter(this=gathered, expression=exp.Where(this=exp.Not(this=exp.Is(this=key.copy(), expression=exp.Null()))))
    return exp.Bracket(this=exp.Paren(this=kept), expressions=[exp.Literal.number(1)], offset=1)


def _element_of_call(node: exp.Bracket) -> exp.Expression | None:
    """``f(...)[i]``: PostgreSQL subscripts a function's result only in parentheses."""
    if not isinstance(node.this, (exp.Column, exp.Paren, exp.Identifier, exp.Dot, exp.Bracket, exp.Array)):
        node = node.copy()
        node.set("this", exp.Paren(this=node.this))
        return node
    return None


def _unnested(values: exp.Expression, *, distinct: bool = False, order: bool = False) -> exp.Expression:
    """``ARRAY(SELECT [DISTINCT] v FROM unnest(values) AS v [WHERE v IS NOT NULL] [ORDER BY v])``."""
    v = exp.column("_ad_v")
    query = exp.select(v).from_(exp.Unnest(expressions=[values.copy()], alias=exp.TableAlias(
        this=exp.to_identifier("_ad_u"), columns=[exp.to_identifier("_ad_v")])))
    if distinct:
        query = query.distinct().where(exp.Not(this=exp.Is(this=v.copy(), expression=exp.Null())))
    if order:
        query = query.order_by(exp.Ordered(this=v.copy(), nulls_first=False))
    return exp.Array(expressions=[query])


def _array_sort(node: exp.Expression) -> exp.Expression | None:
    return _unnested(node.this, order=True) if not node.expression else None


def _array_distinct(node: exp.Expression) -> exp.Expression | None:
    return _unnested(node.this, distinct=True)


def _expand_stars(node: exp.Select) -> None:
    """``SELECT *, ...`` over a CTE of the same statement, with the star as the CTE's columns
    (``GROUP BY ALL`` groups by them; PostgreSQL needs them named)."""
    source = node.args.get("from_")
    table = source.this if source is not None else None
    ctes = {cte.alias: cte.this for cte in node.root().find_all(exp.CTE)}
    if not isinstance(table, exp.Table) or table.name not in ctes:
        raise AnonDuckError(f"GROUP BY ALL over SELECT * has no PostgreSQL spelling here: {node.sql('duckdb')}")
    columns = [exp.column(name, quoted=True) for name in ctes[table.name].named_selects]
    node.set("expressions", [c for e in node.expressions for c in (columns if isinstance(e, exp.Star) else [e])])


def _empty_array(node: exp.Array) -> exp.Expression | None:
    """``[]``: PostgreSQL types an empty array from its context only as the literal ``'{}'``."""
    return exp.Literal.string("{}") if not node.expressions else None


def _product(node: exp.Anonymous) -> exp.Expression | None:
    """The aggregate ``product(x)`` (PostgreSQL has none) as ``exp(sum(ln(|x|)))`` with the
    sign of the negative factors' count and 0 when a factor is 0: DuckDB's product within
    floating-point rounding, NULL for a group without values."""
    if len(node.expressions) != 1:
        return None
    x = exp.cast(node.expressions[0].copy(), "DOUBLE")
    nonzero = exp.Filter(this=exp.Sum(this=exp.Ln(this=exp.Abs(this=x.copy()))),
                         expression=exp.Where(this=exp.NEQ(this=x.copy(), expression=exp.Literal.number(0))))
    negatives = exp.Filter(this=exp.Count(this=x.copy()),
                           expression=exp.Where(this=exp.LT(this=x.copy(), expression=exp.Literal.number(0))))
    sign = exp.Case(ifs=[exp.If(this=exp.EQ(this=exp.Mod(this=negatives, expression=exp.Literal.number(2)),
                                            expression=exp.Literal.number(1)), true=exp.Literal.number(-1))],
                    default=exp.Literal.number(1))
    zero = exp.Anonymous(this="bool_or", expressions=[exp.EQ(this=x.copy(), expression=exp.Literal.number(0))])
    return exp.Case(ifs=[exp.If(this=exp.EQ(this=exp.Count(this=x.copy()), expression=exp.Literal.number(0)),
                                true=exp.Null()),
                         exp.If(this=zero, true=exp.cast(exp.Literal.number(0), "DOUBLE"))],
                    default=exp.Mul(this=sign, expression=exp.Exp(this=nonzero)))


def _any_value(node: exp.IgnoreNulls) -> exp.Expression | None:
    """``any_value(x)`` (DuckDB's skips NULLs; sqlglot reads it as IGNORE NULLS, which it cannot
    write for PostgreSQL): PostgreSQL 16's any_value skips them too."""
    if not isinstance(node.this, exp.AnyValue):
        return None
    return exp.Anonymous(this="any_value", expressions=[node.this.this.copy()])


# DuckDB functions PostgreSQL lacks, by name
FUNCTIONS: dict[str, Rewrite] = {"list_select": _list_select, "product": _product}

# expression type -> the rewrite that gives it DuckDB's meaning on PostgreSQL (None: written as is)
RULES: dict[type[exp.Expression], Rewrite] = {
    exp.BitwiseRightShift: _md5_shift, exp.Anonymous: by_name(FUNCTIONS), exp.IsNan: _is_nan,
    exp.TryCast: _try_cast, exp.Explode: _unnest_series, exp.Unnest: _unnest_series_list,
    exp.ArgMax: _arg_extreme, exp.ArgMin: _arg_extreme, exp.Bracket: _element_of_call,
    exp.ArraySort: _array_sort, exp.ArrayDistinct: _array_distinct, exp.Array: _empty_array,
    exp.IgnoreNulls: _any_value}


class AnonDuckPostgres(Postgres):
    """PostgreSQL with :data:`RULES` applied as it is written."""

    class Generator(Postgres.Generator):
        TRANSFORMS = transforms(Postgres.Generator.TRANSFORMS, RULES)
        TYPE_MAPPING = {**Postgres.Generator.TYPE_MAPPING,
                        exp.DataType.Type.INT128: "NUMERIC(38, 0)", exp.DataType.Type.UINT128: "NUMERIC(38, 0)"}
