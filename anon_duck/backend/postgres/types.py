"""Values and types between PostgreSQL and the rest of anon_duck: PostgreSQL's types as DuckDB
spells them (the input checks read one vocabulary), as Arrow types (an export copies a release
into DuckDB with its types), numpy's as DuckDB's, rows as plain Python."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np

from ...errors import AnonDuckError

_DUCKDB = {"int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "float4": "FLOAT", "float8": "DOUBLE",
           "text": "VARCHAR", "varchar": "VARCHAR", "bpchar": "VARCHAR", "name": "VARCHAR", "bool": "BOOLEAN",
           "date": "DATE", "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMP WITH TIME ZONE", "numeric": "DECIMAL"}


def duckdb_type(pg_name: str, precision: int | None = None, scale: int | None = None) -> str:
    """A PostgreSQL type (its catalog name: int8, _text, numeric) as DuckDB spells it."""
    if pg_name.startswith("_"):
        return duckdb_type(pg_name[1:]) + "[]"
    if pg_name == "numeric":
        return f"DECIMAL({precision or 38},{scale or 0})"
    if pg_name not in _DUCKDB:
        raise AnonDuckError(f"a column of PostgreSQL type {pg_name!r} has no DuckDB type here")
    return _DUCKDB[pg_name]


def arrow_type(duckdb_name: str) -> Any:
    """The Arrow type DuckDB reads as ``duckdb_name``."""
    import pyarrow as pa

    if duckdb_name.endswith("[]"):
        return pa.list_(arrow_type(duckdb_name[:-2]))
    if duckdb_name.startswith("DECIMAL("):
        precision, scale = duckdb_name[8:-1].split(",")
        return pa.decimal128(int(precision), int(scale))
    return {"SMALLINT": pa.int16(), "INTEGER": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
            "DOUBLE": pa.float64(), "VARCHAR": pa.string(), "BOOLEAN": pa.bool_(), "DATE": pa.date32(),
            "TIMESTAMP": pa.timestamp("us"), "TIMESTAMP WITH TIME ZONE": pa.timestamp("us", tz="UTC")}[duckdb_name]


def numpy_type(values: np.ndarray) -> str:
    """The DuckDB type of a numpy column written by ``write_table`` (strings as VARCHAR)."""
    kind = values.dtype.kind
    if kind == "b":
        return "BOOLEAN"
    if kind in "iu":
        return "BIGINT"
    if kind == "f":
        return "DOUBLE"
    if kind in "UOS":
        sample = next((v for v in values if v is not None), None)
        if isinstance(sample, (bool, np.bool_)):
            return "BOOLEAN"
        if isinstance(sample, (int, np.integer)):
            return "BIGINT"
        if isinstance(sample, (float, np.floating)):
            return "DOUBLE"
        return "VARCHAR"
    raise AnonDuckError(f"a numpy column of dtype {values.dtype} cannot be written to PostgreSQL here")


def param_type(value: Any) -> str | None:
    """The PostgreSQL type a bound value is cast to (None: left to PostgreSQL)."""
    if isinstance(value, (bool, np.bool_)):
        return "BOOLEAN"
    if isinstance(value, (int, np.integer)):
        return "BIGINT"
    if isinstance(value, (float, np.floating)):
        return "DOUBLE PRECISION"
    if isinstance(value, str):
        return "TEXT"
    if isinstance(value, (list, tuple)) and value:
        inner = param_type(value[0])
        return f"{inner}[]" if inner else None
    return None


def plain(value: Any) -> Any:
    """A value as DuckDB's Python client gives it: numbers as int or float, numpy scalars as Python's."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def column(values: list[Any], duckdb_name: str) -> np.ndarray:
    """A fetched column as numpy, as the DuckDB backend gives it: numbers without NULLs as their
    dtype, NULL as NaN (numbers) or None (anything else)."""
    numeric = duckdb_name in ("SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "BOOLEAN") \
        or duckdb_name.startswith("DECIMAL")
    if numeric and None not in values:
        if duckdb_name.startswith("DECIMAL"):
            return np.array([float(v) for v in values], dtype=float)
        dtype = {"BOOLEAN": bool, "FLOAT": np.float32, "DOUBLE": float}.get(duckdb_name, np.int64)
        return np.array(values, dtype=dtype)
    if numeric:
        return np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    out = np.empty(len(values), dtype=object)
    out[:] = [plain(v) for v in values]
    return out
