"""Names of a run's scratch objects.

Scratch tables are DuckDB TEMP tables: they live only in the connection that made them, so
a killed process leaves nothing behind in the database file, and two runs on two
connections never see each other's scratch. They are also dropped explicitly at the end of
every run. The ``_ad_`` prefix keeps them from shadowing a user's own tables.
"""
from __future__ import annotations

PREFIX = "_ad_"


def scratch(name: str) -> tuple[str, str, str]:
    """Fully qualified name of a scratch table: ("temp", "main", "_ad_<name>")."""
    return ("temp", "main", PREFIX + name)
