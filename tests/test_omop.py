"""[input.omop] (#20 items 1-2): job parsing, the derivation against brute-force computations from
the fixture CSVs, the DAG -> tree rule on the hand-made polyhierarchy, every method's OMOP job,
and the bad-input errors."""
from __future__ import annotations

import csv
import hashlib
import re
import shutil
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest

import anon_duck
from anon_duck.api import backend_for
from anon_duck.errors import InputError, JobError
from anon_duck.inputs import prepare
from anon_duck.job import job_from_dict, load_job, parse_job
from anon_duck.sqlrender import recording, render

from conftest import FIXTURES, JOBS, REPO

OMOP, DAG = FIXTURES / "omop", FIXTURES / "omop_dag"
METHODS = ["artuc", "disassociation", "longitudinal", "fulldomain", "lkc"]


def rows(folder: Path, table: str) -> list[dict[str, str]]:
    with open(folder / f"{table}.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def omop_job(method: str = "disassociation", base: Path = FIXTURES / "jobs", **omop):
    params = {"disassociation": {"k": 2, "m": 2}, "longitudinal": {"k": 2}, "fulldomain": {"k": 2}}.get(method, {})
    return job_from_dict({"input": {"omop": {"path": "../omop_dag", **omop}}, "method": {"name": method, **params},
                          "release": {"name": "r"}}, base_dir=base)


def derived(job, con=None) -> dict[str, list[tuple]]:
    """Prepare the job's inputs and return the derived scratch tables' rows."""
    con = con or duckdb.connect()
    prepare(backend_for(con, job), job)
    out = {}
    for name in ("person", "codes", "events", "h_code"):
        exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'temp' AND table_name = ?",
                             [f"_ad_omop_{name}"]).fetchall()[0][0]
        if exists:
            out[name] = con.execute(f"SELECT * FROM temp.main._ad_omop_{name}").fetchall()
    return out


def tree_parent(edges: list[tuple]) -> dict[str, str | None]:
    return {n: p for n, p, _ in edges}


# --------------------------------------------------------------------------------------
# job parsing
# --------------------------------------------------------------------------------------
def test_defaults_follow_the_method_and_the_folder():
    artuc = load_job(JOBS / "omop_artuc.toml")
    ds = artuc.dataset
    assert [q.column for q in ds.qis] == ["year_of_birth", "gender", "race", "ethnicity", "zip3"]   # location.csv
    assert [q.kind for q in ds.qis] == ["numeric"] + ["categorical"] * 4
    assert ds.codes is not None and ds.codes.hierarchy == "code" and ds.events is None and ds.id == "person_id"
    assert artuc.hierarchies["year_of_birth"].type == "interval" and artuc.hierarchies["code"].type == "edges"
    dis = load_job(JOBS / "omop_disassociation.toml").dataset
    assert dis.source is None and dis.qis == () and dis.codes is not None and dis.events is None
    lon = load_job(JOBS / "omop_longitudinal.toml").dataset
    assert lon.codes is None and lon.events is not None and lon.events.age_hierarchy == "event_age"
    lkc = load_job(JOBS / "omop_lkc.toml").dataset
    assert lkc.class_ == "ethnicity" and "ethnicity" not in [q.column for q in lkc.qis]
    # no location table in the DAG folder: no zip3; a reference date makes age the QI
    full = omop_job("fulldomain", reference_date="2020-06-30").dataset
    assert [q.column for q in full.qis] == ["age", "gender", "race", "ethnicity"]


def test_keys_override_defaults_and_job_hierarchies_replace_derived_ones():
    job = job_from_dict({"input": {"omop": {"path": "../omop_dag", "qis": ["gender", "year_of_birth"],
                                            "code": "condition_source_value", "roles": ["person", "codes"]}},
                         "hierarchy": {"year_of_birth": {"type": "interval", "width": 10}},
                         "method": {"name": "fulldomain", "k": 2}, "release": {"name": "r"}}, base_dir=JOBS)
    assert [q.column for q in job.dataset.qis] == ["gender", "year_of_birth"]
    assert job.dataset.codes is not None and job.dataset.omop.code == "condition_source_value"
    assert job.hierarchies["year_of_birth"].width == 10 and not job.hierarchies["year_of_birth"].dyadic


@pytest.mark.parametrize("omop, extra, message", [
    ({"path": "x", "schema": "cdm"}, {}, "exactly one of path"),
    ({}, {}, "exactly one of path"),
    ({"path": "x", "colour": 1}, {}, "unknown key 'colour' in \\[input.omop\\]"),
    ({"path": "x", "code": "condition_name"}, {}, "input.omop.code = 'condition_name'"),
    ({"path": "x", "qis": ["age"]}, {}, "set input.omop.reference_date"),
    ({"path": "x", "qis": ["shoe_size"]}, {}, "'shoe_size' is not one of"),
    ({"path": "x", "qis": ["gender"], "class": "gender"}, {}, "a column has exactly one role"),
    ({"path": "x", "min_code_frequency": 0}, {}, "min_code_frequency = 0"),
    ({"path": "x", "reference_date": "June"}, {}, "reference_date = 'June'"),
    ({"path": " "}, {}, "input.omop.path = . .: expected a non-empty string"),
    ({"schema": "a.b.c"}, {}, "a schema or database.schema"),
    ({"path": "x"}, {"id": "pid"}, "unknown key 'id' in \\[input\\]"),
])
def test_bad_keys_are_refused_by_name(omop, extra, message):
    with pytest.raises(JobError, match=message):
        job_from_dict({"input": {"omop": omop, **extra}, "method": {"name": "fulldomain", "k": 2},
                       "release": {"name": "r"}})


def test_a_plugin_method_must_name_its_roles_and_a_codes_only_method_takes_no_qis():
    with pytest.raises(JobError, match="roles: method 'mine' is not a built-in method"):
        job_from_dict({"input": {"omop": {"path": "x"}}, "method": {"name": "mine"}, "release": {"name": "r"}})
    with pytest.raises(JobError, match="reads no person table"):
        job_from_dict({"input": {"omop": {"path": "x", "qis": ["gender"]}}, "method": {"name": "disassociation"},
                       "release": {"name": "r"}})


# --------------------------------------------------------------------------------------
# derivation on the MIMIC fixture, against the CSVs
# --------------------------------------------------------------------------------------
def test_persons_codes_and_events_equal_a_brute_force_computation():
    person, concept = rows(OMOP, "person"), {r["concept_id"]: r for r in rows(OMOP, "concept")}
    zips = {r["location_id"]: r["zip"] for r in rows(OMOP, "location")}
    expected_persons = sorted(
        (p["person_id"], int(p["year_of_birth"]), concept[p["gender_concept_id"]]["concept_name"],
         concept[p["race_concept_id"]]["concept_name"], concept[p["ethnicity_concept_id"]]["concept_name"],
         zips[p["location_id"]][:3]) for p in person)
    got = derived(job_from_dict({"input": {"omop": {"path": str(OMOP)}}, "method": {"name": "artuc"},
                                 "release": {"name": "r"}}))
    assert sorted(got["person"]) == expected_persons and len(expected_persons) == 100
    conditions = rows(OMOP, "condition_occurrence")
    assert sorted(got["codes"]) == sorted({(c["person_id"], c["condition_concept_id"]) for c in conditions})
    # events: one per (person, code, day), ordered by date then code, age by calendar year; the
    # fixture was made from the MIMIC demo's events, which they reproduce
    birth = {p["person_id"]: int(p["year_of_birth"]) for p in person}
    by_person = defaultdict(set)
    for c in conditions:
        by_person[c["person_id"]].add((c["condition_start_date"], c["condition_concept_id"]))
    expected = sorted((pid, i, code, int(day[:4]) - birth[pid])
                      for pid, evs in by_person.items() for i, (day, code) in enumerate(sorted(evs), 1))
    events = sorted(derived(load_job(JOBS / "omop_longitudinal.toml"))["events"])
    assert events == expected and len(events) == 2022
    icd = {r["concept_id"]: r["concept_code"] for r in concept.values()}
    mimic = duckdb.sql(f"SELECT CAST(subject_id AS VARCHAR), position, code, age "
                       f"FROM '{FIXTURES / 'mimic_demo/events.parquet'}'").fetchall()
    assert sorted((p, i, icd[c], a) for p, i, c, a in events) == sorted(mimic)


def test_the_icd_tree_is_the_shipped_one_above_the_used_codes():
    from anon_duck.hierarchy import read_builtin_rows
    icd = {r["node"]: r for r in read_builtin_rows("icd9cm")}
    concept = {r["concept_id"]: r for r in rows(OMOP, "concept")}
    edges = derived(load_job(JOBS / "omop_disassociation.toml"))["h_code"]
    parent = tree_parent(edges)
    labels = {n: lab for n, _, lab in edges}
    for node, up in parent.items():
        if node == "*":
            continue
        code = concept[node]["concept_code"]
        assert labels[node] == icd[code]["label"]
        assert (up == "*") == (icd[code]["level_name"] == "chapter")
        if up != "*":
            assert concept[up]["concept_code"] == icd[code]["parent"]


# --------------------------------------------------------------------------------------
# the DAG -> tree rule on the polyhierarchy
# --------------------------------------------------------------------------------------
def expected_parents(folder: Path) -> dict[str, str | None]:
    """The rule, computed independently: among the direct parents (min_levels_of_separation = 1)
    the one with the longest path down from a top concept; ties: the smallest concept id."""
    ancestor = rows(folder, "concept_ancestor")
    depth: dict[int, int] = defaultdict(int)
    for r in ancestor:
        depth[int(r["descendant_concept_id"])] = max(depth[int(r["descendant_concept_id"])],
                                                     int(r["max_levels_of_separation"]))
    parents = defaultdict(list)
    for r in ancestor:
        if r["min_levels_of_separation"] == "1":
            parents[int(r["descendant_concept_id"])].append(int(r["ancestor_concept_id"]))
    concepts = {int(r["descendant_concept_id"]) for r in ancestor}
    return {str(c): str(min(parents[c], key=lambda p: (-depth[p], p))) if parents[c] else None for c in concepts}


def test_each_concept_keeps_the_parent_the_rule_says():
    edges = derived(omop_job())["h_code"]
    inner = {n[:-1] for n, _, _ in edges if n.endswith("+")}
    tree = {n.rstrip("+"): (p.rstrip("+") if p != "*" else None) for n, p, _ in edges if n != "*" and n not in inner}
    rule = expected_parents(DAG)
    assert tree == {c: rule[c] for c in tree} and len(tree) == 17
    # the polyhierarchy's cases: deeper parent wins; equal depth, smallest id wins
    assert tree["4000007"] == "4000006"        # Viral pneumonia: Pneumonia (depth 3) over Viral infection (2)
    assert tree["4000009"] == "4000005"        # Influenza: URI and Viral infection both depth 2
    assert tree["4000012"] == "4000011"        # Hypertensive heart disease: both parents depth 1
    # the cost: Viral pneumonia no longer generalizes to Viral infection
    parent = tree_parent(edges)
    chain, node = [], "4000007"
    while node is not None:
        chain.append(node)
        node = parent[node]
    assert "4000005+" not in chain and "4000005" not in chain and chain[-1] == "*"


def test_a_used_code_with_used_descendants_gets_a_leaf_of_its_own():
    edges = derived(omop_job())["h_code"]
    parent, labels = tree_parent(edges), {n: lab for n, _, lab in edges}
    children = defaultdict(list)
    for n, p in parent.items():
        children[p].append(n)
    used = {r["condition_concept_id"] for r in rows(DAG, "condition_occurrence")}
    leaves = {n for n in parent if not children[n]}
    assert used <= leaves                                     # every code is a leaf
    assert leaves - used == set()                             # and only codes are (the tree is pruned)
    assert parent["4000006"] == "4000006+" and parent["4000007"] == "4000006+" and parent["4000010"] == "4000006+"
    assert labels["4000006+"] == "Pneumonia (and descendants)" and parent["4000006+"] == "4000003+"
    assert {n for n in parent if n.endswith("+")} == {"4000003+", "4000005+", "4000006+", "4000014+"}


def test_a_released_node_says_and_descendants_once(con):
    """A longitudinal release generalizes codes to nodes of this tree; a node standing for a
    used code and its coded descendants ('<code>+') is labelled so by the tree already, and the
    release does not say it twice. Every other node above the leaves gets the words once."""
    result = anon_duck.run(con, omop_job("longitudinal"))
    assert result.verified
    labels = dict(con.execute("SELECT DISTINCT code, code_label FROM r_events").fetchall())
    edges = derived(omop_job("longitudinal"))["h_code"]
    inner = {parent for _, parent, _ in edges}
    assert any(code.endswith("+") for code in labels)       # the case in question is released
    assert any(code in inner and not code.endswith("+") for code in labels)
    for code, label in labels.items():
        assert label.count("(and descendants)") == (code in inner), (code, label)


def test_rare_codes_roll_up_to_their_parents():
    conditions = rows(DAG, "condition_occurrence")
    rule = expected_parents(DAG)
    persons = defaultdict(set)
    for c in conditions:
        persons[c["condition_concept_id"]].add(c["person_id"])
    mapped = {c: c for c in persons}
    while True:     # the documented rule, by hand
        held = defaultdict(set)
        for c, m in mapped.items():
            held[m] |= persons[c]
        rare = {m for m, ps in held.items() if len(ps) < 5 and rule[m] is not None}
        if not rare:
            break
        mapped = {c: rule[m] if m in rare else m for c, m in mapped.items()}
    expected = sorted({(c["person_id"], mapped[c["condition_concept_id"]]) for c in conditions})
    got = derived(omop_job(min_code_frequency=5))
    assert sorted(got["codes"]) == expected
    assert "4000003" not in {c for _, c in got["codes"]} and "4000002" in {c for _, c in got["codes"]}


def test_vocabulary_filters_and_source_values():
    codes = {c for _, c in derived(omop_job())["codes"]}
    assert "4000017" in codes                                  # an Observation-domain concept
    only = derived(omop_job(domain_id="Condition"))
    assert "4000017" not in {c for _, c in only["codes"]} and "4000016" not in tree_parent(only["h_code"])
    with pytest.raises(InputError, match="no condition_occurrence row is left after the domain_id/vocabulary_id"):
        derived(omop_job(vocabulary_id=["ICD10CM"]))
    values = derived(omop_job(code="condition_source_value"))
    parent = tree_parent(values["h_code"])
    assert {c for _, c in values["codes"]} == {f"S{c}" for c in codes}
    assert parent["S4000007"] == "4000007" and parent["4000007"] == "4000006"


# --------------------------------------------------------------------------------------
# every method's job, the DAG, a schema, the source unchanged
# --------------------------------------------------------------------------------------
def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("method", METHODS)
def test_each_methods_omop_job_runs_and_verifies(method, con):
    before = _digests(OMOP)
    job = load_job(JOBS / f"omop_{method}.toml")
    assert set(re.findall(r"^\[([\w.]+)\]", (JOBS / f"omop_{method}.toml").read_text(), re.M)) <= {
        "input.omop", "method", "method.constraint_grid", "release"}
    result = anon_duck.run(con, job)
    assert result.verified
    checks = anon_duck.verify(con, job)            # a fresh session: the inputs are derived again
    assert checks and all(c.passed for c in checks)
    assert _digests(OMOP) == before


def test_a_schema_with_a_dag_vocabulary_runs_and_stays_unchanged(con):
    con.execute("CREATE SCHEMA cdm")
    for table in ("person", "condition_occurrence", "concept", "concept_ancestor"):
        con.execute(f"CREATE TABLE cdm.{table} AS SELECT * FROM read_csv(?, header = true)", [str(DAG / f"{table}.csv")])
    def fingerprints():
        return {t: con.execute(render("util/fingerprint.sql.j2", relation=("cdm", t))).fetchall()
                for t in ("person", "condition_occurrence", "concept", "concept_ancestor")}
    before = fingerprints()
    job = job_from_dict({"input": {"omop": {"schema": "cdm", "domain_id": "Condition"}},
                         "method": {"name": "disassociation", "k": 3, "m": 2}, "release": {"name": "dag"}})
    assert anon_duck.run(con, job).verified and all(c.passed for c in anon_duck.verify(con, job))
    assert fingerprints() == before


def test_the_docs_example_job_runs(con):
    text = (REPO / "docs" / "omop.md").read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    job = parse_job(example, base_dir=JOBS)
    assert anon_duck.run(con, job).verified and all(c.passed for c in anon_duck.verify(con, job))


def test_the_omop_templates_transpile_to_spark():
    import sqlglot
    with recording() as rec:
        for job in (load_job(JOBS / "omop_artuc.toml"), load_job(JOBS / "omop_longitudinal.toml"),
                    omop_job(code="condition_source_value", min_code_frequency=5)):
            with duckdb.connect() as c:
                prepare(backend_for(c, job), job)
    names = {name for name, _ in rec if name.startswith("omop/")}
    assert names == {f"omop/{p.name}" for p in (REPO / "sql" / "omop").glob("*.sql.j2")} and len(names) == 17
    for name, sql in rec:
        if name.startswith("omop/"):
            for stmt in sqlglot.transpile(sql, read="duckdb", write="spark"):
                sqlglot.parse(stmt, read="spark")


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.fixture
def broken(tmp_path):
    """A copy of the DAG fixture to break, and a job on it."""
    folder = tmp_path / "omop"
    shutil.copytree(DAG, folder)

    def edit(table: str, change) -> None:
        data = rows(folder, table)
        fields = list(data[0])
        data = change(data)
        with open(folder / f"{table}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fields, lineterminator="\n")
            w.writeheader()
            w.writerows(data)
    return folder, edit


def _run(folder: Path, method: str = "longitudinal", **omop):
    params = {"k": 2, "m": 2} if method == "disassociation" else {"k": 2}
    job = job_from_dict({"input": {"omop": {"path": str(folder), **omop}}, "method": {"name": method, **params},
                         "release": {"name": "r"}})
    with duckdb.connect() as c:
        anon_duck.run(c, job)


def test_a_missing_table_is_named_with_where_it_was_looked_for(broken):
    folder, _ = broken
    (folder / "concept_ancestor.csv").unlink()
    with pytest.raises(InputError, match=r"no OMOP table 'concept_ancestor' in folder .*concept_ancestor\.parquet"):
        _run(folder)
    with duckdb.connect() as c, pytest.raises(InputError, match=r"no OMOP table 'person' in schema 'cdm' \(as cdm.person\)"):
        anon_duck.run(c, job_from_dict({"input": {"omop": {"schema": "cdm"}}, "method": {"name": "fulldomain", "k": 2},
                                        "release": {"name": "r"}}))


def test_a_missing_column_is_named(broken):
    folder, edit = broken
    edit("concept_ancestor", lambda d: [{**r, "max_levels_of_separation": ""} for r in d])
    (folder / "concept_ancestor.csv").write_text((folder / "concept_ancestor.csv").read_text().replace(
        ",max_levels_of_separation", ",levels"))
    with pytest.raises(InputError, match="'concept_ancestor' .* has no column 'max_levels_of_separation'"):
        _run(folder)


def test_a_person_without_a_birth_year_is_named(broken):
    folder, edit = broken
    edit("person", lambda d: [{**r, "year_of_birth": "" if r["person_id"] in ("7", "12") else r["year_of_birth"]}
                              for r in d])
    with pytest.raises(InputError, match=r"2 person\(s\) have no year_of_birth \(person_id 12, 7\)"):
        _run(folder)
    _run(folder, "disassociation")      # code sets need no birth year


def test_concepts_missing_from_concept_are_named(broken):
    folder, edit = broken
    edit("concept", lambda d: [r for r in d if r["concept_id"] not in ("4000010", "8527")])
    with pytest.raises(InputError, match=r"1 concept id\(s\) in condition_occurrence.condition_concept_id .*\(4000010\)"):
        _run(folder, strict=True)
    with pytest.raises(InputError, match=r"person.race_concept_id are not in table concept \(8527\)"):
        _run(folder, "fulldomain", strict=True)


def test_an_ancestor_missing_from_concept_is_named(broken):
    folder, edit = broken
    edit("concept", lambda d: [r for r in d if r["concept_id"] != "4000002"])
    with pytest.raises(InputError, match=r"concept_ancestor \(ancestors of used codes\) are not in table concept \(4000002\)"):
        _run(folder, strict=True)


def test_a_concept_with_no_ancestor_row_is_refused(broken):
    folder, edit = broken
    edit("concept_ancestor", lambda d: [r for r in d if r["descendant_concept_id"] != "4000015"])
    with pytest.raises(InputError, match=r"1 concept\(s\) used as codes have no row in concept_ancestor.*\(4000015\)"):
        _run(folder, strict=True)


def test_a_condition_of_an_unknown_person_is_named(broken):
    folder, edit = broken
    edit("person", lambda d: [r for r in d if r["person_id"] != "5"])
    with pytest.raises(InputError, match=r"names 1 person_id\(s\) with no row in person \(5\)"):
        _run(folder, "disassociation")
