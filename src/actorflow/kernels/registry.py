"""Op definitions by op type: one place to add an op.

An op definition knows its argument names, how to infer output shapes/dtypes from input
shapes and attrs, and its kernel.  Kernels never assume numpy: they take the array module
from ``ctx.xp`` (numpy on a CPU stream, CuPy on a CUDA stream) and write into the
preallocated output arrays they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from actorflow.errors import OpError, UnknownOpError
from actorflow.kernels.blob import BlobDesc
from actorflow.registry import Registry

Blobs = Mapping[str, BlobDesc]  # an op's inputs (or outputs) as shapes and dtypes
Arrays = Mapping[str, Any]  # an op's inputs (or outputs) as arrays of the stream's module
Attrs = Mapping[str, Any]  # an op's attributes (plain msgpack-able values)
InferFn = Callable[[Blobs, Attrs], dict[str, BlobDesc]]
KernelFn = Callable[["KernelContext", Arrays, Arrays, Attrs], None]


@dataclass
class KernelContext:
    """What a kernel may know about where it runs; ``state`` lives across pieces."""

    xp: Any
    piece_id: int = 0
    task_id: int = 0
    op_name: str = ""
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OpDef:
    op_type: str
    inputs: tuple[str, ...]
    infer: InferFn
    kernel: KernelFn
    outputs: tuple[str, ...] = ("out",)
    variadic: bool = False  # inputs are in_0 .. in_{n-1}
    doc: str = ""
    # element-wise ops: (array-module function, form), the kernel said as data so the eager
    # VM can call it without the dict-taking wrapper and run chains of them as one
    # instruction; forms: "t" f(x), "t0" f(x, 0), "tt" f(a, b), "ts" f(x, attrs.scalar),
    # "st" f(attrs.scalar, x); always with out= (and casting="unsafe" but for "t")
    ufunc: tuple[str, str] | None = None

    def input_names(self, given: Mapping[str, Any]) -> list[str]:
        if not self.variadic:
            return list(self.inputs)
        names = sorted((k for k in given if k.startswith("in_")), key=lambda k: int(k[3:]))
        return names

    def infer_checked(
        self, op_name: str, ins: Mapping[str, BlobDesc], attrs: Mapping[str, Any]
    ) -> dict[str, BlobDesc]:
        """Infer output descs; every failure names the op and what was expected."""
        expected = self.input_names(ins)
        if self.variadic:
            if not expected or [f"in_{i}" for i in range(len(expected))] != expected:
                raise OpError(
                    f"op '{op_name}' ({self.op_type}): expected inputs in_0..in_N-1, "
                    f"got {sorted(ins)}"
                )
        elif set(ins) != set(expected):
            raise OpError(
                f"op '{op_name}' ({self.op_type}): expected inputs {expected}, got {sorted(ins)}"
            )
        try:
            return self.infer(ins, attrs)
        except OpError as e:  # the same class (a DimensionError stays an IndexError)
            raise type(e)(f"op '{op_name}' ({self.op_type}): {e}") from e
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise OpError(
                f"op '{op_name}' ({self.op_type}): bad attrs or inputs "
                f"({type(e).__name__}: {e})"
            ) from e


def _load_builtin_ops() -> None:
    from actorflow.kernels import ops  # noqa: F401  (registers every built-in op)


OPS: Registry[OpDef] = Registry("op type", loader=_load_builtin_ops, error=UnknownOpError)


def register_op(op: OpDef) -> OpDef:
    """Register ``op`` by its op type; a second definition of one type is refused."""
    return OPS.register(op.op_type, op)


def get_op(op_type: str) -> OpDef:
    """The op definition of ``op_type``; unknown types raise ``UnknownOpError`` (an
    ``OpError``) listing the known ones."""
    return OPS.get(op_type)


def op_types() -> list[str]:
    return OPS.names()
