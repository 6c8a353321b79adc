"""What a method plugs into: parameter checking, anonymization into staged scratch tables,
an independent verification of release tables, and a utility/risk report.

The orchestration (:mod:`anon_duck.api`) owns everything around it: loading and checking the
inputs, the verifier gate, the one-transaction publication with shuffled rows, the metadata
table, export. A method never publishes and never touches user tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from ..backend.base import Backend
from ..errors import JobError
from ..inputs import Inputs
from ..job import Job
from ..verifiers import CheckResult

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: called by long loops; the CLI draws a bar on a TTY."""
FRAGMENTS_PHASE = "partition: fragments"
"""The progress phase that counts a partitioned run's fragments done, wherever they run."""


@dataclass(frozen=True)
class ReleaseTable:
    """One table of a release. ``suffix`` names it (``<release>_<suffix>``); ``shuffle``
    says whether its rows are published in a seeded random order (every table whose row
    order could leak the input order or link chunks must be shuffled) or sorted by its
    columns, left to right (sql/lib/release_order.jinja). ``repeats`` says that most rows
    have identical copies (a generalized release): publication then orders the distinct rows
    and repeats each, the same rows in the same order at a fraction of the cost on such a
    table and twice the cost on a table of distinct rows. ``sums`` names the key columns of a
    table of counts that add up over disjoint fragments of the persons (the retention tables,
    anon_duck/retention.py): a partitioned run groups the fragments' rows by them and sums the
    other columns."""

    suffix: str
    staged: tuple[str, ...]
    shuffle: bool = True
    repeats: bool = False
    sums: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnalystView:
    """A view published beside the release tables, in the same transaction, in the shape an
    analyst queries: ``<release>`` (``suffix`` empty) or ``<release>_<suffix>``. ``template``
    (under sql/views/) defines it over the release's own tables only (context ``tables``:
    suffix → table name; ``params``: the method's checked parameters) and renders both the view
    and its check (lib/analyst_view.jinja)."""

    suffix: str
    template: str
    context: Mapping[str, Any] = field(default_factory=dict)
    sample: "ViewSample | None" = None


@dataclass(frozen=True)
class ViewSample:
    """How ``verify`` checks a view whose rows grow faster than the release tables (a view of
    code pairs), or a view of a table too large to compare whole on every verify (longitudinal's
    events, with the row counts too: :func:`release_view`): on the rows whose leading columns
    (as many as the view template restricts: lib/analyst_view.jinja ``sampled``) each hold one
    of ``size`` values drawn, seeded by the release seed, from the values ``template`` (under
    sql/views/, one column ``value``) lists. The view template renders its definition
    restricted to them (context ``only``: the values' bind parameters), and the view itself is
    read with the same filter, which must reach the pair join or the table scan
    (docs/verifiers.md, "Analyst views")."""

    template: str
    size: int = 32


def release_view(suffix: str, sample: tuple[str, ViewSample] | None = None) -> tuple[AnalystView, ...]:
    """The one analyst view of a method whose table ``<release>_<suffix>`` has the analysis
    shape already: ``<release>`` shows it. ``sample``: (the table's first column, how its values
    are drawn) for a table too large to compare whole on every verify (longitudinal's events,
    50M rows at 10^6 persons): the check compares the drawn values' rows and the row counts."""
    if sample is None:
        return (AnalystView("", "views/table.sql.j2", {"source": suffix}),)
    key, drawn = sample
    return (AnalystView("", "views/table.sql.j2", {"source": suffix, "key": key}, sample=drawn),)


@dataclass(frozen=True)
class Partitioning:
    """What a partitioned run (``[settings] partition_size``, docs/scale.md) needs to know of a
    method whose privacy model holds per cluster, so that the union of releases of disjoint
    fragments of the persons is a release of the whole: how to cut the persons into fragments
    of similar records (``split``: ``"codes"`` splits on the most frequent code, as HORPART
    does; ``"sort"`` sorts by the QIs, then the code sequence), and which staged columns hold
    ids that are numbered inside one fragment (``ids``: id domain -> the (table suffix, column)
    pairs holding it), which the union renumbers so they stay unique and say nothing of the
    fragment, and how the fragments' ``facts`` combine (key -> ``sum``, ``min``, ``max`` or
    ``mean``; :func:`anon_duck.partition.union.combine_facts`). ``check(backend, job, inputs,
    params)``, when given, checks on the whole input, before the cut, what a fragment cannot
    tell (a code the job names occurs in the input, though maybe not in every fragment).
    ``lead(method, backend, job, inputs, params)``, when given, stages on the whole input a relation
    (id VARCHAR, ...) and names its column whose value leads the ``sort`` rule's order: the
    persons the method never puts in one group apart (ArtUC's constraint boxes) then fall in
    as few fragments as the sizes allow."""

    split: str
    ids: Mapping[str, tuple[tuple[str, str], ...]]
    facts: Mapping[str, str] = field(default_factory=dict)
    check: Callable[[Backend, Job, Inputs, Any], None] | None = None
    lead: Callable[[Any, Backend, Job, Inputs, Any], tuple[tuple[str, ...], str]] | None = None


@dataclass
class Staged:
    """What ``anonymize`` produced: staged release tables plus facts for the metadata table."""

    tables: list[ReleaseTable]
    facts: dict[str, Any] = field(default_factory=dict)


class Method(Protocol):
    name: str
    summary: str
    views: tuple[AnalystView, ...]
    """The analyst views every release of the method publishes (docs/analyst.md)."""
    partitioning: Partitioning | None
    """How fragments of the persons are anonymized apart and unioned; None: the method runs on
    the whole input only (its model is not closed under union, or nobody checked)."""

    def check_params(self, job: Job) -> Any:
        """Validate ``job.params`` (raise :class:`JobError` naming ``method.<key>``) and the
        roles this method needs (QIs, codes, events, sensitive, class); return a frozen
        parameter object."""

    def anonymize(self, backend: Backend, job: Job, inputs: Inputs, params: Any, progress: Progress) -> Staged:
        """Compute the release into scratch tables."""

    def verify(self, backend: Backend, job: Job, tables: Mapping[str, tuple[str, ...]], params: Any) -> list[CheckResult]:
        """Check the privacy model on release tables only (``tables`` maps suffix → name).
        Must not reuse numbers the anonymizer computed."""

    def report(self, backend: Backend, job: Job, inputs: Inputs, tables: Mapping[str, tuple[str, ...]],
               params: Any) -> dict[str, Any]:
        """Utility and risk measures of a release (inputs are available for ARE-style measures)."""


# ------------------------------------------------------------------------------------------
# parameter checking shared by all methods
# ------------------------------------------------------------------------------------------
_REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One method parameter: name, type, default, and an optional range or choice list."""

    name: str
    kind: type
    default: Any = _REQUIRED
    lo: float | None = None
    hi: float | None = None
    choices: Sequence[Any] | None = None
    doc: str = ""


def parse_params(job: Job, spec: Sequence[Param]) -> dict[str, Any]:
    """Check ``job.params`` against ``spec``: unknown keys, missing keys, types, ranges."""
    known = {p.name for p in spec}
    for key in job.params:
        if key not in known:
            raise JobError(f"unknown key {key!r} in [method] for method {job.method!r}; "
                           f"allowed: {', '.join(sorted(known))}")
    out: dict[str, Any] = {}
    for p in spec:
        key = f"method.{p.name}"
        if p.name not in job.params:
            if p.default is _REQUIRED:
                raise JobError(f"missing key {p.name!r} in [method] (method {job.method!r} needs it)")
            out[p.name] = p.default
            continue
        v = job.params[p.name]
        if p.kind is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if p.kind is float and isinstance(v, str) and "/" in v:
            try:
                num, den = v.split("/")
                v = float(num) / float(den)
            except (ValueError, ZeroDivisionError) as err:
                raise JobError(f"{key} = {v!r}: not a number or fraction") from err
        if not isinstance(v, p.kind) or (p.kind is int and isinstance(v, bool)):
            raise JobError(f"{key} = {v!r}: expected {p.kind.__name__}")
        if p.lo is not None and v < p.lo:
            raise JobError(f"{key} = {v!r}: must be >= {p.lo:g}")
        if p.hi is not None and v > p.hi:
            raise JobError(f"{key} = {v!r}: must be <= {p.hi:g}")
        if p.choices is not None and v not in p.choices:
            raise JobError(f"{key} = {v!r}: must be one of {', '.join(map(str, p.choices))}")
        out[p.name] = v
    return out


def require_roles(job: Job, *, qis: bool = False, hierarchies: bool = False, codes: bool = False,
                  events: bool = False, sensitive: bool = False, class_: bool = False) -> None:
    """Raise a JobError naming the missing [input] key when a method needs a role."""
    ds = job.dataset
    if qis and not ds.qis:
        raise JobError(f"method {job.method!r} needs quasi-identifiers: add [[input.qi]] entries")
    if hierarchies:
        for i, q in enumerate(ds.qis):
            if not q.hierarchy:
                raise JobError(f"input.qi[{i}] ({q.column!r}): method {job.method!r} needs a hierarchy for every QI")
    if codes and ds.codes is None:
        raise JobError(f"method {job.method!r} needs a set-valued code attribute: add [input.codes]")
    if events and ds.events is None:
        raise JobError(f"method {job.method!r} needs longitudinal events: add [input.events]")
    if sensitive and ds.sensitive is None:
        raise JobError(f"method {job.method!r} needs input.sensitive")
    if class_ and ds.class_ is None:
        raise JobError(f"method {job.method!r} needs input.class")


def check_k(k: int, n_rows: int, what: str = "records") -> None:
    from ..errors import InputError
    if k > n_rows:
        raise InputError(f"method.k = {k} is larger than the number of {what} ({n_rows}); no release can be {k}-anonymous")
