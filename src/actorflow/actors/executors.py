"""How an act moves data, by task type: the shell side of each actor kind.

``ActorHost`` binds one pure state machine to its task's kernels and regst memory.
Executors take ``(host, act)`` and run on the unit's stream.  They are registered under
the names of the kind records of ``actorflow.protocol.kinds`` (state machine, rule,
description); ``tests/actors/test_kind_records.py`` checks both name the same kinds.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.errors import KernelError, ProtocolError, RegistryError
from actorflow.kernels.registry import KernelContext, get_op
from actorflow.plan.model import Task
from actorflow.protocol.messages import Act
from actorflow.registry import Registry
from actorflow.streams.cuda import DeviceStream
from actorflow.streams.stream import Stream

if TYPE_CHECKING:
    from actorflow.actors.runtime import MachineRuntime, ThreadUnit

Executor = Callable[["ActorHost", Act], None]
EXECUTORS: Registry[Executor] = Registry("executor for task type")


def register_executor(task_type: str, fn: Executor) -> Executor:
    """The data side of kind ``task_type``; a second executor for one kind is refused."""
    return EXECUTORS.register(task_type, fn)


class ActorHost:
    """One actor's data side in a runtime: its compiled exec sequence and memory view (its
    state machine lives in the unit's core)."""

    __slots__ = ("bound", "executor", "machine_id", "memory", "nodes", "runtime", "stream",
                 "task", "task_id", "unit")

    def __init__(self, task: Task, runtime: MachineRuntime, stream: Stream,
                 unit: ThreadUnit) -> None:
        self.task = task
        self.task_id = task.task_id
        self.machine_id = task.machine_id
        self.runtime = runtime
        self.memory = runtime.memory
        self.stream = stream
        self.unit = unit
        try:
            self.executor = EXECUTORS.get(task.task_type)
        except RegistryError as e:
            raise RegistryError(f"task {task.task_id} ({task.label}): {e}") from None
        self.nodes = []
        for node in task.exec_sequence:
            op = get_op(node.kernel.op_type)
            ctx = KernelContext(stream.xp, 0, task.task_id, node.kernel.op_name)
            key = node.kernel.attrs.get("state_key")
            if key is not None:  # a variable part: one state per machine, shared by jobs
                ctx.state = shared_state(runtime, str(key))
            ins = [(a, r.regst_desc_id, r.blob) for a, r in node.inputs.items()]
            outs = [(a, r.regst_desc_id, r.blob) for a, r in node.outputs.items()]
            self.nodes.append((op.kernel, ctx, node.kernel.attrs, ins, outs))
        # (read slots, write slots) -> nodes with their argument dicts bound to those regsts;
        # an actor cycles through few slot combinations, so acts reuse them (no per-act dicts)
        self.bound: dict[tuple, list[tuple]] = {}

    def bind(self, act: Act, key: tuple) -> list[tuple]:
        """The exec sequence with argument dicts for ``act``'s slots (regst memory is fixed
        once the unit runs, so the arrays can be looked up once per slot combination)."""
        slots = dict(act.reads)
        slots.update(act.writes)
        mem = self.memory
        bound = []
        for kernel, ctx, attrs, ins, outs in self.nodes:
            i = {a: mem[d][slots[d]][b] for a, d, b in ins}
            o = {a: mem[d][slots[d]][b] for a, d, b in outs}
            bound.append((kernel, ctx, attrs, i, o))
        if len(self.bound) < 4096:
            self.bound[key] = bound
        return bound

    def run(self, act: Act) -> None:
        self.executor(self, act)

    def kernel_error(self, op_name: str, act: Act, e: BaseException) -> KernelError:
        return KernelError(op_name, self.task_id, self.machine_id, act.piece_id,
                           f"{type(e).__name__}: {e}", traceback.format_exc(),
                           job=job_name(self.runtime.plan, self.task))


def job_name(plan: Any, task: Task) -> str | None:
    """The name of ``task``'s job in a plan of several jobs (None in a one-job plan)."""
    jobs = getattr(plan, "jobs", None)
    if not jobs or len(jobs) < 2:
        return None
    for j in jobs:
        if j.job_id == task.job_id:
            return j.name
    return None


def shared_state(runtime: Any, key: str) -> dict[str, Any]:
    """The kernel state every node with attr ``state_key == key`` shares in ``runtime``
    (a variable part read and assigned by several jobs: one copy per device)."""
    store = getattr(runtime, "_shared_states", None)
    if store is None:
        store = runtime._shared_states = {}
    return store.setdefault(key, {})


def run_exec_sequence(host: ActorHost, act: Act) -> None:
    key = (*act.reads, *act.writes)
    bound = host.bound.get(key)
    if bound is None:
        try:
            bound = host.bind(act, key)
        except Exception as e:
            raise host.kernel_error(host.nodes[0][1].op_name, act, e) from e
    piece = act.piece_id
    for kernel, ctx, attrs, i, o in bound:
        ctx.piece_id = piece
        try:
            kernel(ctx, i, o, attrs)
        except Exception as e:
            raise host.kernel_error(ctx.op_name, act, e) from e


def run_input(host: ActorHost, act: Act) -> None:
    """Copy the oldest fed piece into the written regst (or run generator kernels)."""
    feed = host.runtime.take_feed(host.task_id)
    d, slot = act.writes[0]
    dst = host.memory[d][slot]
    for name, arr in feed.items():
        dst[name][...] = arr
    if host.nodes:
        run_exec_sequence(host, act)


def run_output(host: ActorHost, act: Act) -> None:
    d, slot = act.reads[0]
    src = host.memory[d][slot]
    host.runtime.deliver(host.task, act.piece_id, src)  # the runtime copies what it keeps


def run_acc(host: ActorHost, act: Act) -> None:
    first = act.info[0]
    dout, sout = act.writes[0]
    dst = host.memory[dout][sout]
    if not act.reads:
        return
    din, sin = act.reads[0]
    src = host.memory[din][sin]
    xp = host.stream.xp
    for name, arr in dst.items():
        if first:
            arr[...] = src[name]
        else:
            xp.add(arr, src[name], out=arr, casting="unsafe")


def run_copy(host: ActorHost, act: Act) -> None:
    """repeat / comm_net kinds with no kernels: copy every blob by name (same memory)."""
    if host.nodes:
        run_exec_sequence(host, act)
        return
    din, sin = act.reads[0]
    dout, sout = act.writes[0]
    src, dst = host.memory[din][sin], host.memory[dout][sout]
    for name, arr in dst.items():
        arr[...] = src[name]


def device_stream(host: ActorHost) -> DeviceStream:
    """The device stream of a copy task's unit (its unit works in device memory)."""
    stream = host.stream
    if not isinstance(stream, DeviceStream):
        raise ProtocolError(f"task {host.task_id} ({host.task.label}) copies device memory "
                            f"on a {stream.device} stream")
    return stream


def run_copy_h2d(host: ActorHost, act: Act) -> None:
    """Host (pinned) -> device on the unit's own copy stream: ``dev.set(host, stream)``
    queues the copy; the act is done when the event after it is (READY waits for it).
    (A host -> host copy task, in hand-built plans, copies in place.)"""
    din, sin = act.reads[0]
    dout, sout = act.writes[0]
    src, dst = host.memory[din][sin], host.memory[dout][sout]
    try:
        for name, arr in dst.items():
            if isinstance(arr, np.ndarray):  # a plan that copies host to host
                arr[...] = src[name]
            else:
                device_stream(host).to_device(arr, src[name])
    except Exception as e:
        raise host.kernel_error(host.task.label, act, e) from e


def run_copy_d2h(host: ActorHost, act: Act) -> None:
    """Device -> host (pinned): ``dev.get(stream, out=host, blocking=False)`` on the unit's
    copy stream; the host regst is READY after the event that follows it."""
    din, sin = act.reads[0]
    dout, sout = act.writes[0]
    src, dst = host.memory[din][sin], host.memory[dout][sout]
    try:
        for name, arr in dst.items():
            blob = src[name]
            if isinstance(blob, np.ndarray):
                arr[...] = blob
            else:
                device_stream(host).to_host(arr, blob)
    except Exception as e:
        raise host.kernel_error(host.task.label, act, e) from e


def run_nothing(host: ActorHost, act: Act) -> None:
    if host.nodes:
        run_exec_sequence(host, act)


def run_callback(host: ActorHost, act: Act) -> None:
    """A callback tick: tell the client this machine finished a piece of its job."""
    host.runtime.deliver(host.task, act.piece_id, {})


for _t, _fn in {
    "normal": run_exec_sequence, "source": run_exec_sequence, "boxing": run_exec_sequence,
    "input": run_input, "output": run_output, "acc": run_acc, "repeat": run_copy,
    "copy_h2d": run_copy_h2d, "copy_d2h": run_copy_d2h, "comm_net": run_copy, "tick": run_nothing,
    # the main job: ids travel in the messages (aux), there is no data to move
    "wait_and_send_ids": run_nothing, "reentrant_lock": run_nothing, "case": run_nothing,
    "esac": run_nothing, "callback_tick": run_callback,
}.items():
    register_executor(_t, _fn)
