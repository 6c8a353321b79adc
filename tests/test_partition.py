"""Partitioned anonymization on DuckDB (``[settings] partition_size``, docs/scale.md): the
fragments cover every person once and respect the size, the union of the fragments' releases
passes the method's verifier and a brute-force check of the model written here, a size of n
or more gives the unpartitioned release, and bad settings are refused by name."""
from __future__ import annotations

import dataclasses
import itertools
import os
from collections import Counter, defaultdict

import duckdb
import numpy as np
import pytest

from anon_duck import api
from anon_duck.session import session
from anon_duck.errors import EngineError, InputError, JobError
from anon_duck.inputs import prepare
from anon_duck.job import load_job, parse_job
from anon_duck.jobspec import Settings, Source
from anon_duck.partition import fragments
from anon_duck.partition.fragments import fragment

from conftest import FIXTURES, JOBS


def _sized(job, size):
    return dataclasses.replace(job, settings=Settings(partition_size=size))


def _codes_job(con, n=90, seed=3):
    """n persons with 2-4 codes each out of 12, frequencies skewed (code c0 the most frequent),
    as a table ``visits(pid, code)``; disassociation with k = 3, m = 2."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, 13)
    pairs = [(f"p{i:03d}", f"c{c}") for i in range(n)
             for c in rng.choice(12, size=rng.integers(2, 5), replace=False, p=weights / weights.sum())]
    con.execute("CREATE TABLE visits(pid VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO visits VALUES (?, ?)", pairs)
    return parse_job("""
[input]
id = "pid"
[input.codes]
table = "visits"
id = "pid"
code = "code"
[method]
name = "disassociation"
k = 3
m = 2
max_cluster_size = 8
[release]
name = "dis"
seed = 5
""")


def _copies(con, job, copies):
    """The job's person table (and codes or events) repeated ``copies`` times with new ids
    (id * 100 + copy), as tables ``persons`` and ``children``."""
    ds = job.dataset
    child = ds.codes or ds.events
    con.execute(f"CREATE TABLE persons AS SELECT * REPLACE (CAST({ds.id} AS BIGINT) * 100 + c AS {ds.id}) "
                f"FROM read_csv('{ds.source.path}'), range({copies}) t(c)")
    con.execute(f"CREATE TABLE children AS SELECT * REPLACE (CAST({child.id} AS BIGINT) * 100 + c AS {child.id}) "
                f"FROM read_csv('{child.source.path}', all_varchar = true), range({copies}) t(c)")
    child = dataclasses.replace(child, source=Source(table="children"))
    roles = {"codes": child} if ds.codes else {"events": child}
    return dataclasses.replace(job, dataset=dataclasses.replace(ds, source=Source(table="persons"), **roles))


def _release(con, name, suffix):
    return con.execute(f'SELECT * FROM "{name}_{suffix}"').fetchall()


# ------------------------------------------------------------------------------------------
# brute-force checks of each model on the published union, independent of the verifiers
# ------------------------------------------------------------------------------------------
def _km_ok(sets, k, m):
    """Every combination of up to m items held by some set is held by k sets or more."""
    support = Counter(c for s in sets for size in range(1, m + 1) for c in itertools.combinations(sorted(s), size))
    return min(support.values(), default=k) >= k


def _check_disassociation(con, name, k, m, n):
    clusters = _release(con, name, "clusters")
    assert sum(r[1] for r in clusters) == n and min(r[1] for r in clusters) >= k
    assert len({r[0] for r in clusters}) == len(clusters)        # cluster ids unique over the union
    chunks = defaultdict(list)
    for chunk_id, _, _, codes in _release(con, name, "record_chunks"):
        chunks[chunk_id].append(codes)
    for chunk_id, _, codes in _release(con, name, "shared_chunks"):
        chunks[chunk_id].append(codes)
    assert chunks and all(_km_ok(subrecords, k, m) for subrecords in chunks.values())


def _check_artuc(con, name, k, m):
    records = dict(_release(con, name, "records"))              # record -> class
    members = Counter(records.values())
    assert min(members.values()) >= k
    held = defaultdict(set)
    for record, token in _release(con, name, "record_tokens"):
        held[record].add(token)
    by_class = defaultdict(list)
    for record, cls in records.items():
        by_class[cls].append(held[record])
    assert all(_km_ok(sets, k, m) for sets in by_class.values())
    return len(records)


def _check_longitudinal(con, name, k):
    classes = Counter(r[1] for r in _release(con, name, "patients"))
    assert min(classes.values()) >= k
    return sum(classes.values())


# ------------------------------------------------------------------------------------------
def test_disassociation_partitioned_union_is_km_anonymous(con):
    job = _sized(_codes_job(con), 30)
    result = api.run(con, job)
    assert result.verified
    assert result.facts["partition"]["fragments"] == 3
    assert result.facts["records"] == 90 and result.facts["partition"]["max_fragment"] <= 30
    _check_disassociation(con, "dis", 3, 2, 90)
    assert all(c.passed for c in api.verify(con, job))             # re-checked from the published tables
    facts = con.execute("SELECT value FROM dis_meta WHERE key = 'facts'").fetchone()[0]
    assert '"partition_size": 30' in facts


def test_artuc_partitioned_union_is_kkm_anonymous(con):
    job = _sized(_copies(con, load_job(JOBS / "artuc_toy.toml"), 5), 10)
    result = api.run(con, job)
    assert result.verified and result.facts["partition"]["fragments"] == 4
    published = _check_artuc(con, "artuc_toy", 2, 2)
    assert published + result.facts["suppressed_records_step2"] + result.facts["suppressed_records_no_box"] == 40
    assert all(c.passed for c in api.verify(con, job))


def test_the_whole_inputs_numeric_domains_are_read_once(con):
    """partition.anonymize reads each numeric QI's (min, max) once, for the box lead and every
    fragment (ArtUC's Step 1 on the whole input read them again, before)."""
    from anon_duck.sqlrender import recording
    job = _sized(_copies(con, load_job(JOBS / "artuc_toy.toml"), 5), 10)
    with recording() as rendered:
        assert api.run(con, job).verified
    numeric = [q.column for q in job.dataset.qis if q.kind == "numeric"]
    assert numeric and [name for name, _ in rendered].count("metrics/domain.sql.j2") == len(numeric)


def _artuc_grid_job(con, persons, pairs, size):
    """ArtUC (k = 3, m = 2) of ``persons`` [(pid, gender, age)] and ``pairs`` [(pid, 3-digit
    ICD-9 code)], UC grid: 50-year age bands, gender at "All", ICD-9 chapters; cut at ``size``."""
    con.execute("CREATE TABLE people(pid VARCHAR, gender VARCHAR, age INTEGER)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?)", persons)
    con.execute("CREATE TABLE dx(pid VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO dx VALUES (?, ?)", pairs)
    job = parse_job(f"""
[input]
table = "people"
id = "pid"
[[input.qi]]
column = "gender"
hierarchy = "gender"
[[input.qi]]
column = "age"
kind = "numeric"
[input.codes]
table = "dx"
id = "pid"
code = "code"
hierarchy = "icd9"
[hierarchy.gender]
type = "edges"
path = "{FIXTURES / "000" / "hier_gender.csv"}"
[hierarchy.icd9]
type = "builtin"
name = "icd9cm"
leaf_level = "category"
[method]
name = "artuc"
k = 3
m = 2
delta = 1.0
epsilon = 1000000
[method.constraint_grid]
age = {{ lo = 0, width = 50 }}
gender = ["All"]
code_level = "chapter"
[release]
name = "grid"
seed = 2
""")
    return _sized(job, size)


def _fragment_of(con, job, then=None):
    """ArtUC's fragments of ``job`` (its box lead, the ``sort`` rule) and each person's
    fragment; ``then(backend, inputs, fragments)`` runs in the same session, beside them."""
    from anon_duck.methods import get_method
    from anon_duck.partition.fragments import domains
    method = get_method(job.method)
    with session(con, job) as backend:
        inputs = prepare(backend, job)
        inputs = dataclasses.replace(inputs, domains=domains(backend, job, inputs))     # as partition.anonymize
        lead = method.partitioning.lead(method, backend, job, inputs, method.check_params(job))
        frag = fragment(backend, job, inputs, job.settings.partition_size, "sort", lambda *_: None, lead)
        if then is not None:
            then(backend, inputs, frag)
        return frag, dict(con.execute(f'SELECT id, fragment FROM temp.main."{frag.table[2]}"').fetchall())


def _old_sort_rule(persons, pairs, count):
    """The fragments the ``sort`` rule gave ArtUC before its boxes and frequency keys: persons
    by their QIs in the job's order, then their codes' sorted text, then id."""
    codes = defaultdict(list)
    for pid, code in pairs:
        codes[pid].append(code)
    ordered = sorted(persons, key=lambda p: (p[1], p[2], " ".join(sorted(codes[p[0]])), p[0]))
    return {p[0]: i * count // len(persons) for i, p in enumerate(ordered)}


def test_artuc_fragments_keep_each_constraint_box_together(con):
    """Young persons hold circulatory and endocrine codes, old ones respiratory codes; gender,
    the first QI, alternates and the UC grid leaves it at "All". Sorted by the QIs, both
    fragments held half of each box and of each code group; with the box leading, each box
    (and here each code group) is one fragment."""
    persons = [(f"p{i:02d}", ["Female", "Male"][i % 2], 20 + i if i < 10 else 50 + i) for i in range(20)]
    pairs = [(p, c) for p, _, age in persons for c in (("250", "401") if age < 50 else ("486", "493"))]
    job = _artuc_grid_job(con, persons, pairs, 10)
    frag, of = _fragment_of(con, job)
    young = {p for p, _, age in persons if age < 50}
    assert frag.sizes == [10, 10] and {of[p] for p in young} == {0} and {of[p] for p in of if p not in young} == {1}
    old = _old_sort_rule(persons, pairs, 2)
    assert {old[p] for p in young} == {0, 1}                       # the old rule split both groups


def test_an_artuc_fragment_measures_ncp_against_the_whole_inputs_domain(con):
    """A fragment of the young box alone (ages 20-29) prices an age interval against the whole
    input's 20-69, as the unpartitioned run does, not against its own 20-29."""
    from anon_duck.methods.artuc.constraints import qi_infos
    from anon_duck.partition.fragments import restrict, tag
    persons = [(f"p{i:02d}", "Female", 20 + i if i < 10 else 50 + i) for i in range(20)]
    job = _artuc_grid_job(con, persons, [(p, "250") for p, _, _ in persons], 10)
    seen = []

    def young_fragment(backend, inputs, frag):
        young = restrict(backend, inputs, tag(backend, job, inputs, frag), frag, 0)
        ages = con.execute(f'SELECT min(age), max(age) FROM temp.main."{young.person[2]}"').fetchone()
        age = next(q for q in qi_infos(backend, job, young) if q.column == "age")
        seen.append((young.fragment, dict(young.domains), ages, (age.lo, age.hi)))

    _fragment_of(con, job, young_fragment)
    assert seen == [(True, {"age": (20.0, 69.0)}, (20, 29), (20.0, 69.0))]


def test_artuc_fragments_keep_holders_of_frequent_codes_together(con):
    """One box, equal demographics: ten persons hold 250 only, ten hold 500 and a rare code of
    their own (001-005, 710-714). Sorted as text, the 500 holders with a rare code below 250
    came before the 250 holders and the others after, so the 500 group was cut in two; keyed by frequency (250 and 500 held by ten each, 250 first on the tie),
    the 250 holders form one fragment and the 500 holders the other."""
    persons = [(f"p{i:02d}", "Female", 30) for i in range(20)]
    rare = [f"{c:03d}" for c in (*range(1, 6), *range(710, 715))]
    pairs = [(f"p{i:02d}", "250") for i in range(0, 20, 2)] + \
        [(f"p{i:02d}", c) for i, r in zip(range(1, 20, 2), rare) for c in ("500", r)]
    job = _artuc_grid_job(con, persons, pairs, 10)
    frag, of = _fragment_of(con, job)
    holders_500 = {p for p, c in pairs if c == "500"}
    assert frag.sizes == [10, 10]
    assert {of[p] for p in holders_500} == {1} and {of[p] for p in of if p not in holders_500} == {0}
    old = _old_sort_rule(persons, pairs, 2)
    assert {old[p] for p in holders_500} == {0, 1}


@pytest.mark.parametrize("size", [6, 7, 10, 13])
def test_artuc_box_fragments_respect_the_size_and_the_union_verifies(con, size):
    """The box-led fragments of 40 persons in two boxes of 20: never more than the size, never
    fewer than half of it, and the union passes the verifier, a brute-force (k, k^m) check and
    keeps every published person once."""
    rng = np.random.default_rng(size)
    persons = [(f"p{i:02d}", ["Female", "Male"][int(rng.integers(2))], int(rng.integers(20, 80))) for i in range(40)]
    pairs = [(p, str(c)) for p, _, _ in persons for c in rng.choice([250, 401, 486, 493, 714], size=2, replace=False)]
    job = _artuc_grid_job(con, persons, pairs, size)
    result = api.run(con, job)
    part = result.facts["partition"]
    assert result.verified and part["fragments"] == -(-40 // size) > 1
    assert part["max_fragment"] <= size and part["min_fragment"] >= size / 2
    published = _check_artuc(con, "grid", 3, 2)
    assert published + result.facts["suppressed_records_step2"] + result.facts["suppressed_records_no_box"] == 40
    assert all(c.passed for c in api.verify(con, job))


def test_longitudinal_partitioned_union_is_k_anonymous(con):
    job = _sized(_copies(con, load_job(JOBS / "longitudinal_toy.toml"), 5), 8)
    result = api.run(con, job)
    assert result.verified and result.facts["partition"]["fragments"] == 4
    assert _check_longitudinal(con, "toy_k2", 2) == 30
    ids = [r[0] for r in _release(con, "toy_k2", "patients")]
    assert sorted(ids) == list(range(1, 31))                       # numbered from 1, as unpartitioned


def test_fragments_cover_every_person_once_within_the_size(con):
    job = _codes_job(con, n=100)
    with session(con, job) as backend:
        inputs = prepare(backend, job)
        for split, size in (("codes", 30), ("sort", 30), ("codes", 7), ("sort", 100)):
            frag = fragment(backend, job, inputs, size, split, lambda *_: None)
            rows = con.execute(f'SELECT id, fragment FROM temp.main."{frag.table[2]}"').fetchall()
            assert sorted(i for i, _ in rows) == [f"p{i:03d}" for i in range(100)]   # each person once
            sizes = Counter(f for _, f in rows)
            assert sorted(sizes) == list(range(frag.count)) and frag.count == -(-100 // size)
            assert max(sizes.values()) <= size and max(sizes.values()) - min(sizes.values()) <= 1
            assert [sizes[f] for f in range(frag.count)] == frag.sizes
        # the codes rule splits on the most frequent code first: its holders come first
        frag = fragment(backend, job, inputs, 30, "codes", lambda *_: None)
        of = dict(con.execute(f'SELECT id, fragment FROM temp.main."{frag.table[2]}"').fetchall())
        top = con.execute("SELECT code FROM visits GROUP BY code ORDER BY count(*) DESC, code LIMIT 1").fetchone()[0]
        holders = {p for (p,) in con.execute("SELECT pid FROM visits WHERE code = ?", [top]).fetchall()}
        assert top == "c0" and frag.rounds >= 2
        assert max(of[p] for p in holders) <= min(f for p, f in of.items() if p not in holders)


def test_one_fragment_is_the_unpartitioned_release():
    """The same rows and the same column types: a partitioned release's renumbered ids are
    BIGINT, as the method's own (DuckDB sums counts as HUGEINT; lib/block_rank.jinja)."""
    releases, types = [], []
    for size in (None, 90, 1000, 30):
        con = duckdb.connect()
        job = _codes_job(con)
        api.run(con, _sized(job, size) if size else job)
        tables = ("clusters", "record_chunks", "shared_chunks", "shared_scope", "item_chunks")
        releases.append([_release(con, "dis", s) for s in tables])
        types.append([con.execute(f'DESCRIBE "dis_{s}"').fetchall() for s in tables])
        con.close()
    assert releases[0] == releases[1] == releases[2] and releases[0][1]
    assert types[0] == types[1] == types[2] == types[3] and ("cluster_id", "BIGINT") in [r[:2] for r in types[3][0]]


# ------------------------------------------------------------------------------------------
# DuckDB's worker processes (anon_duck/backend/duckdb_fragments.py, fragment_pool.py)
# ------------------------------------------------------------------------------------------
@pytest.fixture
def in_processes(monkeypatch):
    """Worker processes from the first person on (PROCESSES_FROM is 20,000), recording each
    call's worker count and every scratch folder the runs made."""
    from anon_duck.backend import duckdb_fragments, fragment_pool
    calls, folders = [], []
    real_pool, real_mkdtemp = fragment_pool.run_fragments, duckdb_fragments.tempfile.mkdtemp

    def pool(task, count, workers, progress):
        calls.append(workers)
        return real_pool(task, count, workers, progress)

    def mkdtemp(**kwargs):
        folders.append(real_mkdtemp(**kwargs))
        return folders[-1]
    monkeypatch.setattr(duckdb_fragments, "PROCESSES_FROM", 0)
    monkeypatch.setattr(fragment_pool, "run_fragments", pool)
    monkeypatch.setattr(duckdb_fragments.tempfile, "mkdtemp", mkdtemp)
    return calls, folders


_MADE = {
    "disassociation": (lambda con: _sized(_codes_job(con), 30), "dis",
                       ("clusters", "record_chunks", "shared_chunks", "shared_scope", "item_chunks")),
    "artuc": (lambda con: _sized(_copies(con, load_job(JOBS / "artuc_toy.toml"), 5), 10), "artuc_toy",
              ("records", "record_tokens")),
    "longitudinal": (lambda con: _sized(_copies(con, load_job(JOBS / "longitudinal_toy.toml"), 5), 8), "toy_k2",
                     ("patients",)),
}


@pytest.mark.parametrize("method", sorted(_MADE))
def test_fragments_in_worker_processes_publish_the_one_process_release(method, in_processes, monkeypatch):
    """Two worker processes publish, byte for byte, the release the fragments give run one after
    another on the connection, and leave no scratch folder behind."""
    make, name, suffixes = _MADE[method]
    releases, facts = [], []
    for processes in (False, True):
        monkeypatch.setattr("anon_duck.backend.duckdb_fragments.PROCESSES_FROM", 0 if processes else 10 ** 9)
        con = duckdb.connect(config={"threads": 2})
        result = api.run(con, make(con))
        assert result.verified
        releases.append([sorted(_release(con, name, s)) for s in suffixes])
        facts.append(result.facts)
        con.close()
    calls, folders = in_processes
    assert calls == [2] and len(folders) == 1 and not os.path.exists(folders[0])
    assert releases[0] == releases[1] and releases[0][0]
    assert facts[0] == facts[1]


def test_a_worker_that_dies_is_an_error_quoting_its_log(con, in_processes, monkeypatch):
    """A worker process that ends without answering (killed, out of memory) stops the run with
    an EngineError naming the fragment, the exit code and the end of the worker's log; no
    partial release, no scratch folder, no worker left running."""
    job = _sized(_codes_job(con), 30)
    monkeypatch.setattr("anon_duck.backend.fragment_pool.__name__", "anon_duck_no_such_module")
    with pytest.raises(EngineError, match=r"fragment \d of 3: its worker process ended without an answer \(exit "
                                          r"code 1\); the end of its log:\n.*No module named anon_duck_no_such_module"):
        api.run(con, dataclasses.replace(job, settings=dataclasses.replace(job.settings, threads=2)))
    assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'dis%'").fetchone()[0]
    assert not os.path.exists(in_processes[1][0])


@pytest.mark.parametrize("value", [0, -5, 2.5, "100", True])
def test_bad_partition_size_is_named(value):
    text = (JOBS / "disassociation_toy.toml").read_text() + f"\n[settings]\npartition_size = {value!r}\n".replace(
        "True", "true").replace("'", '"')
    with pytest.raises(JobError, match=r"settings.partition_size = .*whole number of persons >= 1"):
        parse_job(text, base_dir=JOBS)


def test_partition_size_refused_for_a_method_without_partitioning_or_below_2k(con):
    job = _sized(load_job(JOBS / "toy_fulldomain.toml"), 100)
    with pytest.raises(JobError, match=r"settings.partition_size = 100: method 'fulldomain' cannot run partitioned"):
        api.run(con, job)
    job = _sized(_codes_job(con), 5)          # k = 3: a fragment of 2 or 3 persons could not be 3-anonymous
    with pytest.raises(JobError, match=r"settings.partition_size = 5: must be at least 2 × method.k = 6"):
        api.run(con, job)
    assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'dis%'").fetchone()[0]


def test_an_executor_task_anonymizes_its_fragment_or_returns_the_methods_error(con, tmp_path):
    """The function a Spark task and a DuckDB worker process run (anon_duck/backend/fragment_task.py): it reads
    its fragment's Parquet rows, writes each staged table as a file tagged with the fragment and
    returns the facts; a fragment the method refuses comes back as the method's own error."""
    from anon_duck.methods import get_method
    from anon_duck.backend.fragment_task import Task, run_fragment
    job = _codes_job(con, n=8)
    for f, persons in ((0, range(6)), (1, range(6, 8))):
        for role, sql in (("input", "SELECT DISTINCT pid FROM visits"),
                          ("codes", "SELECT pid AS id, code FROM visits")):
            folder = tmp_path / role / f"_fragment={f}"
            folder.mkdir(parents=True)
            ids = ", ".join(f"'p{i:03d}'" for i in persons)
            con.execute(f"COPY (SELECT * FROM ({sql}) WHERE {'pid' if role == 'input' else 'id'} IN ({ids})) "
                        f"TO '{folder}/part.parquet' (FORMAT parquet)")
    task = Task(str(tmp_path), job, get_method("disassociation").check_params(job), ("input", "codes"), (), (6, 2))
    done = run_fragment(task, 0)
    assert done["error"] is None and '"records": 6' in done["facts"]
    clusters = con.execute(f"SELECT _fragment, sum(n_records) FROM '{tmp_path}/out/clusters/0.parquet' "
                           "GROUP BY ALL").fetchall()
    assert clusters == [(0, 6)]
    refused = run_fragment(task, 1)
    assert refused["error"] == ("InputError: method.k = 3 is larger than the number of records (persons) (2); "
                                   "no release can be 3-anonymous")


def _horpart_first_splits(codes, size):
    """The ``codes`` rule as first written (one path per person, rewritten every round), in
    pure Python: the reference the rounds in SQL must reproduce exactly. Every group of more
    than ``size`` persons splits on its most frequent live code (ties: the smallest), holders
    to path + '0' (that code leaves their live codes), the rest to path + '1'; the persons are
    ordered by (path, id) and cut into ceil(n / size) runs."""
    paths, live = dict.fromkeys(codes, ""), {p: set(cs) for p, cs in codes.items()}
    while True:
        groups = defaultdict(list)
        for p, path in paths.items():
            groups[path].append(p)
        splits = {}
        for path, persons in groups.items():
            support = Counter(c for p in persons for c in live[p])
            if len(persons) > size and support:
                splits[path] = min(support, key=lambda c: (-support[c], c))
        if not splits:
            break
        for path, code in splits.items():
            for p in groups[path]:
                paths[p] = path + ("0" if code in live[p] else "1")
                live[p].discard(code)
    order = sorted(paths, key=lambda p: (paths[p], p))
    count = -(-len(order) // size)
    return {p: rank * count // len(order) for rank, p in enumerate(order)}


@pytest.mark.parametrize("chain", [1, 2, 32])
@pytest.mark.parametrize("seed", range(6))
def test_codes_fragments_equal_the_first_rule_on_random_inputs(seed, chain, monkeypatch):
    """Random persons (some without codes, many identical ones, a code everyone in a group may
    hold, frequency ties) at sizes from 2 to the whole input: the fragment of every person is
    the one the first rule (one level per round) gives, so neither the rounds' rewrite nor the
    chained levels changed a release. With 1 or 2 candidates a chain ends at the guess's
    limit; with 32 (every code) where the guess first fails."""
    monkeypatch.setattr(fragments, "CHAIN", chain)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 160))
    weights = rng.permutation(1 / np.arange(1, 9))
    codes = {f"p{i:03d}": set() if rng.random() < 0.1 else
             {f"c{c}" for c in rng.choice(8, size=rng.integers(1, 5), replace=False, p=weights / weights.sum())}
             for i in range(n)}
    for i in range(n // 4):                       # copies: groups that run out of codes to split on
        codes[f"q{i:03d}"] = set(codes[f"p{i % 5:03d}"])
    con = duckdb.connect()
    con.execute("CREATE TABLE people(pid VARCHAR)")
    con.executemany("INSERT INTO people VALUES (?)", [(p,) for p in codes])
    con.execute("CREATE TABLE visits(pid VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO visits VALUES (?, ?)", [(p, c) for p, cs in codes.items() for c in cs])
    job = parse_job('[input]\nid = "pid"\ntable = "people"\n[input.codes]\ntable = "visits"\nid = "pid"\n'
                    'code = "code"\n[method]\nname = "disassociation"\nk = 1\nm = 2\n[release]\nname = "dis"\n')
    rounds = []
    with session(con, job) as backend:
        inputs = prepare(backend, job)
        for size in (2, 3, 7, 20, len(codes) // 2, len(codes)):
            frag = fragment(backend, job, inputs, size, "codes", lambda *_: None)
            got = dict(con.execute(f'SELECT id, fragment FROM temp.main."{frag.table[2]}"').fetchall())
            assert got == _horpart_first_splits(codes, size)
            rounds.append(frag.rounds)
    assert rounds[0] > rounds[-2] > 0 == rounds[-1]      # deep trees at size 2, no split of the whole


def test_explicit_policy_holds_in_each_fragment_on_the_codes_it_holds(con):
    """Seed 001's toy with its Fig. 3b constraints (explicit policy), cut in two fragments of 5:
    each lacks some named codes, which used to stop the run. Each fragment applies the
    constraints restricted to its codes; the union passes the verifier and a brute-force k^m
    check of every chunk. A code in no record of the input is still a typo, named before any
    fragment runs, partitioned or not."""
    job = _sized(load_job(JOBS / "disassociation_toy.toml"), 6)
    named = {c for _, codes in job.params["constraints"].items() for c in codes}
    with session(con, job) as backend:
        frag = fragment(backend, job, prepare(backend, job), 6, "codes", lambda *_: None)
        held = con.execute(f'SELECT f.fragment, list(DISTINCT c.code) FROM temp.main."{frag.table[2]}" AS f '
                           'JOIN temp.main._ad_codes AS c ON c.id = f.id GROUP BY f.fragment').fetchall()
    assert frag.sizes == [5, 5] and all(named - set(codes) for _, codes in held)
    result = api.run(con, job)
    assert result.verified and result.facts["partition"]["fragments"] == 2
    _check_disassociation(con, "toy_dis", 3, 2, 10)
    typo = job.with_params(constraints={**job.params["constraints"], "u6": ["999.99", "480.1x"]})
    for size in (6, None):
        with pytest.raises(InputError, match=r"2 code\(s\) occur in no record, e\.g\. '999\.99' "
                                             r"\(method\.constraints\.u6\), '480\.1x'"):
            api.run(duckdb.connect(), _sized(typo, size) if size else typo)


@pytest.mark.parametrize("digits", [2, 3, 4])
def test_id_map_ranks_by_bucket_as_one_window_over_the_union(con, digits):
    """sql/partition/id_map.sql.j2 numbers ids per hash bucket plus the buckets before (a window
    Spark spreads over tasks): the same new ids as one row_number() over the whole union in the
    keyed order, ids from two columns of one domain merged, and the smallest local id kept,
    whatever the buckets' width (16^digits buckets: more on a larger cluster)."""
    from anon_duck.sqlrender import render
    con.execute("CREATE TABLE u1 AS SELECT i % 3 AS _fragment, 1 + i // 3 AS a FROM range(6000) t(i)")
    con.execute("CREATE TABLE u2 AS SELECT i % 4 AS _fragment, 1 + i AS b FROM range(2500) t(i)")
    con.execute(render("partition/id_map.sql.j2", target=("temp", "main", "ids"), domain="cluster", digits=digits,
                       columns=[(("memory", "main", "u1"), "a"), (("memory", "main", "u2"), "b")]),
                {"key": "k3y"})
    expected = con.execute("""
        WITH ids AS (SELECT DISTINCT _fragment, a AS local_id FROM u1 UNION SELECT DISTINCT _fragment, b FROM u2)
        SELECT _fragment, local_id, row_number() OVER (ORDER BY md5('k3y:cluster:' || _fragment || ':' || local_id),
                                                       _fragment, local_id) AS new_id
        FROM ids ORDER BY ALL""").fetchall()
    got = con.execute("SELECT * FROM temp.main.ids ORDER BY ALL").fetchall()
    assert got == expected and len(got) > 6000


def test_the_renumbering_has_at_least_four_blocks_per_core():
    from anon_duck.partition.union import block_digits
    assert [block_digits(c) for c in (1, 2, 64, 65, 1024, 1025)] == [2, 2, 2, 3, 3, 4]
    assert all(16 ** block_digits(c) >= 4 * c for c in range(1, 5000))


@pytest.mark.parametrize("lead", ["paths", "qis", "codes", "events", "boxes"])
def test_fragments_rank_by_block_as_one_window_over_the_persons(con, lead):
    """sql/partition/fragments.sql.j2 ranks each person inside its block (same path, else same
    lead key and quasi-identifiers, else same codes or events) plus the blocks before (windows
    Spark spreads over tasks): the same fragments as one row_number() over the whole order,
    with NULL quasi-identifiers and lead keys, persons without codes, and blocks of every size
    including ties. Codes are ordered by their frequency ranks (most frequent first, a person
    holding more of them before one holding a prefix), here as DuckDB lists, there as text."""
    from anon_duck.sqlrender import render
    con.execute("""CREATE TABLE people AS SELECT 'p' || i AS pid,
                       CASE WHEN i % 11 = 0 THEN NULL ELSE i % 7 END AS age,
                       CASE WHEN i % 13 = 0 THEN NULL ELSE ['f', 'm'][1 + i % 2] END AS sex
                   FROM range(900) t(i)""")
    con.execute("CREATE TABLE visits AS SELECT 'p' || i AS id, 'c' || ((i * j) % 5) AS code, j AS position, "
                "20 + (i * j) % 9 AS age FROM range(900) t(i), range(1 + i % 3) s(j) WHERE i % 17 <> 0")
    con.execute("CREATE TABLE paths AS SELECT 'p' || i AS id, ['0', '10', '110', '111'][1 + (i * 7) % 4] AS path "
                "FROM range(900) t(i)")
    con.execute("CREATE TABLE boxes AS SELECT 'p' || i AS id, CASE WHEN i % 19 = 0 THEN NULL ELSE i % 3 END AS box "
                "FROM range(900) t(i)")
    none = dict(paths=None, lead=None, lead_column=None, qis=[], codes=None, events=None)
    kinds = {"paths": dict(none, paths=("memory", "main", "paths")),
             "qis": dict(none, qis=["age", "sex"], codes=("memory", "main", "visits")),
             "codes": dict(none, codes=("memory", "main", "visits")),
             "events": dict(none, events=("memory", "main", "visits")),
             "boxes": dict(none, lead=("memory", "main", "boxes"), lead_column="box", qis=["age", "sex"],
                           codes=("memory", "main", "visits"))}[lead]
    con.execute(render("partition/fragments.sql.j2", target=("temp", "main", "frag"), person=("memory", "main", "people"),
                       id="pid", **kinds), {"fragments": 7, "n": 900})
    order = {"paths": "s.path", "qis": "p.age, p.sex, c.k", "codes": "c.k", "events": "e.k",
             "boxes": "b.box, p.age, p.sex, c.k"}[lead]
    expected = con.execute(f"""
        WITH r AS (SELECT code, row_number() OVER (ORDER BY count(*) DESC, code) AS rank FROM visits GROUP BY code),
             c0 AS (SELECT v.id, list(r.rank ORDER BY r.rank) || [10 ** 9] AS k FROM visits AS v
                    JOIN r ON r.code = v.code GROUP BY v.id),
             c AS (SELECT p.pid AS id, coalesce(c0.k, [10 ** 9]) AS k FROM people AS p LEFT JOIN c0 ON c0.id = p.pid),
             e AS (SELECT id, string_agg(code || '@' || age, ' ' ORDER BY position, code, age) AS k FROM visits GROUP BY id)
        SELECT p.pid, CAST(floor((row_number() OVER (ORDER BY {order}, p.pid) - 1) * 7 / 900) AS BIGINT)
        FROM people AS p JOIN paths AS s ON s.id = p.pid JOIN boxes AS b ON b.id = p.pid
        LEFT JOIN c ON c.id = p.pid LEFT JOIN e ON e.id = p.pid
        ORDER BY 1""").fetchall()
    got = con.execute("SELECT id, fragment FROM temp.main.frag ORDER BY 1").fetchall()
    assert got == expected and len({f for _, f in got}) == 7
