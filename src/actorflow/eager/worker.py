"""Stream workers: one thread per VM stream runs that stream's instructions in order.

A worker takes instructions from its FIFO, waits for those still-unfinished instructions
of *other* streams that the scheduler said it depends on (same-stream order is the FIFO
itself), and launches each on its ``streams.Stream``: a synchronous CPU stream runs the
kernel right away; an asynchronous one (CUDA, the deferred CPU stream) reports it done
later through ``completed()``, and only then is the instruction marked done.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from typing import TYPE_CHECKING, Any

from actorflow.eager.instruction import Instruction, StreamType
from actorflow.kernels.registry import KernelContext

if TYPE_CHECKING:
    from actorflow.eager.vm import VirtualMachine

POLL_S = 0.0002  # how often an idle worker polls an asynchronous stream for completions
IDLE_WAIT = 0.5  # s an idle worker sleeps before it looks again (a lost wake-up's cost)


class _ActRecord:
    """What the trace recorder reads of an instruction (an 'act' of the stream's track)."""

    __slots__ = ("act_id", "piece_id", "reads", "task_id", "writes")

    def __init__(self, track: int, instr: Instruction) -> None:
        self.task_id = track
        self.act_id = self.piece_id = instr.id
        self.reads = [(b.id, 0) for b in instr.reads]
        self.writes = [(b.id, 0) for b in instr.writes]


class StreamRt:
    """One stream of the VM (a stream type on one device index) and its worker thread.

    The counters are written by this worker only, so summing them needs no lock.
    """

    def __init__(self, vm: VirtualMachine, stype: StreamType, index: int, track: int,
                 stream: Any = None) -> None:
        self.vm = vm
        self.stype = stype
        self.index = index
        self.track = track  # the trace track (a "task id" in trace files)
        self.label = f"{stype.name}:{index}"
        self.stream = stype.make_stream(index) if stream is None else stream
        self.xp = self.stream.xp
        self.kctx = KernelContext(xp=self.xp)
        self.ufuncs: dict[str, Any] = {}  # element-wise kernels by name, from self.xp
        self.allocated = self.freed = self.allocs = self.frees = self.executed = 0
        self.reused = 0  # buffers of dead intermediates a fused chain wrote into
        self.last: Instruction | None = None  # the last instruction submitted (issue side)
        self.current: Instruction | None = None  # the one launched last (for stuck reports)
        self.unit: Any = None  # trace hooks while tracing
        self.names: dict[int, str] = {}  # instruction id -> name, while tracing
        self._unbegun: deque[_ActRecord] = deque()  # launched acts queued behind others
        self.dq: deque[Instruction | None] = deque()  # the stream's FIFO (None: stop)
        self.cv = threading.Condition(threading.Lock())  # wakes the worker
        self.sleeping = False
        self.run_lock = threading.Lock()  # held while instructions of this stream run
        self.pop_lock = threading.Lock()  # taking the FIFO's head vs. fusing into it
        self.sync = bool(getattr(self.stream, "synchronous", False))
        self.executor = StreamRt._execute  # CpuStream.launch calls host.executor(host, act)
        self.thread = threading.Thread(target=self._loop, name=f"actorflow-vm-{self.label}",
                                       daemon=True)
        self.thread.start()

    def put(self, instr: Instruction | None) -> None:
        self.dq.append(instr)
        if self.sleeping:  # appended before the check: a worker going to sleep sees it
            with self.cv:
                self.cv.notify()
                self.sleeping = False  # one wake-up is enough until it re-arms (see _loop)

    def stop(self) -> None:
        self.put(None)

    # -- the loop ----------------------------------------------------------------------------
    def _loop(self) -> None:
        dq, cv = self.dq, self.cv
        while True:
            if not dq:
                with cv:
                    self.sleeping = True  # set before the last look (see put)
                    while not dq:
                        cv.wait(IDLE_WAIT)
                        # an issuer clears the flag when it wakes us; re-arm before the next
                        # look, as a helping waiter may have drained the FIFO meanwhile
                        self.sleeping = True
                    self.sleeping = False
            with self.run_lock:
                if self._drain():
                    return

    def _drain(self) -> bool:
        """Run what is queued, in order; True when the stop mark came up."""
        dq, stream, pop_lock = self.dq, self.stream, self.pop_lock
        while dq:
            with pop_lock:
                instr = dq.popleft()
                if instr is not None:
                    instr.started = True
            if instr is None:
                while stream.has_pending():  # finish what the device still runs
                    self._reap()
                    time.sleep(POLL_S)
                self._reap()
                return True
            if self.sync:
                self._run_here(instr)
                continue
            self._begin(instr)
            stream.launch(self, instr)
            self._reap()
            while stream.has_pending() and not dq:  # poll the device while nothing is queued
                time.sleep(POLL_S)
                self._reap()
        return False

    def help_until(self, instr: Instruction) -> None:
        """A thread waiting for ``instr`` runs this stream's queue itself while the worker
        is idle (same order, same dependency waits, under the same run lock): it saves two
        thread hand-offs.  Only synchronous streams; a busy worker is left alone."""
        if not self.sync or not instr.dispatched or not self.run_lock.acquire(blocking=False):
            return
        try:
            dq = self.dq
            while not instr.done and dq:
                with self.pop_lock:
                    nxt = dq[0]
                    if nxt is None:  # the stop mark stays for the worker
                        return
                    dq.popleft()
                    nxt.started = True
                self._run_here(nxt)
        finally:
            self.run_lock.release()

    def _begin(self, instr: Instruction) -> None:
        """Wait for its dependencies on other streams; record the act's start if traced."""
        if instr.deps:
            self._wait_deps(instr)
        self.current = instr
        unit = self.unit
        if unit is not None:
            self.names[instr.id] = self.vm.trace_name(instr)
            if self.sync or not self.stream.has_pending():
                unit.act_begin(_ActRecord(self.track, instr))
            else:  # the stream runs in order: this act starts when the last one ends
                self._unbegun.append(_ActRecord(self.track, instr))

    def _run_here(self, instr: Instruction) -> None:
        """Run ``instr`` on this thread (synchronous streams: the worker or a helper)."""
        self._begin(instr)
        try:
            self._execute(instr)
        except BaseException as e:  # e.g. Ctrl-C in a helping thread: fail, never hang
            self.vm.fail(instr, e, "interrupted while it ran")
            if threading.current_thread() is not self.thread:
                raise  # the helping thread gets its interrupt; the worker carries on
        finally:
            self._finish(instr)

    def _wait_deps(self, instr: Instruction) -> None:
        """Wait for the unfinished instructions of other streams ``instr`` depends on.  An
        asynchronous stream keeps reaping its own completions meanwhile: the instruction
        waited for may itself wait for work this stream launched."""
        vm = self.vm
        for d in instr.deps:
            if self.sync:
                if not d.done:
                    vm.wait_internal(d, self)
                continue
            while not d.done:
                self._reap()
                if not d.done:
                    vm.wait_internal(d, self, POLL_S)

    def _reap(self) -> None:
        for _host, instr in self.stream.completed():
            self._finish(instr)

    def run(self, instr: Instruction) -> None:  # CudaStream.launch calls host.run(act)
        self._execute(instr)

    def _execute(self, instr: Instruction) -> None:
        try:
            if not instr.itype.own_inputs:
                for b in instr.reads:
                    if b.error is not None:  # an input was never computed: pass it on
                        for w in instr.writes:
                            w.error = b.error
                        return
            instr.itype.compute(instr, self)
        except Exception as e:
            self.vm.fail(instr, e, traceback.format_exc())

    def _finish(self, instr: Instruction) -> None:
        self.executed += 1
        unit = self.unit
        if unit is not None:
            unit.act_end(_ActRecord(self.track, instr))
            if self._unbegun:  # (asynchronous streams) the next act starts now
                unit.act_begin(self._unbegun.popleft())
        # drop what a finished instruction holds: blob -> producer -> blob would be a
        # reference cycle per op, left to the cyclic GC (which then scans every pending one)
        instr.operand = None
        instr.reads = instr.writes = instr.deps = ()  # (tuples: the compiled records' type)
        instr.done = True
        self.vm.on_done(instr)

    def join(self, timeout: float) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()
