"""Execution backends: a thin interface the methods talk to instead of a connection."""
from .base import Backend
from .duckdb import DuckDBBackend

__all__ = ["Backend", "DuckDBBackend"]
