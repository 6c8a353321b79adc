"""An OMOP CDM as it is exported (#30 items 1, 2, 6): upper-case names, a trimmed vocabulary,
concept 0, a code without concept_ancestor rows (fixtures/omop_export/, made by
fixtures/make_omop_export.py); names found as the engine finds them in every input role; and
CSV files read with the job's ``csv`` options."""
from __future__ import annotations

import csv
import shutil
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck import cli
from anon_duck.api import backend_for
from anon_duck.errors import InputError, JobError
from anon_duck.inputs import prepare
from anon_duck.job import job_from_dict, load_job

from conftest import FIXTURES, JOBS

EXPORT = FIXTURES / "omop_export"
METHODS = ["fulldomain", "lkc", "disassociation", "longitudinal", "artuc"]
PARAMS = {"disassociation": {"k": 3, "m": 2}, "longitudinal": {"k": 3}, "fulldomain": {"k": 3},
          "lkc": {"L": 2, "K": 3, "C": 1},
          "artuc": {"k": 3, "m": 2, "delta": 0.6, "epsilon": 1000000, "constraint_grid": {"code_level": 1}}}


def table(name: str) -> list[dict[str, str]]:
    """A table of the export, its columns named as OMOP names them (lower case)."""
    with open(EXPORT / f"{name.upper()}.csv", newline="", encoding="utf-8") as f:
        return [{k.lower(): v for k, v in r.items()} for r in csv.DictReader(f)]


def export_job(method: str, release: str | None = None, **omop):
    omop = {"path": str(EXPORT), **({"class": "ethnicity"} if method == "lkc" else {}), **omop}
    return job_from_dict({"input": {"omop": omop}, "method": {"name": method, **PARAMS[method]},
                          "release": {"name": release or f"export_{method}"}})


def schema_job(method: str, schema: str, release: str):
    """The job of :func:`export_job` on the export's tables in a schema (with the folder's QIs:
    zip3 is a default only when a folder shows a location file)."""
    spec = export_job(method).dataset.omop
    omop = {"schema": schema, **({"qis": list(spec.qis)} if "person" in spec.roles else {}),
            **({"class": "ethnicity"} if method == "lkc" else {})}
    return job_from_dict({"input": {"omop": omop}, "method": {"name": method, **PARAMS[method]},
                          "release": {"name": release}})


# --------------------------------------------------------------------------------------
# what the fixture is, by brute force from its CSVs
# --------------------------------------------------------------------------------------
CONCEPTS = {r["concept_id"] for r in table("concept")}
CONDITIONS = table("condition_occurrence")
PERSONS = table("person")
ANCESTOR = table("concept_ancestor")
USED = {r["condition_concept_id"] for r in CONDITIONS}


def ancestors_of_used() -> set[str]:
    return {r["ancestor_concept_id"] for r in ANCESTOR if r["descendant_concept_id"] in USED}


def absent(ids: set[str]) -> list[str]:
    return sorted((i for i in ids if i not in CONCEPTS and i != "0"), key=int)


def test_the_fixture_is_what_it_claims():
    header = (EXPORT / "PERSON.csv").read_text().splitlines()[0]
    assert header == header.upper() and "PERSON_ID" in header
    assert sorted(p.name for p in EXPORT.iterdir()) == ["CONCEPT.csv", "CONCEPT_ANCESTOR.csv",
                                                        "CONDITION_OCCURRENCE.csv", "LOCATION.csv", "PERSON.csv"]
    assert CONCEPTS == USED - {"0"}                                   # only the condition concepts in use
    assert not {r["gender_concept_id"] for r in PERSONS} & CONCEPTS   # no gender concept
    assert "0" in USED and "0" in {r["gender_concept_id"] for r in PERSONS}
    assert absent(ancestors_of_used())                                # ancestors the vocabulary lacks
    parents = defaultdict(set)
    for r in ANCESTOR:
        if r["min_levels_of_separation"] == "1":
            parents[r["descendant_concept_id"]].add(r["ancestor_concept_id"])
    assert sum(len(p) > 1 for c, p in parents.items() if c in USED) >= 2        # a polyhierarchy in use
    assert [c for c in USED if c != "0" and c not in {r["descendant_concept_id"] for r in ANCESTOR}] == ["4000020"]


# --------------------------------------------------------------------------------------
# every method from [input.omop] path = alone, and from a schema
# --------------------------------------------------------------------------------------
def expected_warnings(method: str) -> list[str]:
    ids: set[str] = set()
    if method in ("fulldomain", "lkc", "artuc"):
        columns = ["gender_concept_id", "race_concept_id", "ethnicity_concept_id"]
        ids |= {p[c] for p in PERSONS for c in columns}
    codes = method in ("disassociation", "longitudinal", "artuc")
    if codes:
        ids |= USED | ancestors_of_used()
    missing = absent(ids)
    out = [f"input.omop: {len(missing)} concept id(s) are not in table concept (e.g. {', '.join(missing[:3])})"]
    if codes:
        out.append("input.omop: 1 concept(s) used as codes have no row in concept_ancestor (e.g. 4000020)")
    return out


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_on_the_export_from_its_folder_alone(method, con):
    job = export_job(method)
    result = anon_duck.run(con, job)
    assert result.verified and all(c.passed for c in anon_duck.verify(con, job))
    assert [w.partition("):")[0] + ")" for w in result.warnings] == expected_warnings(method)


def _load_schema(con: duckdb.DuckDBPyConnection) -> None:
    """The export's tables in a DuckDB schema, tables and columns in upper case."""
    con.execute('CREATE SCHEMA "CDM"')
    for path in sorted(EXPORT.glob("*.csv")):
        con.execute(f'CREATE TABLE "CDM"."{path.stem}" AS SELECT * FROM read_csv(?, header = true, '
                    "types = {'LOCATION_ID': 'BIGINT', 'ZIP': 'VARCHAR'})" if path.stem == "LOCATION" else
                    f'CREATE TABLE "CDM"."{path.stem}" AS SELECT * FROM read_csv(?, header = true)', [str(path)])


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_on_the_export_from_an_upper_case_schema(method, con):
    _load_schema(con)
    assert con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'PERSON' "
                       "ORDER BY ordinal_position LIMIT 1").fetchall() == [("PERSON_ID",)]
    from_folder = anon_duck.run(duckdb.connect(), export_job(method))
    job = schema_job(method, "cdm", f"schema_{method}")
    result = anon_duck.run(con, job)
    assert result.verified and all(c.passed for c in anon_duck.verify(con, job))
    assert result.facts == from_folder.facts and result.warnings == from_folder.warnings


@pytest.mark.parametrize("method, first", [
    ("fulldomain", r"3 concept id\(s\) in person.gender_concept_id are not in table concept \(0, 8507, 8532\)"),
    ("disassociation", r"1 concept id\(s\) in condition_occurrence.condition_concept_id are not in table concept \(0\)"),
])
def test_strict_refuses_the_export_naming_the_first_problem(method, first):
    with duckdb.connect() as c, pytest.raises(InputError, match=first):
        anon_duck.run(c, export_job(method, strict=True))
    with pytest.raises(JobError, match="strict = 'yes': must be true or false"):
        export_job(method, strict="yes")


# --------------------------------------------------------------------------------------
# what is derived from the trimmed vocabulary
# --------------------------------------------------------------------------------------
def derived(job) -> tuple[dict[str, list[tuple]], object]:
    con = duckdb.connect()
    inputs = prepare(backend_for(con, job), job)
    out = {}
    for name in ("person", "codes", "h_code"):
        exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp' AND table_name = ?",
                             [f"_ad_omop_{name}"]).fetchall()[0][0]
        if exists:
            out[name] = con.execute(f"SELECT * FROM temp.main._ad_omop_{name}").fetchall()
    return out, inputs


def test_ids_without_concept_rows_are_the_values_and_labels():
    got, _ = derived(export_job("artuc"))
    assert sorted((p, g, r, e) for p, _, g, r, e, _ in got["person"]) == sorted(
        (p["person_id"], p["gender_concept_id"], p["race_concept_id"], p["ethnicity_concept_id"]) for p in PERSONS)
    edges = {n: (parent, label) for n, parent, label in got["h_code"]}
    name = {r["concept_id"]: r["concept_name"] for r in table("concept")}
    for node, (_, label) in edges.items():
        concept = node.rstrip("+")
        if node == "*":
            continue
        expected = {"0": "No matching concept"}.get(concept, name.get(concept, concept))
        assert label == (expected + " (and descendants)" if node.endswith("+") else expected)
    assert edges["0"] == ("*", "No matching concept")                  # concept 0: its own top concept
    assert edges["4000020"] == ("*", "Rare syndrome of unknown place")  # no ancestor row: a top concept
    assert edges["4000001"] == ("*", "4000001")                        # an ancestor the vocabulary lacks
    assert sorted(got["codes"]) == sorted({(c["person_id"], c["condition_concept_id"]) for c in CONDITIONS})


def test_concept_zero_is_never_placed_under_a_real_concept(tmp_path):
    """Even when concept_ancestor (wrongly) gives concept 0 a parent and a child, and rare codes
    roll up: 0 stays a top concept, and no real concept rolls up into it."""
    folder = tmp_path / "export"
    shutil.copytree(EXPORT, folder)
    with open(folder / "CONCEPT_ANCESTOR.csv", "a", encoding="utf-8") as f:
        f.write("4000001,0,1,1\n0,4000015,1,1\n")
    got, _ = derived(export_job("disassociation", path=str(folder), min_code_frequency=100))
    parent = {n: p for n, p, _ in got["h_code"]}
    assert parent["0"] == "*" and "0+" not in parent
    assert {c for p, c in got["codes"] if p in {r["person_id"] for r in CONDITIONS if r["condition_concept_id"] == "0"}
            } >= {"0"}
    zero_holders = {r["person_id"] for r in CONDITIONS if r["condition_concept_id"] == "0"}
    assert {p for p, c in got["codes"] if c == "0"} == zero_holders


def test_inspect_counts_what_each_multiple_parent_rule_decided():
    """Brute force: among the tree's concepts with several direct parents, the kept parent is
    deeper than every other ('depth') or ties with another and is the smallest id."""
    _, inputs = derived(export_job("disassociation"))
    depth: dict[str, int] = defaultdict(int)
    parents = defaultdict(list)
    for r in ANCESTOR:
        depth[r["descendant_concept_id"]] = max(depth[r["descendant_concept_id"]], int(r["max_levels_of_separation"]))
        if r["min_levels_of_separation"] == "1":
            parents[r["descendant_concept_id"]].append(r["ancestor_concept_id"])
    tree, todo = set(), set(USED)
    while todo:
        c = todo.pop()
        tree.add(c)
        if parents[c]:
            todo.add(min(parents[c], key=lambda p: (-depth[p], int(p))))
    decided = {"depth": 0, "smallest_concept_id": 0}
    for c in tree:
        if len(parents[c]) > 1:
            best = sorted(depth[p] for p in parents[c])[::-1]
            decided["depth" if best[0] > best[1] else "smallest_concept_id"] += 1
    assert inputs.omop["several_parents_decided_by"] == decided == {"depth": 1, "smallest_concept_id": 3}
    assert inputs.omop["concepts_absent_from_concept"] == 5 and inputs.omop["codes_without_concept_ancestor_rows"] == 1


def test_run_and_inspect_print_one_warning_line_each(tmp_path, capsys):
    job = tmp_path / "export.toml"
    job.write_text(f'[input.omop]\npath = "{EXPORT}"\n[method]\nname = "disassociation"\nk = 3\nm = 2\n'
                   '[release]\nname = "export_cli"\n')
    db = str(tmp_path / "out.duckdb")
    assert cli.main(["run", str(job), "--db", db]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"anon-duck: warning: {w}" for w in anon_duck.run(duckdb.connect(), load_job(job)).warnings]
    assert len(err) == 2 and "5 concept id(s) are not in table concept (e.g. 4000001, 4000002, 4000003)" in err[0]
    assert cli.main(["inspect", str(job), "--db", db]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == err
    assert "omop.several_parents_decided_by.depth: 1\nomop.several_parents_decided_by.smallest_concept_id: 3" in out.out


# --------------------------------------------------------------------------------------
# names as the engine matches them, in the generic roles
# --------------------------------------------------------------------------------------
def _upper_header(source: Path, target: Path, delimiter: str = ",", newline: str = "\n") -> Path:
    lines = source.read_text().splitlines()
    target.write_text(newline.join([lines[0].upper()] + lines[1:]).replace(",", delimiter) + newline)
    return target


def _upper_copy(source: Path, target: Path) -> Path:
    """A CSV or Parquet file with its column names in upper case."""
    if source.suffix != ".parquet":
        return _upper_header(source, target)
    with duckdb.connect() as c:
        names = [r[0] for r in c.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(source)]).fetchall()]
        select = ", ".join(f'"{n}" AS "{n.upper()}"' for n in names)
        c.execute(f"COPY (SELECT {select} FROM read_parquet('{source}')) TO '{target}' (FORMAT parquet)")
    return target


def _release_rows(con, result) -> dict[str, list[tuple]]:
    return {t.removeprefix(result.release): con.execute(f'SELECT * FROM "{t}"').fetchall() for t in result.tables}


@pytest.mark.parametrize("job_name, role, files", [
    ("toy_fulldomain.toml", "input", ["../toy/patients.csv"]),
    ("disassociation_toy.toml", "input.codes", None),
    ("longitudinal_toy.toml", "input.events", None),
])
def test_every_role_finds_its_columns_whatever_their_case(job_name, role, files, tmp_path):
    """The same file with an upper-case header publishes the same release, under the job's names."""
    import tomllib
    doc = tomllib.loads((JOBS / job_name).read_text())
    section = doc["input"] if role == "input" else doc["input"][role.split(".")[1]]
    source = (JOBS / section["path"]).resolve()
    section["path"] = str(_upper_copy(source, tmp_path / source.name))
    for h in doc.get("hierarchy", {}).values():
        if "path" in h:
            h["path"] = str((JOBS / h["path"]).resolve())
    original, upper = duckdb.connect(), duckdb.connect()
    expected = anon_duck.run(original, load_job(JOBS / job_name))
    got = anon_duck.run(upper, job_from_dict(doc, base_dir=JOBS))
    assert got.verified and _release_rows(upper, got) == _release_rows(original, expected)


def test_two_spellings_of_one_name_are_an_error_naming_both(tmp_path, con, monkeypatch):
    """DuckDB itself renames the second spelling (``AGE_1``); Spark keeps both in a DataFrame
    made with both, which the fake columns below stand for. Files of a folder can hold both."""
    from anon_duck.backend.duckdb import DuckDBBackend
    con.execute("CREATE TABLE people AS SELECT 1 AS pid, 30 AS age")
    monkeypatch.setattr(DuckDBBackend, "columns", lambda self, stage, relation: {
        "pid": "INTEGER", "age": "INTEGER", "AGE": "INTEGER"})
    job = job_from_dict({"input": {"table": "people", "id": "pid", "qi": [{"column": "Age", "kind": "numeric"}]},
                         "method": {"name": "fulldomain", "k": 1}, "release": {"name": "r"}})
    with pytest.raises(InputError, match=r"input.qi\[0\].column = 'Age': table 'people' has 2 columns .* 'age' and 'AGE'"):
        prepare(backend_for(con, job), job)
    monkeypatch.undo()
    folder = tmp_path / "export"
    shutil.copytree(EXPORT, folder)
    shutil.copy(folder / "PERSON.csv", folder / "person.csv")
    with pytest.raises(InputError, match=r"table 'person' = 'person.csv': .* 'PERSON.csv' and 'person.csv'"):
        anon_duck.run(con, export_job("fulldomain", path=str(folder)))


# --------------------------------------------------------------------------------------
# csv = {...}
# --------------------------------------------------------------------------------------
def test_a_semicolon_crlf_csv_runs_from_the_csv_keys(tmp_path):
    """toy_fulldomain's patients written with ';' and CRLF line ends (and an upper-case header):
    with csv = {delimiter = ";"} the release is the comma file's, byte for byte."""
    import tomllib
    doc = tomllib.loads((JOBS / "toy_fulldomain.toml").read_text())
    semi = _upper_header((JOBS / doc["input"]["path"]).resolve(), tmp_path / "patients.csv", ";", "\r\n")
    assert b";" in semi.read_bytes() and b"\r\n" in semi.read_bytes()
    doc["input"]["path"] = str(semi)
    doc["input"]["csv"] = {"delimiter": ";", "quote": '"', "header": True}
    for h in doc["hierarchy"].values():
        if "path" in h:
            h["path"] = str((JOBS / h["path"]).resolve())
    original, semi_con = duckdb.connect(), duckdb.connect()
    expected = anon_duck.run(original, load_job(JOBS / "toy_fulldomain.toml"))
    got = anon_duck.run(semi_con, job_from_dict(doc, base_dir=JOBS))
    assert _release_rows(semi_con, got) == _release_rows(original, expected)
    doc["input"]["csv"] = {"delimiter": ","}            # the key reaches the reader: a wrong one fails
    with duckdb.connect() as c, pytest.raises(InputError, match=r"input.id = 'pid': no such column .* \(columns: PID;"):
        anon_duck.run(c, job_from_dict(doc, base_dir=JOBS))


@pytest.mark.parametrize("csv_keys, message", [
    ({"delimter": ";"}, r"unknown key 'delimter' in input.csv; allowed: delimiter, quote"),
    ({"delimiter": ""}, r"input.csv.delimiter = '': one to four characters"),
    ({"header": "yes"}, r"input.csv.header = 'yes': must be true or false"),
    ({"quote": "''"}, r"input.csv.quote = \"''\": one character"),
    ({"encoding": "ebcdic"}, r"input.csv.encoding = 'ebcdic': one of utf-8, utf-16, latin-1"),
    ("semicolon", r"input.csv: expected a table of CSV options"),
])
def test_csv_keys_are_checked_by_name(csv_keys, message):
    with pytest.raises(JobError, match=message):
        job_from_dict({"input": {"path": "x.csv", "id": "pid", "csv": csv_keys}, "method": {"name": "fulldomain"},
                       "release": {"name": "r"}})


def test_csv_keys_belong_to_files_and_every_role_takes_them():
    with pytest.raises(JobError, match=r"input.csv: says how a CSV file is written; input.table names a table"):
        job_from_dict({"input": {"table": "t", "id": "pid", "csv": {}}, "method": {"name": "fulldomain"},
                       "release": {"name": "r"}})
    with pytest.raises(JobError, match=r"input.omop.csv: says how the CSV files of a folder"):
        job_from_dict({"input": {"omop": {"schema": "cdm", "csv": {}}}, "method": {"name": "fulldomain"},
                       "release": {"name": "r"}})
    job = job_from_dict({"input": {"codes": {"path": "c.csv", "id": "pid", "code": "code", "csv": {"delimiter": "|"}},
                                   "events": {"path": "e.csv", "id": "pid", "code": "c", "age": "a",
                                              "csv": {"header": False}}},
                         "method": {"name": "disassociation"}, "release": {"name": "r"}})
    assert job.dataset.codes.source.csv.delimiter == "|" and job.dataset.events.source.csv.header is False
    assert export_job("disassociation", csv={"null": "NULL"}).dataset.omop.csv.null == "NULL"


def test_a_file_duckdb_cannot_read_names_the_csv_keys(tmp_path, con):
    bad = tmp_path / "codes.csv"
    bad.write_text("pid,code\n" + "".join(f"{i},c{i}\n" for i in range(30000)) + "1,2,3\n")
    job = job_from_dict({"input": {"codes": {"path": str(bad), "id": "pid", "code": "code"}},
                         "method": {"name": "disassociation", "k": 2, "m": 2}, "release": {"name": "r"}})
    with pytest.raises(InputError) as err:
        anon_duck.run(con, job)
    text = str(err.value)
    assert "input.codes.csv = {delimiter" in text and "the reader guessed delimiter = ','" in text
    assert "Possible fixes" not in text and "sample_size" not in text and len(text.splitlines()) == 1


def test_an_omop_folder_of_semicolon_files_runs_from_its_csv_keys(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    for path in EXPORT.glob("*.csv"):
        (folder / path.name).write_bytes(path.read_bytes().replace(b",", b";").replace(b"\n", b"\r\n"))
    expected = anon_duck.run(duckdb.connect(), export_job("disassociation"))
    got = anon_duck.run(duckdb.connect(), export_job("disassociation", path=str(folder), csv={"delimiter": ";"}))
    assert got.verified and got.facts == expected.facts and got.warnings == expected.warnings
    with duckdb.connect() as c, pytest.raises(InputError, match=r"OMOP table 'person' .* has no column 'person_id'"):
        anon_duck.run(c, export_job("disassociation", path=str(folder), csv={"delimiter": ","}))


def test_a_case_sensitive_engine_finds_only_the_exact_spelling():
    """Spark with spark.sql.caseSensitive=true tells PID from pid: so do the input checks."""
    from anon_duck.names import resolve
    assert resolve(["PID", "age"], "pid", case_sensitive=False, key="input.id", where="t") == "PID"
    with pytest.raises(InputError, match=r"input.id = 'pid': no such column in t \(columns: PID, age\)"):
        resolve(["PID", "age"], "pid", case_sensitive=True, key="input.id", where="t")
    assert resolve(["pid", "PID"], "PID", case_sensitive=True, key="input.id", where="t") == "PID"
    with pytest.raises(InputError, match=r"'pid' and 'PID', which differ only in case"):
        resolve(["pid", "PID"], "PID", case_sensitive=False, key="input.id", where="t")
