"""Worker processes that anonymize a partitioned run's fragments on one machine, as many at a
time as there are workers (DuckDB's ``anonymize_fragments``, docs/scale.md).

The methods' inner loops are Python and numba holding the GIL, so threads would not run two
fragments at once; processes do, and each holds one fragment's arrays at a time, so a worker's
memory follows ``partition_size``. A worker is ``python -m anon_duck.backend.fragment_pool
<task file>``: it reads fragment numbers on stdin, one per line, runs
:func:`~anon_duck.backend.fragment_task.run_fragment` on each and answers with one JSON line on
stdout. The driver hands the next fragment to whichever worker answers first. Workers are
started as fresh interpreters (not forked: the driver's DuckDB has threads running, and a
spawned ``multiprocessing`` child would re-run a caller's unguarded script), and everything a
worker writes besides its answers goes to a log file in the task's folder, whose tail a
failure quotes. A worker whose driver is killed outright sees its stdin close and exits after
the fragment in hand.
"""
from __future__ import annotations

import json
import os
import pickle
import selectors
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from ..errors import EngineError
from ..methods.base import FRAGMENTS_PHASE
from .fragment_task import Task, run_fragment


def run_fragments(task: Task, count: int, workers: int,
                  progress: Callable[[str, int, int], None]) -> list[dict[str, Any]]:
    """Fragments 0 .. count - 1 run by ``workers`` worker processes; their answers in fragment
    order. Every worker is stopped on the way out, also when the driver is interrupted."""
    folder = Path(task.folder)
    with open(folder / "task.pickle", "wb") as out:
        pickle.dump(task, out)
    pending = iter(range(count))
    done: list[dict[str, Any]] = []
    pool: list[_Worker] = []
    try:
        for i in range(max(1, min(workers, count))):
            pool.append(_Worker(folder, i))
        with selectors.DefaultSelector() as waiting:
            for worker in pool:
                waiting.register(worker.proc.stdout, selectors.EVENT_READ, worker)
                worker.hand(pending)
            progress(FRAGMENTS_PHASE, 0, count)
            while any(worker.fragment is not None for worker in pool):
                for key, _ in waiting.select():
                    worker = key.data
                    done.append(worker.answer(count))
                    progress(FRAGMENTS_PHASE, len(done), count)
                    if not worker.hand(pending):
                        waiting.unregister(worker.proc.stdout)
        for worker in pool:
            worker.proc.wait()
    finally:
        for worker in pool:
            worker.stop()
    return sorted(done, key=lambda r: r["fragment"])


class _Worker:
    """One worker process: this interpreter, with this copy of the package first on its path (a
    checkout that is not installed works as well as an installed one), its stderr in a log."""

    def __init__(self, folder: Path, i: int) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
        self.log = folder / f"worker_{i}.log"
        self.fragment: int | None = None
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", __name__, str(folder / "task.pickle")],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env)

    def hand(self, pending: Iterator[int]) -> bool:
        """Give the worker the next fragment; when none is left, close its stdin (it then
        exits) and say so."""
        stdin: IO[bytes] = self.proc.stdin
        self.fragment = next(pending, None)
        if self.fragment is None:
            stdin.close()
            return False
        try:
            stdin.write(f"{self.fragment}\n".encode())
            stdin.flush()
        except BrokenPipeError:     # the worker has ended already: answer() says how
            pass
        return True

    def answer(self, count: int) -> dict[str, Any]:
        """The worker's answer for its fragment; a worker that ended without one (killed, out of
        memory, a crash) is an error quoting the end of its log."""
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        code = self.proc.wait()
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        raise EngineError(f"fragment {self.fragment} of {count}: its worker process ended without an answer "
                          f"(exit code {code})" + (f"; the end of its log:\n{tail}" if tail else ""))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if not pipe.closed:
                pipe.close()


def main(task_file: str) -> None:
    """A worker: fragment numbers in, one JSON answer per line out (see the module)."""
    with open(task_file, "rb") as f:
        task: Task = pickle.load(f)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())     # stray prints go to the log, not the answers
    for line in sys.stdin:
        answers.write(json.dumps(run_fragment(task, int(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main(sys.argv[1])
