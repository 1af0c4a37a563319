"""What a runtime's owner (Session, worker) attaches for debugging: recorder, watchdog, signal.

    diag = Diagnostics(plan, trace=DIR, stall_timeout=5.0)   # before building the runtime
    runtime = MachineRuntime(plan, recorder=diag.recorder, ...)
    diag.attach(runtime.actor_states, runtime.fail)          # starts the watchdog
    ...
    diag.close(runtime.error)                                # dumps on failure, flushes

It only takes callables, so this package still imports nothing of the runtime:
``states()`` returns every actor's ``blocked_on()`` dict, ``fail(exc)`` stops the run.

* flight recorder: always on unless ``flight=False`` (then no recorder calls at all);
* watchdog: when no event was recorded (or, with no recorder or with process units, which
  record in their own processes, no actor acted or changed status) for
  ``stall_timeout`` seconds while some actor has unfinished work, it dumps, explains the
  hang in one sentence (``whystuck``) and fails the run with ``StallError``; a kernel
  that legitimately runs longer than ``stall_timeout`` counts as a stall, so set it above
  your slowest act; a machine whose root only waits on actors of another machine waits
  twice as long, and the launcher merges every machine's dump to name the true root;
* ``dump_once``: the end-of-run dump (failed, aborted) a worker writes before closing;
* SIGUSR1: dumps every live Diagnostics of the process (main thread installs only).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actorflow.errors import StallError, UsageError
from actorflow.trace.recorder import Recorder
from actorflow.trace.tracefile import plan_info
from actorflow.trace.whystuck import StuckReport, analyze

StatesFn = Callable[[], list[dict]]
FailFn = Callable[[BaseException], None]

_LIVE: list[Diagnostics] = []
_LIVE_LOCK = threading.Lock()
_PREV_HANDLER: Any = None


class Diagnostics:
    def __init__(self, plan: Any, *, trace: str | os.PathLike | None = None,
                 flight: bool = True, stall_timeout: float | None = None,
                 dump_dir: str | os.PathLike | None = None, clock_offset: float = 0.0,
                 clock_error: float = 0.0, tag: str = "",
                 plan_file: str = "plan.plan") -> None:
        if stall_timeout is not None and stall_timeout <= 0:
            raise UsageError(f"stall_timeout must be > 0 seconds, got {stall_timeout}")
        self.plan = plan
        self.stall_timeout = stall_timeout
        self.recorder: Recorder | None = None
        if trace is not None or flight:
            self.recorder = Recorder(plan, trace_dir=trace, clock_offset=clock_offset,
                                     clock_error=clock_error, tag=tag, dump_dir=dump_dir,
                                     plan_file=plan_file)
        self.dump_dir = Path(dump_dir) if dump_dir is not None else None
        self.tasks = plan_info(plan)
        self.elsewhere = _neighbours(plan, self.tasks)
        self.dumps: list[Path] = []
        self.last_states: list[dict] | None = None  # what the last dump held
        self.stall: StuckReport | None = None
        self.idle_checks = 0  # times the watchdog found the run idle (waiting for the client)
        self._states: StatesFn | None = None
        self._fail: FailFn | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure_dumped = False

    # -- lifecycle ---------------------------------------------------------------------
    def attach(self, states: StatesFn, fail: FailFn | None) -> None:
        self._states, self._fail = states, fail
        if self.stall_timeout is not None:
            self._thread = threading.Thread(target=self._watch, name="actorflow-watchdog",
                                            daemon=True)
            self._thread.start()
        _register(self)

    def close(self, error: BaseException | None = None) -> None:
        """Stop the watchdog; dump the flight recorder if the run failed; flush the trace."""
        self._stop.set()
        _unregister(self)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)
        if error is not None and not self._failure_dumped and not isinstance(error, StallError):
            self.dump_failure(error)
        if self.recorder is not None:
            self.recorder.close()

    # -- dumps -------------------------------------------------------------------------
    def dump(self, reason: str, error: str = "") -> Path | None:
        """Write a flight dump; a dump that cannot be written never hides the run's error."""
        if self.recorder is None or self._states is None:
            return None
        self.last_states = _safe_states(self._states)
        try:
            path = self.recorder.dump(reason, self.last_states, error)
        except (OSError, ValueError, TypeError) as e:
            print(f"actorflow: could not write the flight dump ({reason}): {e}",
                  file=sys.stderr)
            return None
        self.dumps.append(path)
        return path

    def dump_failure(self, error: BaseException) -> Path | None:
        path = self.dump_once("failed", str(error).splitlines()[0] if str(error) else repr(error))
        if path is not None:
            print(f"actorflow: run failed; flight recorder dumped to {path}", file=sys.stderr)
        return path

    def dump_once(self, reason: str, error: str = "") -> Path | None:
        """Dump the end of a run (failed, aborted by another machine) unless this run already
        did (a stall dumps when it fires): one state per process for the launcher to merge."""
        if self._failure_dumped or self.stall is not None:
            return None
        self._failure_dumped = True
        return self.dump(reason, error)

    def analyze_last(self) -> StuckReport | None:
        """why-stuck on the actors of the last dump (asking process units again would take
        another round trip), else as they are now; None when not attached."""
        if self._states is None:
            return None
        states = self.last_states if self.last_states is not None else _safe_states(
            self._states)
        return analyze(states, self.tasks, elsewhere=self.elsewhere)

    # -- watchdog ----------------------------------------------------------------------
    def _progress(self) -> tuple[list[Any], dict[int, tuple]]:
        """What changes whenever a unit makes a step: the recorder's newest entries (compared
        by identity) when it records the units here, else (no recorder, or process units
        that record in their own processes) each actor's act count and status."""
        marks = self.recorder.markers() if self.recorder is not None else []
        if marks:
            return marks, {}
        return [], {s["task_id"]: (s.get("acts", 0), s.get("status"))
                    for s in _safe_states(self._states)}

    def _watch(self) -> None:
        assert self.stall_timeout is not None and self._states is not None
        period = min(max(self.stall_timeout / 5.0, 0.02), 1.0)
        last, since = self._progress(), time.monotonic()
        while not self._stop.wait(period):
            now, p = time.monotonic(), self._progress()
            if _moved(p, last):
                last, since = p, now
                continue
            if now - since < self.stall_timeout:
                continue
            states = _safe_states(self._states)
            report = analyze(states, self.tasks, elsewhere=self.elsewhere)
            if not report.pending:
                since = now  # idle, waiting for the client: not a stall
                self.idle_checks += 1
                continue
            if report.remote and now - since < 2 * self.stall_timeout:
                continue  # the root is on another machine: let its watchdog speak first
            self._stall(report, now - since)
            return

    def _stall(self, report: StuckReport, idle: float) -> None:
        self.stall = report
        path = self.dump("stalled", report.sentence)
        where = f"; flight recorder dumped to {path}" if path else ""
        err = StallError(f"watchdog: no actor made progress for {idle:.1f}s "
                         f"(stall_timeout={self.stall_timeout}s); {report.sentence}{where}")
        err.report = report
        err.dump_path = str(path) if path else None
        print(f"actorflow: {err}", file=sys.stderr)
        if self._fail is not None:
            self._fail(err)


def _neighbours(plan: Any, tasks: dict[int, dict]) -> dict[int, tuple[int, int]]:
    """Where the tasks a worker's plan share talks to but does not hold live: the share's
    routing (task -> [machine, thrd]); a whole plan has none, nothing is elsewhere."""
    ctrl = getattr(plan, "ctrl", None) or {}
    out = {}
    for tid, where in (ctrl.get("routing") or {}).items():
        try:
            t, (m, thrd) = int(tid), where
            if t not in tasks:
                out[t] = (int(m), int(thrd))
        except (TypeError, ValueError):
            continue  # a malformed route is validation's to name, not the watchdog's
    return out


def _moved(p: tuple[list[Any], dict[int, tuple]], last: tuple[list[Any], dict[int, tuple]]
           ) -> bool:
    """Whether any unit stepped between two ``_progress`` readings.  An actor missing from
    one reading (its unit did not answer in time) is no evidence either way."""
    (marks, acts), (lmarks, lacts) = p, last
    if len(marks) != len(lmarks) or any(a is not b and not (type(a) is int and a == b)
                                        for a, b in zip(marks, lmarks)):
        return True
    if any(k in lacts and lacts[k] != v for k, v in acts.items()):
        return True
    lacts.update((k, v) for k, v in acts.items() if k not in lacts)
    return False


def _safe_states(states: StatesFn | None) -> list[dict]:
    """Actor states read from another thread: retry if a unit mutated them meanwhile."""
    if states is None:
        return []
    for _ in range(50):
        try:
            return states()
        except RuntimeError:
            time.sleep(0.001)
    return states()


# -- SIGUSR1: dump every live Diagnostics of this process -----------------------------------
def _on_sigusr1(signum: int, frame: Any) -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for d in live:  # a signal handler runs between bytecodes of the main thread: keep it short
        path = d.dump("sigusr1")
        if path is not None:
            print(f"actorflow: SIGUSR1: state dumped to {path}", file=sys.stderr)


def _register(d: Diagnostics) -> None:
    global _PREV_HANDLER
    with _LIVE_LOCK:
        _LIVE.append(d)
        first = len(_LIVE) == 1
    if first and threading.current_thread() is threading.main_thread() and hasattr(
            signal, "SIGUSR1"):
        try:
            _PREV_HANDLER = signal.signal(signal.SIGUSR1, _on_sigusr1)
        except ValueError:  # not the main interpreter
            _PREV_HANDLER = None


def _unregister(d: Diagnostics) -> None:
    global _PREV_HANDLER
    with _LIVE_LOCK:
        if d in _LIVE:
            _LIVE.remove(d)
        last = not _LIVE
    if last and _PREV_HANDLER is not None and (
            threading.current_thread() is threading.main_thread()):
        signal.signal(signal.SIGUSR1, _PREV_HANDLER)
        _PREV_HANDLER = None
