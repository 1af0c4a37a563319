"""Op steps and chains: what a compute instruction runs, and when ops fuse into one.

A compute instruction's operand is a list of *steps*, one per op: its name and the user's
file:line (for errors), its kernel, its input and output blobs and attrs.  An element-wise
step (its op definition names a ``ufunc``) is called without the dict-taking wrapper.

**Fusion.**  An element-wise op whose input was made by the last instruction of the same
stream, while that instruction has not started yet, joins it as one more step instead of
becoming an instruction of its own (``try_fuse``): one record, one dependency link, one
FIFO entry, one kernel loop for the chain.  It joins only when every other input is
already ordered (made by nothing, by something finished, or by this stream), so a fused
instruction never waits for more than it did before.  Results are the unfused ones: the
steps run in issue order with the same kernels.  When a step's input is an intermediate
of the chain that nothing can read any more (its tensor died, no other instruction and no
later step reads it) and has the output's meta, the step writes in place into that
buffer (every read of it ever issued is one of the chain's: ``nreads``), which passes
from the dead blob to the new one (counted as a free and an
allocation, so ``af.counters()`` stays what the unfused run gives).

This module is the Python reference; the compiled core (``actorflow._core._eager``) does
the same steps.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actorflow.eager.blob import BlobObject
    from actorflow.eager.instruction import Instruction

MAX_CHAIN = 64  # steps per fused instruction (bounds one instruction's latency and memory)


class Step:
    """One op of a compute instruction."""

    __slots__ = ("attrs", "cast", "form", "ins", "kernel", "name", "outs", "reads", "scalar",
                 "ufunc", "where", "writes")

    def __init__(self, name: str, where: Any, kernel: Any, ufunc: Any,
                 ins: dict[str, BlobObject], outs: dict[str, BlobObject], attrs: Any,
                 reads: list[BlobObject], writes: list[BlobObject]) -> None:
        self.name = name
        self.where = where
        self.kernel = kernel
        self.ufunc: str | None = ufunc[0] if ufunc is not None else None
        self.form: str | None = ufunc[1] if ufunc is not None else None
        self.scalar = attrs["scalar"] if self.form in ("ts", "st") else None
        self.cast: str | None = "unsafe" if ufunc is None or len(ufunc) < 3 or ufunc[2] \
            else None  # casting="unsafe" only where the output needs it (numpy: slower)
        self.ins = ins
        self.outs = outs
        self.attrs = attrs
        self.reads = reads
        self.writes = writes


def try_fuse(stream: Any, step: Step) -> Instruction | None:
    """Append ``step`` to ``stream``'s last instruction if the fusion rule allows it (see the
    module docstring); returns that instruction, or None.  Called under the VM's issue
    lock; ``stream.pop_lock`` makes "not started yet" and the append one step."""
    if step.ufunc is None:
        return None
    t = stream.last
    if t is None or not t.fusable or t.started or len(t.operand) >= MAX_CHAIN:
        return None
    chained = False
    for b in step.reads:
        w = b.last_writer
        if w is t:
            chained = True
        elif w is not None and not w.done and w.stream is not stream:
            return None  # would make the chain wait for another stream
    if not chained:
        return None
    with stream.pop_lock:  # the worker cannot take t before its records are complete
        if t.started:
            return None
        t.operand.append(step)
        for b in step.reads:
            if b.last_writer is not t:
                t.reads.append(b)
            b.readers.append(t)  # (a dead blob's readers are pruned by its release's link)
            b.nreads += 1
        for b in step.writes:
            b.last_writer = b.producer = t
            t.writes.append(b)
        t.name = f"{t.operand[0].name} (+{len(t.operand) - 1} fused ops)"
    return t


def run_steps(instr: Instruction, host: Any) -> None:
    """Run a compute instruction's steps in order on the stream host ``host``."""
    steps = instr.operand
    if len(steps) == 1:
        _run(instr, steps[0], host, None, 0)
        return
    last_read: dict[int, tuple[int, int]] = {}  # blob id -> (last step reading it, reads)
    for i, st in enumerate(steps):
        for b in st.reads:
            last_read[id(b)] = (i, last_read.get(id(b), (0, 0))[1] + 1)
    for i, st in enumerate(steps):
        _run(instr, st, host, last_read, i)


def _reusable(b: BlobObject, instr: Instruction, last_read: dict, i: int) -> bool:
    """Nothing can read ``b`` after step ``i``: its tensor died, the chain made it, every
    read of it ever issued is one of the chain's, and step ``i`` is the last of them."""
    return b.dead and b.array is not None and b.producer is instr \
        and last_read[id(b)] == (i, b.nreads)


def _run(instr: Instruction, st: Step, host: Any, last_read: dict | None, i: int) -> None:
    for b in st.reads:
        if b.error is not None:  # an input was never computed: pass the error on
            for w in st.writes:
                w.error = b.error
            return
    try:
        if st.ufunc is not None:
            out = st.writes[0]
            reads = st.reads
            a0 = reads[0].array  # before a dead input's buffer passes to the output
            a1 = reads[1].array if st.form == "tt" else None
            arr = None
            if last_read is not None:
                for b in reads:
                    if b.meta is out.meta and _reusable(b, instr, last_read, i):
                        arr, b.array = b.array, None  # the dead intermediate's buffer
                        host.freed += b.nbytes
                        host.frees += 1
                        host.reused += 1
                        break
            if arr is None:
                arr = host.xp.empty(out.shape, out.dtype)
            out.array = arr
            host.allocated += out.nbytes
            host.allocs += 1
            f = host.ufuncs.get(st.ufunc)
            if f is None:
                f = host.ufuncs[st.ufunc] = getattr(host.xp, st.ufunc)
            form = st.form
            cast = st.cast
            if form == "tt":
                f(a0, a1, out=arr, casting=cast) if cast else f(a0, a1, out=arr)
            elif form == "ts":
                f(a0, st.scalar, out=arr, casting=cast) if cast else f(a0, st.scalar, out=arr)
            elif form == "st":
                f(st.scalar, a0, out=arr, casting=cast) if cast else f(st.scalar, a0, out=arr)
            elif form == "t0":
                f(a0, 0, out=arr)
            else:
                f(a0, out=arr)
            return
        empty = host.xp.empty
        out_arrays = {}
        for k, b in st.outs.items():
            b.array = a = empty(b.shape, b.dtype)
            out_arrays[k] = a
            host.allocated += b.nbytes
            host.allocs += 1
        in_arrays = {}
        for k, b in st.ins.items():
            in_arrays[k] = b.array
        ctx = host.kctx
        ctx.op_name = st.name
        st.kernel(ctx, in_arrays, out_arrays, st.attrs)
    except Exception as e:
        host.vm.fail(instr, e, traceback.format_exc(), st)


__all__ = ["MAX_CHAIN", "Step", "run_steps", "try_fuse"]
