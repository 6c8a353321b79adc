"""Peak memory of a process and everything it started, for the Spark bench cases.

A Spark case's memory is not one process's: the Python driver (the bench worker) starts the
JVM (driver and executors in one, in local mode), and the JVM starts Python workers for
``applyInPandas``, which come and go. ``getrusage`` sees only the worker itself (and children
once they are reaped, which the JVM is not before the case returns). So a :class:`TreeSampler`
thread walks the tree from ``/proc/<pid>/task/<tid>/children`` every ``interval`` seconds and
reads each process's ``VmRSS`` (resident now) and ``VmHWM`` (its own peak so far, exact
whenever it is read): a process's peak is its last ``VmHWM`` read, so one that lives for a
single sample is still counted at its true peak; the peak of a *sum* (all Python workers at
once, the whole tree) is the largest sum of ``VmRSS`` over the samples, so a spike shorter than
the interval can be missed there. Forked Python workers share their parent daemon's pages
copy-on-write: their sum counts the shared pages once per worker, an upper bound; so does a
child forked to exec a program, sampled before it execs (a copy of its parent's resident
pages, for that moment). A child still in its parent's address space (started by
``vfork``/``posix_spawn``, not yet exec'd) is not counted at all (:func:`_shares_memory`).

Linux only (``/proc``); elsewhere no process is found and every peak stays 0."""
from __future__ import annotations

import ctypes
import functools
import platform
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

Role = Callable[[int, str, "str | None"], str]
"""(pid, command name, the parent's role or None for the root) -> the role a process's memory
is reported under (a Python process started by the JVM is a worker; one started by a launcher
script is not)."""


@dataclass
class RolePeaks:
    """One role's peaks in MiB: the largest single process, and the largest sum of the role's
    processes at one sample; the processes and their command names."""

    max_mb: float = 0.0
    sum_mb: float = 0.0
    processes: set[int] = field(default_factory=set)
    names: set[str] = field(default_factory=set)


class TreeSampler:
    """Samples ``root`` and its descendants until :meth:`stop`, which returns the peaks per role."""

    def __init__(self, root: int, role: Role, interval: float = 0.1) -> None:
        self.root, self.role, self.interval = root, role, interval
        self.roles: dict[str, RolePeaks] = {}
        self.total_mb = 0.0          # the largest sum of every process of the tree at one sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="anon_duck-tree-sampler", daemon=True)

    def start(self) -> TreeSampler:
        """Start sampling. The root's ``VmHWM`` is reset first where Linux lets us (writing 5 to
        ``clear_refs``, our own process): otherwise its peak would be that of its whole life, and
        a pytest worker or a REPL that earlier held 2 GB would report 2 GB for a case that never did."""
        try:
            Path(f"/proc/{self.root}/clear_refs").write_text("5")
        except OSError:
            pass
        self._thread.start()
        return self

    def stop(self) -> dict[str, RolePeaks]:
        """Stop sampling (after one last sample) and return the peaks per role."""
        self._stop.set()
        self._thread.join()
        return self.roles

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval):
                self.sample()
                return

    def sample(self) -> None:
        sums: dict[str, float] = {}
        roles: dict[int, str] = {}
        for pid, parent in _tree(self.root):
            status = _status(pid)
            if status is None:          # gone between the walk and the read
                continue
            name, rss, hwm = status
            if parent is not None and _shares_memory(pid, parent):
                roles[pid] = roles[parent]
                continue
            role = roles[pid] = self.role(pid, name, roles.get(parent))
            peaks = self.roles.setdefault(role, RolePeaks())
            peaks.max_mb = max(peaks.max_mb, hwm, rss)
            peaks.processes.add(pid)
            peaks.names.add(name)
            sums[role] = sums.get(role, 0.0) + rss
        for role, total in sums.items():
            self.roles[role].sum_mb = max(self.roles[role].sum_mb, total)
        self.total_mb = max(self.total_mb, sum(sums.values()))


def _tree(root: int, children: Callable[[int], list[int]] | None = None) -> list[tuple[int, int | None]]:
    """``root`` and its live descendants as (pid, parent pid), every parent before its children,
    each once. ``children`` lists a process's children (default: :func:`_children`, which may
    list one twice: see there)."""
    children = children or _children
    found: list[tuple[int, int | None]] = []
    seen: set[int] = set()
    todo: list[tuple[int, int | None]] = [(root, None)]
    while todo:
        pid, parent = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        found.append((pid, parent))
        todo.extend((c, pid) for c in children(pid))
    return found


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid``, from the kernel's per-thread lists. A child
    belongs to the thread that forked it; when that thread exits the child moves to another
    thread of the process, and a walk that read the first thread's list before the move and
    the second's after it sees the child twice (:func:`_tree` keeps one). A thread that exits
    while its list is read skips that list only, not its siblings'."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                out.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:         # the thread exited while we read
                continue
    except OSError:
        pass
    return out


_KCMP = {"x86_64": 312, "aarch64": 272}.get(platform.machine())   # the kcmp syscall's number
_KCMP_VM = 1


def _shares_memory(pid: int, parent: int) -> bool:
    """Whether ``pid`` runs in its parent's address space: a child started by ``vfork`` or
    ``posix_spawn`` (Python's subprocess, Java's ProcessBuilder) does until it execs, and
    reads as the parent's whole resident size under the parent's (or the forking thread's)
    name. Counted, it doubled the JVM in a Spark case's total (10.5 GB for a 4.9 GB JVM:
    Hadoop starts ``chmod`` for every file the partitioned disassociation writes), and it
    gave a 300 MiB child the 810 MB of the pytest worker that started it. ``kcmp(KCMP_VM)``
    tells (a forked child has an address space of its own, counted as the module says); where
    it is unavailable, the child is counted."""
    if _KCMP is None:
        return False
    return _libc().syscall(_KCMP, pid, parent, _KCMP_VM, 0, 0) == 0


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _status(pid: int) -> tuple[str, float, float] | None:
    """(command name, VmRSS MiB, VmHWM MiB) of a live process."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if "VmRSS" not in fields:           # a zombie has no memory left
        return None
    return (fields["Name"].strip(), int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)
