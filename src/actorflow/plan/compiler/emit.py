"""Emit the Plan: tasks from node groups, regst descs, comm_net tasks, thread ids.

Every node's output is one regst desc of its task (blob ``out``); a desc no other task
reads is task-local scratch with ``register_num`` 1.  A desc read on another machine goes
through one ``comm_net`` task on the receiving machine; a desc read on more than
``width`` other machines is relayed: the producer sends it to ``width`` of them, and each
of those machines' comm_net is the source for up to ``width`` more (a tree, so no task
answers thousands of consumers per piece).  Thread ids per machine: device
``d`` computes on thread ``d``, comm_net tasks share thread ``devices_per_machine``,
input/source/output tasks share the next one, then one copy thread per device and
direction (``copy_h2d``/``copy_d2h`` join host and CUDA memory); ``unit_per_task`` gives
every task its own.
A kernel task with no input at all (only variables/constants) reads the regst of an
input or source task as its per-piece tick, so it acts exactly once per piece.
"""

from __future__ import annotations

from actorflow.errors import CompileError
from actorflow.plan.compiler.lower import PNode
from actorflow.plan.compiler.trees import DEFAULT_WIDTH, relay_parent
from actorflow.plan.model import (
    BlobRef,
    ExecNode,
    JobInfo,
    KernelConf,
    MachineInfo,
    ParallelContext,
    Plan,
    RegstDesc,
    Task,
)
from actorflow.plan.wiring import comm_net_name, wire_comm_net

IO_KINDS = ("input", "source", "output")
RATE_KINDS = ("repeat", "acc")  # one node per task, no kernel: the kind does the work


class Emitter:
    def __init__(self, nodes: list[PNode], groups: list[list[int]], machines: int, dpm: int,
                 unit_per_task: bool, width: int = DEFAULT_WIDTH,
                 gated: bool = False) -> None:
        self.nodes = nodes
        self.gated = gated  # tasks with no input are paced by the main job instead
        self.groups = groups
        self.machines = machines
        self.dpm = dpm
        self.unit_per_task = unit_per_task
        self.width = width
        self.relays: dict[str, str] = {}  # what was relayed, for plan show
        self._relay: dict[int, dict[int, int]] = {}  # desc id -> {machine: relay machine}
        self._consumes: set[tuple[int, int]] = set()  # (desc id, task id) already wired
        self.group_of = {nid: g for g, ids in enumerate(groups) for nid in ids}
        self.tasks: list[Task] = []
        self.desc_of: dict[int, RegstDesc] = {}  # node id -> its regst desc
        self._comm: dict[tuple[int, int], RegstDesc] = {}  # (desc id, machine) -> local copy
        self._copies: dict[tuple[int, str], RegstDesc] = {}  # (desc id, mem case) -> copy
        self.mem: dict[int, str] = {}  # task id -> memory case its kernels work in
        self._next_desc = 0
        self._next_thrd: dict[int, int] = {}

    def _thrd(self, machine: int, kind: str, device: int) -> int:
        if self.unit_per_task:
            t = self._next_thrd.get(machine, 0)
            self._next_thrd[machine] = t + 1
            return t
        if kind == "comm_net":
            return self.dpm
        if kind in IO_KINDS:
            return self.dpm + 1
        if kind in ("copy_h2d", "copy_d2h"):  # one copy thread per device and direction
            return self.dpm + 2 + 2 * device + (kind == "copy_d2h")
        return device

    def _desc(self, task: Task, blobs: dict, register_num: int, name: str) -> RegstDesc:
        d = RegstDesc(self._next_desc, task.task_id, [], register_num, dict(blobs))
        self._next_desc += 1
        task.produced[name] = d
        return d

    def run(self) -> list[Task]:
        for g, ids in enumerate(self.groups):
            head = self.nodes[ids[0]]
            kinds = {self.nodes[i].kind for i in ids}
            kind = head.kind if head.kind in IO_KINDS + RATE_KINDS else (
                "normal" if "normal" in kinds else "boxing")
            m, d = head.device
            main = [self.nodes[i] for i in ids if self.nodes[i].kind == "normal"] or [head]
            label = main[-1].name if len(ids) == 1 else f"{main[-1].name}+{len(ids) - 1}"
            t = Task(g, kind, m, -1, name=label, attrs=dict(head.task_attrs),
                     parallel_ctx=ParallelContext(*head.parallel))
            t.thrd_id = self._thrd(m, kind, d)
            self.tasks.append(t)
            mem = f"cuda:{d}" if head.device_type == "cuda" and kind not in IO_KINDS else "host"
            self.mem[t.task_id] = mem
            for nid in ids:
                n = self.nodes[nid]
                if n.out is not None:
                    desc = self._desc(t, {"out": n.out}, n.register_num, f"out_{nid}")
                    desc.mem_case = mem
                    self.desc_of[nid] = desc
        self._plan_relays()
        for t, ids in zip(self.tasks, self.groups):
            self._wire(t, ids)
        if not self.gated:
            self._add_ticks()
        for t in self.tasks:  # scratch descs: nobody waits for them
            for desc in t.produced.values():
                if not desc.consumer_task_ids:
                    desc.register_num = 1
        return self.tasks

    def _plan_relays(self) -> None:
        """Which descs are read on more than ``width`` other machines, and their relay trees."""
        readers: dict[int, set[int]] = {}
        for t, ids in zip(self.tasks, self.groups):
            for nid in ids:
                for src in self.nodes[nid].inputs.values():
                    d = self.desc_of[src]
                    if self.tasks[d.producer_task_id].machine_id != t.machine_id:
                        readers.setdefault(d.regst_desc_id, set()).add(t.machine_id)
        for desc_id, machines in readers.items():
            if len(machines) > self.width:
                self._relay_tree(desc_id, machines)

    def _relay_tree(self, desc_id: int, machines: set[int]) -> None:
        """Desc ``desc_id`` goes to ``machines`` through a ``width``-ary tree of comm_nets."""
        order = sorted(machines)
        self._relay[desc_id] = {m: order[relay_parent(k, self.width)]
                                for k, m in enumerate(order)
                                if relay_parent(k, self.width) >= 0}
        levels, k = 1, len(order) - 1
        while relay_parent(k, self.width) >= 0:
            k, levels = relay_parent(k, self.width), levels + 1
        self.relays[f"regst desc {desc_id}"] = (
            f"read on {len(order)} other machines: relayed by comm_net tasks, "
            f"{self.width} per sender, {levels} hops deep")

    def _read(self, t: Task, nid: int) -> RegstDesc:
        """The desc ``t`` reads for node ``nid``'s output, consuming it if it is external."""
        desc = self.desc_of[nid]
        if desc.producer_task_id == t.task_id:
            return desc
        src_task = self.tasks[desc.producer_task_id]
        if src_task.machine_id != t.machine_id:
            relay = self._relay.get(desc.regst_desc_id)
            desc = self._copy(desc, src_task.machine_id, "host")  # the network reads host memory
            desc = self._comm_net(desc, t.machine_id, relay)
        desc = self._copy(desc, t.machine_id, self.mem[t.task_id])
        if (desc.regst_desc_id, t.task_id) not in self._consumes:
            self._consumes.add((desc.regst_desc_id, t.task_id))
            t.consumed[f"in_{len(t.consumed)}"] = [desc.regst_desc_id]
            desc.consumer_task_ids.append(t.task_id)
        return desc

    def _comm_net(self, desc: RegstDesc, machine: int,
                  relay: dict[int, int] | None = None) -> RegstDesc:
        """``desc`` (host memory, another machine) on ``machine``: its comm_net's output.

        With a ``relay`` tree the comm_net reads the copy its relay machine received."""
        key = (desc.regst_desc_id, machine)
        if key not in self._comm:
            parent = relay.get(machine) if relay else None
            src = desc if parent is None else self._comm_net(desc, parent, relay)
            name = comm_net_name(desc, machine) + ("" if parent is None else f" (via m{parent})")
            t = Task(len(self.tasks), "comm_net", machine, self._thrd(machine, "comm_net", 0),
                     name=name)
            self.tasks.append(t)
            self.mem[t.task_id] = "host"
            self._comm[key] = wire_comm_net(t, src, self._next_desc)
            self._next_desc += 1
        return self._comm[key]

    def _copy(self, desc: RegstDesc, machine: int, mem: str) -> RegstDesc:
        """``desc`` in memory ``mem``, through copy_d2h / copy_h2d tasks (device-host-device)."""
        if desc.mem_case == mem:
            return desc
        if desc.mem_case != "host" and mem != "host":
            desc = self._copy(desc, machine, "host")
        key = (desc.regst_desc_id, mem)
        if key not in self._copies:
            kind = "copy_d2h" if mem == "host" else "copy_h2d"
            device = int((desc.mem_case if mem == "host" else mem).partition(":")[2] or 0)
            t = Task(len(self.tasks), kind, machine, -1,
                     name=f"{kind}{desc.regst_desc_id}->{mem}")
            t.thrd_id = self._thrd(machine, kind, device)
            self.tasks.append(t)
            self.mem[t.task_id] = mem
            t.consumed["in"] = [desc.regst_desc_id]
            desc.consumer_task_ids.append(t.task_id)
            out = self._desc(t, desc.blobs, desc.register_num, "out")
            out.mem_case = mem
            self._copies[key] = out
        return self._copies[key]

    def _wire(self, t: Task, ids: list[int]) -> None:
        for nid in ids:
            n = self.nodes[nid]
            ins = {arg: BlobRef(self._read(t, src).regst_desc_id, "out")
                   for arg, src in n.inputs.items()}
            if n.kind in ("input", "output", *RATE_KINDS):
                continue
            outs = {"out": BlobRef(self.desc_of[nid].regst_desc_id, "out")}
            t.exec_sequence.append(ExecNode(KernelConf(n.name, n.op_type, dict(n.attrs)),
                                            ins, outs))

    def _add_ticks(self) -> None:
        clocks = [t for t in self.tasks if t.task_type in ("input", "source")]
        idle = [t for t in self.tasks if t.task_type in ("normal", "boxing") and not t.consumed]
        if idle and not clocks:
            t = idle[0]
            raise CompileError(f"task {t.task_id} ({t.label}) holds only variables or "
                               "constants and the job has no input or source to pace it")
        local: dict[int, Task] = {}
        for c in clocks:
            local.setdefault(c.machine_id, c)
        paced = [(t, local.get(t.machine_id, clocks[0] if clocks else t)) for t in idle]
        paced += self._gate_sources_on_inputs()
        remote: dict[int, set[int]] = {}
        for t, clock in paced:
            if clock.machine_id != t.machine_id:
                desc = next(iter(clock.produced.values()))
                remote.setdefault(desc.regst_desc_id, set()).add(t.machine_id)
        for desc_id, machines in remote.items():
            if len(machines) > self.width and desc_id not in self._relay:
                self._relay_tree(desc_id, machines)
        for t, clock in paced:
            desc = next(iter(clock.produced.values()))
            if clock.machine_id != t.machine_id:
                desc = self._comm_net(desc, t.machine_id, self._relay.get(desc.regst_desc_id))
            desc = self._copy(desc, t.machine_id, self.mem[t.task_id])
            t.consumed["tick"] = [desc.regst_desc_id]
            desc.consumer_task_ids.append(t.task_id)


    def _gate_sources_on_inputs(self) -> list[tuple[Task, Task]]:
        """A job with inputs and sources: each source makes one piece per fed piece.

        Inputs act when the client feeds them, sources when they are started with a piece
        count; ``Session.run`` only feeds, so a source beside an input never made a piece
        and the run waited out its timeout.  Here each source is ``gated`` and paced by a
        tick task reading an input's regst (this machine's input if it has one; the tick
        sends only a control regst across machines): it acts once per fed piece, numbered
        like it, and ends when the inputs are closed (both cores' generator rule).  The
        returned pairs are ``(source, tick)`` for ``_add_ticks`` to wire.
        """
        inputs = [t for t in self.tasks if t.task_type == "input"]
        sources = [t for t in self.tasks if t.task_type == "source"]
        if not inputs or not sources:
            return []
        local: dict[int, Task] = {}
        for t in inputs:
            local.setdefault(t.machine_id, t)
        ticks: dict[int, Task] = {}  # input task id -> the tick reading it
        paced = []
        for src in sources:
            clock = local.get(src.machine_id, inputs[0])
            tick = ticks.get(clock.task_id)
            if tick is None:
                data = next(iter(clock.produced.values()))
                tick = ticks[clock.task_id] = Task(
                    len(self.tasks), "tick", clock.machine_id,
                    self._thrd(clock.machine_id, "input", 0), name=f"{clock.label}/tick",
                    parallel_ctx=clock.parallel_ctx)
                self.tasks.append(tick)
                self.mem[tick.task_id] = "host"
                tick.consumed["in"] = [data.regst_desc_id]
                data.consumer_task_ids.append(tick.task_id)
                self._desc(tick, {}, data.register_num, "out").is_ctrl = True
            src.attrs["gated"] = True
            paced.append((src, tick))
        return paced

def build_plan(tasks: list[Task], name: str, machines: int, dpm: int, num_pieces: int | None,
               inputs: list[str], outputs: list[str], variables: list[str],
               ctrl: dict) -> Plan:
    return Plan(tasks=tasks, machines=MachineInfo(machines, dpm),
                job=JobInfo(name, num_pieces, inputs, outputs, variables), ctrl=ctrl)
