"""Engine rules as data: a dialect's RULES (expression type -> rewrite) as the entries of a
sqlglot ``Generator.TRANSFORMS`` table (backend/spark/dialect.py, backend/postgres/dialect.py)."""
from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp
from sqlglot.generator import Generator

from ..errors import AnonDuckError

# a node in, the node with DuckDB's meaning out, or None: not this rule's shape
Rewrite = Callable[[exp.Expression], "exp.Expression | None"]


def transforms(base: Mapping[type, Callable[..., str]], rules: Mapping[type, Rewrite]) -> dict:
    """``base`` (the engine's own sqlglot TRANSFORMS) with each rule in front of what it had."""
    return {**base, **{kind: _spelled(rule, base.get(kind)) for kind, rule in rules.items()}}


def by_name(functions: Mapping[str, Rewrite]) -> Rewrite:
    """One rule for ``exp.Anonymous``: the rewrite of the function of that name, if any."""
    def rewrite(node: exp.Expression) -> exp.Expression | None:
        rule = functions.get(str(node.this).lower())
        return rule(node) if rule is not None else None
    return rewrite


def md5_top_hex(node: exp.Expression, engine: str) -> exp.Expression | None:
    """For DuckDB's ``md5_number(value) >> shift`` (else None): the hex digits of its value.
    md5_number reads the 16 digest bytes as a little-endian 128-bit number, so its top
    ``128 - shift`` bits (whole bytes) are the last digest bytes in reverse order, i.e. pairs of
    hex digits from the end of ``md5(value)``; each engine reads them as a number its way."""
    if not (isinstance(node, exp.BitwiseRightShift) and isinstance(node.this, exp.Anonymous)
            and str(node.this.this).lower() == "md5_number" and node.expression.is_int):
        return None
    shift = int(node.expression.name)
    if shift % 8 or not 64 <= shift < 128:
        raise AnonDuckError(f"md5_number(...) >> {shift} has no {engine} spelling here (whole bytes, at most 63 bits)")
    digest = exp.Anonymous(this="md5", expressions=[node.this.expressions[0].copy()])
    return exp.Concat(expressions=[exp.Substring(this=digest.copy(), start=exp.Literal.number(2 * byte + 1),
                                                 length=exp.Literal.number(2))
                                   for byte in range(15, shift // 8 - 1, -1)])


def _spelled(rewrite: Rewrite, parent: Callable[..., str] | None) -> Callable[[Generator, exp.Expression], str]:
    """A TRANSFORMS entry: the rewritten node (its parts written by the same generator), or the
    node as the engine's sqlglot dialect writes it."""
    def generate(gen: Generator, node: exp.Expression) -> str:
        spelled = rewrite(node)
        if spelled is not None:
            return gen.sql(spelled)
        if parent is not None:
            return parent(gen, node)
        own = getattr(gen, f"{node.key}_sql", None)      # what sqlglot's Generator.sql would pick
        return own(node) if own is not None else gen.function_fallback_sql(node)
    return generate
