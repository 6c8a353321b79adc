"""Values between Spark and the rest of anon_duck: Arrow columns as numpy (as the DuckDB backend
gives them), Spark's types as DuckDB spells them, parameters and rows as plain Python."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np

_TYPES = {"string": "VARCHAR", "bigint": "BIGINT", "int": "INTEGER", "smallint": "SMALLINT", "tinyint": "TINYINT",
          "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP"}


def duckdb_type(spark_type: str) -> str:
    """A Spark type as DuckDB spells it, so the input checks read one vocabulary."""
    if spark_type.startswith("decimal"):
        return spark_type.upper()
    if spark_type.startswith("array<"):
        return duckdb_type(spark_type[6:-1]) + "[]"
    return _TYPES.get(spark_type, spark_type.upper())


def spark_value(value: Any) -> Any:
    """A bound parameter as Spark takes it (numpy scalars as Python's)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def plain(value: Any) -> Any:
    """Spark Rows hold Decimal for DECIMAL and lists for arrays; give Python numbers like DuckDB."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def column(chunked: Any) -> np.ndarray:
    """An Arrow column as numpy: numbers without NULLs as their dtype, NULL as NaN (numbers) or
    None (anything else), as the DuckDB backend gives them."""
    import pyarrow as pa

    arr = chunked.combine_chunks() if hasattr(chunked, "combine_chunks") else chunked
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type):
        if arr.null_count == 0:
            return arr.to_numpy(zero_copy_only=False)
        return np.array([np.nan if v is None else v for v in arr.to_pylist()], dtype=float)
    if pa.types.is_decimal(arr.type):
        return np.array([None if v is None else plain(v) for v in arr.to_pylist()],
                        dtype=object if arr.null_count else None)
    return np.array(arr.to_pylist(), dtype=object)


def spark_schema(table: Any) -> Any:
    """The Spark schema of an Arrow table (an empty table has no rows to infer one from)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(table.schema)
