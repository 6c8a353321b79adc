"""A release in the database: its names (names.py), what an earlier run left (catalog.py),
publication in one transaction (publication.py), the analyst views (views.py), the release order
tables are copied in (order.py), and ``export`` (exports.py)."""
from __future__ import annotations

from .catalog import previous_release, read_meta, release_tables
from .exports import export
from .names import ReleaseNames
from .publication import publish
from .views import analyst_views, check_views, view_sql

__all__ = ["ReleaseNames", "analyst_views", "check_views", "export", "previous_release", "publish", "read_meta",
           "release_tables", "view_sql"]
