"""Issue #16 item 3 for longitudinal events: every column holding values that are not whole
numbers, or NULLs, is named at once, with the first values and the ids of their rows (the
person table's checks are in tests/test_connection.py)."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck.errors import InputError
from anon_duck.job import Job, parse_job

from conftest import FIXTURES, JOBS

EVENTS = (FIXTURES / "004" / "toy_events.csv").read_text().splitlines()


def _job_with_events(tmp_path: Path, edits: dict[int, str]) -> Job:
    """The longitudinal toy job on its events file with some lines (1 = the first event) replaced."""
    lines = [edits.get(i, line) for i, line in enumerate(EVENTS)]
    (tmp_path / "events.csv").write_text("\n".join(lines) + "\n")
    text = (JOBS / "longitudinal_toy.toml").read_text().replace('"../004/toy_events.csv"',
                                                                 f'"{tmp_path / "events.csv"}"')
    return parse_job(text, base_dir=JOBS)


def test_events_that_are_not_whole_numbers_are_named_with_their_ids(tmp_path):
    job = _job_with_events(tmp_path, {2: "1,2,401.1,thirty-four", 4: "2,first,401.1,38", 9: "4,2,401.1,3 3"})
    with pytest.raises(InputError) as err:
        anon_duck.run(duckdb.connect(), job)
    message = str(err.value)
    assert message.startswith("input.events: age and position must be whole numbers: column 'age' has type VARCHAR; "
                              "2 value(s) are not whole numbers: ")
    assert "'thirty-four' (id 1)" in message and "'3 3' (id 4)" in message
    assert "column 'position' has type VARCHAR; 1 value(s) are not whole numbers: 'first' (id 2)" in message


def test_nulls_in_several_event_columns_are_reported_at_once(tmp_path):
    job = _job_with_events(tmp_path, {6: "3,1,,38", 12: "5,1,401.1,", 13: "5,2,401.9,"})
    with pytest.raises(InputError) as err:
        anon_duck.run(duckdb.connect(), job)
    assert str(err.value).startswith("input.events: NULL values in 2 column(s): column 'code' has 1 NULL "
                                     "(rows with id 3); column 'age' has 2 NULL (rows with id 5, 5)")
