"""Op definitions and kernels, by op type."""

from actorflow.kernels.registry import KernelContext, OpDef, get_op, op_types, register_op

__all__ = ["KernelContext", "OpDef", "get_op", "op_types", "register_op"]
