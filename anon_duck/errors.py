"""Exception types. Every message names the job-file key, column or value at fault,
because the person reading it is a data steward, not the author of the code."""
from __future__ import annotations


class AnonDuckError(Exception):
    """Base class: anything anon_duck raises on purpose."""


class JobError(AnonDuckError):
    """The job file is malformed or inconsistent (unknown key, bad type, k < 1, ...)."""


class InputError(AnonDuckError):
    """The data does not fit the job: unknown table/column, NULL in a QI, a value missing
    from its hierarchy, k larger than the table, ..."""


class TemplateError(AnonDuckError):
    """A SQL template was called with an argument it refuses (raised through ``fail()``)."""


class VerificationError(AnonDuckError):
    """The independent verifier found violations in a release that was about to be
    published. This is a bug in an anonymizer, never a user error: the release is not
    written, and the violating groups are attached."""

    def __init__(self, message: str, violations: "list[dict] | None" = None) -> None:
        super().__init__(message)
        self.violations = violations or []


class InfeasibleError(AnonDuckError):
    """The privacy model cannot be met with the given parameters (e.g. C below the
    largest sensitive-value share, no lattice node within h, delta or epsilon exceeded)."""


class EngineError(AnonDuckError):
    """The engine asked for cannot run here (``--engine spark`` without pyspark or Java): the
    message names what to install."""
