"""The utility benchmark (benchmarks/utility/) on a tiny generated CDM: every number of the
table recomputed by brute force in Python, from the input's files and the release's tables,
for one method of each release shape (demographics, ArtUC's tokens, disassociation's chunks,
longitudinal's events)."""
from __future__ import annotations

import math
from collections import defaultdict
from statistics import fmean

import duckdb
import pytest

from benchmarks.cases import connect
from benchmarks.generators.omop_cdm import Shape, generate
from benchmarks.utility import cases as utility
from benchmarks.utility.workload import KINDS, QUERIES, WORKLOAD

TINY = Shape(persons=200, events=10, concepts=60, depth=3, poly=0.2, seed=7)


@pytest.fixture(scope="module")
def cdm(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("utility") / "cdm", TINY)


@pytest.fixture(scope="module")
def cdm_input(cdm):
    """The input as Python: year of birth per person, codes per person, (ancestor, descendant)."""
    read = duckdb.connect()
    births = dict(read.execute("SELECT person_id, year_of_birth FROM read_parquet(?)",
                               [str(cdm / "person.parquet")]).fetchall())
    held: dict[int, set[str]] = defaultdict(set)
    for pid, code in read.execute("SELECT person_id, condition_concept_id FROM read_parquet(?)",
                                  [str(cdm / "condition_occurrence.parquet")]).fetchall():
        held[pid].add(str(code))
    pairs = [(str(a), str(d)) for a, d in read.execute(
        "SELECT ancestor_concept_id, descendant_concept_id FROM read_parquet(?)",
        [str(cdm / "concept_ancestor.parquet")]).fetchall()]
    return births, held, pairs


def _release(method, k, cdm):
    con = connect()
    job = utility.utility_job(method, k, 1.0, folder=cdm)
    return con, job, utility.measure(con, job, cdm)


def _workload(con):
    return con.execute(f"SELECT query_id, kind, code_x, code_y, band_lo, band_hi FROM {WORKLOAD[0]} "
                       "ORDER BY query_id").fetchall()


def _truth(query, births, held):
    _, _, x, y, lo, hi = query
    return sum(1 for pid, codes in held.items()
               if x in codes and (y is None or y in codes) and (lo is None or lo <= births[pid] <= hi))


def _check_errors(figures, queries, actual, estimates):
    """The figures' AREs are the brute-force estimates' against the brute-force truth."""
    used = {q[0]: abs(estimates[q[0]] - actual[q[0]]) / actual[q[0]]
            for q in queries if q[0] in estimates and actual[q[0]] > 0}
    for kind in KINDS:
        mine = [e for q, e in used.items() if queries[q][1] == kind]
        assert figures[f"are_{kind}"] == (pytest.approx(fmean(mine), abs=1e-6) if mine else None), kind
    assert figures["answered"] == len(used) and figures["are"] == pytest.approx(fmean(used.values()), abs=1e-6)


def _shares(con, release, held, k=5):
    """Retention shares by brute force: the persons_input of every code held by k persons or
    more is the input's count; the rarer codes' counts are only in the summed row
    (anon_duck/retention.py), so every column still adds up over the rows."""
    persons = defaultdict(int)
    for codes in held.values():
        for code in codes:
            persons[code] += 1
    rows = con.execute(f'SELECT code, persons_input, persons_exact, persons_generalized, persons_without_count, '
                       f'persons_dropped FROM "{release}_retention"').fetchall()
    assert {r[0]: r[1] for r in rows if r[1] is not None and r[0] is not None} == \
        {c: n for c, n in persons.items() if n >= k}
    total = sum(persons.values())
    assert sum(r[1] or 0 for r in rows) == total
    return {f"pairs_{o}": sum(r[i] or 0 for r in rows) / total for i, o in enumerate(utility.OUTCOMES, start=2)}


def _spread(records, actual_queries, births=None):
    """Uniform spread: ``records`` = {record: [(code, g), ...]} (each shown token/event that
    covers code, standing for g codes); ``births`` = {record: (lo, hi)}."""
    def p(record, code):
        gs = [g for c, g in records[record] if c == code]
        if not gs:
            return 0.0
        return 1.0 if 1 in gs else 1 - math.prod(1 - 1 / g for g in gs)

    out = {}
    for qid, _, x, y, lo, hi in actual_queries:
        if lo is not None and births is None:
            continue
        total = 0.0
        for record in records:
            share = 1.0
            if lo is not None:
                b_lo, b_hi = births[record]
                share = max(0, min(b_hi, hi) - max(b_lo, lo) + 1) / (b_hi - b_lo + 1)
            total += p(record, x) * (1.0 if y is None else p(record, y)) * share
        out[qid] = total
    return out


def test_the_workload_is_fixed_and_its_truth_is_the_inputs(cdm, cdm_input):
    births, held, _ = cdm_input
    con, _, figures = _release("fulldomain", 5, cdm)
    queries = _workload(con)
    assert len(queries) == QUERIES and {q[1] for q in queries} == set(KINDS)
    assert all((q[3] is None) == (q[1] != "pair") and (q[4] is None) == (q[1] != "band") for q in queries)
    again = connect()
    utility.measure(again, utility.utility_job("fulldomain", 10, 1.0, folder=cdm), cdm)
    assert _workload(again) == queries                                 # seeded: the same for every release
    counted = dict(con.execute("SELECT query_id, actual FROM (" + _truth_sql() + ")").fetchall())
    assert counted == {q[0]: _truth(q, births, held) for q in queries}
    assert sum(counted.values()) > 0


def _truth_sql():
    from anon_duck.sqlrender import render
    from benchmarks.utility.workload import Input
    cdm = Input()
    return render("bench/utility/truth.sql.j2", workload=WORKLOAD, conditions=cdm.conditions, person=cdm.person)


def test_demographic_release_ncp_by_brute_force(cdm, cdm_input):
    births, held, _ = cdm_input
    con, job, figures = _release("mondrian", 5, cdm)
    rows = con.execute(f'SELECT year_of_birth__lo, year_of_birth__hi, gender, race, ethnicity, zip3 '
                       f'FROM "{job.release.name}"').fetchall()
    zips = {z for (z,) in duckdb.sql(f"SELECT DISTINCT substr(zip, 1, 3) FROM read_parquet('{cdm / 'location.parquet'}') "
                                     f"WHERE location_id IN (SELECT location_id FROM read_parquet('{cdm / 'person.parquet'}'))"
                                     ).fetchall()}
    lo, hi = min(births.values()), max(births.values())
    span = 5 * 2 ** math.ceil(math.log2((hi - lo + 1) / 5)) - 1     # the dyadic 5-year root's width

    def zip_ncp(label):
        prefix = label.rstrip("*")
        return 0.0 if "*" not in label else sum(z.startswith(prefix) for z in zips) / len(zips)

    per_record = [fmean([(b - a) / span, *(float(v == "*") for v in (g, r, e)), zip_ncp(z)])
                  for a, b, g, r, e, z in rows]
    assert len(rows) == len(births)
    assert figures["ncp"] == pytest.approx(fmean(per_record), abs=1e-9)
    assert all(figures[f"pairs_{o}"] is None for o in utility.OUTCOMES)
    assert figures["answered"] == 0 and figures["are"] is None and figures["verified"] is True


def test_artuc_tokens_by_brute_force(cdm, cdm_input):
    births, held, _ = cdm_input
    con, job, figures = _release("artuc", 5, cdm)
    name = job.release.name
    size = defaultdict(set)
    for token, code in con.execute(f'SELECT token, code FROM "{name}_codes"').fetchall():
        size[token].add(code)
    records, spans = {}, {}
    for record, lo, hi, tokens in con.execute(
            f'SELECT record, year_of_birth__lo, year_of_birth__hi, tokens FROM "{name}"').fetchall():
        records[record] = [(code, len(size[t])) for t in tokens for code in size[t]]
        spans[record] = (lo, hi)
    queries = _workload(con)
    actual = {q[0]: _truth(q, births, held) for q in queries}
    estimates = _spread(records, queries, spans)
    assert len(estimates) == QUERIES
    _check_errors(figures, queries, actual, estimates)
    assert figures["ncp"] is not None and 0 < figures["ncp"] < 1
    shares = _shares(con, name, held)
    assert {o: figures[o] for o in shares} == pytest.approx(shares)
    assert figures["pairs_generalized"] > 0


def test_longitudinal_events_by_brute_force(cdm, cdm_input):
    births, held, pairs = cdm_input
    con, job, figures = _release("longitudinal", 5, cdm)
    nodes = {a for a, d in pairs if a != d}
    leaves = {d for _, d in pairs} - nodes
    under = defaultdict(set)
    for a, d in pairs:
        if d in leaves:
            under[a].add(d)
    under["*"] = leaves
    records = defaultdict(list)
    for record, code in con.execute(f'SELECT release_id, code FROM "{job.release.name}"').fetchall():
        records[record] += [(leaf, len(under[code])) for leaf in under.get(code, ())]
    queries = _workload(con)
    actual = {q[0]: _truth(q, births, held) for q in queries}
    estimates = _spread(records, queries)
    assert len(estimates) == sum(q[1] != "band" for q in queries)
    _check_errors(figures, queries, actual, estimates)
    assert figures["are_band"] is None and figures["ncp"] is None
    shares = _shares(con, job.release.name, held)
    assert {o: figures[o] for o in shares} == pytest.approx(shares)


def test_disassociation_chunks_by_brute_force(cdm, cdm_input):
    """The paper's reconstruction count (docs/analyst.md) recomputed from the chunk tables."""
    births, held, _ = cdm_input
    con, job, figures = _release("disassociation", 5, cdm)
    name = job.release.name
    n = dict(con.execute(f'SELECT cluster_id, n_records FROM "{name}_clusters"').fetchall())
    scope = defaultdict(list)
    for chunk, cluster in con.execute(f'SELECT chunk_id, cluster_id FROM "{name}_shared_scope"').fetchall():
        scope[chunk].append(cluster)
    places = defaultdict(list)       # cluster -> [(place, rows of the place, [code sets of its rows])]
    chunk_rows = defaultdict(list)
    for cluster, chunk, codes in con.execute(f'SELECT cluster_id, chunk_id, codes FROM "{name}_record_chunks"').fetchall():
        chunk_rows[("record", chunk, cluster)].append(set(codes))
    for (_, chunk, cluster), rows in chunk_rows.items():
        places[cluster].append((("record", chunk), n[cluster], rows))
    shared = defaultdict(list)
    for chunk, codes in con.execute(f'SELECT chunk_id, codes FROM "{name}_shared_chunks"').fetchall():
        shared[chunk].append(set(codes))
    for chunk, rows in shared.items():
        for cluster in scope[chunk]:
            places[cluster].append((("shared", chunk), sum(n[c] for c in scope[chunk]), rows))
    items = defaultdict(set)
    for cluster, code in con.execute(f'SELECT cluster_id, code FROM "{name}_item_chunks"').fetchall():
        items[cluster].add(code)

    def where(cluster, code):
        for place, size, rows in places[cluster]:
            if any(code in r for r in rows):
                return place, sum(code in r for r in rows) / size, size, rows
        return ("item",), (1 / n[cluster] if code in items[cluster] else 0.0), None, None

    def expected(x, y):
        total = 0.0
        for cluster in n:
            px, share_x, size, rows = where(cluster, x)
            if y is None:
                total += n[cluster] * share_x
                continue
            py, share_y, _, _ = where(cluster, y)
            same = px == py and px[0] != "item"
            total += n[cluster] * (sum(x in r and y in r for r in rows) / size if same else share_x * share_y)
        return total

    queries = _workload(con)
    actual = {q[0]: _truth(q, births, held) for q in queries}
    estimates = {q[0]: expected(q[2], q[3]) for q in queries if q[1] != "band"}
    _check_errors(figures, queries, actual, estimates)
    shares = _shares(con, name, held)
    assert {o: figures[o] for o in shares} == pytest.approx(shares)
    assert figures["pairs_without_count"] > 0 and figures["are_band"] is None


def test_the_table_has_a_row_per_method_and_k_and_says_na():
    from benchmarks.suite import PLAN, generated_section
    from benchmarks.utility.table import utility_markdown
    figures = {"rows": 10_000, "median_s": 2.0, "verified": True, "other_load": 0.1, "answered": 134, "ncp": None,
               "pairs_exact": 0.8, "pairs_generalized": 0.0, "pairs_without_count": 0.2, "pairs_dropped": 0.0,
               "are_code": 0.06, "are_pair": 0.14, "are_band": None, "are": 0.1}
    demographic = {**figures, "ncp": 0.25, "answered": 0, "are": None, "are_code": None, "are_pair": None,
                   **{f"pairs_{o}": None for o in utility.OUTCOMES}}
    result = {"cases": {utility.name("disassociation", 10): figures, utility.name("mondrian", 5): demographic}}
    lines = utility_markdown(result).splitlines()
    assert len(lines) == 4 and all(line.count("|") == lines[0].count("|") for line in lines)
    assert lines[2].startswith("| mondrian | 5 | 10,000 | n/a | n/a | n/a | n/a | 0.250 | n/a |")
    assert lines[3].startswith("| disassociation | 10 | 10,000 | 80.0 % | 0.0 % | 20.0 % | 0.0 % | n/a | 0.060 | "
                               "0.140 | n/a | 0.100 (134) | 2.0 | yes |")
    step = next(s for s in PLAN if s.name == "omop_utility")
    assert set(step.cases) == set(utility.CASES)
    report = {"machine": "m", "scale": 1.0, "memory_limit": "1GB", "ratios": {}, "floor_ratios": {},
              "cases": {n: {**r, "min_s": 2.0, "peak_rss_mb": 100.0} for n, r in result["cases"].items()}}
    section = generated_section({"omop_utility": report})
    table = section.index("| method | k | persons |")
    assert section.index(f"### {step.title}") < table < section.index("| case | rows |", table)
