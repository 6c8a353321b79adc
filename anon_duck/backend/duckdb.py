"""DuckDB backend: the only module that touches a ``duckdb`` connection directly."""
from __future__ import annotations

import contextlib
import itertools
import time
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import duckdb
import numpy as np

from ..csvoptions import DEFAULT as CSV_DEFAULT
from ..csvoptions import CsvOptions, duckdb_options
from ..errors import AnonDuckError, InputError
from ..names import matches
from ..sqlrender import render

_register_ids = itertools.count()


class DuckDBBackend:
    """Wraps a connection passed in by the caller (library code never uses
    ``duckdb.sql``'s global connection). ``trace`` collects (stage, seconds) pairs so
    ``report`` can say where the time went."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, memory_limit: str | None = None,
                 threads: int | None = None) -> None:
        self.con = con
        self.trace: list[tuple[str, float]] = []
        self._previous: dict[str, str] = {}
        try:
            for name, value in (("memory_limit", memory_limit), ("threads", threads)):
                if value:
                    self._apply(name, value)
        except BaseException:   # e.g. Ctrl-C between the two: a setting already changed goes back
            self.restore_settings()
            raise

    def _apply(self, name: str, value: str | int) -> None:
        """Set one of a job's settings, remembering the caller's. A value that already reads
        the same is left alone: DuckDB shows memory_limit only truncated and offers no exact
        reading, so not touching it is the only way to keep the caller's value to the byte."""
        shown = self._setting(name)
        if shown == (str(value) if name == "threads" else self._formatted([_parse_bytes(str(value))])[0]):
            return
        self._previous[name] = shown
        self.run(f"settings: {name}", render("engines/duckdb/set_setting.sql.j2", name=name, value=value))

    def restore_settings(self) -> None:
        """Give the caller its own settings back: a job's ``[settings]`` hold for one API call,
        and DuckDB's memory_limit and threads are global to the database instance. A default is
        restored exactly (``SET … = DEFAULT``). A memory_limit the caller had set can only be
        read as DuckDB shows it, truncated to 0.1 of its unit (``953.6 MiB`` for 1GB; setting
        that text back would give 953.5 MiB), so it is restored to the roundest byte count that
        reads the same (what a person types: 1GB, 300MB, 4GiB come back exactly) and, when two
        are equally round, to the middle of the interval the text shows (within 0.05 of the unit)."""
        for name, value in self._previous.items():
            self.run(f"settings: restore {name}", render("engines/duckdb/set_setting.sql.j2", name=name, value=None))
            if self._setting(name) != value:
                self.run(f"settings: restore {name}", render("engines/duckdb/set_setting.sql.j2", name=name,
                                                               value=self._restorable(name, value)))
        self._previous.clear()

    def _restorable(self, name: str, shown: str) -> int | str:
        """The value to SET so that the setting shows ``shown`` again (see restore_settings)."""
        if name == "threads":
            return int(shown)
        number, _, unit = shown.partition(" ")
        if unit not in _UNITS:
            return shown
        candidates = _round_byte_counts(Decimal(number) * _UNITS[unit], Decimal("0.1") * _UNITS[unit])
        fits = [(digits, n) for (n, digits), text in zip(candidates.items(), self._formatted(list(candidates)))
                if text == shown]
        fewest = [n for digits, n in fits if digits == min(d for d, _ in fits)]
        if len(fewest) == 1:
            return f"{fewest[0]}B"
        decimals = len(number.partition(".")[2])
        return f"{int((float(number) + 0.5 * 10 ** -decimals) * _UNITS[unit])}B"

    def _formatted(self, byte_counts: list[int]) -> list[str]:
        """How DuckDB shows each byte count as a memory_limit (its own ``format_bytes``)."""
        if not byte_counts:
            return []
        rows = self.rows("settings: format", render("engines/duckdb/format_bytes.sql.j2"), {"counts": byte_counts})
        return [text for _, text in rows]

    def _setting(self, name: str) -> str:
        return self.scalar(f"settings: read {name}", render("engines/duckdb/current_setting.sql.j2"), {"name": name})

    @contextlib.contextmanager
    def local_copy(self, tables: Sequence[str], schema: str = "main") -> Iterator["DuckDBBackend"]:
        """This connection; a release in another schema is read through a cursor whose default
        schema is that one (the caller's connection keeps its own)."""
        if schema == "main":
            yield self
            return
        with self.con.cursor() as cur:
            reader = DuckDBBackend(cur)
            reader.run("export: schema", render("engines/duckdb/use_schema.sql.j2", schema=schema))
            yield reader

    def threads(self) -> int:
        return int(self._setting("threads"))

    def memory_limit(self) -> int:
        """DuckDB's ``memory_limit`` in bytes, as it reads it now."""
        return _parse_bytes(self._setting("memory_limit"))

    def sort_budget(self) -> int:
        """An eighth of ``memory_limit``: DuckDB 2.0's sort of wide rows (ArtUC's code-set text)
        fails with "failed to pin block" rather than spill once the rows it holds near the
        limit (1.6 GB of text under a 1 GB limit, two threads); a chunk of an eighth leaves
        room for the sort's copies, the output table's blocks and each thread's share."""
        return self.memory_limit() // 8

    def in_transaction(self) -> bool:
        """Whether the caller has a transaction open on this connection (see
        ``engines/duckdb/transaction_id.sql.j2``); asking does not disturb it."""
        sql = render("engines/duckdb/transaction_id.sql.j2")
        return self.scalar("transaction: id", sql) == self.scalar("transaction: id", sql)

    def writable(self, schema: str = "main") -> bool:
        """Whether this connection's database can be written (not opened read-only)."""
        return bool(self.scalar("database: writable", render("engines/duckdb/database_writable.sql.j2")))

    # -- statements --------------------------------------------------------------------
    def _execute(self, stage: str, sql: str, params: Mapping[str, Any] | None):
        t0 = time.perf_counter()
        with _interrupts(stage):
            cur = self.con.execute(sql, dict(params) if params else None)
        self.trace.append((stage, time.perf_counter() - t0))
        return cur

    def run(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> None:
        self._execute(stage, sql, params)

    def fetch(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        cur = self._execute(stage, sql, params)
        with _interrupts(stage):      # DuckDB streams the result: a Ctrl-C can land here too
            columns = cur.fetchnumpy()
        return {k: _unmask(v) for k, v in columns.items()}

    def rows(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        cur = self._execute(stage, sql, params)
        with _interrupts(stage):
            return cur.fetchall()

    def scalar(self, stage: str, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        # fetchall, not fetchone: DuckDB 2.0 keeps a half-read result open, and the next
        # register() on this connection then fails
        rows = self.rows(stage, sql, params)
        return rows[0][0] if rows else None

    def cleanup(self, work: Callable[[], None]) -> None:
        """DuckDB's client survives an interrupt: the work runs here."""
        work()

    def write_table(self, name: Sequence[str] | str, columns: Mapping[str, np.ndarray | list]) -> None:
        """Bulk-create a table from numpy columns: register a zero-copy view, CTAS, unregister.
        numpy strings arrive as ENUM, so they are cast back to VARCHAR."""
        arrays = {k: np.asarray(v) for k, v in columns.items()}
        source = f"_anon_duck_reg_{next(_register_ids)}"
        casts = [(k, "VARCHAR" if a.dtype.kind in "UOS" else None) for k, a in arrays.items()]
        self.con.register(source, arrays)
        try:
            target = (name,) if isinstance(name, str) else tuple(name)
            self.run(f"write {'.'.join(target)}",
                     render("engines/duckdb/create_table_from_registered.sql.j2", target=target, source=source, columns=casts))
        finally:
            self.con.unregister(source)

    def write_arrow(self, stage: str, target: Sequence[str], arrow: Any) -> None:
        """A table from an Arrow table, with its types: another engine's release copied here to
        be exported by DuckDB's writers (that engine's ``local_copy``)."""
        source = f"_anon_duck_reg_{next(_register_ids)}"
        self.con.register(source, arrow)
        try:
            self.run(stage, render("engines/duckdb/create_table_from_registered.sql.j2", target=tuple(target),
                                   source=source, columns=[(c, None) for c in arrow.column_names]))
        finally:
            self.con.unregister(source)

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        return _transaction(self.con)

    def load_file(self, stage: str, target: Sequence[str], path: str, fmt: str, text_columns: Sequence[str],
                  csv: CsvOptions | None = None) -> None:
        options = duckdb_options(csv or CSV_DEFAULT) if fmt == "csv" else {}
        if fmt == "csv":   # only columns that exist can be typed; a missing one is reported by the role checks
            present = [r[0] for r in self.rows(f"{stage}: sniff", render("engines/duckdb/csv_columns.sql.j2", csv=options),
                                               {"path": path})]
            text_columns = [found for c in text_columns for found in matches(present, c, case_sensitive=False)]
        self.run(stage, render("engines/duckdb/load_file.sql.j2", target=tuple(target), format=fmt, csv=options,
                               text_columns=list(dict.fromkeys(text_columns))), {"path": path})

    def case_sensitive(self) -> bool:
        """DuckDB matches names without regard to case, quoted or not."""
        return False

    def columns(self, stage: str, relation: Sequence[str] | str) -> dict[str, str]:
        return {name: typ for name, typ in self.rows(stage, render("engines/duckdb/columns.sql.j2", relation=relation))}

    def table_exists(self, name: str, schema: str = "main") -> bool:
        return bool(self.scalar("release: exists", render("engines/duckdb/table_exists.sql.j2"),
                                {"name": name, "schema": schema}))

    def scratch_tables(self, where: Sequence[str]) -> list[str]:
        database, schema, prefix = where
        return [t for (t,) in self.rows("scratch: list", render("engines/duckdb/scratch_tables.sql.j2"),
                                        {"database": database, "schema": schema, "prefix": prefix})]

    def scratch_exists(self, name: Sequence[str]) -> bool:
        # rows(), not scalar(): DuckDB 2.0 keeps a fetchone() result open, which blocks register()
        return bool(self.rows("scratch: exists", render("engines/duckdb/temp_table_exists.sql.j2"), {"name": name[-1]})[0][0])


_UNITS = {"bytes": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40, "PiB": 2 ** 50,
          "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12, "PB": 10 ** 15}


def _parse_bytes(text: str) -> int:
    """A memory size as a job writes it (``2GB``, ``512 MiB``: job.py checked the form) in
    bytes, as DuckDB reads it (units case-insensitive, KB = 1000, KiB = 1024)."""
    number = text.strip().rstrip("BbIiKkMmGgTt ")
    units = {"b": 1, **{u.lower(): size for u, size in _UNITS.items()}}
    return int(Decimal(number) * units[text.strip()[len(number):].strip().lower()])


def _round_byte_counts(low: Decimal, width: Decimal) -> dict[int, int]:
    """Byte counts a person might have typed near [low, low + width): every number of up to 3
    significant digits times a unit (kB … TiB) in a margin of one width each side, mapped to
    its fewest significant digits. Which of them DuckDB shows as the text asked about is
    DuckDB's to say (``_formatted``)."""
    lo, hi = low - width, low + 2 * width
    found: dict[int, int] = {}
    for unit in (size for size in _UNITS.values() if size > 1):
        for digits in (1, 2, 3):
            step = Decimal(10) ** ((hi / unit).adjusted() - digits + 1)
            k = int((lo / unit / step).to_integral_value(ROUND_CEILING))
            while k * step * unit < hi:
                count = k * step * unit
                if count == count.to_integral_value():
                    found[int(count)] = min(found.get(int(count), digits), digits)
                k += 1
    return dict(sorted(found.items()))


def _unmask(values: np.ndarray) -> np.ndarray:
    """DuckDB returns a column with NULLs as a masked array, and ``np.asarray`` would turn each
    NULL into 0. Give NaN (numbers) or None (anything else) instead, so a NULL can never pass
    for a real value."""
    if isinstance(values, np.ma.MaskedArray):
        if not values.mask.any():
            return np.asarray(values.data)
        if values.dtype.kind in "iufb":
            return values.astype(float).filled(np.nan)
        out = np.asarray(values.data, dtype=object).copy()   # filled(None) would write the default '?'
        out[values.mask] = None
        return out
    return np.asarray(values)


@contextlib.contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()


@contextlib.contextmanager
def _interrupts(stage: str) -> Iterator[None]:
    """DuckDB's errors as anon_duck's, and Ctrl-C as the interrupt it is. DuckDB turns Ctrl-C
    during a query, or while its result streams to Python, into an error of its own
    (InterruptException, or a bare RuntimeError "Query interrupted" from the Python client):
    raised as KeyboardInterrupt, callers roll back and the CLI exits 130 saying "interrupted"
    (a RuntimeError out of a fetch once ended a run as an internal error)."""
    try:
        yield
    except (duckdb.InterruptException, RuntimeError) as err:
        if isinstance(err, RuntimeError) and "interrupt" not in str(err).lower():
            raise
        raise KeyboardInterrupt(f"{stage}: interrupted") from err
    except duckdb.Error as err:
        raise AnonDuckError(f"{stage}: {err}") from err


def is_connection(con: Any) -> bool:
    """Whether ``con`` is a DuckDB connection."""
    return isinstance(con, duckdb.DuckDBPyConnection)


@contextlib.contextmanager
def connect(db: str, *, read_only: bool = False, master: str | None = None,
            missing_ok: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """The CLI's connection to the database file ``db`` (``:memory:``: a new database).
    ``run`` writes the release; verify, report, export and inspect only read, so they open
    a database file read-only (and work while another process holds it for reading). A file
    that cannot be opened so (another process writes it, it is not a DuckDB file, no
    permission) is refused in a sentence saying what the command needed, before any work.
    ``missing_ok``: a file that does not exist is an empty in-memory database."""
    if master:
        raise InputError("--spark-master needs --engine spark")
    if missing_ok and not Path(db).exists():
        db = ":memory:"               # nothing to read there, and nothing to write
    if read_only and db != ":memory:" and not Path(db).is_file():
        raise InputError(f"--db {db}: no such database file")
    try:
        con = duckdb.connect(str(db), read_only=read_only and db != ":memory:")
    except duckdb.Error as err:
        need = "read it" if read_only else "write the release into it"
        raise InputError(f"--db {db}: cannot open the database to {need} (nothing was run): {err}") from err
    with con:
        yield con
