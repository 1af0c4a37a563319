"""Schedulers: move instructions from pending to their stream workers in dependency order.

Two designs with the same semantics (asynchronous; ordered by read/write dependencies on
blob objects; each stream runs its instructions in issue order), chosen by name:

``thread`` — seed 000's design.  The issuing thread only appends to a pending list; one
    scheduler thread takes it, links each instruction's dependencies, keeps it in its
    stream's waiting list until every instruction of another stream it depends on is
    done, then dispatches it to the stream's worker.  Workers tell the scheduler when
    instructions finish.
``inline`` — the default, measured faster in ``bench/eager.py``.  The issuing thread
    links dependencies itself (under the VM lock) and puts the instruction straight into
    its stream's FIFO; the worker, at the head of its FIFO, waits for the few
    unfinished instructions of other streams it depends on (what a CUDA stream does with
    an event wait).  No scheduler thread, no extra hop per instruction.
"""

from __future__ import annotations

import threading
from collections import deque
from queue import SimpleQueue
from typing import TYPE_CHECKING

from actorflow.eager.deps import link
from actorflow.eager.instruction import Instruction
from actorflow.registry import Registry

if TYPE_CHECKING:
    from actorflow.eager.vm import VirtualMachine
    from actorflow.eager.worker import StreamRt


class Scheduler:
    name = ""
    wants_done = False  # True: workers call on_done after each instruction
    fuses = True  # ops may join the stream's last instruction (the FIFO's tail)

    def __init__(self, vm: VirtualMachine) -> None:
        self.vm = vm

    def submit(self, instrs: list[Instruction]) -> None:
        """Called by the VM under its lock, in issue order."""
        raise NotImplementedError

    def submit_one(self, instr: Instruction) -> None:
        self.submit([instr])

    def on_done(self, instr: Instruction) -> None:
        """Called by a worker after ``instr.done`` became true."""

    def close(self, timeout: float) -> None:
        pass


class InlineScheduler(Scheduler):
    name = "inline"

    def submit(self, instrs: list[Instruction]) -> None:
        for i in instrs:
            s = i.stream
            deps = link(i)
            if deps:
                i.deps = [d for d in deps if d.stream is not s]
            i.dispatched = True
            s.put(i)

    def submit_one(self, i: Instruction) -> None:
        s = i.stream
        deps = link(i)
        if deps:  # usually only this stream's own previous op: keep no list then
            other = None
            for d in deps:
                if d.stream is not s:
                    if other is None:
                        other = []
                    other.append(d)
            if other is not None:
                i.deps = other
        i.dispatched = True
        s.dq.append(i)  # = s.put(i), inlined on the hot path
        if s.sleeping:  # wake it once: later ops see the flag cleared until it re-arms
            with s.cv:
                s.cv.notify()
                s.sleeping = False


_WAKE = object()


class ThreadScheduler(Scheduler):
    name = "thread"
    wants_done = True
    fuses = False  # an instruction waits in the scheduler, not at the FIFO's tail

    def __init__(self, vm: VirtualMachine) -> None:
        super().__init__(vm)
        self.q: SimpleQueue = SimpleQueue()
        self.waiting: dict[StreamRt, deque[Instruction]] = {}
        self.nwaiting = 0  # instructions held back; workers only wake us when > 0
        self.thread = threading.Thread(target=self._loop, name="actorflow-vm-scheduler",
                                       daemon=True)
        self.thread.start()

    def submit(self, instrs: list[Instruction]) -> None:
        self.q.put(instrs)

    def on_done(self, instr: Instruction) -> None:
        if self.nwaiting:
            self.q.put(_WAKE)

    def close(self, timeout: float) -> None:
        self.q.put(None)
        self.thread.join(timeout)

    def _loop(self) -> None:
        q = self.q
        while True:
            item = q.get()
            if item is None:
                return
            if item is not _WAKE:
                self._receive(item)
            self._dispatch_ready()

    def _receive(self, instrs: list[Instruction]) -> None:
        for i in instrs:
            s = i.stream
            deps = link(i)
            i.deps = [d for d in deps if d.stream is not s]
            w = self.waiting.get(s)
            if w is None:
                w = self.waiting[s] = deque()
            w.append(i)
            self.nwaiting += 1  # before the done checks below (see on_done)

    def _dispatch_ready(self) -> None:
        for s, w in self.waiting.items():
            while w:
                head = w[0]
                if head.deps and not all(d.done for d in head.deps):
                    break  # the stream keeps its order: nothing behind the head goes first
                w.popleft()
                self.nwaiting -= 1
                head.deps = ()
                head.dispatched = True
                s.put(head)


def _load() -> None:
    pass


SCHEDULERS: Registry[type[Scheduler]] = Registry("eager scheduler", _load)
SCHEDULERS.register("inline", InlineScheduler)
SCHEDULERS.register("thread", ThreadScheduler)
