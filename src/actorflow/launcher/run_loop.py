"""The launcher's supervision loop, shared by ``sim``, ``run`` and SPMD mode.

Watches the children (and the master through a Monitor), forwards SIGINT/SIGTERM, and on
the first failure gives the others ``settle`` seconds to stop on the master's abort before
tearing everything down (SIGTERM, then SIGKILL after the grace period).  On failure it
prints the table naming the root cause and returns non-zero.  The root cause is the
master's first error, except for a stall: then it is the machine that every rank's merged
flight dump names (``stall_root``), which does not depend on whose watchdog spoke first.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actorflow.actors.procstate import frozen_after, is_stopped
from actorflow.launcher.monitor import Monitor
from actorflow.launcher.report import failure_table, headline, root_cause
from actorflow.launcher.sink import OutputSink
from actorflow.launcher.stall_root import DUMP_GRACE, STALL_KINDS, awaiting_dumps, merged_root
from actorflow.launcher.supervisor import Child, Supervisor

FROZEN_AFTER = frozen_after()  # s a child may stay stopped before the run fails, blaming it


class RunLoop:
    def __init__(self, sup: Supervisor, monitor: Monitor | None, *, settle: float = 1.0,
                 timeout: float = 0.0, sink: OutputSink | None = None,
                 dump_dirs: Sequence[Path] = ()) -> None:
        self.sup = sup
        self.dump_dirs = list(dump_dirs)  # where the workers' flight dumps land (stalls)
        self.stall_dumps: Path | None = None  # the directory the merged stall came from
        self.monitor = monitor
        self.sink = sink
        self.settle = settle
        self.timeout = timeout
        self.signum = 0
        self.failed = False
        self.timed_out = False
        self.frozen: list = []  # children found stopped (SIGSTOP) when the run failed

    @property
    def master_error(self) -> dict | None:
        final = self.monitor.final if self.monitor is not None else None
        return (final or {}).get("summary", {}).get("error") if final else None

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signum = signum

    def _forward_usr1(self, signum: int, frame: Any) -> None:
        """``flowlaunch trace why-stuck --pid <launcher>``: every worker dumps its state."""
        for c in self.sup.running():
            if c.argv[:4] != [sys.executable, "-m", "actorflow.launcher.cli", "worker"]:
                continue  # ssh or a user's SPMD script: SIGUSR1 would kill it
            try:
                os.kill(c.pid, signum)  # the worker only: its unit processes ignore it
            except (ProcessLookupError, PermissionError):
                pass

    def _frozen_child(self, since: dict[int, float]) -> bool:
        """A child stopped (SIGSTOP) for ``FROZEN_AFTER`` s: the run cannot go on, and the
        ranks that would time out waiting for it are not the cause."""
        now = time.monotonic()
        for c in self.sup.running():
            if not is_stopped(c.pid):
                since.pop(c.rank, None)
            elif now - since.setdefault(c.rank, now) >= FROZEN_AFTER:
                self.frozen = [c]
                return True
        return False

    def run(self) -> int:
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        old[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, self._forward_usr1)
        try:
            return self._run()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            if self.monitor is not None:
                self.monitor.close()

    def _run(self) -> int:
        sup, mon = self.sup, self.monitor
        t0 = time.monotonic()
        t_fail = 0.0
        stopped_since: dict[int, float] = {}
        sink = self.sink
        while sup.running():
            if sink is not None:  # output pieces arrive all the time: wait on them
                if mon is not None:
                    mon.poll(0)
                sink.poll(0.05)
            elif mon is not None:
                mon.poll(0.05)
            else:
                time.sleep(0.05)
            sup.poll()
            if self.signum:
                sup.muted = True  # one line for a Ctrl-C, not one per rank
                print(f"flowlaunch: interrupted by {signal.Signals(self.signum).name}; stopped "
                      f"{len(sup.running())} rank(s)", file=sys.stderr, flush=True)
                sup.signal_all(self.signum)
                sup.teardown()
                return 128 + self.signum
            if not t_fail and sup.first_failure() is not None:
                t_fail = time.monotonic()
                # a stopped rank neither exits nor reports: the ranks that lost it fail
                # first, so look for it now, before teardown kills it
                self.frozen = [c for c in sup.running() if is_stopped(c.pid)]
            if t_fail and time.monotonic() - t_fail > self.settle and not self._awaiting_dumps(
                    time.monotonic() - t_fail):
                break
            if not t_fail and self._frozen_child(stopped_since):
                break
            if self.timeout and time.monotonic() - t0 > self.timeout:
                self.timed_out = True
                break
        if mon is not None:  # rank 0 sends the final summary just before it exits
            deadline = time.monotonic() + 0.5
            while (mon.final is None and time.monotonic() < deadline and not t_fail
                   and not self.frozen):
                mon.poll(0.05)
                if sink is not None:
                    sink.poll(0)
        sup.teardown()
        err = self.master_error
        self.failed = (self.timed_out or bool(self.frozen) or bool(err)
                       or any(c.failed for c in sup.children))
        if self.failed:
            why = "the first failure"
            if self.timed_out:  # exits after the timeout are the teardown, not a cause
                root, line = None, f"run exceeded --timeout {self.timeout:g}s"
            elif self.frozen and not (err and t_fail):
                root = self.frozen[0]
                line = (f"process stopped (frozen for {FROZEN_AFTER:g}s or more, e.g. "
                        "SIGSTOP): its machine can make no progress")
            else:
                root, line = root_cause(sup.children, err)
                if err and err.get("kind") in STALL_KINDS:
                    root, line, why = self._stall_root(root, line)
            print(headline(root, line), file=sys.stderr)
            print(failure_table(sup.children, root, line, why), file=sys.stderr, flush=True)
            if self.stall_dumps is not None:
                print(f"every machine's actors: flowlaunch trace why-stuck {self.stall_dumps}",
                      file=sys.stderr, flush=True)
            return 1
        return 0

    def _awaiting_dumps(self, since_fail: float) -> bool:
        """After a stall, the running ranks that are not stopped get up to ``DUMP_GRACE`` s
        more to write the dump the merged root cause needs (a loaded box is slow)."""
        if not self.dump_dirs or since_fail > self.settle + DUMP_GRACE:
            return False
        running = [c.pid for c in self.sup.running() if not is_stopped(c.pid)]
        return awaiting_dumps(self.dump_dirs, [c.pid for c in self.sup.children], running)

    def _stall_root(self, root: Child | None, line: str) -> tuple[Child | None, str, str]:
        """A stall: blame the machine every rank's merged dump names, not the first rank
        whose watchdog spoke (that one may only see an actor waiting across the wire)."""
        found = merged_root(self.dump_dirs, {c.pid for c in self.sup.children})
        first = "the first failure"
        if found is None:
            return root, line, first
        report, machine = found
        blamed = next((c for c in self.sup.children if c.rank == machine), None)
        if blamed is None:
            return root, line, first
        # --trace (listed last) takes the dumps when given, else the launcher's dump dir
        self.stall_dumps = next((d for d in reversed(self.dump_dirs) if d.is_dir()), None)
        return (blamed, f"stall (every machine's dump merged): {report.sentence}",
                "where every machine's dump puts the stall's root")
