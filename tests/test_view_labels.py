"""Issue #30 item 3: the code labels of disassociation's ``<release>_support`` and of ArtUC's
record view, against labels read here straight from the vocabulary (the OMOP fixture's
concept.csv; the toys have no label column, so a code reads as itself) and the published
tables, recomputed in Python."""
from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck.job import load_job

from conftest import JOBS

OMOP = Path(__file__).resolve().parents[1] / "fixtures" / "omop" / "concept.csv"


def _vocabulary(job_file: str) -> dict[str, str]:
    """code -> label as the job's vocabulary names it: concept_name for the OMOP jobs; the toy
    hierarchies carry no labels (empty: every code is its own label)."""
    if not job_file.startswith("omop_"):
        return {}
    with OMOP.open(newline="") as f:
        return {row["concept_id"]: row["concept_name"] for row in csv.DictReader(f)}


def _released(job_file: str):
    con, job = duckdb.connect(), load_job(JOBS / f"{job_file}.toml")
    anon_duck.run(con, job)
    return con, job, _vocabulary(job_file)


@pytest.mark.parametrize("job_file", ["disassociation_toy", "omop_disassociation"])
def test_support_view_labels_both_codes_from_the_vocabulary(job_file):
    con, job, vocabulary = _released(job_file)
    name = job.release.name
    rows = con.execute(f'SELECT code_a, code_b, support, code_a_label, code_b_label FROM "{name}_support"').fetchall()
    # the labels add no row: still one row per (code_a, code_b)
    assert len(rows) == len({(a, b) for a, b, *_ in rows}) > 40
    assert all(la == vocabulary.get(a, a) and lb == vocabulary.get(b, b) for a, b, _, la, lb in rows)
    if vocabulary:   # the OMOP release's codes are concept ids, each with a concept_name differing from it
        assert sum(la != a for a, _, _, la, _ in rows) == len(rows)
    # a filter on either code gives the same rows as the unfiltered view
    code = rows[0][0]
    for column in ("code_a", "code_b"):
        filtered = con.execute(f'SELECT * FROM "{name}_support" WHERE {column} = ?', [code]).fetchall()
        where = 0 if column == "code_a" else 1
        assert sorted(filtered) == sorted(r for r in rows if r[where] == code)
    assert anon_duck.verify(con, job)[-1].passed


def _expected_token_labels(con, name: str, vocabulary: dict[str, str]) -> dict[int, tuple[list, list]]:
    """Per published record, its tokens (a code, or "(a, b)" for a group) sorted, and their names:
    the code's label, or "(<label of the group's first code> and <n - 1> more)"."""
    codes: dict[tuple[int, int], list[str]] = {}
    for cls, token, code in con.execute(f'SELECT class, token, code FROM "{name}_tokens"').fetchall():
        codes.setdefault((cls, token), []).append(code)
    spelled = {}
    for key, members in codes.items():
        members.sort()
        if len(members) == 1:
            spelled[key] = (members[0], vocabulary.get(members[0], members[0]))
        else:
            first = vocabulary.get(members[0], members[0])
            spelled[key] = ("(" + ", ".join(members) + ")", f"({first} and {len(members) - 1} more)")
    class_of = dict(con.execute(f'SELECT record, class FROM "{name}_records"').fetchall())
    per_record: dict[int, list[tuple[str, str]]] = {r: [] for (r,) in con.execute(f'SELECT record FROM "{name}_release"').fetchall()}
    for record, token in con.execute(f'SELECT record, token FROM "{name}_record_tokens"').fetchall():
        per_record[record].append(spelled[(class_of[record], token)])
    return {r: ([t for t, _ in sorted(ts)], [lbl for _, lbl in sorted(ts)]) for r, ts in per_record.items()}


@pytest.mark.parametrize("job_file", ["artuc_toy", "omop_artuc"])
def test_artuc_record_view_names_each_token(job_file):
    con, job, vocabulary = _released(job_file)
    name = job.release.name
    got = {r: (t, lbl) for r, t, lbl in con.execute(f'SELECT record, tokens, token_labels FROM "{name}"').fetchall()}
    want = _expected_token_labels(con, name, vocabulary)
    assert got == want
    assert any(len(t) > 0 and t[0].startswith("(") for t, _ in want.values())        # groups are tested
    if vocabulary:   # concept names, none of them the concept id
        pairs = [(t, lbl) for ts, lbls in want.values() for t, lbl in zip(ts, lbls)]
        assert pairs and all(lbl != t and not lbl[1:].startswith("2000") for t, lbl in pairs)
    assert anon_duck.verify(con, job)[-1].passed


def test_cba_record_view_names_each_token():
    """CBA's record view: ``token_labels`` in the order of ``tokens``, a code's label or a group's
    first code's label and how many more, recomputed from ``<release>_tokens`` (token, code)."""
    con, job, vocabulary = _released("disassociation_cba_toy")
    name = job.release.name
    members: dict[str, list[str]] = {}
    for token, code in con.execute(f'SELECT token, code FROM "{name}_tokens"').fetchall():
        members.setdefault(token, []).append(code)

    def label(token: str) -> str:
        codes = sorted(members[token])
        first = vocabulary.get(codes[0], codes[0])
        return first if len(codes) == 1 else f"({first} and {len(codes) - 1} more)"
    rows = con.execute(f'SELECT tokens, token_labels FROM "{name}"').fetchall()
    assert rows and all(labels == [label(t) for t in tokens] for tokens, labels in rows)
    assert any(t.startswith("(") for tokens, _ in rows for t in tokens)              # groups are tested
    assert all(c.passed for c in anon_duck.verify(con, job))
