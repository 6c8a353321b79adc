"""Ctrl-C on Spark (issue #29 item 5), in processes of its own: a module apart from
test_spark.py so that its two JVM starts run beside that module's session, not after it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import JOBS
from sparktest import short_jvm_env


@pytest.mark.slow
def test_ctrl_c_while_publishing_on_spark_leaves_no_staged_table(tmp_path):
    """Issue #29 item 5: SIGINT (PySpark's own handler: KeyboardInterrupt inside the py4j call
    waiting for the JVM) while a staged table is written ends the run with exit 130 and leaves
    no ``_ad_staged_*`` table in the warehouse: the drops run on a gateway connection of their
    own. Checked in a fresh process over the same warehouse."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install -e '.[spark]'")
    if not shutil.which("java"):
        pytest.skip("Spark needs Java 17+, and no java is on PATH")
    warehouse = tmp_path / "wh"
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("interrupt_at.py")), "publish: rename", "0",
                           "run", str(JOBS / "toy_fulldomain.toml"), "--engine", "spark", "--db", str(warehouse)],
                          capture_output=True, text=True, timeout=600, env=short_jvm_env())
    assert "interrupting at publish: rename" in proc.stderr
    assert proc.returncode == 130 and "interrupted; nothing was published" in proc.stderr, proc.stderr[-3000:]
    listing = subprocess.run([sys.executable, "-c", "import sys; from anon_duck.backend.spark import spark_session; "
                              "s = spark_session(sys.argv[1]); print(sorted(t.name for t in s.catalog.listTables()))",
                              str(warehouse)], capture_output=True, text=True, timeout=600, env=short_jvm_env())
    assert listing.returncode == 0, listing.stderr[-3000:]
    assert listing.stdout.strip().splitlines()[-1] == "[]"     # no staged table, no release
