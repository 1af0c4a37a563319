"""The runtime of one machine (or, in a Session, of every machine in one process).

Tasks with the same ``(machine_id, thrd_id)`` share one execution unit: one thread, one
inbox, one stream.  A unit takes a message, hands it to the actor's pure state machine,
and executes the returned actions in order; the loop is ``unit_loop.run_unit``, shared
with process units (only where messages come from differs).  Messages between actors of
the same unit go through a local deque and never touch a queue or a socket.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from actorflow.actors.delivery import Batcher
from actorflow.actors.executors import ActorHost
from actorflow.actors.hosting import Deliver, Recorder, UnitRecorder
from actorflow.actors.memory import Allocator, HostAllocator, PinnedBuffers, unit_mem_case
from actorflow.actors.unit_loop import Coalesced, run_unit
from actorflow.errors import (
    ActorflowError,
    InternalError,
    KernelError,
    ProtocolError,
    WaitTimeout,
)
from actorflow.plan.memory import check_fits, desc_bytes
from actorflow.plan.model import Plan, Task
from actorflow.protocol.kinds import make_state
from actorflow.protocol.messages import Act, Exit, Msg, cmd
from actorflow.protocol.state import describe_states
from actorflow.streams.stream import make_stream

_STOP = object()
_WAKE = object()  # put by a stream's completion thread: an act finished, drain the stream


class ThreadUnit:
    """One execution unit: a thread with an inbox dispatching to its actors."""

    def __init__(self, runtime: MachineRuntime, key: tuple[int, int], tasks: list[Task]) -> None:
        self.runtime = runtime
        self.key = key
        self.name = f"actorflow-m{key[0]}-t{key[1]}"
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.local: deque[Msg] = deque()
        self.stream = make_stream(unit_mem_case(tasks, runtime.mem_of))
        self.tasks = tasks
        self.actors: dict[int, ActorHost] = {}
        self.live = 0
        self.thread: threading.Thread | None = None
        self.woken = False  # True once the stream wakes this unit (thread units)
        # trace hooks (actorflow.trace.recorder), None = no calls at all: ``ring`` is the
        # flight recorder, a bare deque.append of messages that already exist (each one
        # handed to an actor, each one sent to another unit);
        # ``timed`` gets a timestamped call per event (full tracing)
        rec = runtime.recorder.unit(key) if runtime.recorder is not None else None
        self.rec = rec
        self.ring = rec.ring if rec is not None else None
        self.timed = rec if rec is not None and rec.timed else None
        self.stream.timing = self.timed is not None  # device streams: events for device time

    def build(self, producer_of: dict[int, int]) -> None:
        for t in self.tasks:
            state = make_state(t, producer_of)
            self.actors[t.task_id] = ActorHost(t, state, self.runtime, self.stream, self)
        self.live = len(self.actors)

    def start(self) -> None:
        # completions wake the loop (no polling); process units poll their socket instead
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
        run_unit(self, _QueueSource(self))

    def dispatch(self, msg: Msg) -> None:
        """Hand one message to its actor and execute what it returns (every unit's loop)."""
        host = self.actors.get(msg.dst)
        if host is None:
            raise ProtocolError(f"unit {self.name} got {msg!r} for a task it does not host")
        if self.timed is not None:
            self.timed.recv(msg)
        elif self.ring is not None:
            self.ring(msg)
        self.execute(host, host.state.handle(msg))

    def _drain_stream(self) -> None:
        """Finish the acts the stream completed, in completion order: ``execute`` is the one
        place that takes completions, so acts that complete while earlier ones' messages go
        out queue behind them (a READY's seq follows its act's order)."""
        self.execute(None, ())

    def _act_end(self, timed: UnitRecorder, act: Act) -> None:
        """Trace an asynchronous act's end, with its host launch / device times if the
        stream measured them (device streams, from events)."""
        timing = self.stream.act_timing(act)
        if timing is not None:
            timed.act_device(act, *timing)
        timed.act_end(act)

    def execute(self, host: ActorHost | None, actions: Sequence[Any]) -> None:
        rt = self.runtime
        send = rt.send
        ring, timed = self.ring, self.timed
        stream = self.stream
        sync = stream.synchronous
        local, mine = self.local, self.actors
        pending: deque | None = None  # made only when an act completes (no per-call alloc)
        h: Any = host  # None only with no actions (a drain of the stream)
        acts = actions
        while True:
            for a in acts:
                tp = type(a)
                if tp is Msg:
                    if timed is not None:
                        timed.send(a)
                    if a.dst in mine:  # same unit: straight to the local deque
                        local.append(a)
                    else:
                        if ring is not None:
                            ring(a)
                        send(a, self)
                elif tp is Act:
                    if timed is not None:
                        timed.act_begin(a)
                        stream.launch(h, a)
                        if sync:
                            timed.act_end(a)
                    else:
                        stream.launch(h, a)
                elif tp is Exit:
                    self.live -= 1
                    rt.actor_exited(a.task_id)
            for h2, act in stream.completed():
                if timed is not None and not sync:
                    self._act_end(timed, act)  # an async act counts as done when its stream says so
                done = h2.state.act_done(act)
                if pending is None:
                    pending = deque()
                pending.append((h2, done))
            if not pending:
                return
            h, acts = pending.popleft()


class _QueueSource:
    """A thread unit's messages: its inbox queue (other units, the node's receiver)."""

    def __init__(self, unit: ThreadUnit) -> None:
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
    ) -> None:
        """``units`` keeps only tasks of those ``(machine, thrd)`` (one process unit);
        ``producer_of`` adds producers of regst descs whose tasks are not in ``plan``."""
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
            u.start()

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
        u = self.route.get(msg.dst)
        if u is None:
            if self.remote_send is not None:
                self.remote_send(msg)
                return
            raise ProtocolError(f"no route to task {msg.dst} for {msg!r}")
        if u is from_unit:
            u.local.append(msg)
        else:
            u.inbox.put(msg)

    def command(self, task_id: int, name: str, payload: Any = None) -> None:
        self.send(cmd(task_id, name, payload))

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
            u.inbox.put(_STOP)
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
            for h in list(u.actors.values()):
                s = h.state.blocked_on()
                s["machine_id"], s["thrd_id"] = u.key
                out.append(s)
        return out

    def describe_live(self, limit: int = 8) -> str:
        live = [h.state.blocked_on() for u in self.units.values() for h in u.actors.values()
                if h.task_id not in self._exited]
        return describe_states(live, limit)

    def join(self, timeout: float = 10.0) -> None:
        self.stopping = True
        deadline = time.monotonic() + timeout
        for u in self.units.values():
            if u.thread is not None and u.thread.is_alive():
                u.inbox.put(_STOP)
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
