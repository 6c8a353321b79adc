"""The Spark bench cases (benchmarks/spark_cases.py) and the process-tree memory sampler
they report with (benchmarks/proctree.py). The numbers themselves are BENCHMARKS.md's;
here: the sampler finds a child's known allocation, and every Spark case at a toy scale
publishes a verified release equal, byte for byte, to its DuckDB twin's."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.proctree import TreeSampler, _tree

ALLOCATE = "import time; b = bytearray({mb} << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep({hold})"


def _roles(before: set[int]):
    """The test's own children, started after ``before`` (this process's tree when the test
    began), once they run their program; anything older under this process (a Spark JVM or a
    Python process another test of this pytest worker left running) is "other", and so is a
    child sampled between fork and exec: it still runs this worker's command line and reads as
    a copy of its resident pages (812 MB in a fresh-clone CI run), as the sampler documents
    for a forked child."""
    own = _cmdline(os.getpid())

    def role(pid: int, name: str, parent: str | None) -> str:
        if parent is None:
            return "self"
        return "child" if parent == "self" and pid not in before and _cmdline(pid) != own else "other"
    return role


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="the sampler reads /proc (Linux)")
def test_sampler_counts_children_that_allocate_and_exit():
    """Two children touch 150 and 300 MiB, the second after the first exited: the largest child
    is 300 MiB and more (its own peak), the sum at one sample below both together (they never
    lived at once), and the sampler's own process is apart, its peak counted from start(). The tree's total is compared with
    the root's resident size at a sample (its role's ``sum_mb``), not its ``max_mb``: that is
    ``VmHWM``, the peak of the pytest worker's whole life, which earlier tests can have pushed far
    above anything resident now."""
    before = {pid for pid, _ in _tree(os.getpid())}
    spike = bytearray(400 << 20)          # this process's lifetime peak, before sampling starts
    spike[::4096] = b"x" * len(spike[::4096])
    del spike
    sampler = TreeSampler(os.getpid(), _roles(before), interval=0.05).start()
    for mb in (150, 300):
        subprocess.run([sys.executable, "-c", ALLOCATE.format(mb=mb, hold=0.4)], check=True)
    roles = sampler.stop()
    child = roles["child"]
    assert len(child.processes) == 2 and all(name.startswith("python") for name in child.names)
    assert 300 <= child.max_mb < 300 + 100
    assert 300 <= child.sum_mb < 450
    assert sampler.total_mb >= child.sum_mb + roles["self"].sum_mb * 0.5
    assert roles["self"].processes == {os.getpid()}
    # the root's peak counts from start(): the 400 MiB spike before it is not the case's
    assert roles["self"].max_mb < roles["self"].sum_mb + 200


@pytest.mark.slow
def test_spark_cases_publish_their_duckdb_twins_release(tmp_path, monkeypatch):
    """At a toy scale, in one session: the k-anonymity verifier and its floor agree with DuckDB's,
    and partitioned disassociation (two fragments, each in an executor) publishes a verified
    release whose export is the DuckDB twin's, byte for byte; every memory figure is taken. (The
    full-domain and ArtUC twins take the same path; a Spark session's statements cost seconds
    each, so they are checked by running the step: docs/spark.md.)"""
    pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install -e '.[spark]'")
    if not shutil.which("java"):
        pytest.skip("Spark needs Java 17+, and no java is on PATH")
    from benchmarks import cases, spark_cases      # spark_cases registers the Spark cases
    assert {"verify_k_spark", "verify_k_spark_floor", "disassociation_bms_part_spark"} <= spark_cases.SPARK
    monkeypatch.chdir(tmp_path)          # the data cache (bench_out/data) is this test's
    scale = 0.01
    cases.PREPARE["verify_k"](scale)
    assert cases.CASES["verify_k_spark"](scale)["violations"] == cases.CASES["verify_k"](scale)["violations"]
    assert cases.CASES["verify_k_spark_floor"](scale)["value"] == cases.CASES["verify_k_floor"](scale)["value"]
    on_duckdb = cases.CASES["disassociation_bms_part"](scale)
    on_spark = cases.CASES["disassociation_bms_part_spark"](scale)
    assert on_duckdb["verified"] is True and on_spark["verified"] is True
    assert on_spark["release"] == on_duckdb["release"]
    assert on_spark["rows"] == on_duckdb["rows"] > 0 and on_spark["fragments"] == on_duckdb["fragments"] == 2
    assert on_spark["session_s"] > 0 and on_spark["jvm_peak_mb"] > 100 and on_spark["py_driver_peak_mb"] > 50
    assert on_spark["peak_rss_mb"] >= on_spark["jvm_peak_mb"] + on_spark["py_driver_peak_mb"] * 0.5
    # applyInPandas ran the fragments in Python workers the JVM started
    assert on_spark["py_workers"] >= 1 and on_spark["py_workers_sum_mb"] >= on_spark["py_workers_max_mb"] > 20


def test_growth_pairs_each_case_at_1m_with_its_10m_step():
    """The generated section's growth table: a case of the scale-1 step beside the same case in
    whichever scale-10 step measured it, and a hint naming the steps until both ran."""
    from benchmarks.suite import growth_markdown
    one = {"rows": 1_000_000, "median_s": 2.0, "peak_rss_mb": 400}
    ten = {"rows": 10_000_000, "median_s": 30.0, "peak_rss_mb": 1_000}
    results = {"spark_1m": {"cases": {"verify_k_spark": one, "artuc_informs_part": one}},
               "spark": {"cases": {"verify_k_spark": ten}}}
    table = growth_markdown(results)
    assert "| verify_k_spark | 1,000,000 → 10,000,000 | 2.00 → 30.00 | 15.0 | 400 → 1,000 | 2.5 |" in table
    assert "artuc_informs_part" not in table          # its scale-10 step (spark_part) did not run
    assert growth_markdown({"spark": results["spark"]}).startswith("(needs `python -m benchmarks --suite --steps spark_1m,")


def test_the_tree_lists_each_process_once_when_a_child_moves_between_threads():
    """A child whose forking thread exits moves to another thread of its parent; a walk can
    read it under both (the Spark cases' JVM was counted twice that way). Each process is
    listed once, under its parent, parents first."""
    children = {1: [2, 3, 2], 2: [4], 3: [4, 5], 4: [], 5: []}
    tree = _tree(1, children.__getitem__)
    assert sorted(pid for pid, _ in tree) == [1, 2, 3, 4, 5]
    order = [pid for pid, _ in tree]
    assert all(order.index(parent) < order.index(pid) for pid, parent in tree if parent is not None)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="the sampler reads /proc (Linux)")
def test_a_child_in_its_parents_address_space_is_not_counted(monkeypatch):
    """A child started by vfork/posix_spawn reads as its parent's whole resident size until it
    execs (a Spark case's JVM was counted twice that way, and a test's 300 MiB child as the
    pytest worker's 810 MB): kcmp tells it from a forked child, and the sampler skips it."""
    from benchmarks import proctree
    child = os.fork()
    if child == 0:                                   # a forked child: an address space of its own
        time.sleep(2)
        os._exit(0)
    try:
        if proctree._KCMP is not None:
            assert proctree._shares_memory(os.getpid(), os.getpid())
            assert not proctree._shares_memory(child, os.getpid())
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
    before = {pid for pid, _ in _tree(os.getpid())}
    role = _roles(before)
    monkeypatch.setattr(proctree, "_shares_memory", lambda pid, parent: role(pid, "", "self") == "child")
    sampler = TreeSampler(os.getpid(), role, interval=0.05).start()
    subprocess.run([sys.executable, "-c", ALLOCATE.format(mb=300, hold=0.4)], check=True)
    roles = sampler.stop()
    # "other": what earlier tests of this pytest worker left running (a Spark JVM), steady here
    others = roles["other"].sum_mb if "other" in roles else 0.0
    assert "child" not in roles and sampler.total_mb < roles["self"].sum_mb + others + 150
