"""One thread unit: its inbox, its actors' core, its stream, and the loop that drives them.

A unit hosts the actors of one ``(machine, thrd)``.  Its core (``protocol.unit_core``: the
Python reference, or the compiled one) runs the state machines and the local queue; the
unit carries out what the core returns (``execute``: the one Python shell, which process
units run too), or, with the compiled core on an inline CPU stream, lets the core run the
whole loop in C (``native_unit.py``).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from actorflow.actors.cores import NativeUnitCore, make_unit_core
from actorflow.actors.executors import ActorHost
from actorflow.actors.hosting import UnitRecorder
from actorflow.actors.memory import unit_mem_case
from actorflow.actors.native_trace import NativeFlight, NativeTrace
from actorflow.actors.native_unit import NativeShell, plan_acts
from actorflow.actors.unit_loop import (
    BATCH_WAIT,
    DRAIN,
    STREAM_POLL,
    STREAM_WAKE_WAIT,
    WAIT,
    Coalesced,
    run_unit,
)
from actorflow.errors import ActorflowError, InternalError, ProtocolError, UsageError
from actorflow.plan.model import Task
from actorflow.protocol.messages import Act, Exit, Msg
from actorflow.protocol.unit_core import UnitCore
from actorflow.streams.stream import CpuStream, make_stream
from actorflow.trace.recorder import FlightUnit, TraceUnit

if TYPE_CHECKING:
    from actorflow.actors.runtime import MachineRuntime

_STOP = object()
_WAKE = object()  # put by a stream's completion thread: an act finished, drain the stream


class ThreadUnit:
    """One execution unit: a thread with an inbox, its actors' core and its stream.

    Satisfies ``unit_loop.Unit``: the loop hands it every drain of messages (``push``); the
    unit's core (``protocol.unit_core``: Python reference or compiled) runs the state
    machines and the local queue, and the unit carries out the actions it returns."""

    def __init__(self, runtime: MachineRuntime, key: tuple[int, int], tasks: list[Task]) -> None:
        self.runtime = runtime
        self.key = key
        self.name = f"actorflow-m{key[0]}-t{key[1]}"
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.stream = make_stream(unit_mem_case(tasks, runtime.mem_of))
        self.tasks = tasks
        self.actors: dict[int, ActorHost] = {}
        self.core: UnitCore | None = None
        self.native = False  # the whole loop runs in the compiled core (native_unit.py)
        self.native_rec: NativeFlight | NativeTrace | None = None  # its trace, if recorded
        # its own sender to other machines, batching per loop turn (thread_hosting.py); None:
        # the runtime's remote_send
        self.remote: Coalesced | None = None
        self.thread: threading.Thread | None = None
        self.woken = False  # True once the stream wakes this unit (thread units)
        # trace hooks (actorflow.trace.recorder), None = no calls at all: ``ring`` is the
        # flight recorder, a bare deque.append of messages that already exist (each one
        # handed to an actor, each one sent to another unit);
        # ``timed`` gets a timestamped call per event (full tracing)
        rec = runtime.recorder.unit(key) if runtime.recorder is not None else None
        self.rec = rec
        self.timed = rec if rec is not None and rec.timed else None
        self.stream.timing = self.timed is not None  # device streams: events for device time

    @property
    def live(self) -> int:
        return self.core.live if self.core is not None else 0

    def build(self, producer_of: dict[int, int]) -> None:
        rt = self.runtime
        self.core = make_unit_core(self.tasks, producer_of, f"unit {self.name}", self.rec)
        for t in self.tasks:
            self.actors[t.task_id] = ActorHost(t, rt, self.stream, self)
        # the native loop: a compiled core on an inline CPU stream, recorded by the standard
        # recorder units (or none); other units run the Python shell below over their core
        rec, core = self.rec, self.core
        if not isinstance(core, NativeUnitCore):
            return
        if (rt.native_loops and type(self.stream) is CpuStream
                and (rec is None or type(rec) in (FlightUnit, TraceUnit))):
            self.native = True
            if isinstance(rec, TraceUnit):
                self.native_rec = NativeTrace(core, self.key, rec.writer, rec.size,
                                              rec.buffer_size)
            self.timed = None  # the compiled loop records every event itself
        if type(rec) is FlightUnit:  # the core keeps the flight ring (either shell)
            self.native_rec = NativeFlight(core, self.key, rec.size)
        if self.native_rec is not None and rt.recorder is not None:
            rt.recorder.adopt(self.key, self.native_rec)

    def plan(self) -> None:
        """How the native loop runs each act (once the runtime's memory is complete), and
        whether it spins before it sleeps."""
        if self.native:
            assert isinstance(self.core, NativeUnitCore)
            plan_acts(self.core, self.actors, self.runtime.memory)
            self.core.set_spin(spin_ns(sum(u.native for u in self.runtime.units.values())))

    def start(self) -> None:
        # completions wake the loop (no polling); process units poll their socket instead
        if not self.native:
            self.stream.set_waker(lambda: self.inbox.put(_WAKE))
        self.woken = True
        self.thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        rt = self.runtime
        try:
            self._loop()
        except ActorflowError as e:
            rt.fail(e)
        except Exception as e:  # a bug in the runtime itself: still stop everything
            rt.fail(InternalError(f"unit {self.name} crashed: {type(e).__name__}: {e}"), e)

    def _loop(self) -> None:
        if self.native:
            assert isinstance(self.core, NativeUnitCore)
            self.core.run(NativeShell(self), self.runtime.native_router())
        else:
            run_unit(self, _QueueSource(self))

    def put(self, msg: Msg) -> None:
        """A message for this unit from another thread (its inbox: native or a queue)."""
        if self.native:
            assert isinstance(self.core, NativeUnitCore)
            self.core.put(msg)
        else:
            self.inbox.put(msg)

    def stop(self) -> None:
        """Wake the loop to stop (the runtime is stopping or failed)."""
        if self.native:
            assert isinstance(self.core, NativeUnitCore)
            self.core.stop_loop()
        else:
            self.inbox.put(_STOP)

    def waiting(self) -> list[Msg]:
        """Take the messages waiting for a unit whose loop is not running (tests)."""
        if self.native:
            assert isinstance(self.core, NativeUnitCore)
            return self.core.waiting()
        out = []
        while not self.inbox.empty():
            m = self.inbox.get_nowait()
            if isinstance(m, Msg):
                out.append(m)
        return out

    # -- unit_loop.Unit ------------------------------------------------------------------
    def push(self, msgs: list[Msg]) -> None:
        """Hand a drain of messages to the core and carry out what it returns."""
        assert self.core is not None, "build() first"
        self.execute(self.core.push(msgs))

    def stream_pending(self) -> bool:
        return self.stream.has_pending()

    def drain_stream(self) -> None:
        """Finish the acts the stream completed, in completion order (``execute``)."""
        self.execute(())

    def wait_timeout(self) -> float:
        if self.stream.has_pending():  # an asynchronous stream with acts in flight
            return STREAM_WAKE_WAIT if self.woken else STREAM_POLL
        batcher = self.runtime.batcher
        return BATCH_WAIT if batcher is not None and batcher.pending else WAIT

    def holding(self) -> bool:
        out, mine = self.runtime.coalesced, self.remote
        return (out is not None and out.pending) or (mine is not None and mine.pending)

    def flush(self) -> None:
        out = self.runtime.coalesced
        if out is not None:
            out.flush()
        if self.remote is not None:
            self.remote.flush()

    def idle(self) -> None:
        if self.runtime.batcher is not None:
            self.runtime.batcher.flush()

    def finish(self) -> None:
        self.flush()
        self.idle()  # before the unit says it is done: every piece is out first

    # -- carrying out ----------------------------------------------------------------------
    def _act_end(self, timed: UnitRecorder, act: Act) -> None:
        """Trace an asynchronous act's end, with its host launch / device times if the
        stream measured them (device streams, from events)."""
        timing = self.stream.act_timing(act)
        if timing is not None:
            timed.act_device(act, *timing)
        timed.act_end(act)

    def execute(self, actions: Sequence[Any]) -> None:
        """Carry out the core's actions in order, then the completions of the stream (each
        batch of completions through the core again), then the messages the core still
        holds, until nothing is left: the one place that takes completions, so acts that
        complete while earlier ones' messages go out queue behind them (a READY's seq
        follows its act's order)."""
        rt = self.runtime
        send, exited = rt.send, rt.actor_exited
        timed, stream, hosts = self.timed, self.stream, self.actors
        sync, launch = stream.synchronous, stream.launch
        core = self.core
        assert core is not None
        acts = actions
        while True:
            for a in acts:
                tp = type(a)
                if tp is Msg:
                    send(a, self)
                elif tp is Act:
                    if timed is None:
                        launch(hosts[a.task_id], a)
                    else:
                        timed.act_begin(a)
                        launch(hosts[a.task_id], a)
                        if sync:
                            timed.act_end(a)
                elif tp is Exit:
                    exited(a.task_id)
                else:
                    raise ProtocolError(f"unit {self.name}: the core returned {a!r}, which is "
                                        "no action (Msg, Act, Exit)")
            done = stream.completed()
            if done:
                if timed is not None and not sync:  # an async act is done when its stream says
                    for _h, act in done:
                        self._act_end(timed, act)
                acts = core.completed([act for _h, act in done])
            elif core.busy:  # messages the core has not handled yet (it stopped at an act)
                acts = core.push(())
            else:
                return


SPIN_ENV = "ACTORFLOW_SPIN_US"


def spin_ns(busy_threads: int) -> int:
    """How long a native loop spins for a message before it sleeps: ``ACTORFLOW_SPIN_US``
    (default 0), and never when the process's unit threads outnumber its cores (a spinning
    loop would take the core the sender needs)."""
    try:
        us = float(os.environ.get(SPIN_ENV, "0") or 0)
    except ValueError:
        raise UsageError(f"{SPIN_ENV}={os.environ[SPIN_ENV]!r} is not a number of "
                         "microseconds") from None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    return int(us * 1000) if busy_threads < cores else 0


class _QueueSource:
    """A thread unit's messages: its inbox queue (other units, the node's receiver)."""

    def __init__(self, unit: ThreadUnit) -> None:
        self.inbox = unit.inbox
        self.get = unit.inbox.get
        self.runtime = unit.runtime
        self.stopped = False

    def next(self, timeout: float) -> Msg | None:
        try:
            msg = self.get(timeout=timeout)
        except queue.Empty:
            return None
        if msg is _STOP:
            self.stopped = True
            return None
        if msg is _WAKE:  # an act completed: the loop drains the stream next
            return None
        return msg

    def take(self, timeout: float) -> list[Msg]:
        """Every message waiting (blocking up to ``timeout`` for the first)."""
        first = self.next(timeout)
        if first is None:
            return []
        batch = [first]
        inbox = self.inbox
        while len(batch) < DRAIN and not inbox.empty():
            m = inbox.get_nowait()
            if m is _STOP:
                self.stopped = True
                break
            if m is not _WAKE:
                batch.append(m)
        return batch

    def idle(self) -> bool:
        return not (self.stopped or self.runtime.stopping)
