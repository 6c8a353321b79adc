"""The QIs as ArtUC's templates and algorithm see them: a module of its own, so that the
utility constraints (constraints.py) and the generalization state (generalize.py) can both use
it without importing each other."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QIInfo:
    """What the templates and the algorithm need to know about one QI."""

    i: int
    column: str
    numeric: bool
    hierarchy: str | None
    weight: float
    lo: float          # numeric: data minimum (NCP domain, A8); categorical: unused
    hi: float

    def ctx(self) -> dict[str, Any]:
        return {"i": self.i, "column": self.column, "numeric": self.numeric, "hierarchy": self.hierarchy}
