"""The virtual machine: streams with their workers, a scheduler, waits, errors, counters.

Callers build instructions (``builder.py``) and ``submit`` them; the scheduler orders
them by their reads and writes and the stream workers run them.  ``wait``/``sync`` are
the only places a caller blocks; they surface kernel errors (``EagerKernelError``, naming
the op and the user's file:line) and then the VM carries on.  Blobs whose last tensor
died are released in batches by release instructions on their device's compute stream.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from actorflow.eager.blob import BlobObject
from actorflow.eager.chain import Step, try_fuse
from actorflow.eager.device import Device
from actorflow.eager.instruction import INSTRUCTION_TYPES, STREAM_TYPES, Instruction
from actorflow.eager.scheduler import SCHEDULERS
from actorflow.eager.worker import StreamRt
from actorflow.errors import EagerKernelError, UsageError, WaitTimeout
from actorflow.kernels.registry import KernelContext

RELEASE_BATCH = 32  # release instructions carry up to this many blobs...
RELEASE_BYTES = 1 << 20  # ...unless this many bytes wait to be returned


class _NativeScheduler:
    """The inline scheduler's two entry points, on the compiled core's issue side."""

    name = "inline"
    fuses = True
    wants_done = False

    def __init__(self, state: Any) -> None:
        self.submit = state.submit
        self.submit_one = state.submit_one

    def close(self, timeout: float) -> None:
        pass


def _at(name: str, where: Any) -> str:
    return f"{name} @ {where[0].rsplit('/', 1)[-1]}:{where[1]}" if where else name


class VirtualMachine:
    def __init__(self, scheduler: str = "inline", timeout: float = 300.0,
                 fuse: bool = True, core: str | None = None) -> None:
        from actorflow.eager.core import module

        if scheduler == "thread":
            core = "python"  # seed 000's scheduler thread is the Python reference's
        self.core: Any = module(core)
        self.state: Any = None  # the compiled core's issue side (None: Python core)
        self.timeout = timeout  # default for every wait
        self.lock = threading.Lock()  # issue side: scheduler bookkeeping, releases, counters
        self.cv = threading.Condition(threading.Lock())  # instruction completion
        self.waiters = 0
        self.streams: dict[tuple[str, int], StreamRt] = {}
        self.stream_list: list[StreamRt] = []
        self._routes: dict[tuple[str, int], tuple[Any, StreamRt]] = {}
        self.failures: deque[EagerKernelError] = deque()
        self._releases: deque[BlobObject] = deque()
        self._release_bytes = 0
        self.issued = 0  # instructions (a fused chain is one)
        self.ops = 0  # op steps (the same whether or not they fused)
        self.host_allocated = self.host_allocs = 0  # blobs made from host data at the call
        self._closed = False
        self.closed_reason = "it was shut down (af.eager.shutdown() or interpreter exit)"
        self.forked = False  # this is a forked child's copy of its parent's VM
        self.recorder: Any = None
        self.scheduler: Any = SCHEDULERS.get(scheduler)(self)
        self._submit_one = self.scheduler.submit_one
        self._fuse = fuse and self.scheduler.fuses
        if self.core.NAME == "native":
            self.state = st = self.core.VMState(self, self._releases, self._fuse)
            self.scheduler = _NativeScheduler(st)
            self._submit_one = st.submit_one
            self.submit_step = st.submit_step  # type: ignore[method-assign]
            self.release = st.release  # type: ignore[method-assign]
        self._sched_on_done = self.scheduler.on_done if self.scheduler.wants_done else None

    @property
    def closed(self) -> bool:
        """No more work is taken (shut down, or this is a forked child's copy)."""
        return self._closed

    @closed.setter
    def closed(self, on: bool) -> None:
        self._closed = on
        if self.state is not None:
            self.state.closed = on

    @property
    def fuse(self) -> bool:
        """Whether element-wise ops may join the stream's last instruction (settable)."""
        return self._fuse

    @fuse.setter
    def fuse(self, on: bool) -> None:
        self._fuse = on
        if self.state is not None:
            self.state.fuse = on

    # -- streams -------------------------------------------------------------------------
    def stream(self, stream_type: str, index: int) -> StreamRt:
        key = (stream_type, index)
        s = self.streams.get(key)
        if s is None:
            with self.cv:  # streams may be made from several issuing threads
                s = self.streams.get(key)
                if s is None:
                    st = STREAM_TYPES.get(stream_type)
                    stream = st.make_stream(index)
                    if self.state is not None and getattr(stream, "synchronous", False):
                        s = self.core.StreamRt(self, st, index, len(self.stream_list), stream,
                                               KernelContext(xp=stream.xp))
                    else:
                        s = StreamRt(self, st, index, len(self.stream_list), stream)
                    if self.recorder is not None:
                        s.unit = self.recorder.unit((0, s.track))
                    self.stream_list.append(s)
                    self.streams[key] = s
        return s

    def route(self, itype_name: str, device: Device) -> tuple[Any, StreamRt]:
        """(instruction type, stream) for an instruction type on a device; cached, as the
        seed caches instruction type ids with their streams."""
        key = (itype_name, device.index)
        r = self._routes.get(key)
        if r is None:
            itype = INSTRUCTION_TYPES.get(itype_name)
            r = self._routes[key] = (itype, self.stream(itype.stream_type, device.index))
        return r

    # -- issuing -------------------------------------------------------------------------
    def submit(self, instrs: list[Instruction]) -> None:
        if self.closed:
            raise UsageError(f"this eager VM takes no more work: {self.closed_reason}")
        with self.lock:
            self.scheduler.submit(instrs)
            if self.state is None:
                self.issued += len(instrs)
                self.ops += len(instrs)
                for i in instrs:
                    i.stream.last = i
            if self._releases and (len(self._releases) >= RELEASE_BATCH
                                   or self._release_bytes >= RELEASE_BYTES):
                self._flush_releases()

    def submit_one(self, instr: Instruction) -> None:
        """``submit([instr])`` without the list: the path of every single-kernel op."""
        if self.closed:
            self.submit([instr])  # raises
        with self.lock:
            self._submit_one(instr)
            if self.state is None:
                self.issued += 1
                self.ops += 1
                instr.stream.last = instr
            if self._releases and (len(self._releases) >= RELEASE_BATCH
                                   or self._release_bytes >= RELEASE_BYTES):
                self._flush_releases()

    def submit_step(self, itype: Any, stream: StreamRt, step: Step) -> Instruction:
        """Issue one op step: appended to the stream's last instruction when the fusion
        rule allows (``chain.try_fuse``), else as an instruction of its own."""
        if self.closed:
            self.submit([])  # raises
        with self.lock:
            self.ops += 1
            instr = try_fuse(stream, step) if self._fuse else None
            if instr is None:
                instr = Instruction(itype, stream, step.name, [step], list(step.reads),
                                    list(step.writes), step.where)
                for b in step.writes:
                    b.producer = instr
                self._submit_one(instr)
                self.issued += 1
                stream.last = instr
            if self._releases and (len(self._releases) >= RELEASE_BATCH
                                   or self._release_bytes >= RELEASE_BYTES):
                self._flush_releases()
        return instr

    def adopt(self, blob: BlobObject) -> None:
        """Count a blob whose array was made at the call (from the user's host data)."""
        with self.lock:
            self.host_allocated += blob.nbytes
            self.host_allocs += 1

    def release(self, blob: BlobObject) -> None:
        """The last tensor of ``blob`` died.  Safe from ``__del__`` on any thread: it only
        queues the blob, and flushes when the batch is full and the lock is free."""
        if self.closed:
            return
        blob.dead = True
        self._releases.append(blob)
        self._release_bytes += blob.nbytes
        if (len(self._releases) >= RELEASE_BATCH or self._release_bytes >= RELEASE_BYTES) \
                and self.lock.acquire(blocking=False):
            try:
                self._flush_releases()
            finally:
                self.lock.release()

    def flush_releases(self) -> None:
        if self._releases:
            with self.lock:
                self._flush_releases()

    def _flush_releases(self) -> None:  # under self.lock
        if not self._releases:
            return
        from actorflow.eager.builder import InstructionsBuilder

        by_device: dict[Device, list[BlobObject]] = {}
        while self._releases:
            b = self._releases.popleft()
            by_device.setdefault(b.device, []).append(b)
        self._release_bytes = 0
        builder = InstructionsBuilder(self)
        for device, blobs in by_device.items():
            builder.release(blobs, device)
        instrs = builder.instructions
        self.scheduler.submit(instrs)
        if self.state is None:
            self.issued += len(instrs)
            self.ops += len(instrs)
            for i in instrs:
                i.stream.last = i
        else:
            self.state.release_bytes = 0

    # -- completion, waiting, errors -------------------------------------------------------
    def on_done(self, instr: Instruction) -> None:
        if self.waiters:
            with self.cv:
                self.cv.notify_all()
        if self._sched_on_done is not None:
            self._sched_on_done(instr)

    def wait_internal(self, instr: Instruction, worker: StreamRt,
                      at_most: float | None = None) -> None:
        """A worker waits for an instruction of another stream (no timeout error: the
        user's wait names what is stuck; this returns when the VM shuts down), or for
        ``at_most`` seconds."""
        with self.cv:
            self.waiters += 1
            instr.waited = True  # (a compiled stream notifies only for waited instructions)
            try:
                if at_most is not None:
                    if not instr.done:
                        self.cv.wait(at_most)
                    return
                while not instr.done and not self.closed:
                    self.cv.wait(0.5)
            finally:
                self.waiters -= 1

    def wait(self, instr: Instruction, what: str | Callable[[], str],
             timeout: float | None = None, help: bool = True) -> None:
        """Block until ``instr`` is done.  Without an explicit ``timeout`` the waiting
        thread first runs the stream's queued instructions itself if its worker is idle
        (``StreamRt.help_until``): a round trip then needs no thread hand-off.  With one,
        it only waits, so the timeout holds even against a kernel that never returns."""
        if instr.done:
            return
        if self.closed and self.forked:
            raise UsageError(f"{instr.describe()} cannot finish here: {self.closed_reason}, "
                             "and it was still pending then; compute it again in this process")
        if help and timeout is None and not self.closed:
            instr.stream.help_until(instr)
            if instr.done:
                return
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        with self.cv:
            self.waiters += 1
            instr.waited = True
            try:
                while not instr.done:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        if callable(what):  # said only when it is needed
                            what = what()
                        cur = instr.stream.current
                        busy = f"; the stream is at {cur.describe()}" if (
                            cur is not None and cur is not instr and not cur.done) else ""
                        raise WaitTimeout(
                            f"waited {limit:g}s for {what}: {instr.describe()} has not "
                            f"finished{busy} (a long kernel? pass timeout= or set "
                            "ACTORFLOW_EAGER_TIMEOUT)")
                    self.cv.wait(min(left, 1.0))
            finally:
                self.waiters -= 1

    def sync(self, timeout: float | None = None, help: bool = True) -> None:
        """Wait until every instruction issued so far has run; raise a kernel error if one
        happened since the last wait."""
        self.flush_releases()
        for s in list(self.stream_list):
            last = s.last
            if last is not None:
                self.wait(last, f"af.sync() (stream {s.label})", timeout, help)
        self.raise_failures()

    def fail(self, instr: Instruction, exc: BaseException, tb: str, step: Any = None) -> None:
        """A worker's kernel raised: poison the outputs (of ``step`` only, for one op of a
        fused chain) and keep the error, naming the op and its line, for a wait."""
        src = instr if step is None else step
        where = f"{src.where[0]}:{src.where[1]}" if src.where else "?"
        err = EagerKernelError(src.name, where, f"{type(exc).__name__}: {exc}",
                               instr.stream.label, tb)
        err.__cause__ = exc
        instr.error = err
        for b in src.writes:
            b.error = err
        self.failures.append(err)

    def raise_failures(self) -> None:
        if not self.failures:
            return
        first = self.failures.popleft()
        more = len(self.failures)
        self.failures.clear()
        if more:
            first.args = (f"{first.args[0]}\n({more} more eager kernel error(s) happened "
                          "after this one)",)
        raise first

    def trace_name(self, instr: Instruction) -> str:
        """The act's name in a trace: op @ file:line, for each op of a fused chain."""
        steps = instr.operand if instr.fusable and isinstance(instr.operand, list) else None
        if not steps:
            return _at(instr.name, instr.where)
        return " + ".join(_at(st.name, st.where) for st in steps)

    # -- counters and teardown --------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        """What the VM holds and did: live blobs/bytes (allocated minus released), and
        instructions issued and done."""
        streams = list(self.stream_list)
        st = self.state
        allocated = self.host_allocated + sum(s.allocated for s in streams)
        freed = sum(s.freed for s in streams)
        allocs = self.host_allocs + sum(s.allocs for s in streams)
        frees = sum(s.frees for s in streams)
        return {"live_blobs": allocs - frees, "live_bytes": allocated - freed,
                "allocated_bytes": allocated, "freed_bytes": freed,
                "ops_issued": self.ops if st is None else st.ops,
                "instructions_issued": self.issued if st is None else st.issued,
                "instructions_done": sum(s.executed for s in streams),
                "buffers_reused": sum(s.reused for s in streams),
                "pending_releases": len(self._releases), "streams": len(streams)}

    def shutdown(self, timeout: float) -> list[str]:
        """Finish pending work (up to ``timeout`` s), stop the workers; return problems
        (work that did not finish, errors nobody waited for) for the caller to report."""
        problems: list[str] = []
        try:
            self.sync(timeout, help=False)  # bounded even if a kernel never returns
        except WaitTimeout as e:
            problems.append(str(e))
        except EagerKernelError as e:
            problems.append(f"an eager kernel error was never waited for: {e}")
        self.closed = True
        self.scheduler.close(1.0)
        with self.cv:
            self.cv.notify_all()
        for s in self.stream_list:
            s.stop()
        for s in self.stream_list:
            if not s.join(1.0):
                problems.append(f"stream worker {s.label} did not stop within 1s (a kernel "
                                "still runs); left to the interpreter's exit")
                continue
            close = getattr(s.stream, "close", None)  # device streams own threads/handles
            if close is not None:
                close()
            s.last = s.current = None  # (the compiled core's records are not GC-tracked)
        return problems
