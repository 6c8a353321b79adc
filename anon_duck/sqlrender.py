"""The Jinja environments over ``sql/`` (the project's templates) and ``macros/`` (the dbt
package: the privacy checks and risk measures).

Identifiers reach SQL only through the ``ident`` filter (sqlglot, always quoted); values are
bound parameters (``$k``) or, where an engine cannot bind (views, DDL, values that shape the
query), the ``lit`` filter (sqlglot literal). Every rendered statement is parsed by sqlglot
before it runs, so a broken template fails loudly at render time instead of half-way through
a run.

``macros/`` is written for dbt (``adapter.dispatch``, ``exceptions.raise_compiler_error``,
``return``; its own quoting and literal macros) so that dbt users and
the Python verifiers run the same SQL. :func:`dbt_macros` loads it with a small shim that gives
those names their dbt meaning, and templates in ``sql/`` call the package as ``anon_duck.<macro>``.
Only dbt reads ``macros/generic_tests/`` (``{% test %}`` blocks).

Both environments keep their compiled templates between processes in Jinja's bytecode cache
(:func:`_bytecode_cache`): compiling the package's macros and a run's templates was a third of
a second of every CLI call and benchmark repetition.
"""
from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Hashable, Iterable, Iterator

import jinja2
import sqlglot
from sqlglot import exp

from .columns import hi_column, lo_column
from .errors import InputError, TemplateError

_PKG = Path(__file__).resolve().parent
# In a source checkout the templates sit next to the package; in a wheel they are
# force-included inside it (pyproject: [tool.hatch.build.targets.wheel.force-include]).
SQL_DIR = _PKG / "sql" if (_PKG / "sql").is_dir() else _PKG.parent / "sql"
MACROS_DIR = _PKG / "macros" if (_PKG / "macros").is_dir() else _PKG.parent / "macros"


def ident(name: Any) -> str:
    """Quote one identifier for DuckDB, whatever characters it holds."""
    if not isinstance(name, str) or name == "":
        raise TemplateError(f"identifier must be a non-empty string; got {name!r}")
    return _quoted(name)


@functools.lru_cache(maxsize=65536)
def _quoted(name: str) -> str:
    """sqlglot's quoting, once per name: a loop re-renders the same few names thousands of
    times (LKC's 1M run quoted 11,000 identifiers, a tenth of its Python time)."""
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


class _BytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache of compiled templates, where a failure to write is no error: the
    template was compiled and runs; the next process compiles it again."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


@functools.lru_cache(maxsize=1)
def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """The compiled templates of earlier processes: Jinja's cache in a folder of the user's
    own (``<tmp>/_jinja2-cache-<uid>``, mode 0700, refused if anyone else owns it). An entry
    is keyed by the template's name and absolute path and used only while the file's source is
    unchanged (Jinja checks its checksum), so an edited template, another checkout or the other
    environment (sql/ and macros/ compile with different options) never reads a stale one.
    None (no cache) when no such folder can be made."""
    try:
        return _BytecodeCache()
    except (OSError, RuntimeError):
        return None


DBT_PACKAGE = "anon_duck"
# Folders of macros/ that only dbt reads: generic tests are dbt syntax ({% test %}).
DBT_ONLY = ("generic_tests",)


class _MacroReturn(Exception):
    """dbt's ``return(value)``: ends a macro with a value (a list, a number) instead of text."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def _return(value: Any) -> None:
    raise _MacroReturn(value)


def _wrap(macro: Any) -> Any:
    """Call a macro as dbt does: the value of ``return(...)`` if it returns one, else its text."""
    @functools.wraps(macro)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return macro(*args, **kwargs)
        except _MacroReturn as ret:
            return ret.value
    return call


def _compiler_error(message: str) -> None:
    """dbt's ``exceptions.raise_compiler_error``: the macros' argument checks name the argument."""
    raise InputError(message)


class _Adapter:
    """The part of dbt's ``adapter`` the package uses: ``dispatch(name, package)`` returns
    ``<engine>__name`` if the package defines it, else ``default__name``."""

    def __init__(self, engine: str, macros: dict[str, Any]) -> None:
        self.engine, self._macros = engine, macros

    def dispatch(self, name: str, macro_namespace: str | None = None) -> Any:
        if macro_namespace not in (None, DBT_PACKAGE):
            raise TemplateError(f"dispatch: unknown macro namespace {macro_namespace!r}")
        for candidate in (f"{self.engine}__{name}", f"default__{name}"):
            if candidate in self._macros:
                return self._macros[candidate]
        raise TemplateError(f"dispatch: the {DBT_PACKAGE} package has no macro {name!r}")


@functools.lru_cache(maxsize=None)
def dbt_macros(engine: str = "duckdb") -> SimpleNamespace:
    """The dbt package in ``macros/`` as ``anon_duck.<macro>`` for ``engine``: every macro file
    (but the dbt-only folders) loaded in one Jinja environment whose globals are the dbt names
    the macros use. A template module copies the globals when it is made, so the package
    object and the dispatch table go in first, empty, and are filled as the files load."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(MACROS_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        extensions=["jinja2.ext.do"],
        bytecode_cache=_bytecode_cache(),
    )
    macros: dict[str, Any] = {}
    package = SimpleNamespace()
    env.globals.update({
        DBT_PACKAGE: package,
        "adapter": _Adapter(engine, macros),
        "exceptions": SimpleNamespace(raise_compiler_error=_compiler_error),
        "return": _return,
        "execute": False,
    })
    for path in sorted(MACROS_DIR.rglob("*.sql")):
        relative = path.relative_to(MACROS_DIR)
        if relative.parts[0] in DBT_ONLY:
            continue
        module = env.get_template(relative.as_posix()).module
        for name in dir(module):
            value = getattr(module, name)
            if isinstance(value, jinja2.runtime.Macro):
                if name in macros:
                    raise TemplateError(f"macro {name!r} is defined twice in {MACROS_DIR}")
                macros[name] = _wrap(value)
                setattr(package, name, macros[name])
    return package


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(SQL_DIR)]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["ident"] = ident
    env.filters["qualified"] = qualified
    env.filters["lit"] = lit
    env.filters["lo_column"] = lo_column
    env.filters["hi_column"] = hi_column
    env.globals["fail"] = _fail
    env.globals[DBT_PACKAGE] = dbt_macros("duckdb")
    return env


def add_template_dir(path: str | Path) -> None:
    """Render templates from ``path`` too (after ``sql/``, so a plug-in cannot shadow ours)."""
    folder = str(Path(path).resolve())
    search = environment().loader.searchpath
    if folder not in search:
        search.append(folder)


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
    finally:   # by identity: list.remove would drop the first recorder *equal* to this one,
        # and two nested recorders that saw the same renderings are equal
        _recorders[:] = [r for r in _recorders if r is not rec]


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
