"""The one Jinja environment over ``sql/`` and ``macros/``.

Identifiers reach SQL only through the ``ident`` filter (sqlglot, always quoted); values are
bound parameters (``$k``) or, where an engine cannot bind (views, DDL, values that shape the
query), the ``lit`` filter (sqlglot literal). Every rendered statement is parsed by sqlglot
before it runs, so a broken template fails loudly at render time instead of half-way through
a run.
"""
from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any, Hashable, Iterable, Iterator

import jinja2
import sqlglot
from sqlglot import exp

from .errors import TemplateError

_PKG = Path(__file__).resolve().parent
# In a source checkout the templates sit next to the package; in a wheel they are
# force-included inside it (pyproject: [tool.hatch.build.targets.wheel.force-include]).
SQL_DIR = _PKG / "sql" if (_PKG / "sql").is_dir() else _PKG.parent / "sql"
MACROS_DIR = _PKG / "macros" if (_PKG / "macros").is_dir() else _PKG.parent / "macros"


def ident(name: Any) -> str:
    """Quote one identifier for DuckDB, whatever characters it holds."""
    if not isinstance(name, str) or name == "":
        raise TemplateError(f"identifier must be a non-empty string; got {name!r}")
    return exp.to_identifier(name, quoted=True).sql("duckdb")


def qualified(parts: Iterable[str] | str) -> str:
    """Quote a schema-qualified name given as a tuple/list (``("scratch", "t")``)
    or a single name. Never splits on dots: a dot in user input stays part of the name."""
    if isinstance(parts, str):
        return ident(parts)
    return ".".join(ident(p) for p in parts)


def lit(value: Any) -> str:
    """A SQL literal, for the few places a value cannot be bound."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return exp.convert(value).sql("duckdb")
    raise TemplateError(f"lit: cannot render a {type(value).__name__} as a SQL literal")


def _fail(message: str) -> None:
    raise TemplateError(message)


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(SQL_DIR), str(MACROS_DIR)]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["ident"] = ident
    env.filters["qualified"] = qualified
    env.filters["lit"] = lit
    env.globals["fail"] = _fail
    return env


def render(name: str, /, *, shape: Hashable | None = None, **context: Any) -> str:
    """Render ``sql/<name>`` with ``context`` and parse the result with sqlglot (duckdb).

    ``shape``: for a loop that renders one template many times, a key of everything that
    shapes the statement (counts of blocks, sets, columns...) other than identifiers and
    literals, which ``ident``/``lit`` quote so they cannot change the parse. Only the first
    rendering of each (template, shape) is parsed; every rendering is still recorded."""
    sql = environment().get_template(name).render(**context).strip()
    if shape is None:
        _check_parses(name, sql)
    elif (name, shape) not in _parsed_shapes:
        _check_parses(name, sql)
        _parsed_shapes.add((name, shape))
    if _recorders:
        for rec in _recorders:
            rec.append((name, sql))
    return sql


_recorders: list[list[tuple[str, str]]] = []
_parsed_shapes: set[tuple[str, Hashable]] = set()


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[str, str]]]:
    """Collect every (template, rendered SQL) pair rendered inside the block: shows exactly
    what a run executed, and lets the tests transpile real renderings to other dialects."""
    rec: list[tuple[str, str]] = []
    _recorders.append(rec)
    try:
        yield rec
    finally:
        _recorders.remove(rec)


@functools.lru_cache(maxsize=4096)
def _check_parses(name: str, sql: str) -> None:
    """Parse once per distinct rendering: loops re-render the same text many times."""
    try:
        sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.ParseError as err:  # pragma: no cover - a template bug
        raise TemplateError(f"template {name} rendered SQL that does not parse: {err}\n{sql}") from err


def template_names() -> list[str]:
    """Every SQL template (not macro files): used by the render-and-transpile test."""
    return sorted(str(p.relative_to(SQL_DIR)) for p in SQL_DIR.rglob("*.sql.j2"))
