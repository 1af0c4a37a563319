"""Lower a logical job to physical nodes: placement, SBP choice, per-device kernels, boxing.

Walks the ops in order (the trace order is topological).  Each op gets devices (its
ranks mapped onto the cluster) and an SBP signature: the one its op definition allows
that makes boxing move the fewest bytes across devices (greedy), ties broken by fewer
boxing tasks, then by the rule's order.  One physical node per device runs the kernel on
its piece; boxing nodes (``boxer``: slices, concats and adds, through trees of bounded
width over many pieces) convert layouts where producer and consumer disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from actorflow.errors import CompileError, OpError
from actorflow.kernels import sbp as sbp_rules
from actorflow.kernels.registry import get_op
from actorflow.plan.compiler.boxer import Boxer
from actorflow.plan.compiler.boxing import Device, boxing_cost, piece_box, split_axis, valid_code
from actorflow.plan.compiler.graph import NO_INPUT_KERNELS, RATE_KINDS, JobSpec, LogicalOp
from actorflow.plan.compiler.trees import DEFAULT_WIDTH
from actorflow.plan.model import BlobDesc


@dataclass
class PNode:
    """One kernel (or input/source/output) on one device: becomes part of one task."""

    id: int
    kind: str  # normal | boxing | input | source | output
    name: str
    op_type: str
    attrs: dict[str, Any]
    device: Device
    inputs: dict[str, int]  # arg -> producing PNode id (its blob "out")
    out: BlobDesc | None
    register_num: int
    device_type: str = "cpu"
    parallel: tuple[int, int] = (0, 1)
    task_attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def blob(self) -> BlobDesc:
        """The output a reader of this node gets (only output nodes have none)."""
        if self.out is None:
            raise CompileError(f"node '{self.name}' ({self.kind}) has no output to read")
        return self.out


@dataclass
class Layout:
    """Where a logical tensor's pieces are: devices, SBP code, one PNode id per device."""

    devices: tuple[Device, ...]
    code: str
    nodes: list[int]
    device_type: str = "cpu"


class Lowering:
    def __init__(self, job: JobSpec, machines: int, devices_per_machine: int,
                 width: int = DEFAULT_WIDTH) -> None:
        self.job = job
        self._op = {o.name: o for o in job.ops}
        self.machines = machines
        self.dpm = devices_per_machine
        self.nodes: list[PNode] = []
        self.layouts: dict[str, Layout] = {}
        self.choices: dict[str, str] = {}  # op name -> "S0 on ranks [..]" (for plan show)
        self.width = width
        shapes = {o.name: o.out for o in job.ops if o.out is not None}
        self.boxer = Boxer(job.name, self.nodes, self.layouts, shapes, self._node, width)

    # -- helpers ---------------------------------------------------------------------------
    def _node(self, kind: str, name: str, op_type: str, attrs: dict, device: Device,
              inputs: dict[str, int], out: BlobDesc | None, register_num: int | None = None,
              **kw: Any) -> int:
        n = PNode(len(self.nodes), kind, name, op_type, attrs, device, inputs, out,
                  register_num or self.job.register_num, **kw)
        self.nodes.append(n)
        return n.id

    def _devices(self, op: LogicalOp, ranks: tuple[int, ...]) -> tuple[Device, ...]:
        n = self.machines * self.dpm
        for r in ranks:
            if r >= n:
                raise CompileError(
                    f"job '{self.job.name}': op '{op.name}' is placed on rank {r}, but the "
                    f"cluster has {n} ranks ({self.machines} machines x {self.dpm} devices); "
                    "compile with more machines or change the placement")
        return tuple(divmod(r, self.dpm) for r in ranks)

    def _code(self, op: LogicalOp, shape: tuple[int, ...], code: str | None, p: int) -> str:
        code = code or "B"
        if p == 1:
            return "B"
        if not valid_code(shape, code, p):
            raise CompileError(
                f"job '{self.job.name}': op '{op.name}': cannot split axis {code[1:]} of shape "
                f"{shape} over {p} devices (the axis needs at least one element per device)")
        return code

    # -- the walk --------------------------------------------------------------------------
    def run(self) -> list[PNode]:
        for op in self.job.ops:
            handler = _HANDLERS.get(op.op_type)
            if handler is not None:
                handler(self, op)
            elif op.op_type in NO_INPUT_KERNELS:
                self._no_input(op)
            else:
                self._kernel(op)
        return self.nodes

    def _input(self, op: LogicalOp) -> None:
        dev = self._devices(op, op.ranks or (0,))[:1]
        kind, attrs, op_type = op.op_type, {}, ""
        task_attrs: dict[str, Any]
        if kind == "input":
            task_attrs = {"input_name": op.attrs.get("feed_name", op.name)}
        else:
            task_attrs = {}
            if self.job.num_pieces is not None:
                task_attrs["piece_num"] = self.job.num_pieces
            op_type, attrs = op.attrs["kernel"], dict(op.attrs["kernel_attrs"])
        nid = self._node(kind, op.name, op_type, attrs, dev[0], {}, op.out, op.register_num,
                         task_attrs=task_attrs, device_type=op.device_type)
        self.layouts[op.name] = Layout(dev, "B", [nid], op.device_type)
        self.choices[op.name] = f"B on {self._ranks_text(dev)}"

    def _to_global(self, op: LogicalOp) -> None:
        src = self.layouts[op.inputs["in"]]
        devs = self._devices(op, op.ranks) if op.ranks is not None else src.devices
        dtype = op.device_type if op.ranks is not None else src.device_type
        code = self._code(op, op.blob.shape, op.sbp or src.code, len(devs))
        nodes = self.box(op.inputs["in"], devs, code)
        self.layouts[op.name] = Layout(devs, code, nodes, dtype)
        self.choices[op.name] = f"{code} on {self._ranks_text(devs)}"

    def _output(self, op: LogicalOp) -> None:
        src_name = op.inputs["in"]
        src = self.layouts[src_name]
        # where the client takes it: the op's own rank if it has one (a multi-job plan keeps
        # every output on rank 0), else the first device of the tensor
        dev = self._devices(op, op.ranks)[:1] if op.ranks is not None else src.devices[:1]
        (piece,) = self.box(src_name, dev, "B")
        name = op.attrs.get("name", op.name)
        self._node("output", name, "", {}, dev[0], {"in": piece}, None,
                   task_attrs={"output_name": name})

    def _no_input(self, op: LogicalOp) -> None:
        devs = self._devices(op, op.ranks or (0,))
        shape = op.blob.shape
        code = self._code(op, shape, op.sbp, len(devs))
        nodes = []
        for j, dev in enumerate(devs):
            box = piece_box(shape, code, len(devs), j)
            attrs = dict(op.attrs)
            if op.op_type == "variable_part":
                attrs["begin"], attrs["end"] = [b for b, _ in box], [e for _, e in box]
                attrs["state_key"] = f"{op.name}@{j}"  # shared by every job naming it
            else:  # const_array: cut the value at compile time
                full = np.asarray(attrs["value"]).reshape(shape)
                part = full[tuple(slice(b, e) for b, e in box)]
                attrs.update(value=part.ravel().tolist(), shape=list(part.shape))
            out = get_op(op.op_type).infer_checked(op.name, {}, attrs)["out"]
            nodes.append(self._node("normal", f"{op.name}@{j}", op.op_type, attrs, dev, {}, out,
                                    op.register_num, parallel=(j, len(devs)),
                                    device_type=op.device_type))
        self.layouts[op.name] = Layout(devs, code, nodes, op.device_type)
        self.choices[op.name] = f"{code} on {self._ranks_text(devs)}"

    def _placement_of(self, op: LogicalOp) -> tuple[tuple[Device, ...], str]:
        if op.ranks is not None:
            return self._devices(op, op.ranks), op.device_type
        ins = [self.layouts[s] for s in op.inputs.values()]
        types = sorted({lay.device_type for lay in ins})
        if len(types) > 1:
            raise CompileError(f"job '{self.job.name}': op '{op.name}' mixes device types "
                               f"{types} in its inputs; move them with to_global first")
        best = max(ins, key=lambda lay: len(lay.devices))  # first of the widest
        return best.devices, best.device_type

    def _kernel(self, op: LogicalOp) -> None:
        devs, dtype = self._placement_of(op)
        p = len(devs)
        ins = {arg: self._op[src].blob for arg, src in op.inputs.items()}
        sig = self._choose(op, devs, ins)
        in_codes, out_code = sig
        pieces = {arg: self.box(op.inputs[arg], devs, in_codes[arg]) for arg in op.inputs}
        opdef = get_op(op.op_type)
        nodes = []
        for j, dev in enumerate(devs):
            box = piece_box(op.blob.shape, out_code, p, j)
            shape = tuple(e - b for b, e in box)
            attrs = sbp_rules.physical_attrs(op.op_type, op.attrs, shape)
            phys_in = {arg: self.nodes[ids[j]].blob for arg, ids in pieces.items()}
            try:
                out = opdef.infer_checked(op.name, phys_in, attrs)["out"]
            except OpError as e:
                raise CompileError(f"job '{self.job.name}': op '{op.name}' on piece {j} of {p} "
                                   f"(SBP {in_codes} -> {out_code}): {e}") from e
            if out.shape != shape:
                raise CompileError(
                    f"job '{self.job.name}': op '{op.name}': SBP rule {in_codes} -> {out_code} "
                    f"gives piece shape {out.shape}, expected {shape} (bad rule for "
                    f"'{op.op_type}')")
            name = op.name if p == 1 else f"{op.name}@{j}"
            nodes.append(self._node("normal", name, op.op_type, attrs, dev,
                                    {arg: ids[j] for arg, ids in pieces.items()}, out,
                                    op.register_num, parallel=(j, p), device_type=dtype))
        self.layouts[op.name] = Layout(devs, out_code, nodes, dtype)
        ins_text = ", ".join(f"{a}:{c}" for a, c in in_codes.items())
        self.choices[op.name] = f"({ins_text}) -> {out_code} on {self._ranks_text(devs)}"

    def _choose(self, op: LogicalOp, devs: tuple[Device, ...],
                ins: dict[str, BlobDesc]) -> tuple[dict[str, str], str]:
        p = len(devs)
        if p == 1:
            return {k: "B" for k in ins}, "B"
        shapes = {k: d.shape for k, d in ins.items()}
        best, best_cost = None, None
        for sig in sbp_rules.signatures(op.op_type, shapes, op.blob.shape, op.attrs):
            in_codes, out_code = sig
            if not valid_code(op.blob.shape, out_code, p) or any(
                    not valid_code(shapes[k], c, p) for k, c in in_codes.items()):
                continue
            total = [0, 0]
            for arg, code in in_codes.items():
                src = self.layouts[op.inputs[arg]]
                d = ins[arg]
                c = boxing_cost(d.shape, np.dtype(d.dtype).itemsize, src.code, src.devices,
                                code, devs, self.width)
                if c is None:
                    break
                total[0] += c[0]
                total[1] += c[1]
            else:
                if best_cost is None or tuple(total) < best_cost:
                    best, best_cost = sig, tuple(total)
        if best is None:  # all-B is always possible unless an input is P elsewhere
            raise CompileError(f"job '{self.job.name}': op '{op.name}' ({op.op_type}) has no "
                               f"SBP signature reachable from its inputs on {p} devices")
        return best

    # -- boxing ----------------------------------------------------------------------------
    def box(self, name: str, devs: tuple[Device, ...], code: str) -> list[int]:
        """PNode ids holding tensor ``name`` as ``code`` on ``devs`` (adds boxing nodes)."""
        return self.boxer.box(name, devs, code)

    def _ranks_text(self, devs: tuple[Device, ...]) -> str:
        """``[m0:d0, m0:d1]``; a long run of consecutive ranks is shortened to its ends."""
        ranks = [m * self.dpm + d for m, d in devs]
        if len(devs) > 8 and all(b == a + 1 for a, b in pairwise(ranks)):
            (m0, d0), (m1, d1) = devs[0], devs[-1]
            return f"[m{m0}:d{d0} .. m{m1}:d{d1}] ({len(devs)} devices)"
        return "[" + ", ".join(f"m{m}:d{d}" for m, d in devs) + "]"


    def _per_part(self, op: LogicalOp) -> None:
        """Ops on a variable in place (``assign``, the model-IO jobs' ``variable_save``/
        ``variable_load``): one node per part of the variable, on the part's device.
        ``assign`` reads its value boxed to the variable's own layout (never the other way
        round); the model-IO ops read the checkpoint path broadcast to every part."""
        ref = self._op[op.inputs["ref"]]
        if ref.op_type != "variable_part":
            raise CompileError(f"job '{self.job.name}': op '{op.name}' ({op.op_type}) needs a "
                               f"variable as 'ref', but '{ref.name}' is a {ref.op_type}")
        lay = self.layouts[ref.name]
        arg = "value" if op.op_type == "assign" else "path"
        pieces = self.box(op.inputs[arg], lay.devices,
                          lay.code if op.op_type == "assign" else "B")
        opdef = get_op(op.op_type)
        nodes = []
        regions: set[tuple] = set()
        for j, dev in enumerate(lay.devices):
            part = self.nodes[lay.nodes[j]]
            attrs = {**op.attrs, "variable": dict(part.attrs),
                     "state_key": part.attrs["state_key"]}
            if op.op_type == "variable_save":  # one file per distinct region
                region = (tuple(part.attrs["begin"]), tuple(part.attrs["end"]))
                attrs.update(file=f"{ref.name}/part{j}.npy", skip=region in regions)
                regions.add(region)
            ins = {"ref": lay.nodes[j], arg: pieces[j]}
            out = opdef.infer_checked(op.name, {k: self.nodes[v].blob for k, v in ins.items()},
                                      attrs)["out"]
            nodes.append(self._node("normal", f"{op.name}@{j}", op.op_type, attrs, dev, ins,
                                    out, op.register_num, parallel=(j, len(lay.devices)),
                                    device_type=lay.device_type))
        code = lay.code if op.op_type != "variable_save" else "B"
        self.layouts[op.name] = Layout(lay.devices, code, nodes, lay.device_type)
        self.choices[op.name] = f"{lay.code} on {self._ranks_text(lay.devices)} ({op.op_type})"


def _rate(self: Lowering, op: LogicalOp) -> None:
    """``repeat``/``acc``: one task of that kind per device part, the layout unchanged."""
    src = self.layouts[op.inputs["in"]]
    key = RATE_KINDS[op.op_type]
    nodes = []
    for j, (dev, nid) in enumerate(zip(src.devices, src.nodes)):
        name = op.name if len(src.devices) == 1 else f"{op.name}@{j}"
        nodes.append(self._node(op.op_type, name, "", {}, dev, {"in": nid}, self.nodes[nid].out,
                                op.register_num, parallel=(j, len(src.devices)),
                                device_type=src.device_type,
                                task_attrs={key: int(op.attrs[key])}))
    self.layouts[op.name] = Layout(src.devices, src.code, nodes, src.device_type)
    self.choices[op.name] = f"{src.code} on {self._ranks_text(src.devices)} ({op.op_type})"


_HANDLERS = {
    "repeat": _rate, "acc": _rate,
    "assign": Lowering._per_part, "variable_save": Lowering._per_part,
    "variable_load": Lowering._per_part,
    "input": Lowering._input, "source": Lowering._input,
    "to_global": Lowering._to_global, "output": Lowering._output,
}

__all__ = ["Layout", "Lowering", "PNode", "split_axis"]
