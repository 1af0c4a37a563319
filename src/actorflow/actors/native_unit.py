"""The Python side of the native unit loop: how each act runs, and what the loop calls back.

A thread unit whose core is the compiled one, on an inline CPU stream, runs its whole loop
in C (``_core/loop.pxi``) with the GIL released.  Before it starts, every actor gets a run
plan: a kind that moves no data (ticks, the main job's kinds) runs as a no-op, a plain copy
between host regsts (``identity``, ``comm_net``, ``repeat``, a host copy task) as memcpys
between the regsts' fixed addresses, and everything else calls its executor in Python with
the GIL (its argument dicts bound once per slot combination, ``executors.ActorHost.bind``).
``NativeShell`` is what the loop calls for what only Python can do: route a message to a
unit without a native inbox (a Python unit, another machine), tell the runtime an actor
exited, flush output pieces and the trace, and ask whether to go on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.actors.executors import ActorHost, run_copy, run_exec_sequence, run_nothing
from actorflow.protocol.messages import Act, Msg

if TYPE_CHECKING:
    from actorflow._core.unit_core import NativeUnitCore
    from actorflow.actors.runtime import ThreadUnit

Copy = tuple[int, int, int, list[int], list[int]]  # src desc, dst desc, bytes, addresses


def plan_acts(core: NativeUnitCore, hosts: Mapping[int, ActorHost],
              memory: Mapping[int, list[dict]]) -> None:
    """Tell ``core`` how to run each actor's acts (no-op, memcpy or Python)."""
    for task_id, host in hosts.items():
        copies = copy_plan(host, memory)
        if host.executor is run_nothing and not host.nodes:
            core.plan_noop(task_id)
        elif copies is not None:
            core.plan_copy(task_id, copies)
        else:
            core.plan_python(task_id, host.executor, host, Act(task_id, 0, 0, [], []))


def copy_plan(host: ActorHost, memory: Mapping[int, list[dict]]) -> list[Copy] | None:
    """The memcpys that do what ``host``'s executor does, or None when it is more than a
    byte copy between contiguous host arrays of one dtype and shape."""
    t = host.task
    if host.executor is run_copy and not host.nodes:
        consumed, produced = t.consumed_ids(), list(t.produced.values())
        if len(consumed) != 1 or len(produced) != 1:
            return None
        din, dout = consumed[0], produced[0].regst_desc_id
        slots = memory.get(dout)
        if not slots:
            return None
        pairs = [(din, name, dout, name) for name in slots[0]]
    elif (host.executor is run_exec_sequence and len(t.exec_sequence) == 1
          and t.exec_sequence[0].kernel.op_type == "identity"):
        node = t.exec_sequence[0]
        src, dst = node.inputs.get("in"), node.outputs.get("out")
        if src is None or dst is None:
            return None
        pairs = [(src.regst_desc_id, src.blob, dst.regst_desc_id, dst.blob)]
    else:
        return None
    copies = []
    for sd, sb, dd, db in pairs:
        srcs: list[Any] = [slot.get(sb) for slot in memory.get(sd, [])]
        dsts: list[Any] = [slot.get(db) for slot in memory.get(dd, [])]
        if not srcs or not dsts or not all(_plain(a) for a in srcs + dsts):
            return None
        first = srcs[0]
        if any(a.dtype != first.dtype or a.shape != first.shape for a in srcs + dsts):
            return None
        copies.append((sd, dd, first.nbytes, [a.ctypes.data for a in srcs],
                       [a.ctypes.data for a in dsts]))
    return copies


def _plain(a: Any) -> bool:
    return (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable
            and not a.dtype.hasobject)


class NativeShell:
    """What the native loop of ``unit`` calls back (always with the GIL)."""

    def __init__(self, unit: ThreadUnit) -> None:
        self.unit = unit
        rt = unit.runtime
        self._send = rt.send
        self.exited = rt.actor_exited

    def send(self, msg: Msg) -> None:
        self._send(msg, self.unit)

    def flush(self) -> None:
        """Send the messages held for other machines (before the loop sleeps)."""
        self.unit.flush()

    def lost(self, msg: Msg) -> None:
        """The message fault injection lost (``MachineRuntime.lose_first``)."""
        self.unit.runtime.lost.append(msg)

    def idle(self) -> bool:
        """Nothing came within the wait: send waiting output pieces; go on unless the
        runtime is stopping."""
        self.unit.idle()
        return not self.unit.runtime.stopping

    def wait_ns(self) -> int:
        return int(self.unit.wait_timeout() * 1e9)

    def flush_trace(self) -> None:
        rec = self.unit.native_rec
        if rec is not None:
            rec.flush()

    def finish(self) -> None:
        self.unit.finish()
