"""ArtUC's staging (anon_duck/methods/artuc/staging.py: stage) on random clusterings: the four
structured tables are exactly the rows of the per-row loops stage() used to run, and the
readable release's ``codes`` text is the definition spelled out in Python (each token's codes
sorted, ``(c1, c2)`` for >= 2 codes, a record's labels sorted and joined by ``, ``; empty when
the record holds no token)."""
from __future__ import annotations

import random

import duckdb
import numpy as np

from anon_duck.api import backend_for
from anon_duck.job import load_job
from anon_duck.methods.artuc.algorithm import Cluster
from anon_duck.methods.artuc.constraints import QIInfo
from anon_duck.methods.artuc.generalize import Demographics
from anon_duck.methods.artuc.staging import (OUT_CLASSES, OUT_RECORD_TOKENS, OUT_RECORDS, OUT_RELEASE, OUT_TOKENS,
                                             Problem, stage)
from anon_duck.methods.gendiag import GenDiagResult
from anon_duck.sqlrender import qualified

from conftest import JOBS

# Labels whose byte order differs from a naive guess: '(' < digits < 'V', prefixes, '.' < digits.
LABELS = np.array(sorted(["001", "001.1", "0011", "053.20", "053.71", "10", "493.2", "V01", "V01.5", "E800"]),
                  dtype=object)


def random_clustering(rnd: random.Random) -> tuple[list[Cluster], list[GenDiagResult]]:
    clusters, results = [], []
    for cid in range(rnd.randint(0, 5)):
        codes = rnd.sample(range(LABELS.size), rnd.randint(0, LABELS.size))
        tokens = []
        while codes:
            size = rnd.randint(1, min(4, len(codes)))
            tokens.append(tuple(sorted(codes[:size])))
            codes = codes[size:]
        n = rnd.randint(1, 5)
        holdings = tuple(tuple(sorted(rnd.sample(range(len(tokens)), rnd.randint(0, len(tokens))))) for _ in range(n))
        lo = float(rnd.randint(0, 50))
        clusters.append(Cluster(cid, 0, np.arange(n), [lo], [lo + rnd.choice([0, 0.5, 9])], [0]))
        results.append(GenDiagResult(tuple(tokens), holdings, (0,) * n, 0, ()))
    return clusters, results


def loop_tables(clusters: list[Cluster], results: list[GenDiagResult], seed: int) -> dict[str, list[tuple]]:
    """The rows as the former per-row loops of stage() built them."""
    rng = np.random.default_rng(seed)
    class_no = rng.permutation(len(clusters))
    record_no = rng.permutation(sum(c.size for c in clusters))
    records, tokens, record_tokens = [], [], []
    next_rec = next_tok = 0
    for ci, res in enumerate(results):
        base = next_tok
        for t, codes in enumerate(res.tokens):
            tokens += [(int(class_no[ci]), base + t, str(LABELS[c])) for c in codes]
        next_tok += len(res.tokens)
        for toks in res.record_tokens:
            r = int(record_no[next_rec])
            records.append((r, int(class_no[ci])))
            record_tokens += [(r, base + t) for t in toks]
            next_rec += 1
    return {"records": records, "tokens": tokens, "record_tokens": record_tokens}


def expected_codes(tables: dict[str, list[tuple]]) -> dict[int, str]:
    codes: dict[int, list[str]] = {}
    for _cls, tok, code in tables["tokens"]:
        codes.setdefault(tok, []).append(code)
    label = {t: c[0] if len(c) == 1 else "(" + ", ".join(sorted(c)) + ")" for t, c in codes.items()}
    held: dict[int, list[str]] = {r: [] for r, _ in tables["records"]}
    for r, t in tables["record_tokens"]:
        held[r].append(label[t])
    return {r: ", ".join(sorted(labels)) for r, labels in held.items()}


def test_stage_matches_the_loops_and_the_release_text():
    job = load_job(JOBS / "artuc_toy.toml")
    qis = [QIInfo(0, "age", True, None, 1.0, 0.0, 60.0)]
    problem = Problem(Demographics(qis, [np.zeros(0)], {}), np.zeros(0, dtype=np.int64), [], np.zeros(0), LABELS)
    shapes = set()
    for seed in range(60):
        clusters, results = random_clustering(random.Random(seed))
        with duckdb.connect() as con:
            stage(backend_for(con, job), problem, qis, clusters, results, seed)
            want = loop_tables(clusters, results, seed)
            for name, table in (("records", OUT_RECORDS), ("tokens", OUT_TOKENS), ("record_tokens", OUT_RECORD_TOKENS)):
                assert con.execute(f"SELECT * FROM {qualified(table)}").fetchall() == want[name], (seed, name)
            assert con.execute(f"SELECT count(*) FROM {qualified(OUT_CLASSES)}").fetchone()[0] == len(clusters)
            got = dict(con.execute(f"SELECT record, codes FROM {qualified(OUT_RELEASE)}").fetchall())
            assert got == expected_codes(want), seed
            shapes |= {"empty record" if not c else "several tokens" if "), " in c or c.count(", ") > 1 else "other"
                       for c in got.values()}
    assert shapes == {"empty record", "several tokens", "other"}
