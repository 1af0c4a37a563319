from collections.abc import Callable
from typing import Any

NAME: str

def configure(meta_of: Callable[..., Any], caller_where: Callable[..., Any],
              act_record: Callable[..., Any], inside: dict[Any, bool] | None = ...,
              pkg_dir: str | None = ...) -> None: ...
def set_tensor_type(t: type) -> None: ...
def set_issue_hook(fn: Callable[..., Any] | None) -> None: ...
def py_link(instr: Instruction) -> list[Instruction]: ...
def py_call_key(tensor_type: type, args: Any, kwargs: dict[str, Any]) -> tuple: ...

class Blob:
    shape: tuple[int, ...]
    dtype: str
    device: Any
    array: Any
    error: Any
    meta: Any
    producer: Any
    last_writer: Any
    readers: list[Any]
    nbytes: int
    id: int
    prune_at: int
    dead: bool
    def __init__(self, shape: tuple[int, ...], dtype: str, device: Any, array: Any = ...,
                 nbytes: int | None = ..., meta: Any = ...) -> None: ...

class Instruction:
    itype: Any
    stream: Any
    name: str
    operand: Any
    where: Any
    error: Any
    deps: Any
    reads: tuple[Any, ...]
    writes: tuple[Any, ...]
    id: int
    dispatched: bool
    started: bool
    done: bool
    fusable: bool
    waited: bool
    def __init__(self, itype: Any, stream: Any, name: str, operand: Any, reads: Any,
                 writes: Any, where: Any) -> None: ...
    def describe(self) -> str: ...

class Step:
    name: str
    where: Any
    kernel: Any
    ufunc: Any
    form: Any
    ins: Any
    outs: Any
    attrs: Any
    reads: list[Any]
    writes: list[Any]
    def __init__(self, name: str, where: Any, kernel: Any, ufunc: Any, ins: Any, outs: Any,
                 attrs: Any, reads: list[Any], writes: list[Any]) -> None: ...

class RunLock:
    def acquire(self, blocking: bool = ...) -> bool: ...
    def release(self) -> None: ...

class StreamRt:
    vm: Any
    stype: Any
    stream: Any
    xp: Any
    kctx: Any
    last: Any
    current: Any
    unit: Any
    thread: Any
    label: str
    names: dict[int, str]
    ufuncs: dict[str, Any]
    index: int
    track: int
    allocated: int
    freed: int
    allocs: int
    frees: int
    executed: int
    reused: int
    run_lock: RunLock
    sync: bool
    native: bool
    def __init__(self, vm: Any, stype: Any, index: int, track: int, stream: Any,
                 kctx: Any) -> None: ...
    def put(self, instr: Instruction) -> None: ...
    def stop(self) -> None: ...
    def queued(self) -> list[Instruction]: ...
    def help_until(self, instr: Instruction) -> None: ...
    def join(self, timeout: float) -> bool: ...

class VMState:
    vm: Any
    issued: int
    ops: int
    release_bytes: int
    fuse: bool
    releases: Any
    def __init__(self, vm: Any, releases: Any, fuse: bool) -> None: ...
    def submit_one(self, i: Instruction) -> None: ...
    def submit(self, instrs: Any) -> None: ...
    def submit_step(self, itype: Any, stream: Any, step: Step) -> Instruction: ...
    def release(self, blob: Blob) -> None: ...

class IssuePlan:
    vm: Any
    expr: Any
    attrs: Any
    in_names: tuple[str, ...]
    outs: tuple
    def __init__(self, vm: Any, expr: Any, in_names: tuple[str, ...], attrs: Any, outs: tuple,
                 itype: Any, stream: Any, wrap: Any) -> None: ...
    def run(self, tensors: Any, attrs: Any = ..., where: Any = ...) -> Any: ...

class FastPlan:
    def __init__(self, iplan: Any, positions: Any, scalar_attr: Any, scalar_pos: Any,
                 scalar_conv: Any) -> None: ...

class FastCall:
    _fast: dict[Any, Any]
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

class Where:
    code: Any
    lasti: int
    def __init__(self, code: Any, lasti: int) -> None: ...
    @property
    def line(self) -> int: ...

def caller_where() -> Where | None: ...

class TensorBase:
    _blob: Any
    _vm: Any
