"""How busy the machine was with *other* work while a repetition ran.

The load average cannot say it: a benchmark's own worker keeps it near the number of threads
DuckDB runs, and the 1-minute average still carries the previous repetition. So a
:class:`CpuWatch` takes the CPU time the whole machine spent busy during the repetition
(``/proc/stat``), subtracts what the repetition's own process used (``RUSAGE_CHILDREN``: the
worker, reaped before the watch stops), and divides by the wall time: the number of cores other
programs kept busy on average. 0 is a quiet machine; 1 means another program held a whole core.
Where ``/proc/stat`` is missing (not Linux), the 1-minute load average stands in."""
from __future__ import annotations

import os
import resource
import time

BUSY = 0.5
"""Other load (cores) above which a measurement is marked busy in the tables: on two cores,
half a core of other work already slows a two-thread DuckDB query measurably."""


class CpuWatch:
    """Start before a repetition's subprocess, call :meth:`other_load` after it returned."""

    def __init__(self) -> None:
        self.loadavg = os.getloadavg()[0]
        self._busy = _machine_busy_seconds()
        self._ours = _children_cpu_seconds()
        self._t0 = time.perf_counter()

    def other_load(self) -> float:
        wall = time.perf_counter() - self._t0
        busy = _machine_busy_seconds()
        if busy is None or self._busy is None or wall <= 0:
            return round(os.getloadavg()[0], 2)
        others = (busy - self._busy) - (_children_cpu_seconds() - self._ours)
        return round(max(others, 0.0) / wall, 2)


def _machine_busy_seconds() -> float | None:
    """CPU seconds all cores spent not idle since boot (user, nice, system, irq, softirq, steal)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
