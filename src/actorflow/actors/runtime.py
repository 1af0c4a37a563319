"""The runtime of one machine (or, in a Session, of every machine in one process).

Tasks with the same ``(machine_id, thrd_id)`` share one execution unit: one thread, one
inbox, one stream.  A unit takes a message, hands it to the actor's pure state machine,
and executes the returned actions in order; the loop is ``unit_loop.run_unit``, shared
with process units (only where messages come from differs).  Messages between actors of
the same unit go through a local deque and never touch a queue or a socket.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from actorflow.actors.cores import NativeRouter, NativeUnitCore, make_unit_core
from actorflow.actors.delivery import Batcher
from actorflow.actors.executors import ActorHost
from actorflow.actors.hosting import Deliver, Recorder, UnitRecorder
from actorflow.actors.memory import Allocator, HostAllocator, PinnedBuffers, unit_mem_case
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
from actorflow.errors import (
    ActorflowError,
    InternalError,
    KernelError,
    ProtocolError,
    UsageError,
    WaitTimeout,
)
from actorflow.plan.memory import check_fits, desc_bytes
from actorflow.plan.model import Plan, Task
from actorflow.protocol.messages import Act, Exit, Msg, cmd
from actorflow.protocol.state import describe_states
from actorflow.protocol.unit_core import UnitCore
from actorflow.streams.stream import CpuStream, make_stream
from actorflow.trace.recorder import FlightUnit, TraceUnit

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


class MachineRuntime:
    """Hosts the actors of some machines of a plan on threads and routes their messages.

    ``deliver``/``take_feed`` connect output/input actors to a client (a Session).
    """

    def __init__(
        self,
        plan: Plan,
        machine_ids: Iterable[int] | None = None,
        allocator: Allocator | None = None,
        recorder: Recorder | None = None,
        on_deliver: Deliver | None = None,
        units: Iterable[tuple[int, int]] | None = None,
        producer_of: dict[int, int] | None = None,
        native_loops: bool = True,
    ) -> None:
        """``units`` keeps only tasks of those ``(machine, thrd)`` (one process unit);
        ``producer_of`` adds producers of regst descs whose tasks are not in ``plan``;
        ``native_loops``: units on the compiled core run their whole loop in it (thread
        units; a process unit's loop reads its socket in Python)."""
        self.native_loops = native_loops
        self._native_router: NativeRouter | None = None
        self.lost: list[Msg] = []  # messages fault injection lost (``lose_first``)
        self._losing: tuple[int, int, int] | None = None
        self.plan = plan
        ids = set(machine_ids) if machine_ids is not None else {t.machine_id for t in plan.tasks}
        self.tasks = [t for t in plan.tasks if t.machine_id in ids]
        if units is not None:
            keep = set(units)
            self.tasks = [t for t in self.tasks if (t.machine_id, t.thrd_id) in keep]
        # messages to tasks not hosted here go to remote_send(msg) (routing.Router.send)
        self.remote_send: Callable[[Msg], None] | None = None
        self.recorder = recorder
        self.allocator = allocator or HostAllocator()
        self.on_deliver = on_deliver
        self.batcher: Batcher | None = None  # output pieces in batches (actors/delivery.py)
        # messages to peer units coalesced per loop turn (routing.Router with coalesce=True);
        # the unit loop flushes it before every blocking wait
        self.coalesced: Coalesced | None = None
        self.stopping = False
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._all_exited = threading.Event()
        self._exited: set[int] = set()
        self._feeds: dict[int, deque[dict]] = {}
        producer_of = dict(producer_of or {})
        producer_of.update(
            {d.regst_desc_id: t.task_id for t in plan.tasks for d in t.produced.values()})
        self.memory: dict[int, list[dict]] = {}
        check_fits(sum(desc_bytes(d) for t in self.tasks for d in t.produced.values()),
                   f"plan '{plan.job.name}' on machine(s) {sorted(ids)} of this process")
        self.mem_of = {d.regst_desc_id: d.mem_case for t in plan.tasks
                       for d in t.produced.values()}
        self.pinned = PinnedBuffers()
        for t in self.tasks:
            for d in t.produced.values():
                self.memory[d.regst_desc_id] = self.allocator.allocate(d)
        by_unit: dict[tuple[int, int], list[Task]] = {}
        for t in self.tasks:
            by_unit.setdefault((t.machine_id, t.thrd_id), []).append(t)
        self.units = {k: ThreadUnit(self, k, ts) for k, ts in sorted(by_unit.items())}
        self.route: dict[int, ThreadUnit] = {}
        for u in self.units.values():
            u.build(producer_of)
            for tid in u.actors:
                self.route[tid] = u
        if not self.tasks:
            self._all_exited.set()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self.pin_copy_buffers()
        for u in self.units.values():
            u.plan()
        for u in self.units.values():
            u.start()

    def native_router(self) -> NativeRouter:
        """Task -> inbox of every unit of this runtime on the native loop (made once)."""
        with self._lock:
            if self._native_router is None:
                self._native_router = NativeRouter(
                    [u.core for u in self.units.values()
                     if u.native and isinstance(u.core, NativeUnitCore)])
            return self._native_router

    def pin_copy_buffers(self) -> None:
        """Pin the host regsts this runtime's copy tasks copy from/to (once its memory,
        including regsts other units produce, is in place)."""
        self.pinned.pin(self.tasks, self.memory, self.mem_of)

    def close_streams(self) -> None:
        """Finish every unit's stream (worker threads, device streams) and unpin memory."""
        for u in self.units.values():
            u.stream.close()
        self.pinned.close()

    def send(self, msg: Msg, from_unit: ThreadUnit | None = None) -> None:
        if self._losing is not None and self._loses(msg):
            return
        u = self.route.get(msg.dst)
        if u is None:
            if from_unit is not None and from_unit.remote is not None:
                from_unit.remote.send(msg)
                return
            if self.remote_send is not None:
                self.remote_send(msg)
                return
            raise ProtocolError(f"no route to task {msg.dst} for {msg!r}")
        u.put(msg)  # (messages between actors of one unit never get here: its core)

    def lose_first(self, type_: int, piece: int, dst: int | None = None) -> list[Msg]:
        """Fault injection for tests of hangs: the first message of ``type_`` for ``piece``
        (to task ``dst``, if given) that one unit sends to another is lost, on either core;
        returns the list that will hold it."""
        self._losing = (type_, piece, -2 if dst is None else dst)
        if any(u.native for u in self.units.values()):
            self.native_router().lose_first(type_, piece, self._losing[2])
        return self.lost

    def _loses(self, msg: Msg) -> bool:
        if msg.src < 0 or self._losing is None:
            return False
        if any(u.native for u in self.units.values()):  # one loss for both paths
            lose = self.native_router().take_loss(msg)
        else:
            t, p, d = self._losing
            lose = (msg.type, msg.piece_id) == (t, p) and d in (-2, msg.dst)
            if lose:
                self._losing = None
        if lose:
            self.lost.append(msg)
        return lose

    def command(self, task_id: int, name: str, arg: int | None = None) -> None:
        self.send(cmd(task_id, name, arg))

    def actor_exited(self, task_id: int) -> None:
        with self._lock:
            self._exited.add(task_id)
            if len(self._exited) == len(self.tasks):
                self._all_exited.set()

    def fail(self, error: BaseException, cause: BaseException | None = None) -> None:
        with self._lock:
            if self.error is None:
                if cause is not None:
                    error.__cause__ = cause
                self.error = error
        self.stopping = True
        for u in self.units.values():
            u.stop()
        self._all_exited.set()
        if self.on_deliver is not None:
            self.on_deliver(None, -1, {})  # wake the client

    def exited_within(self, timeout: float) -> bool:
        """True once every actor exited or the runtime failed; False after ``timeout``."""
        return self._all_exited.wait(timeout)

    def wait_exited(self, timeout: float) -> None:
        """Wait until every actor exited; the timeout error names the ones still alive."""
        if not self._all_exited.wait(timeout):
            raise WaitTimeout(
                f"waited {timeout:.1f}s for every actor to exit; still running: "
                f"{self.describe_live()}")
        if self.error is not None:
            raise self.error

    def actor_states(self) -> list[dict]:
        """Every hosted actor's ``blocked_on()`` and unit: plain data for trace dumps."""
        out = []
        for u in list(self.units.values()):
            if u.core is None:
                continue
            for s in u.core.blocked_on():
                s["machine_id"], s["thrd_id"] = u.key
                out.append(s)
        return out

    def describe_live(self, limit: int = 8) -> str:
        live = [s for u in self.units.values() if u.core is not None
                for s in u.core.blocked_on() if s["task_id"] not in self._exited]
        return describe_states(live, limit)

    def join(self, timeout: float = 10.0) -> None:
        self.stopping = True
        deadline = time.monotonic() + timeout
        for u in self.units.values():
            if u.thread is not None and u.thread.is_alive():
                u.stop()
        for u in self.units.values():
            if u.thread is not None:
                u.thread.join(max(0.0, deadline - time.monotonic()))
                if u.thread.is_alive():
                    raise WaitTimeout(f"unit thread {u.name} did not stop within {timeout:.1f}s")
        self.close_streams()
        self.allocator.close()

    # -- client side -----------------------------------------------------------------
    def push_feed(self, task_id: int, arrays: dict) -> None:
        with self._lock:
            self._feeds.setdefault(task_id, deque()).append(arrays)
        self.command(task_id, "feed")

    def take_feed(self, task_id: int) -> dict:
        with self._lock:
            q = self._feeds.get(task_id)
            if not q:
                raise ProtocolError(f"input task {task_id} acted with no fed piece")
            return q.popleft()

    def deliver(self, task: Task, piece_id: int, arrays: dict) -> None:
        """An output actor's piece; ``arrays`` are its regst (reused once the act is done):
        a ``batcher`` copies them into a batch, ``on_deliver`` gets its own copies."""
        if self.batcher is not None:
            self.batcher.add(task, piece_id, arrays)
            return
        if self.on_deliver is None:
            raise KernelError(task.label, task.task_id, task.machine_id, piece_id,
                              "output actor has no client to deliver to")
        self.on_deliver(task, piece_id, {k: v.copy() for k, v in arrays.items()})
