"""The job as the compiler reads it: a logical op graph of plain data.

The frontend traces Python code into a ``JobSpec``; the compiler never imports the
frontend.  Every op has one output, the tensor named after the op.  Special op types:

- ``input``: a tensor fed by the client each piece (attrs ``shape``, ``dtype``);
- ``source``: a tensor generated each piece by a generator kernel (attrs ``kernel``,
  ``kernel_attrs``);
- ``to_global``: the input tensor moved to a new placement and/or SBP (boxing only);
- ``output``: hands its input to the client under attr ``name`` (default: the op's name);
- ``repeat`` / ``acc``: the input once per piece becomes ``repeat_num`` pieces, or
  ``acc_num`` pieces are summed into one (micro-batches: ``af.Job(micro_batches=k)``);
  each device part of the tensor gets its own repeat/acc task.

Any other op type is a kernel op from the registry (``variable_part``/``const_array``
take no inputs and hold their value in attrs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actorflow.errors import CompileError, OpError
from actorflow.kernels.registry import get_op
from actorflow.plan.model import BlobDesc

SPECIAL = ("input", "source", "to_global", "output", "repeat", "acc")
RATE_KINDS = {"repeat": "repeat_num", "acc": "acc_num"}
NO_INPUT_KERNELS = ("variable_part", "const_array")


@dataclass
class LogicalOp:
    name: str
    op_type: str
    inputs: dict[str, str] = field(default_factory=dict)  # arg -> producing op's name
    attrs: dict[str, Any] = field(default_factory=dict)
    device_type: str = "cpu"
    ranks: tuple[int, ...] | None = None  # None: decided from the inputs
    sbp: str | None = None  # SBP code of the output, when the job fixes it
    register_num: int | None = None
    out: BlobDesc | None = None  # logical output (filled by infer)

    @property
    def blob(self) -> BlobDesc:
        """The inferred output; output ops have none, and no op may read one."""
        if self.out is None:
            raise CompileError(f"op '{self.name}' ({self.op_type}) has no output to read (an "
                               "output op, or not inferred yet)")
        return self.out

    def to_dict(self) -> dict:
        return {"name": self.name, "op_type": self.op_type, "inputs": dict(self.inputs),
                "attrs": dict(self.attrs), "device_type": self.device_type,
                "ranks": None if self.ranks is None else list(self.ranks), "sbp": self.sbp,
                "register_num": self.register_num}


@dataclass
class JobSpec:
    name: str = "job"
    ops: list[LogicalOp] = field(default_factory=list)
    num_pieces: int | None = None
    register_num: int = 2

    def op(self, name: str) -> LogicalOp:
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError(name)

    def names(self, op_type: str) -> list[str]:
        return [o.name for o in self.ops if o.op_type == op_type]

    def output_names(self) -> list[str]:
        """Outputs are named by attr ``name`` (their own namespace), else by the op name."""
        return [o.attrs.get("name", o.name) for o in self.ops if o.op_type == "output"]


def infer_op(op: LogicalOp, ins: dict[str, BlobDesc]) -> BlobDesc | None:
    """The logical output of one op given its inputs; errors name the op and the shapes."""
    t = op.op_type
    if t == "input":
        return BlobDesc(tuple(int(s) for s in op.attrs["shape"]), str(op.attrs["dtype"]))
    if t == "source":
        kernel = get_op(op.attrs["kernel"])
        return kernel.infer_checked(op.name, {}, op.attrs["kernel_attrs"])["out"]
    if t == "to_global":
        return ins["in"]
    if t in RATE_KINDS:
        n = op.attrs.get(RATE_KINDS[t])
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise OpError(f"op '{op.name}' ({t}): attr {RATE_KINDS[t]} must be an int >= 1, "
                          f"got {n!r}")
        return ins["in"]
    if t == "output":
        return None
    return get_op(t).infer_checked(op.name, ins, op.attrs)["out"]


def infer_job(job: JobSpec) -> None:
    """Fill ``op.out`` for every op, in order; an unknown input or bad shape is a CompileError."""
    seen: dict[str, LogicalOp] = {}
    for op in job.ops:
        if op.name in seen:
            raise CompileError(f"job '{job.name}': op name '{op.name}' is used twice")
        ins = {}
        for arg, src in op.inputs.items():
            if src not in seen:
                raise CompileError(f"job '{job.name}': op '{op.name}' input '{arg}' names "
                                   f"'{src}', which is not an earlier op of the job")
            if seen[src].out is None:
                raise CompileError(f"job '{job.name}': op '{op.name}' reads output op '{src}'")
            ins[arg] = seen[src].blob
        try:
            op.out = infer_op(op, ins)
        except OpError as e:
            raise CompileError(f"job '{job.name}': {e}") from e
        seen[op.name] = op
