"""``csv = {...}``: how a CSV input is written, when the engine's reader cannot guess it.

DuckDB sniffs the delimiter, the quote and the header of a CSV file and Spark assumes commas; a
file exported with ``;`` (a European locale), no header or another quote character needs
saying. The job says it once, in engine-neutral keys (:data:`KEYS`), under the role that reads
the file (``[input]``, ``[input.codes]``, ``[input.events]``, ``[input.omop]``), and each
backend passes them to its own reader (:func:`duckdb_options`, :func:`spark_options`). A key
left out is the reader's own default (DuckDB: sniffed; the header is read unless
``header = false``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Mapping

from .errors import JobError

# job key -> (what it is, DuckDB's read_csv option, Spark's reader option)
KEYS: dict[str, tuple[str, str, str]] = {
    "delimiter": ("the character(s) between values, e.g. \";\" or \"\\t\"", "delim", "sep"),
    "quote": ("the quote character (\"\" for none)", "quote", "quote"),
    "escape": ("the character escaping a quote inside quotes (\"\" for none)", "escape", "escape"),
    "header": ("true if the first line names the columns (default true)", "header", "header"),
    "comment": ("lines starting with this character are skipped", "comment", "comment"),
    "null": ("the text of a missing value, e.g. \"NULL\" or \"NA\"", "nullstr", "nullValue"),
    "encoding": ("utf-8 (default), utf-16 or latin-1", "encoding", "encoding"),
}
ENCODINGS = ("utf-8", "utf-16", "latin-1")


@dataclass(frozen=True)
class CsvOptions:
    """The keys a job gave (None: the reader's default)."""

    delimiter: str | None = None
    quote: str | None = None
    escape: str | None = None
    header: bool = True
    comment: str | None = None
    null: str | None = None
    encoding: str | None = None

    def given(self) -> dict[str, Any]:
        """The keys that differ from the reader's defaults."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None and not (f.name == "header" and self.header)}


DEFAULT = CsvOptions()


def parse(value: Any, key: str) -> CsvOptions:
    """``[<role>] csv = {...}`` checked key by key; each error names the key and the value."""
    if not isinstance(value, Mapping):
        raise JobError(f"{key}: expected a table of CSV options, like {key.rpartition('.')[2]} = "
                       "{delimiter = \";\", header = true}; got " + type(value).__name__)
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise JobError(f"unknown key {unknown[0]!r} in {key}; allowed: {', '.join(KEYS)}")
    out: dict[str, Any] = {}
    for name, v in value.items():
        where = f"{key}.{name} = {v!r}"
        if name == "header":
            if not isinstance(v, bool):
                raise JobError(f"{where}: must be true or false")
        elif not isinstance(v, str):
            raise JobError(f"{where}: must be a string")
        elif name == "delimiter" and (not 1 <= len(v) <= 4 or "\n" in v or "\r" in v):
            raise JobError(f"{where}: one to four characters, not a line end")
        elif name in ("quote", "escape") and len(v) > 1:
            raise JobError(f"{where}: one character, or \"\" for none")
        elif name == "comment" and len(v) != 1:
            raise JobError(f"{where}: one character")
        elif name == "encoding":
            v = v.lower().replace("_", "-").replace("latin1", "latin-1").replace("utf8", "utf-8").replace(
                "utf16", "utf-16")
            if v not in ENCODINGS:
                raise JobError(f"{where}: one of {', '.join(ENCODINGS)}")
        out[name] = v
    return CsvOptions(**out)


def duckdb_options(options: CsvOptions) -> dict[str, Any]:
    """DuckDB's read_csv arguments (``header`` always given: anon_duck reads headers by default)."""
    return {"header": options.header, **{KEYS[k][1]: v for k, v in options.given().items() if k != "header"}}


def spark_options(options: CsvOptions) -> dict[str, Any]:
    """Spark's CSV reader options (``header`` always given)."""
    return {"header": options.header, **{KEYS[k][2]: v for k, v in options.given().items() if k != "header"}}


# what DuckDB's CSV error calls a setting it guessed -> the job key that sets it
_GUESSED = {"delimiter": "delimiter", "quote": "quote", "escape": "escape", "header": "header",
            "comment": "comment"}


def unreadable(message: str, key: str) -> str:
    """DuckDB's CSV error (the sniffer's or the parser's, a page of settings and fixes) as one
    sentence: its first line, what the reader guessed, and the job keys that say it instead."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    first = re.sub(r"^.*?(Invalid Input Error|Error): ", "", lines[0]) if lines else message
    for line in lines[1:]:
        if line.startswith("Expected Number of Columns"):
            first += f" ({line})"
            break
    guessed = []
    for line in lines:
        m = re.match(r"(\w+) = (.*?) \(Auto-Detected\)$", line)
        if m and m.group(1) in _GUESSED:
            guessed.append(f"{_GUESSED[m.group(1)]} = {m.group(2).strip() or '(none)'!r}")
    said = f"; the reader guessed {', '.join(guessed)}" if guessed else ""
    return (f"cannot read it as CSV: {first}{said}. Say how the file is written in the job: {key} = "
            "{delimiter = \";\", quote = '\"', header = true} (keys: " + ", ".join(KEYS) + "; README, Roles)")


def is_csv_error(message: str) -> bool:
    """Whether an engine error is the CSV reader failing on the file's layout (DuckDB's parser
    or sniffer, Spark's malformed records)."""
    return bool(re.search(r"CSV Error|sniff|MALFORMED", message, re.I))
