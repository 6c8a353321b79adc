"""Job files (TOML) → frozen dataclasses (:mod:`anon_duck.jobspec`, re-exported here).

A job describes a dataset by roles once (person table, id, direct identifiers to drop,
quasi-identifiers with their hierarchies, a set-valued code attribute, longitudinal events,
sensitive and class attributes), then names a method with its parameters and the release.
Every check here raises :class:`JobError` naming the key and the value at fault; checks that
need the data (does the column exist? NULLs?) live in :mod:`anon_duck.inputs`.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

from .csvoptions import DEFAULT as CSV_DEFAULT
from .csvoptions import parse as parse_csv
from .errors import JobError
from .jobspec import (DATE_UNITS, QI, Codes, Dataset, Events, HierarchySpec, Job, Release, RiskSettings, Settings,
                      Source, table_parts)
from .omop import expand

QI_KINDS = ("numeric", "categorical", "date")
HIERARCHY_TYPES = ("arx", "edges", "interval", "builtin", "mask", "date")
MASK_ALIGNMENTS = ("right", "left")
BUILTIN_HIERARCHIES = ("icd9cm", "icd10cm")
# A release name becomes a prefix of table names; it is quoted anyway, but a plain name keeps
# exported file names and views readable.
_RELEASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
DEFAULT_THRESHOLDS = (0.5, 0.2, 0.1, 0.05)    # anon-duck risk's records-at-risk thresholds


# --------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------
def load_job(path: str | Path) -> Job:
    """Read and check a job file; relative paths inside it are relative to the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise JobError(f"cannot read job file {str(path)!r}: {err.strerror}") from err
    return parse_job(text, base_dir=path.parent, origin=str(path))


def parse_job(text: str, *, base_dir: Path | str = ".", origin: str = "<job>") -> Job:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise JobError(f"{origin}: malformed TOML: {err}") from err
    return job_from_dict(doc, base_dir=Path(base_dir))


def job_from_dict(doc: Mapping[str, Any], *, base_dir: Path = Path(".")) -> Job:
    _only(doc, "", {"input", "hierarchy", "method", "release", "settings", "risk"})
    _required(doc, "", ("input", "method", "release"))
    hierarchies = _hierarchies(_table(doc.get("hierarchy", {}), "hierarchy"), base_dir)
    method = _table(doc["method"], "method")
    _required(method, "method", ("name",))
    name = _str(method["name"], "method.name")
    inputs = _table(doc["input"], "input")
    if "omop" in inputs:
        _only(inputs, "input", {"omop"})      # the OMOP database holds every role
        dataset, derived = expand(_table(inputs["omop"], "input.omop"), base_dir, name, hierarchies)
        hierarchies = {**hierarchies, **derived}
    else:
        dataset = _dataset(inputs, base_dir)
    for ref_key, name_ in _hierarchy_refs(dataset):
        if name_ not in hierarchies:
            known = ", ".join(sorted(hierarchies)) or "none"
            raise JobError(f"{ref_key} = {name_!r}: no [hierarchy.{name_}] in the job (defined: {known})")
    _date_hierarchies_on_dates(dataset, hierarchies)
    params = {k: v for k, v in method.items() if k != "name"}
    release = _release(_table(doc["release"], "release"))
    settings = _settings(_table(doc.get("settings", {}), "settings"))
    risk = _risk(_table(doc.get("risk", {}), "risk"), base_dir)
    return Job(dataset, hierarchies, name, params, release, settings, base_dir, risk)


def _dataset(t: Mapping[str, Any], base: Path) -> Dataset:
    _only(t, "input", {"table", "path", "id", "drop", "qi", "codes", "events", "sensitive", "class", "keep", "omop",
                      "csv"})
    if "table" in t or "path" in t or not ("codes" in t or "events" in t):
        source: Source | None = _source(t, "input", base)
    else:
        source = None
        for key in ("qi", "sensitive", "class", "drop", "keep", "csv"):
            if key in t:
                raise JobError(f"input.{key} needs a person table: add input.table or input.path")
    qis = tuple(_qi(q, f"input.qi[{i}]") for i, q in enumerate(_list(t.get("qi", []), "input.qi")))
    weighted = [q.weight is not None for q in qis]
    if any(weighted) and not all(weighted):
        raise JobError(f"input.qi[{weighted.index(False)}].weight: give a weight to every quasi-identifier or to none")
    drop = tuple(_str(c, "input.drop") for c in _list(t.get("drop", []), "input.drop"))
    keep = tuple(_str(c, "input.keep") for c in _list(t.get("keep", []), "input.keep"))
    sensitive = _opt_str(t.get("sensitive"), "input.sensitive")
    class_ = _opt_str(t.get("class"), "input.class")
    id_ = _opt_str(t.get("id"), "input.id") if source is not None else _opt_str(t.get("id", "id"), "input.id")
    codes = _codes(_table(t["codes"], "input.codes"), base) if "codes" in t else None
    if codes is not None and codes.is_list_column and source is None:
        raise JobError("input.codes.column names a LIST column of the person table: add input.table or input.path")
    _one_role_per_column(
        [("input.id", id_)] + [(f"input.qi[{i}].column", q.column) for i, q in enumerate(qis)]
        + [("input.sensitive", sensitive), ("input.class", class_)]
        + [(f"input.drop[{i}]", c) for i, c in enumerate(drop)] + [(f"input.keep[{i}]", c) for i, c in enumerate(keep)]
        + [("input.codes.column", codes.code if codes is not None and codes.is_list_column else None)])
    events = _events(_table(t["events"], "input.events"), base) if "events" in t else None
    return Dataset(source, id_, drop, qis, codes, events, sensitive, class_, keep)


def _one_role_per_column(roles: list[tuple[str, str | None]]) -> None:
    """A column has one role. Two roles would publish it twice over, or publish what another
    role hides (an id or a dropped column kept, a sensitive value used as a QI)."""
    first: dict[str, str] = {}
    for key, column in roles:
        if column is None:
            continue
        if column in first:
            raise JobError(f"{key} = {column!r} is also {first[column]}; a column has exactly one role")
        first[column] = key


def _qi(t: Any, key: str) -> QI:
    t = _table(t, key)
    _only(t, key, {"column", "kind", "hierarchy", "weight"})
    _required(t, key, ("column",))
    kind = _str(t.get("kind", "categorical"), f"{key}.kind")
    if kind not in QI_KINDS:
        raise JobError(f"{key}.kind = {kind!r}: must be one of {', '.join(QI_KINDS)}")
    weight = t.get("weight")
    if weight is not None:
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not 0 <= weight <= 1:
            raise JobError(f"{key}.weight = {weight!r}: must be a number in [0, 1]")
        weight = float(weight)
    return QI(_str(t["column"], f"{key}.column"), kind, _opt_str(t.get("hierarchy"), f"{key}.hierarchy"), weight)


def _codes(t: Mapping[str, Any], base: Path) -> Codes:
    key = "input.codes"
    _only(t, key, {"table", "path", "id", "code", "column", "hierarchy", "csv"})
    hierarchy = _opt_str(t.get("hierarchy"), f"{key}.hierarchy")
    if "column" in t:
        if any(k in t for k in ("table", "path", "code", "csv")):
            raise JobError(f"{key}: give either column (a LIST column of the input table) or table/path + code")
        return Codes(None, None, _str(t["column"], f"{key}.column"), hierarchy, is_list_column=True)
    _required(t, key, ("id", "code"))
    return Codes(_source(t, key, base), _str(t["id"], f"{key}.id"), _str(t["code"], f"{key}.code"), hierarchy)


def _events(t: Mapping[str, Any], base: Path) -> Events:
    key = "input.events"
    _only(t, key, {"table", "path", "id", "position", "code", "age", "code_hierarchy", "age_hierarchy", "csv"})
    _required(t, key, ("id", "code", "age"))
    return Events(
        _source(t, key, base), _str(t["id"], f"{key}.id"), _str(t["code"], f"{key}.code"),
        _str(t["age"], f"{key}.age"), _opt_str(t.get("position"), f"{key}.position"),
        _opt_str(t.get("code_hierarchy"), f"{key}.code_hierarchy"),
        _opt_str(t.get("age_hierarchy"), f"{key}.age_hierarchy"))


def _hierarchies(t: Mapping[str, Any], base: Path) -> dict[str, HierarchySpec]:
    out = {}
    for name, spec in t.items():
        key = f"hierarchy.{name}"
        spec = _table(spec, key)
        _only(spec, key, {"type", "path", "table", "name", "width", "levels", "dyadic", "lo", "hi",
                          "leaf_level", "delimiter", "length", "padding", "mask", "align", "units"})
        _required(spec, key, ("type",))
        typ = _str(spec["type"], f"{key}.type")
        if typ not in HIERARCHY_TYPES:
            raise JobError(f"{key}.type = {typ!r}: must be one of {', '.join(HIERARCHY_TYPES)}")
        path = Path(base, _str(spec["path"], f"{key}.path")) if "path" in spec else None
        table = _table_name(spec["table"], f"{key}.table") if "table" in spec else None
        builtin = _opt_str(spec.get("name"), f"{key}.name")
        if typ == "arx" and path is None:
            raise JobError(f"{key}: type 'arx' reads an ARX file (path); for a hierarchy kept in a table "
                           "use type 'edges' with table (columns node, parent[, label])")
        if typ == "edges" and (path is None) == (table is None):
            raise JobError(f"{key}: type 'edges' needs exactly one of path or table")
        if typ == "builtin" and builtin not in BUILTIN_HIERARCHIES:
            raise JobError(f"{key}.name = {builtin!r}: built-in hierarchies are {', '.join(BUILTIN_HIERARCHIES)}")
        width = spec.get("width")
        if typ == "interval":
            if width is None or not isinstance(width, (int, float)) or isinstance(width, bool) or width <= 0:
                raise JobError(f"{key}.width = {width!r}: an interval hierarchy needs a positive width")
        levels = spec.get("levels")
        if levels is not None and (not isinstance(levels, int) or isinstance(levels, bool) or levels < 1):
            raise JobError(f"{key}.levels = {levels!r}: must be a whole number >= 1")
        dyadic = spec.get("dyadic", False)
        if not isinstance(dyadic, bool):
            raise JobError(f"{key}.dyadic = {dyadic!r}: must be true or false")
        for bound in ("lo", "hi"):
            v = spec.get(bound)
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                raise JobError(f"{key}.{bound} = {v!r}: must be a number")
        leaf_level = _opt_str(spec.get("leaf_level"), f"{key}.leaf_level")
        if leaf_level is not None and typ != "builtin":
            raise JobError(f"{key}.leaf_level only applies to built-in ICD hierarchies")
        length, padding, mask, align = _mask_keys(spec, key, typ)
        units = _date_units(spec, key, typ)
        out[name] = HierarchySpec(
            name, typ, path, table, builtin, float(width) if width is not None else None, levels, dyadic,
            spec.get("lo"), spec.get("hi"), leaf_level, _opt_str(spec.get("delimiter"), f"{key}.delimiter"),
            length, padding, mask, align, units)
    return out


def _mask_keys(spec: Mapping[str, Any], key: str, typ: str) -> tuple[int | None, str, str, str]:
    """``length``, ``padding``, ``mask`` and ``align`` of a masking hierarchy (defaults for
    any other type, which may not set them)."""
    given = {"length", "padding", "mask", "align"} & set(spec)
    if given and typ != "mask":
        raise JobError(f"{key}.{sorted(given)[0]} only applies to type 'mask'")
    length = spec.get("length")
    if length is not None and (not isinstance(length, int) or isinstance(length, bool) or length < 1):
        raise JobError(f"{key}.length = {length!r}: must be a whole number >= 1")
    padding, mask = spec.get("padding", "0"), spec.get("mask", "*")
    for k, v in (("padding", padding), ("mask", mask)):
        if not isinstance(v, str) or len(v) != 1:
            raise JobError(f"{key}.{k} = {v!r}: must be one character")
    if padding == mask:
        # a padded short value would then read as a masked long one (2134 -> **2134 is 1234's level 2)
        raise JobError(f"{key}.padding = {padding!r} is also the mask character: choose two different characters")
    align = spec.get("align", "right")
    if align not in MASK_ALIGNMENTS:
        raise JobError(f"{key}.align = {align!r}: must be one of {', '.join(MASK_ALIGNMENTS)}")
    return length, padding, mask, align


def _date_units(spec: Mapping[str, Any], key: str, typ: str) -> tuple[str, ...]:
    if "units" in spec and typ != "date":
        raise JobError(f"{key}.units only applies to type 'date'")
    units = spec.get("units", list(DATE_UNITS))
    if not isinstance(units, list) or not units or any(u not in DATE_UNITS for u in units) \
            or list(units) != [u for u in DATE_UNITS if u in units]:
        raise JobError(f"{key}.units = {units!r}: a non-empty list of {', '.join(DATE_UNITS)}, bottom up, "
                       "each at most once")
    return tuple(units)


def _hierarchy_refs(d: Dataset) -> list[tuple[str, str]]:
    refs = [(f"input.qi[{i}].hierarchy", q.hierarchy) for i, q in enumerate(d.qis) if q.hierarchy]
    if d.codes and d.codes.hierarchy:
        refs.append(("input.codes.hierarchy", d.codes.hierarchy))
    if d.events:
        for k in ("code_hierarchy", "age_hierarchy"):
            if getattr(d.events, k):
                refs.append((f"input.events.{k}", getattr(d.events, k)))
    return refs


def _date_hierarchies_on_dates(d: Dataset, hierarchies: Mapping[str, HierarchySpec]) -> None:
    """A date hierarchy generalizes dates; naming it for anything but a ``kind = "date"`` QI
    (a text or numeric QI, codes, events) is a mistake in the job, said before any data is read."""
    date_qis = {f"input.qi[{i}].hierarchy" for i, q in enumerate(d.qis) if q.kind == "date"}
    for ref_key, name in _hierarchy_refs(d):
        if hierarchies[name].type == "date" and ref_key not in date_qis:
            raise JobError(f"{ref_key} = {name!r} is a date hierarchy: use it for a quasi-identifier with "
                           'kind = "date"')


def _release(t: Mapping[str, Any]) -> Release:
    _only(t, "release", {"name", "seed", "schema", "retention_min_persons"})
    _required(t, "release", ("name",))
    name = _str(t["name"], "release.name")
    if not _RELEASE_NAME.match(name):
        raise JobError(f"release.name = {name!r}: use letters, digits and _ (it prefixes table names)")
    seed = t.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise JobError(f"release.seed = {seed!r}: must be a whole number >= 0")
    schema = _opt_str(t.get("schema"), "release.schema")
    if schema is not None and not _RELEASE_NAME.match(schema):
        raise JobError(f"release.schema = {schema!r}: use letters, digits and _ (one schema, created if absent)")
    floor = t.get("retention_min_persons")
    if floor is not None and (not isinstance(floor, int) or isinstance(floor, bool) or floor < 1):
        raise JobError(f"release.retention_min_persons = {floor!r}: must be a whole number >= 1 (1 publishes "
                       "every code's counts; the default is the method's k)")
    return Release(name, seed, None if schema == "main" else schema, floor)


# DuckDB crashes on an absurd thread count (2**40) instead of refusing it
MAX_THREADS = 4096


def _settings(t: Mapping[str, Any]) -> Settings:
    _only(t, "settings", {"memory_limit", "threads", "partition_size"})
    threads = t.get("threads")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                or not 1 <= threads <= MAX_THREADS):
        raise JobError(f"settings.threads = {threads!r}: must be a whole number from 1 to {MAX_THREADS}")
    mem = _opt_str(t.get("memory_limit"), "settings.memory_limit")
    if mem is not None and not re.fullmatch(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", mem.strip(), re.I):
        raise JobError(f"settings.memory_limit = {mem!r}: write it like '2GB' or '512MiB'")
    partition_size = t.get("partition_size")
    if partition_size is not None and (not isinstance(partition_size, int) or isinstance(partition_size, bool)
                                       or partition_size < 1):
        raise JobError(f"settings.partition_size = {partition_size!r}: must be a whole number of persons >= 1")
    return Settings(mem, threads, partition_size)


def _risk(t: Mapping[str, Any], base: Path) -> RiskSettings:
    _only(t, "risk", {"population_size", "population", "thresholds", "k", "m", "events_prefix"})
    whole = {key: _opt_whole(t.get(key), f"risk.{key}") for key in ("population_size", "k", "m", "events_prefix")}
    population = None
    if "population" in t:
        population_table = _table(t["population"], "risk.population")
        _only(population_table, "risk.population", {"table", "path"})
        population = _source(population_table, "risk.population", base)
    thresholds = None
    if "thresholds" in t:
        values = _list(t["thresholds"], "risk.thresholds")
        if not values:
            raise JobError("risk.thresholds = []: give at least one threshold (or leave the key out for the defaults)")
        thresholds = tuple(check_threshold(v, f"risk.thresholds[{i}]") for i, v in enumerate(values))
    return RiskSettings(whole["population_size"], population, thresholds, whole["k"], whole["m"],
                        whole["events_prefix"])


def check_threshold(value: Any, key: str) -> float:
    """A risk threshold: a number in (0, 1] (a record is at risk when 1 / its class size
    exceeds it); anything else is a JobError naming ``key`` and the value."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1:
        raise JobError(f"{key} = {value!r}: a risk threshold is a number in (0, 1] (0.2 means 1 in 5)")
    return float(value)


def _opt_whole(v: Any, key: str) -> int | None:
    if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
        raise JobError(f"{key} = {v!r}: must be a whole number >= 1")
    return v


def _source(t: Mapping[str, Any], key: str, base: Path) -> Source:
    has_table, has_path = "table" in t, "path" in t
    if has_table == has_path:
        raise JobError(f"{key}: give exactly one of table (in the database) or path (CSV/Parquet file)")
    if has_table:
        if "csv" in t:
            raise JobError(f"{key}.csv: says how a CSV file is written; {key}.table names a table")
        return Source(table=_table_name(t["table"], f"{key}.table"))
    path = Path(base, _str(t["path"], f"{key}.path"))
    if not re.search(r"\.(csv|tsv|parquet)(\.gz|\.zst)?$", path.name, re.I):
        raise JobError(f"{key}.path = {str(path)!r}: must be a .csv, .tsv or .parquet file (optionally .gz)")
    if "csv" in t and ".parquet" in path.name.lower():
        raise JobError(f"{key}.csv: says how a CSV file is written; {key}.path is a Parquet file")
    return Source(path=path, csv=parse_csv(t["csv"], f"{key}.csv") if "csv" in t else CSV_DEFAULT)


def _table_name(v: Any, key: str) -> str:
    """A table in the database: ``table``, ``schema.table`` or ``catalog.schema.table``, each
    part non-empty (a dot separates parts; docs/jobs.md)."""
    name = _str(v, key)
    parts = table_parts(name)
    if len(parts) > 3 or not all(parts):
        raise JobError(f"{key} = {name!r}: a table, schema.table or catalog.schema.table (a dot separates "
                       "the parts; none may be empty)")
    return name


# --------------------------------------------------------------------------------------
# small typed getters: each error names the key
# --------------------------------------------------------------------------------------
def _table(v: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise JobError(f"{key}: expected a table ([{key}]), got {type(v).__name__}")
    return v


def _list(v: Any, key: str) -> list:
    if not isinstance(v, list):
        raise JobError(f"{key}: expected a list, got {type(v).__name__}")
    return v


def _str(v: Any, key: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise JobError(f"{key} = {v!r}: expected a non-empty string")
    return v


def _opt_str(v: Any, key: str) -> str | None:
    return None if v is None else _str(v, key)


def _only(t: Mapping[str, Any], key: str, allowed: set[str]) -> None:
    unknown = sorted(set(t) - allowed)
    if unknown:
        where = f"[{key}]" if key else "the top level"
        raise JobError(f"unknown key {unknown[0]!r} in {where}; allowed: {', '.join(sorted(allowed))}")


def _required(t: Mapping[str, Any], key: str, names: tuple[str, ...]) -> None:
    for n in names:
        if n not in t:
            where = f"[{key}]" if key else "the job file"
            raise JobError(f"missing key {n!r} in {where}")
