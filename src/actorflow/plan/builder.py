"""PlanBuilder: write plans by hand (tests, examples, benchmarks) until a job compiles.

    b = PlanBuilder(register_num=2)
    x = b.input("x", (4,), "float32")
    y = b.op("relu", x)
    z = b.op("add", y, x, machine=1)        # a comm_net task is inserted on machine 1
    b.output("z", z)
    plan = b.build()

Every call makes one task (``fused`` makes one task of several kernels).  Shapes are
inferred by the op definitions; an edge that crosses machines gets a ``comm_net`` task on
the receiving machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actorflow.errors import OpError, UsageError
from actorflow.kernels.registry import get_op
from actorflow.plan.model import (
    BlobDesc,
    BlobRef,
    ExecNode,
    JobInfo,
    KernelConf,
    MachineInfo,
    Plan,
    RegstDesc,
    Task,
)
from actorflow.plan.wiring import comm_net_name, wire_comm_net


@dataclass(frozen=True)
class Port:
    """One blob produced by a task: what later ops consume."""

    task_id: int
    regst_desc_id: int
    blob: str
    desc: BlobDesc

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.shape

    @property
    def dtype(self) -> str:
        return self.desc.dtype


class PlanBuilder:
    def __init__(self, machines: int = 1, register_num: int = 2, name: str = "job",
                 devices_per_machine: int = 1) -> None:
        self.machines = machines
        self.devices_per_machine = devices_per_machine
        self.register_num = register_num
        self.name = name
        self.tasks: dict[int, Task] = {}
        self._next_desc = 0
        self._next_thrd: dict[int, int] = {}
        self._inputs: list[str] = []
        self._outputs: list[str] = []
        self._comm: dict[tuple[int, int], Port] = {}  # (desc, machine) -> local copy
        self._mem: dict[int, str] = {}  # task id -> memory its kernels use (default host)
        self._copies: dict[tuple[int, str], Port] = {}  # (desc, memory) -> copy there
        self.num_pieces: int | None = None

    # -- ids -----------------------------------------------------------------------------
    def _task(self, task_type: str, machine: int, thrd: int | None, name: str,
              attrs: dict | None = None) -> Task:
        if not 0 <= machine < self.machines:
            raise UsageError(f"PlanBuilder: machine {machine} is out of range for a "
                             f"{self.machines}-machine plan (PlanBuilder(machines=...))")
        if thrd is None:
            thrd = self._next_thrd.get(machine, 0)
        self._next_thrd[machine] = max(self._next_thrd.get(machine, 0), thrd + 1)
        tid = len(self.tasks)
        t = Task(tid, task_type, machine, thrd, name=name or f"{task_type}{tid}",
                 attrs=dict(attrs or {}))
        self.tasks[t.task_id] = t
        return t

    def _produce(self, t: Task, blobs: dict[str, BlobDesc], register_num: int | None,
                 name: str = "out", is_ctrl: bool = False) -> RegstDesc:
        d = RegstDesc(self._next_desc, t.task_id, [], register_num or self.register_num,
                      dict(blobs), mem_case=self._mem.get(t.task_id, "host"), is_ctrl=is_ctrl)
        self._next_desc += 1
        t.produced[name] = d
        return d

    def _consume(self, t: Task, port: Port, key: str) -> Port:
        """Make ``t`` consume ``port``, through a comm_net task if it crosses machines and
        copy tasks where host and device memory meet (the network carries host memory)."""
        src = self.tasks[port.task_id]
        if src.machine_id != t.machine_id:
            port = self._in_memory(port, src.machine_id, "host")
        port = self._local(port, t.machine_id)
        port = self._in_memory(port, t.machine_id, self._mem.get(t.task_id, "host"))
        if port.regst_desc_id not in t.consumed_ids():
            t.consumed[key] = [port.regst_desc_id]
            d = self._desc(port)
            d.consumer_task_ids.append(t.task_id)
        return port

    def _desc(self, port: Port) -> RegstDesc:
        for d in self.tasks[port.task_id].produced.values():
            if d.regst_desc_id == port.regst_desc_id:
                return d
        raise UsageError(f"PlanBuilder: {port} was not made by this builder (its task "
                         f"{port.task_id} produces no regst desc {port.regst_desc_id})")

    def _local(self, port: Port, machine: int) -> Port:
        src = self.tasks[port.task_id]
        if src.machine_id == machine:
            return port
        key = (port.regst_desc_id, machine)
        if key not in self._comm:
            d = self._desc(port)
            t = self._task("comm_net", machine, None, comm_net_name(d, machine))
            nd = wire_comm_net(t, d, self._next_desc)
            self._next_desc += 1
            self._comm[key] = Port(t.task_id, nd.regst_desc_id, port.blob, port.desc)
        local = self._comm[key]
        return Port(local.task_id, local.regst_desc_id, port.blob, port.desc)

    def _in_memory(self, port: Port, machine: int, mem: str) -> Port:
        """``port`` in memory ``mem`` through copy_h2d / copy_d2h tasks (device-host-device)."""
        d = self._desc(port)
        if d.mem_case == mem:
            return port
        if d.mem_case != "host" and mem != "host":
            port = self._in_memory(port, machine, "host")
            d = self._desc(port)
        key = (d.regst_desc_id, mem)
        if key not in self._copies:
            kind = "copy_d2h" if mem == "host" else "copy_h2d"
            t = self._task(kind, machine, None, f"{kind}{d.regst_desc_id}->{mem}")
            self._mem[t.task_id] = mem
            t.consumed["in"] = [d.regst_desc_id]
            d.consumer_task_ids.append(t.task_id)
            nd = self._produce(t, d.blobs, d.register_num)
            self._copies[key] = Port(t.task_id, nd.regst_desc_id, port.blob, port.desc)
        c = self._copies[key]
        return Port(c.task_id, c.regst_desc_id, port.blob, port.desc)

    def _place(self, t: Task, device: int | None) -> None:
        if device is not None:
            if not 0 <= device < self.devices_per_machine:
                raise ValueError(f"device {device} out of range for {self.devices_per_machine} "
                                 "device(s) per machine")
            self._mem[t.task_id] = f"cuda:{device}"

    # -- tasks ---------------------------------------------------------------------------
    def input(self, name: str, shape: tuple[int, ...], dtype: str = "float32", *,
              machine: int = 0, thrd: int | None = None, register_num: int | None = None) -> Port:
        t = self._task("input", machine, thrd, name, {"input_name": name})
        d = self._produce(t, {"out": BlobDesc(tuple(shape), str(dtype))}, register_num)
        self._inputs.append(name)
        return Port(t.task_id, d.regst_desc_id, "out", d.blobs["out"])

    def source(self, op_type: str, attrs: dict[str, Any], *, piece_num: int | None = None,
               machine: int = 0, thrd: int | None = None, register_num: int | None = None,
               name: str = "") -> Port:
        t = self._task("source", machine, thrd, name or f"{op_type}{len(self.tasks)}")
        if piece_num is not None:
            t.attrs["piece_num"] = piece_num
        return self._exec(t, op_type, {}, attrs, register_num)

    def op(self, op_type: str, *args: Port, machine: int = 0, thrd: int | None = None,
           register_num: int | None = None, name: str = "", device: int | None = None,
           **kw: Any) -> Port:
        """One task running one kernel.  Ports by position or argument name; the rest attrs.
        ``device=i`` runs it on the machine's ``cuda:i`` (copies are added around it)."""
        opdef = get_op(op_type)
        ports = {k: v for k, v in kw.items() if isinstance(v, Port)}
        attrs = {k: v for k, v in kw.items() if not isinstance(v, Port)}
        names = [f"in_{i}" for i in range(len(args))] if opdef.variadic else list(opdef.inputs)
        if len(args) > len(names):
            raise OpError(f"{op_type} takes inputs {names}, got {len(args)} positional ports")
        ports.update(zip(names, args))
        t = self._task("normal", machine, thrd, name or f"{op_type}{len(self.tasks)}")
        self._place(t, device)
        return self._exec(t, op_type, ports, attrs, register_num)

    def fused(self, ops: list[tuple[str, dict[str, Any]]], x: Port, *, machine: int = 0,
              thrd: int | None = None, register_num: int | None = None, name: str = "",
              device: int | None = None) -> Port:
        """One task running a chain of unary kernels (what the compiler's merge makes)."""
        t = self._task("normal", machine, thrd, name or f"fused{len(self.tasks)}")
        self._place(t, device)
        x = self._consume(t, x, "in")
        src = BlobRef(x.regst_desc_id, x.blob)
        cur = x.desc
        tmp: RegstDesc | None = None
        for i, (op_type, attrs) in enumerate(ops):
            op = get_op(op_type)
            out = op.infer_checked(f"{t.label}.{i}", {"in": cur}, attrs)["out"]
            last = i == len(ops) - 1
            if last:
                d = self._produce(t, {"out": out}, register_num)
                dst = BlobRef(d.regst_desc_id, "out")
            else:
                if tmp is None:
                    tmp = self._produce(t, {}, 1, name="tmp")
                tmp.blobs[f"t{i}"] = out
                dst = BlobRef(tmp.regst_desc_id, f"t{i}")
            t.exec_sequence.append(ExecNode(KernelConf(f"{t.label}.{op_type}{i}", op_type,
                                                       dict(attrs)), {"in": src}, {"out": dst}))
            src, cur = dst, out
        return Port(t.task_id, d.regst_desc_id, "out", cur)

    def _exec(self, t: Task, op_type: str, ports: dict[str, Port], attrs: dict[str, Any],
              register_num: int | None) -> Port:
        op = get_op(op_type)
        local = {k: self._consume(t, p, k) for k, p in ports.items()}
        outs = op.infer_checked(t.label, {k: p.desc for k, p in local.items()}, attrs)
        d = self._produce(t, outs, register_num)
        t.exec_sequence.append(ExecNode(
            KernelConf(t.label, op_type, dict(attrs)),
            {k: BlobRef(p.regst_desc_id, p.blob) for k, p in local.items()},
            {k: BlobRef(d.regst_desc_id, k) for k in outs}))
        first = next(iter(outs))
        return Port(t.task_id, d.regst_desc_id, first, d.blobs[first])

    def acc(self, x: Port, acc_num: int, *, machine: int | None = None, thrd: int | None = None,
            register_num: int | None = None, name: str = "") -> Port:
        return self._pass("acc", x, {"acc_num": acc_num}, machine, thrd, register_num, name)

    def repeat(self, x: Port, repeat_num: int, *, machine: int | None = None,
               thrd: int | None = None, register_num: int | None = None, name: str = "") -> Port:
        return self._pass("repeat", x, {"repeat_num": repeat_num}, machine, thrd, register_num,
                          name)

    def _pass(self, kind: str, x: Port, attrs: dict, machine: int | None, thrd: int | None,
              register_num: int | None, name: str) -> Port:
        m = self.tasks[x.task_id].machine_id if machine is None else machine
        t = self._task(kind, m, thrd, name or f"{kind}{len(self.tasks)}", attrs)
        x = self._consume(t, x, "in")
        d = self._produce(t, {x.blob: x.desc}, register_num)
        return Port(t.task_id, d.regst_desc_id, x.blob, x.desc)

    def output(self, name: str, x: Port, *, machine: int | None = None,
               thrd: int | None = None) -> None:
        m = self.tasks[x.task_id].machine_id if machine is None else machine
        t = self._task("output", m, thrd, name, {"output_name": name})
        self._consume(t, x, "in")
        self._outputs.append(name)

    def build(self, validate: bool = True) -> Plan:
        self._gate_sources()
        plan = Plan(
            tasks=list(self.tasks.values()),
            machines=MachineInfo(self.machines, self.devices_per_machine),
            job=JobInfo(self.name, self.num_pieces, list(self._inputs), list(self._outputs)),
        )
        if validate:
            plan.validate()
        return plan

    def _gate_sources(self) -> None:
        """Sources beside inputs make one piece per fed piece (the compiler's rule, in
        ``compiler/emit.py``): each is ``gated`` and consumes a control regst from a tick
        task reading an input (its own machine's, if it has one), so ``Session.run`` drives
        them and closing the inputs ends them."""
        inputs = [t for t in self.tasks.values() if t.task_type == "input"]
        if not inputs:
            return
        local: dict[int, Task] = {}
        for t in inputs:
            local.setdefault(t.machine_id, t)
        ticks: dict[int, Port] = {}  # input task id -> its tick's control regst
        for src in [t for t in self.tasks.values() if t.task_type == "source"]:
            if src.attrs.get("gated"):
                continue  # built before
            clock = local.get(src.machine_id, inputs[0])
            if clock.task_id not in ticks:
                data = next(iter(clock.produced.values()))
                tick = self._task("tick", clock.machine_id, None, f"{clock.label}/tick")
                self._consume(tick, Port(clock.task_id, data.regst_desc_id, "out",
                                         data.blobs["out"]), "in")
                ctrl = self._produce(tick, {}, data.register_num, is_ctrl=True)
                ticks[clock.task_id] = Port(tick.task_id, ctrl.regst_desc_id, "", BlobDesc((), ""))
            src.attrs["gated"] = True
            self._consume(src, ticks[clock.task_id], "tick")
