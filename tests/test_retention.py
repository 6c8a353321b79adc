"""``<release>_retention`` (anon_duck/retention.py) against counts made in Python: the persons
holding each code, read from the input; the persons a release shows it for exactly, read from
the release tables alone where the method makes that possible (an ArtUC token of one code is
given only to records holding that code; a disassociation record or shared chunk shows each of
its records' codes once); the four outcomes adding up to the input's count."""
from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

import pytest

import anon_duck
from anon_duck.session import session as _session
from anon_duck.errors import JobError
from anon_duck.inputs import prepare
from anon_duck.job import load_job
from conftest import REPO

COLS = ("code", "code_label", "persons_input", "persons_exact", "persons_generalized", "persons_without_count",
        "persons_dropped")


def _retention(con, name: str) -> dict[str, dict]:
    rows = con.execute(f'SELECT {", ".join(COLS)} FROM "{name}_retention"').fetchall()
    out = {r[0]: dict(zip(COLS, r)) for r in rows}
    assert len(out) == len(rows)            # one row per code
    return out


def _input_pairs(con, job) -> set[tuple[str, str]]:
    """The distinct (person, code) pairs of the job's input, as the run loads them."""
    with _session(con, job) as backend:
        inputs = prepare(backend, job)
        if inputs.codes is not None:
            return set(backend.rows("test: pairs", f"SELECT id, code FROM {'.'.join(inputs.codes)}"))
        return set(backend.rows("test: pairs", f"SELECT DISTINCT id, code FROM {'.'.join(inputs.events)}"))


def _every_code(job):
    """The job with every code named in its retention table (no merge of rare codes), so the
    counts of each code can be compared with the input's."""
    return dataclasses.replace(job, release=dataclasses.replace(job.release, retention_min_persons=1))


def _common(con, job) -> dict[str, dict]:
    result = anon_duck.run(con, _every_code(job))
    assert result.verified
    ret = _retention(con, job.release.name)
    held = Counter(code for _, code in _input_pairs(con, job))
    assert set(ret) == set(held)
    for code, r in ret.items():
        assert r["persons_input"] == held[code], code
        assert (r["persons_exact"] + r["persons_generalized"] + r["persons_without_count"] + r["persons_dropped"]
                == r["persons_input"]), code
        assert r["code_label"]
    return ret


def _check_artuc(con, job) -> None:
    ret = _common(con, job)
    name = job.release.name
    tokens = defaultdict(set)
    for cls, tok, code in con.execute(f'SELECT "class", token, code FROM "{name}_tokens"').fetchall():
        tokens[(cls, tok)].add(code)
    exact = Counter()
    covered = Counter()
    for rec, cls, tok in con.execute(
            f'SELECT rt.record, r."class", rt.token FROM "{name}_record_tokens" rt JOIN "{name}_records" r USING (record)'
    ).fetchall():
        codes = tokens[(cls, tok)]
        for c in codes:
            covered[c] += 1
        if len(codes) == 1:
            exact[next(iter(codes))] += 1
    for code, r in ret.items():
        assert r["persons_exact"] == exact[code], code
        assert r["persons_without_count"] == 0
        assert r["persons_exact"] + r["persons_generalized"] <= covered[code]
        assert (r["persons_exact"] + r["persons_generalized"] == 0) == (covered[code] == 0), code


def _check_disassociation(con, job) -> None:
    ret = _common(con, job)
    name = job.release.name
    shown = Counter()
    for (codes,) in con.execute(f'SELECT codes FROM "{name}_record_chunks" UNION ALL '
                                f'SELECT codes FROM "{name}_shared_chunks"').fetchall():
        shown.update(codes)
    terms = {c for (c,) in con.execute(f'SELECT code FROM "{name}_item_chunks"').fetchall()}
    for code, r in ret.items():
        assert r["persons_exact"] == shown[code], code
        assert r["persons_generalized"] == 0 and r["persons_dropped"] == 0      # disassociation keeps every code
        assert (r["persons_without_count"] > 0) == (code in terms), code


def _check_longitudinal(con, job) -> None:
    ret = _common(con, job)
    name = job.release.name
    # a code is exact for at most as many persons as records show it
    shown = Counter(c for c, _ in con.execute(f'SELECT DISTINCT code, release_id FROM "{name}_events"').fetchall())
    for code, r in ret.items():
        assert r["persons_exact"] <= shown[code], code
        assert r["persons_without_count"] == 0


CHECKS = {"artuc": _check_artuc, "disassociation": _check_disassociation, "longitudinal": _check_longitudinal}


@pytest.mark.parametrize("name", ["artuc_toy.toml", "disassociation_toy.toml", "longitudinal_toy.toml",
                                  "omop_artuc.toml", "omop_disassociation.toml", "omop_longitudinal.toml"])
def test_retention_toy(con, job_file, name):
    job = job_file(name)
    CHECKS[job.method](con, job)


def test_retention_toy_numbers(con, job_file):
    """The toy's numbers by hand: Figure 3 of seed 000 suppresses 494.1 of record 5 only."""
    job = job_file("artuc_toy.toml")
    ret = _common(con, job)
    assert ret["494.1"]["persons_dropped"] == 1 and ret["494.1"]["persons_exact"] == 6
    assert ret["053.20"]["persons_generalized"] == 2 and ret["493.2"]["persons_exact"] == 5


@pytest.mark.slow
@pytest.mark.parametrize("name", ["disassociation_bms.toml", "artuc_informs_uc1.toml", "longitudinal_mimic.toml"])
def test_retention_real(con, job_file, name):
    job = job_file(name)
    if job.method == "artuc":       # ε lifted as in test_artuc_real
        p = {k: v for k, v in job.params.items() if k != "epsilon_share"}
        p.update({"epsilon": 1e9, "merge_candidates": 4})
        job = dataclasses.replace(job, params=p)
    CHECKS[job.method](con, job)


@pytest.mark.parametrize("name, size", [("artuc_toy.toml", None), ("disassociation_toy.toml", None),
                                        ("disassociation_toy.toml", 6), ("omop_disassociation.toml", None),
                                        ("omop_artuc.toml", None), ("omop_longitudinal.toml", None),
                                        ("disassociation_cba_toy.toml", None)])
def test_codes_held_by_fewer_than_k_persons_publish_no_count(con, job_file, name, size):
    """By default no count below k is published: the table is the every-code one, its rows
    below k with NULL counts when the release names the code anyway (exact, in a token listing
    it, in a term chunk: the views read its label) and left out otherwise, and their counts
    summed into one row of code NULL (after a partitioned run's fragments are summed); the
    gate's min_count check passed."""
    job = job_file(name)
    job = dataclasses.replace(job, settings=dataclasses.replace(job.settings, partition_size=size))
    every = list(_common(con, job).values())
    result = anon_duck.run(con, job)
    k = job.params["k"]
    assert [c for c in result.checks if c.name == "min_count"][0].detail == {"min_count": k}
    got = _retention(con, job.release.name)
    rare = [r for r in every if r["persons_input"] < k]
    tokens_name_codes = job.method in ("artuc", "cba")      # longitudinal generalizes to ancestors

    def named(r):
        return r["persons_exact"] + r["persons_without_count"] + tokens_name_codes * r["persons_generalized"] > 0

    expected = {r["code"]: r for r in every if r["persons_input"] >= k}
    expected.update({r["code"]: {**r, **dict.fromkeys(COLS[2:])} for r in rare if named(r)})
    if rare:
        expected[None] = {"code": None, "code_label": f"{len(rare)} code(s) held by fewer than {k} persons",
                          **{c: sum(r[c] for r in rare) for c in COLS[2:]}}
    assert got == expected
    assert all(r["persons_input"] is None or r["persons_input"] >= k for code, r in got.items() if code is not None)
    assert sum(r["persons_input"] or 0 for r in got.values()) == sum(r["persons_input"] for r in every)


def test_verify_rejects_a_retention_table_naming_a_rare_code(con, job_file):
    """The check reads the published table: a rare code named again is a violation that names
    the code and its count."""
    job = job_file("disassociation_toy.toml")
    assert anon_duck.run(con, job).verified
    table = f'"{job.release.name}_retention"'
    con.execute(f"INSERT INTO {table} VALUES ('leaked', 'leaked', 2, 2, 0, 0, 0)")
    check = [c for c in anon_duck.verify(con, job) if c.name == "min_count"][0]
    assert not check.passed and check.violations == [{"code": "leaked", "persons_input": 2}]


def test_retention_min_persons_is_checked(job_file, tmp_path):
    text = (REPO / "fixtures" / "jobs" / "artuc_toy.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[release]\n", "[release]\nretention_min_persons = 0\n"))
    with pytest.raises(JobError, match=r"release.retention_min_persons = 0: must be a whole number >= 1"):
        load_job(bad)


# ------------------------------------------------------------------------------------------
# <release>_qi_retention of the demographic methods
# ------------------------------------------------------------------------------------------
def _qi_rows(con, name: str) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = defaultdict(list)
    for qi, status, level, records in con.execute(
            f'SELECT qi, status, level, records FROM "{name}_qi_retention" ORDER BY ALL').fetchall():
        out[qi].append((status, level, records))
    return out


@pytest.mark.parametrize("name", ["toy_fulldomain.toml", "adult_fulldomain.toml", "omop_fulldomain.toml"])
def test_qi_retention_fulldomain(con, job_file, name):
    """Full-domain recoding: every published record of a QI sits at the level the search chose."""
    job = job_file(name)
    result = anon_duck.run(con, job)
    n_input = con.execute(f'SELECT count(*) FROM "{job.release.name}_release"').fetchone()[0] + \
        result.facts.get("suppressed", 0)
    published = n_input - result.facts.get("suppressed", 0)
    rows = _qi_rows(con, job.release.name)
    assert set(rows) == {q.column for q in job.dataset.qis}
    for qi, level in result.facts["levels"].items():
        kept = [("exact" if level == 0 else "generalized", level, published)]
        dropped = [("suppressed", None, n_input - published)] if n_input > published else []
        assert rows[qi] == sorted(kept + dropped, key=lambda r: (r[0], r[1] is None, r[1]))


def test_qi_retention_lkc(con, job_file):
    """Local recoding: a record's value is exact when it is one of the input's own values."""
    job = job_file("lkc_toy.toml")
    assert anon_duck.run(con, job).verified
    name = job.release.name
    n = con.execute(f'SELECT count(*) FROM "{name}_release"').fetchone()[0]
    rows = _qi_rows(con, name)
    with _session(con, job) as backend:
        inputs = prepare(backend, job)
        person = ".".join(inputs.person)
        for q in job.dataset.qis:
            leaves = {str(v) for (v,) in backend.rows("test", f'SELECT DISTINCT "{q.column}" FROM {person}')}
            values = [str(v) for (v,) in con.execute(f'SELECT "{q.column}" FROM "{name}_release"').fetchall()]
            exact = sum(v in leaves for v in values)
            got = {(s, lvl): r for s, lvl, r in rows[q.column]}
            assert got.get(("exact", 0), 0) == exact, q.column
            assert sum(r for (s, _), r in got.items() if s == "generalized") == n - exact, q.column
            assert all(lvl > 0 for (s, lvl) in got if s == "generalized")


def _check_cba(con, job) -> None:
    ret = _common(con, job)
    name = job.release.name
    tokens = defaultdict(set)
    for tok, code in con.execute(f'SELECT token, code FROM "{name}_tokens"').fetchall():
        tokens[tok].add(code)
    exact, covered = Counter(), Counter()
    for (tok,) in con.execute(f'SELECT token FROM "{name}_record_tokens"').fetchall():
        covered.update(tokens[tok])
        if len(tokens[tok]) == 1:
            exact.update(tokens[tok])
    for code, r in ret.items():
        assert r["persons_exact"] == exact[code], code
        assert r["persons_exact"] + r["persons_generalized"] <= covered[code]
        assert (r["persons_exact"] + r["persons_generalized"] == 0) == (covered[code] == 0), code


CHECKS["cba"] = _check_cba


@pytest.mark.parametrize("name", ["disassociation_cba_toy.toml"])
def test_retention_toy_cba(con, job_file, name):
    CHECKS["cba"](con, job_file(name))


@pytest.mark.parametrize("name, size", [("artuc_toy.toml", 4), ("disassociation_toy.toml", 6)])
def test_retention_of_a_partitioned_run_sums_the_fragments(con, job_file, name, size):
    """Each fragment counts its own persons; the union sums them per code (ReleaseTable.sums),
    so the table still has one row per code and still matches the release."""
    import dataclasses
    job = job_file(name)
    job = dataclasses.replace(job, settings=dataclasses.replace(job.settings, partition_size=size))
    result = anon_duck.run(con, job)
    assert result.facts["partition"]["fragments"] == 2
    CHECKS[job.method](con, job)


@pytest.mark.parametrize("name", ["counterfeit_toy.toml", "counterfeit_toy_intervals.toml"])
def test_qi_retention_counterfeit(con, job_file, name):
    """Counterfeit rows stand for no input record: the real records are the release's rows less
    the catalog's counts, all at the lattice level the search chose."""
    job = job_file(name)
    result = anon_duck.run(con, job)
    n = job.release.name
    rows = con.execute(f'SELECT count(*) FROM "{n}_release"').fetchone()[0]
    fake = sum(c for (c,) in con.execute(f'SELECT "count" FROM "{n}_catalog"').fetchall())
    with _session(con, job) as backend:
        n_input = prepare(backend, job).n_rows
    assert fake == result.facts["n_counterfeits"]
    got = _qi_rows(con, n)
    for qi, level in result.facts["levels"].items():
        kept = [("exact" if level == 0 else "generalized", level, rows - fake)]
        assert got[qi] == kept + ([("suppressed", None, n_input - rows + fake)] if n_input > rows - fake else [])


@pytest.mark.parametrize("name", ["artuc_toy.toml", "lkc_grown_toy.toml"])
def test_qi_retention_of_published_values(con, job_file, name):
    """A published value is exact when it is one of the input's own values (ArtUC's numeric
    intervals: when lo = hi); the rest of a QI's published records are generalized, and the
    input records without a published row are suppressed."""
    job = job_file(name)
    assert anon_duck.run(con, job).verified
    n = job.release.name
    release = f'"{n}_release"'
    published = con.execute(f"SELECT count(*) FROM {release}").fetchone()[0]
    rows = _qi_rows(con, n)
    with _session(con, job) as backend:
        inputs = prepare(backend, job)
        person = ".".join(inputs.person)
        n_input = inputs.n_rows
        leaves = {q.column: {str(v) for (v,) in backend.rows("test", f'SELECT DISTINCT "{q.column}" FROM {person}')}
                  for q in job.dataset.qis}
    for q in job.dataset.qis:
        if job.method == "artuc" and q.kind == "numeric":
            exact = con.execute(f'SELECT count(*) FROM {release} WHERE "{q.column}__lo" = "{q.column}__hi"').fetchone()[0]
        else:
            values = [str(v) for (v,) in con.execute(f'SELECT "{q.column}" FROM {release}').fetchall()]
            exact = sum(v in leaves[q.column] for v in values)
        got = Counter()
        for status, _, records in rows[q.column]:
            got[status] += records
        assert got["exact"] == exact and got["generalized"] == published - exact, q.column
        assert got["suppressed"] == n_input - published, q.column
