"""``anon-duck risk`` (issue #21 item 1): every number of :func:`anon_duck.api.risk` against a
brute-force Python computation on small seeded random tables, the population
models against independent computations (exact hypergeometric sums; scipy's optimizer on the
loop-form likelihood), the bad inputs, and the CLI on the toy and Adult jobs."""
from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter, defaultdict
from fractions import Fraction

import duckdb
import pytest

import anon_duck
import anon_duck.api
from anon_duck.cli import main
from anon_duck.errors import InputError, JobError
from anon_duck.job import Job, job_from_dict, load_job
from anon_duck.population import population_uniqueness

from conftest import FIXTURES, JOBS

SEEDS = range(8)
THRESHOLDS = (0.5, 0.2, 0.1, 0.05, 1.0, 1 / 3)


def _people(con, rng: random.Random, name: str, n: int, offset: int = 0) -> list[tuple]:
    """A random person table: ids, three QIs with few values (classes repeat); one QI name
    with a quote and a space to exercise quoting."""
    rows = [(f"p{offset + i}", f"a{rng.randrange(3)}", f"b{rng.randrange(2)}", rng.randrange(4)) for i in range(n)]
    con.execute(f'CREATE TABLE {name} (pid VARCHAR, "a q""x" VARCHAR, b VARCHAR, c INTEGER)')
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", rows)
    return rows


QIS = ['a q"x', "b", "c"]


def _job(extra: dict | None = None, **input_keys) -> Job:
    doc = {"input": {"table": "t", "id": "pid",
                     "qi": [{"column": QIS[0]}, {"column": "b"}, {"column": "c", "kind": "numeric"}], **input_keys},
           "method": {"name": "fulldomain", "k": 3}, "release": {"name": "r"}, **(extra or {})}
    return job_from_dict(doc)


def _prosecutor(rows: list[tuple], thresholds) -> dict:
    sizes = Counter(r[1:] for r in rows)
    n = len(rows)
    per_record = [sizes[r[1:]] for r in rows]
    return {"n_records": n, "n_classes": len(sizes), "min_class_size": min(sizes.values()),
            "max_class_size": max(sizes.values()),
            "class_sizes": [{"class_size": s, "n_classes": c, "n_records": s * c}
                            for s, c in sorted(Counter(sizes.values()).items())],
            "highest": max(1 / s for s in per_record), "average": sum(1 / s for s in per_record) / n,
            "at_risk": [sum(1 for s in per_record if 1 / s > t) / n for t in thresholds],
            "uniques": sum(1 for s in per_record if s == 1), "below_3": sum(1 for s in per_record if s < 3) / n}


@pytest.mark.parametrize("seed", SEEDS)
def test_qi_measures_equal_brute_force(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    rows = _people(con, rng, "t", rng.randrange(1, 40))
    q = anon_duck.api.risk(con, _job(), thresholds=THRESHOLDS)["qis"]
    want = _prosecutor(rows, THRESHOLDS)
    assert (q["n_records"], q["n_classes"], q["min_class_size"], q["max_class_size"]) == \
        (want["n_records"], want["n_classes"], want["min_class_size"], want["max_class_size"])
    assert q["class_sizes"] == want["class_sizes"]
    assert q["prosecutor"]["highest"] == pytest.approx(want["highest"], rel=1e-12)
    assert q["prosecutor"]["average"] == pytest.approx(want["average"], rel=1e-12)
    assert q["marketer"]["average"] == pytest.approx(want["average"], rel=1e-12)   # the sample is the population
    assert [r["threshold"] for r in q["prosecutor"]["records_at_risk"]] == list(THRESHOLDS)
    assert [r["share"] for r in q["prosecutor"]["records_at_risk"]] == pytest.approx(want["at_risk"], rel=1e-12)
    assert q["sample_uniques"] == {"records": want["uniques"], "share": want["uniques"] / len(rows)}
    assert q["records_below_k"] == {"k": 3, "share": pytest.approx(want["below_3"], rel=1e-12)}
    assert q["journalist"] is None and q["population"] is None


@pytest.mark.parametrize("seed", SEEDS)
def test_journalist_and_marketer_risk_against_a_population_table(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    rows = _people(con, rng, "t", rng.randrange(1, 30))
    extra = [(f"x{i}", f"a{rng.randrange(4)}", f"b{rng.randrange(2)}", rng.randrange(5))
             for i in range(rng.randrange(0, 40))]
    con.execute("CREATE TABLE pop AS SELECT * FROM t")
    if extra:
        con.executemany("INSERT INTO pop VALUES (?, ?, ?, ?)", extra)
    out = anon_duck.api.risk(con, _job(), population_table="pop", thresholds=THRESHOLDS)["qis"]
    f = Counter(r[1:] for r in rows)
    big_f = Counter(r[1:] for r in rows + extra)
    n = len(rows)
    j = out["journalist"]
    assert j["highest"] == pytest.approx(1 / min(big_f[key] for key in f), rel=1e-12)
    # ARX's rC: the larger of classes / population records in them and the marketer's rate
    marketer = sum(f[key] / big_f[key] for key in f) / n
    assert j["average"] == pytest.approx(max(len(f) / sum(big_f[key] for key in f), marketer), rel=1e-12)
    assert out["marketer"]["average"] == pytest.approx(marketer, rel=1e-12)
    assert [r["share"] for r in j["records_at_risk"]] == \
        pytest.approx([sum(c for key, c in f.items() if 1 / big_f[key] > t) / n for t in THRESHOLDS], rel=1e-12)
    pop = out["population"]
    assert pop["size"] == n + len(extra)
    assert pop["uniques"] == sum(1 for c in big_f.values() if c == 1)
    assert pop["sample_uniques_unique_in_population"] == sum(1 for key, c in f.items() if c == 1 and big_f[key] == 1)
    assert pop["estimates"]["sampling_fraction"] == n / (n + len(extra))


def _zayatz_exact(histogram: dict[int, int], N: int) -> float:
    """Zayatz's estimate with exact hypergeometric probabilities (Fractions, math.comb)."""
    n = sum(s * c for s, c in histogram.items())
    J = sum(histogram.values())

    def h1(size: int) -> Fraction:      # P(exactly one of a class of `size` in a sample of n from N)
        return Fraction(size * math.comb(N - size, n - 1), math.comb(N, n))
    cond = Fraction(histogram.get(1, 0), J) * h1(1) / sum(Fraction(c, J) * h1(s) for s, c in histogram.items())
    return float(histogram.get(1, 0) * cond / Fraction(n, N))


def _pitman_loglik(histogram: dict[int, int], t: float, a: float) -> float:
    """Hoshino's log-likelihood written as the loops of its definition."""
    n = sum(s * c for s, c in histogram.items())
    u = sum(histogram.values())
    return (sum(math.log(t + i * a) for i in range(1, u)) - sum(math.log(t + i) for i in range(1, n))
            + sum(c * sum(math.log(i - a) for i in range(1, s)) for s, c in histogram.items()))


def _pitman_gradient(histogram: dict[int, int], t: float, a: float) -> tuple[float, float]:
    n = sum(s * c for s, c in histogram.items())
    u = sum(histogram.values())
    d_t = sum(1 / (t + i * a) for i in range(1, u)) - sum(1 / (t + i) for i in range(1, n))
    d_a = sum(i / (t + i * a) for i in range(1, u)) - sum(c * sum(1 / (i - a) for i in range(1, s))
                                                         for s, c in histogram.items())
    return d_t, d_a


HISTOGRAMS = [{1: 300, 2: 100, 3: 40, 5: 10, 20: 3}, {1: 30, 2: 12, 3: 7, 4: 2, 9: 1}, {1: 5, 2: 5, 3: 5, 6: 2},
              {1: 319, 2: 91, 3: 44, 4: 30, 5: 19, 6: 15, 7: 13, 8: 9, 40: 3}]


@pytest.mark.parametrize("histogram", HISTOGRAMS)
def test_population_models_equal_independent_computations(histogram):
    optimize = pytest.importorskip("scipy.optimize")
    n = sum(s * c for s, c in histogram.items())
    for N in (n, n + 7, 3 * n, 50 * n):
        est = population_uniqueness(histogram, N)
        assert est["sampling_fraction"] == n / N
        assert est["zayatz"]["uniques"] == pytest.approx(_zayatz_exact(histogram, N), rel=1e-9)
        assert est["zayatz"]["share"] == pytest.approx(_zayatz_exact(histogram, N) / N, rel=1e-9)
        pitman = est["pitman"]
        best = optimize.minimize(lambda x: -_pitman_loglik(histogram, x[0], x[1]), [sum(histogram.values()), 0.5],
                                 bounds=[(1e-6, None), (1e-9, 1 - 1e-6)], method="L-BFGS-B",
                                 options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10_000})
        if not pitman["converged"]:
            # no maximum inside 0 < alpha < 1: scipy's ends on the edge alpha -> 0
            assert pitman["uniques"] is None and best.x[1] < 1e-4, (histogram, best.x)
            assert est["dankar_rule"] == "zayatz"
            continue
        assert _pitman_loglik(histogram, pitman["theta"], pitman["alpha"]) >= -best.fun - 1e-7
        # the likelihood is flat along a ridge, where scipy stops early: the fit is a stationary
        # point (the gradient written as loops, as ARX's iterative check) at least as high as scipy's
        d_t, d_a = _pitman_gradient(histogram, pitman["theta"], pitman["alpha"])
        assert abs(d_t) * pitman["theta"] / n < 1e-8 and abs(d_a) / n < 1e-8
        uniques = math.gamma(pitman["theta"] + 1) / math.gamma(pitman["theta"] + pitman["alpha"]) \
            * N ** pitman["alpha"] if pitman["theta"] < 150 else \
            math.exp(math.lgamma(pitman["theta"] + 1) - math.lgamma(pitman["theta"] + pitman["alpha"])) * N ** pitman["alpha"]
        assert pitman["uniques"] == pytest.approx(uniques, rel=1e-9)
        assert est["dankar_rule"] == ("pitman" if n / N <= 0.1 else "zayatz")
    # a sample that is the population: Zayatz counts its uniques exactly
    assert population_uniqueness(histogram, n)["zayatz"]["uniques"] == pytest.approx(histogram[1])


def test_both_pitman_branches_are_exercised():
    fits = [population_uniqueness(h, 10 * sum(s * c for s, c in h.items()))["pitman"]["converged"] for h in HISTOGRAMS]
    assert True in fits and False in fits


def test_no_sample_uniques_no_population_uniques():
    est = population_uniqueness({2: 4, 3: 1}, 1000)
    assert est["zayatz"]["uniques"] == 0 and est["pitman"]["uniques"] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_drivers_equal_brute_force(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    rows = _people(con, rng, "t", rng.randrange(2, 40))
    d = anon_duck.api.risk(con, _job())["drivers"]
    n = len(rows)

    def uniques(columns: list[int]) -> int:
        sizes = Counter(tuple(r[1 + c] for c in columns) for r in rows)
        return sum(1 for s in sizes.values() if s == 1)
    everything = uniques([0, 1, 2])
    assert d["sample_uniques"] == everything
    per_qi = {r["qi"]: r for r in d["per_qi"]}
    for i, q in enumerate(QIS):
        kept = [c for c in range(3) if c != i]
        values = [r[1 + i] for r in rows]
        separated = sum(1 for x, y in itertools.combinations(values, 2) if x != y) / math.comb(n, 2)
        assert per_qi[q] == {"qi": q, "uniques_without": uniques(kept), "uniques_drop": everything - uniques(kept),
                             "distinct": len(set(values)), "distinction": len(set(values)) / n,
                             "separation": pytest.approx(separated, rel=1e-12)}
    pairs = {tuple(r["qis"]): r for r in d["per_pair"]}
    for i, j in itertools.combinations(range(3), 2):
        (left,) = [c for c in range(3) if c not in (i, j)]
        assert pairs[(QIS[i], QIS[j])]["uniques_without"] == uniques([left])
    drops = [r["uniques_drop"] for r in d["per_qi"]]
    assert drops == sorted(drops, reverse=True)


def test_drivers_of_one_and_two_qis():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 'p' || i AS pid, i % 3 AS x, i % 2 AS y FROM range(7) r(i)")
    one = job_from_dict({"input": {"table": "t", "id": "pid", "qi": [{"column": "x"}]},
                         "method": {"name": "fulldomain"}, "release": {"name": "r"}})
    d = anon_duck.api.risk(con, one)["drivers"]
    assert d["per_qi"] == [{"qi": "x", "uniques_without": 0, "uniques_drop": 0, "distinct": 3,
                            "distinction": 3 / 7, "separation": pytest.approx(1 - (3 * 2 + 2 * 1 + 2 * 1) / 42)}]
    assert d["per_pair"] == []
    two = job_from_dict({"input": {"table": "t", "id": "pid", "qi": [{"column": "x"}, {"column": "y"}]},
                         "method": {"name": "fulldomain"}, "release": {"name": "r"}})
    d = anon_duck.api.risk(con, two)["drivers"]
    # (x, y) = (0,0) (1,1) (2,0) (0,1) (1,0) (2,1) (0,0): five uniques; x alone or y alone: none
    assert d["sample_uniques"] == 5 and {r["qi"]: r["uniques_without"] for r in d["per_qi"]} == {"x": 0, "y": 0}
    assert d["per_pair"] == [{"qis": ["x", "y"], "uniques_without": 0, "uniques_drop": 5}]


@pytest.mark.parametrize("seed", SEEDS)
def test_code_set_risk_equals_brute_force(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    persons = [f"p{i}" for i in range(rng.randrange(2, 25))]
    pairs = {(p, f"c{rng.randrange(6)}") for p in persons for _ in range(rng.randrange(1, 5))}
    con.execute("CREATE TABLE codes (pid VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO codes VALUES (?, ?)", sorted(pairs))
    k, m = rng.randrange(1, 5), rng.randrange(1, 4)
    job = job_from_dict({"input": {"id": "pid", "codes": {"table": "codes", "id": "pid", "code": "code"}},
                         "method": {"name": "disassociation", "k": k, "m": m}, "release": {"name": "r"}})
    c = anon_duck.api.risk(con, job)["codes"]
    held = defaultdict(set)
    for p, code in pairs:
        held[p].add(code)
    support = Counter(s for codes in held.values() for size in range(1, m + 1)
                      for s in itertools.combinations(sorted(codes), size))
    n = len(held)
    want = []
    for mm in range(1, m + 1):
        def worst(p: str) -> int:
            return min(support[s] for size in range(1, mm + 1) for s in itertools.combinations(sorted(held[p]), size))
        below, unique = sum(1 for p in held if worst(p) < k), sum(1 for p in held if worst(p) == 1)
        want.append({"m": mm, "below_k_persons": below, "below_k_share": below / n,
                     "unique_persons": unique, "unique_share": unique / n})
    assert c == {"k": k, "m": m, "n_persons": n, "by_m": want}


@pytest.mark.parametrize("seed", SEEDS)
def test_trajectory_risk_equals_brute_force(seed):
    rng = random.Random(seed)
    con = duckdb.connect()
    events = []
    for i in range(rng.randrange(1, 20)):
        for position in range(1, rng.randrange(2, 6)):
            events.append((f"p{i}", position, f"c{rng.randrange(3)}", rng.randrange(30, 33)))
    con.execute("CREATE TABLE ev (pid VARCHAR, pos INTEGER, code VARCHAR, age INTEGER)")
    con.executemany("INSERT INTO ev VALUES (?, ?, ?, ?)", events)
    job = job_from_dict({"input": {"id": "pid", "events": {"table": "ev", "id": "pid", "position": "pos",
                                                           "code": "code", "age": "age"}},
                         "method": {"name": "longitudinal", "k": 2}, "release": {"name": "r"},
                         "risk": {"events_prefix": 4}})
    e = anon_duck.api.risk(con, job)["events"]
    trajectories = defaultdict(list)
    for p, position, code, age in sorted(events):
        trajectories[p].append((code, age))
    n = len(trajectories)

    def unique(prefix_of) -> int:
        counts = Counter(prefix_of(t) for t in trajectories.values())
        return sum(1 for t in trajectories.values() if counts[prefix_of(t)] == 1)
    whole = unique(tuple)
    assert e == {"n_persons": n, "unique_trajectory_persons": whole, "unique_trajectory_share": whole / n,
                 "first_events": [{"j": j, "unique_persons": unique(lambda t, j=j: tuple(t[:j])),
                                   "unique_share": unique(lambda t, j=j: tuple(t[:j])) / n} for j in range(1, 5)]}


def test_options_come_from_the_call_then_the_job_then_the_defaults():
    con = duckdb.connect()
    _people(con, random.Random(1), "t", 20)
    job = _job({"risk": {"thresholds": [0.25], "k": 4, "population_size": 500}})
    assert anon_duck.api.risk(con, job)["options"] == {"population_size": 500, "thresholds": [0.25], "k": 4, "m": 2,
                                                       "events_prefix": 5}
    assert anon_duck.api.risk(con, job, thresholds=[0.5], k=2, population_size=40)["options"] == \
        {"population_size": 40, "thresholds": [0.5], "k": 2, "m": 2, "events_prefix": 5}
    # no [risk]: the method's k (3), the default m, thresholds 1/2, 1/5, 1/10, 1/20
    assert anon_duck.api.risk(con, _job())["options"] == {"population_size": None, "thresholds": [0.5, 0.2, 0.1, 0.05],
                                                          "k": 3, "m": 2, "events_prefix": 5}


@pytest.mark.parametrize("risk, message", [
    ({"thresholds": [0.5, 1.5]}, "risk.thresholds[1] = 1.5: a risk threshold is a number in (0, 1]"),
    ({"thresholds": [0]}, "risk.thresholds[0] = 0:"),
    ({"thresholds": []}, "risk.thresholds = []"),
    ({"population_size": 0}, "risk.population_size = 0"),
    ({"k": True}, "risk.k = True"),
    ({"populaton_size": 3}, "unknown key 'populaton_size' in [risk]"),
    ({"population": {"table": "p", "path": "x.csv"}}, "risk.population: give exactly one of table"),
])
def test_bad_risk_keys_name_the_key_and_value(risk, message):
    with pytest.raises(JobError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        _job({"risk": risk})


def test_bad_populations_name_the_value():
    con = duckdb.connect()
    _people(con, random.Random(2), "t", 20)
    with pytest.raises(InputError, match="population_size = 19 is smaller than the sample \\(20 records\\)"):
        anon_duck.api.risk(con, _job(), population_size=19)
    with pytest.raises(InputError, match="threshold = 2"):
        anon_duck.api.risk(con, _job(), thresholds=[0.5, 2])
    con.execute("CREATE TABLE small AS SELECT * FROM t LIMIT 5")
    with pytest.raises(InputError, match="holds 5 records, fewer than the sample's 20"):
        anon_duck.api.risk(con, _job(), population_table="small")
    con.execute("CREATE TABLE other AS SELECT pid, 'zz' AS \"a q\"\"x\", b, c FROM t")
    with pytest.raises(InputError, match="classes have fewer records in the population than in the sample"):
        anon_duck.api.risk(con, _job(), population_table="other")
    con.execute("CREATE TABLE nob AS SELECT pid, c FROM t")
    with pytest.raises(InputError, match="no column 'a q\"x'"):
        anon_duck.api.risk(con, _job(), population_table="nob")


def test_a_population_file_from_the_job(tmp_path):
    con = duckdb.connect()
    rows = _people(con, random.Random(3), "t", 15)
    con.execute(f"COPY (SELECT * FROM t UNION ALL SELECT * FROM t) TO '{tmp_path / 'pop.parquet'}'")
    job = _job({"risk": {"population": {"path": str(tmp_path / "pop.parquet")}}})
    q = anon_duck.api.risk(con, job)["qis"]
    sizes = Counter(r[1:] for r in rows)
    assert q["population"]["size"] == 30 and q["journalist"]["highest"] == 1 / (2 * min(sizes.values()))
    # every class is twice as large in the population: a marketer re-identifies f / 2f = 1/2 record
    # per class, J / 2 of the 15 records in all
    assert q["marketer"]["average"] == pytest.approx(len(sizes) / 2 / 15)


def _db(tmp_path) -> str:
    path = tmp_path / "risk.duckdb"
    duckdb.connect(str(path)).close()
    return str(path)


def test_cli_text_and_json_on_the_toy_job(tmp_path, capsys):
    db = _db(tmp_path)
    assert main(["risk", str(JOBS / "toy_fulldomain.toml"), "--db", db, "--threshold", "0.3"]) == 0
    text = capsys.readouterr().out
    assert "Input: 12 records; quasi-identifiers age, sex, zip" in text
    assert "prosecutor risk      highest 1, average 1" in text
    assert "records at risk      risk > 0.3: 100.0 %" in text and "risk > 0.5" not in text
    drivers = [line.split()[1] for line in text.splitlines() if line.startswith("  without") and "+" not in
               line.split("uniques")[0]]
    assert drivers == ["age", "sex", "zip"]       # age drives uniqueness: without it 4 of 12 stay unique
    assert main(["risk", str(JOBS / "toy_fulldomain.toml"), "--db", db, "--json", "--population-size", "120"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"options", "qis", "drivers", "codes", "events"}
    assert out["qis"]["sample_uniques"] == {"records": 12, "share": 1.0}
    assert out["qis"]["population"]["estimates"]["zayatz"]["uniques"] == pytest.approx(120.0)


@pytest.mark.parametrize("args, message", [
    (["--threshold", "1.5"], "argument --threshold: '1.5' is not a risk threshold"),
    (["--threshold", "0"], "argument --threshold: '0' is not a risk threshold"),
    (["--threshold", "x"], "argument --threshold: 'x' is not a risk threshold"),
    (["--population-size", "11"], "population_size = 11 is smaller than the sample (12 records)"),
])
def test_cli_bad_input_exits_2_naming_the_value(tmp_path, capsys, args, message):
    code = None
    try:
        code = main(["risk", str(JOBS / "toy_fulldomain.toml"), "--db", _db(tmp_path), *args])
    except SystemExit as stop:       # argparse's own exit
        code = stop.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_cli_on_the_adult_job_prints_prosecutor_risk_and_records_at_risk(tmp_path, capsys):
    """The issue's acceptance: the input of the bundled Adult fulldomain job."""
    db = _db(tmp_path)
    assert main(["risk", str(JOBS / "adult_fulldomain.toml"), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    qis = ["age", "sex", "race", "marital_status", "education"]
    rows = duckdb.connect().execute(f"SELECT {', '.join(qis)} FROM read_parquet('{FIXTURES}/adult/adult.parquet')"
                                    ).fetchall()
    want = _prosecutor([(None, *r) for r in rows], (0.5, 0.2, 0.1, 0.05))
    q = out["qis"]
    assert q["n_records"] == 30162 and q["sample_uniques"]["records"] == want["uniques"] == 3187
    assert q["prosecutor"]["highest"] == want["highest"] == 1.0
    assert q["prosecutor"]["average"] == pytest.approx(want["average"], rel=1e-12)
    assert [r["share"] for r in q["prosecutor"]["records_at_risk"]] == pytest.approx(want["at_risk"], rel=1e-12)
    assert main(["risk", str(JOBS / "adult_fulldomain.toml"), "--db", db]) == 0
    text = capsys.readouterr().out
    assert f"prosecutor risk      highest 1, average {want['average']:.4g}" in text
    assert "records at risk      risk > 0.5: 10.6 %   risk > 0.2: 25.0 %   risk > 0.1: 39.5 %   risk > 0.05: 52.0 %" \
        in text


def test_cli_on_code_and_event_jobs(tmp_path, capsys):
    db = _db(tmp_path)
    assert main(["risk", str(JOBS / "artuc_toy.toml"), "--db", db]) == 0
    text = capsys.readouterr().out
    assert "Code sets (8 persons; an adversary knows up to m codes, k = 2):" in text
    assert "  m = 2: 25.0 % of persons hold a set of <= 2 codes that fewer than 2 persons hold" in text
    assert main(["risk", str(JOBS / "longitudinal_toy.toml"), "--db", db]) == 0
    text = capsys.readouterr().out
    assert "Trajectories (6 persons with events):" in text and "unique (code, age) trajectory: 100.0 %" in text
    assert load_job(JOBS / "longitudinal_toy.toml").dataset.qis == ()     # no QI section then
    assert "Input:" not in text
