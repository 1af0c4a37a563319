"""``af.comm``: OneFlow's ``oneflow.comm`` collectives on eager local tensors.

As in OneFlow, ``all_reduce``, ``broadcast`` and ``reduce`` change the tensor given, and
``all_gather``/``gather``/``all_to_all`` fill the list given.  actorflow's tensors are
immutable, so "in place" means the tensor object is re-pointed at the result's memory (its
old memory is freed when nothing else holds it); other tensors computed from it before keep
their values.  Every collective is an instruction of the eager VM's comm stream, so it runs
after the kernels that produce its input and in the order every rank issues it (SPMD).
Groups are the world (``af.env.process_group``); ranks are global ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.collective import world
from actorflow.eager.comm import issue_comm
from actorflow.eager.env import get_vm
from actorflow.eager.tensor import caller_where
from actorflow.errors import ArgumentTypeError, UsageError
from actorflow.frontend.eager_tensor import EagerTensor


def _local(t: Any, what: str) -> EagerTensor:
    if not isinstance(t, EagerTensor):
        raise ArgumentTypeError(f"comm.{what}(): expected an eager local tensor, not "
                                f"{type(t).__name__}")
    return t.cpu() if t.device.type != "cpu" else t


def _issue(name: str, fn: Callable[..., np.ndarray], ins: list[EagerTensor],
           shape: tuple[int, ...], dtype: str) -> EagerTensor:
    vm = get_vm()
    _instr, blob = issue_comm(vm, name, fn, [t._blob for t in ins], shape, dtype,
                              caller_where(3))
    assert blob is not None
    return EagerTensor._from_blob(blob, vm)


def _rebind(target: EagerTensor, result: EagerTensor) -> None:
    """``target`` now holds ``result``'s memory (on its own device); the old memory goes
    when ``result`` dies."""
    if target.device.type != "cpu":
        result = result.to(target.device)
    target._blob, result._blob = result._blob, target._blob


def _root(rank: int, what: str) -> int:
    g = world()
    if rank not in g.ranks:
        raise UsageError(f"comm.{what}(): rank {rank} is not in the world {list(g.ranks)}")
    return g.ranks.index(rank)


def all_reduce(tensor: Any) -> None:
    """``tensor`` becomes the sum of every rank's ``tensor``."""
    x = _local(tensor, "all_reduce")
    g = world()
    _rebind(tensor, _issue("comm.all_reduce", g.all_reduce, [x], tuple(x.shape), x.dtype))


def broadcast(tensor: Any, src: int) -> None:
    """``tensor`` becomes rank ``src``'s ``tensor`` on every rank."""
    x = _local(tensor, "broadcast")
    g, root = world(), _root(src, "broadcast")
    out = _issue("comm.broadcast", lambda a: g.broadcast(a, root), [x], tuple(x.shape),
                 x.dtype)
    _rebind(tensor, out)


def reduce(tensor: Any, dst: int) -> None:
    """Rank ``dst``'s ``tensor`` becomes the sum of every rank's (others keep theirs)."""
    x = _local(tensor, "reduce")
    g, root = world(), _root(dst, "reduce")
    out = _issue("comm.reduce", g.all_reduce, [x], tuple(x.shape), x.dtype)
    if g.rank == root:
        _rebind(tensor, out)


def all_gather(tensor_list: list[Any], tensor: Any) -> None:
    """``tensor_list`` (emptied first) receives every rank's ``tensor``, by rank."""
    x = _local(tensor, "all_gather")
    g = world()
    stacked = _issue("comm.all_gather", lambda a: g.all_gather(a[None], axis=0), [x],
                     (g.size, *x.shape), x.dtype)
    tensor_list[:] = [_take(stacked, i) for i in range(g.size)]


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int = 0) -> None:
    """Rank ``dst``'s ``gather_list`` receives every rank's ``tensor``, by rank."""
    holder: list[Any] = []
    all_gather(holder, tensor)
    if world().rank == _root(dst, "gather"):
        if gather_list is None:
            raise UsageError("comm.gather(): the destination rank must pass gather_list")
        gather_list[:] = holder


def all_to_all(output_tensor_list: list[Any], input_tensor_list: list[Any]) -> None:
    """Rank ``r``'s ``input_tensor_list[j]`` lands in rank ``j``'s
    ``output_tensor_list[r]``."""
    g = world()
    if len(input_tensor_list) != g.size:
        raise UsageError(f"comm.all_to_all(): {len(input_tensor_list)} input tensors for a "
                         f"world of {g.size}")
    xs = [_local(t, "all_to_all") for t in input_tensor_list]
    shape, dtype = tuple(xs[0].shape), xs[0].dtype
    if any(tuple(x.shape) != shape or x.dtype != dtype for x in xs):
        raise UsageError("comm.all_to_all(): the input tensors must share shape and dtype")
    stacked = _issue("comm.all_to_all", lambda *a: np.stack(g.all_to_all(list(a))), xs,
                     (g.size, *shape), dtype)
    output_tensor_list[:] = [_take(stacked, i) for i in range(g.size)]


def barrier() -> None:
    """Return once every rank has reached it (after this rank's earlier collectives)."""
    g = world()
    vm = get_vm()
    instr, _ = issue_comm(vm, "comm.barrier", lambda: g.barrier(), [], None, "uint8",
                          caller_where())
    vm.wait(instr, "comm.barrier() (does every rank call it?)")
    vm.raise_failures()


def _take(stacked: EagerTensor, i: int) -> EagerTensor:
    """Row ``i`` of a stacked result, as its own tensor (a host copy on the comm stream)."""
    return _issue("comm.take", lambda a: np.ascontiguousarray(a[i]), [stacked],
                  tuple(stacked.shape[1:]), stacked.dtype)


__all__ = ["all_gather", "all_reduce", "all_to_all", "barrier", "broadcast", "gather",
           "reduce"]
