"""Eager global tensors: a logical tensor laid out on a placement's ranks by an SBP.

Every rank holds a ``GlobalTensor`` with the full meta (logical shape, dtype, placement,
SBP); a rank in the placement also holds its local part, an eager local tensor; a rank
outside holds none.  All ranks run the same program (SPMD), so every collective below is
called by every rank in the same order.  Changing the layout (``to_global``) and reading
the logical value (``numpy``) issue ``rebox`` (``collective/boxing.py``) on the VM's comm
stream (``comm.py``), ordered after the kernels that produce the local part.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorflow.collective import boxing, check_consistent, world
from actorflow.collective.group import ProcessGroup
from actorflow.eager.comm import issue_comm
from actorflow.eager.env import get_vm
from actorflow.eager.tensor import caller_where
from actorflow.errors import ConsistencyError, UsageError

Layout = tuple[tuple[int, ...], str]


class GlobalTensor:
    """Meta on every rank, the local part (an eager local tensor) on placement ranks."""

    __slots__ = ("_dtype", "_local", "_placement", "_sbp", "_shape")
    _local: Any
    _shape: tuple[int, ...]
    _dtype: str
    _placement: Any
    _sbp: Any
    interpreter = "eager.global"
    __array_ufunc__ = None

    @classmethod
    def _make(cls, local: Any, shape: tuple[int, ...], dtype: str, placement: Any,
              sbp: Any) -> Any:
        t = object.__new__(cls)
        t._local, t._shape, t._dtype, t._placement, t._sbp = local, shape, dtype, placement, sbp
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def placement(self) -> Any:
        return self._placement

    @property
    def sbp(self) -> Any:
        return self._sbp

    @property
    def is_global(self) -> bool:
        return True

    def layout(self) -> Layout:
        return (tuple(self._placement.ranks), self._sbp.code)

    def to_local(self) -> Any:
        """This rank's part (an eager local tensor); an empty one outside the placement."""
        if self._local is None:
            return _empty_local(self)
        return self._local

    def numpy(self, timeout: float | None = None) -> np.ndarray:
        """The logical tensor, on every rank (a collective: every rank must call it)."""
        g = world()
        everyone: Layout = (tuple(g.ranks), "B")
        out = rebox_local(g, self._local, self._shape, self._dtype, self.layout(), everyone)
        assert out is not None
        return out.numpy(timeout)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self) -> Any:
        return self.numpy().item()

    def __repr__(self) -> str:
        return (f"global_tensor(shape={self._shape}, dtype={self._dtype}, "
                f"placement={self._placement!r}, sbp={self._sbp!r})")

    def __reduce__(self) -> Any:
        raise TypeError("eager tensors are not picklable; save t.numpy() instead")


_LOCAL: list[Any] = []  # the eager local interpreter (set by the global interpreter)


def _empty_local(t: GlobalTensor) -> Any:
    return _LOCAL[0].from_array(np.zeros(tuple(0 for _ in t.shape), t.dtype), dtype=t.dtype)


def rebox_local(g: ProcessGroup, local: Any, shape: tuple[int, ...], dtype: str, src: Layout,
                dst: Layout) -> Any:
    """Issue ``rebox`` of ``local`` (an eager local tensor or None) on the comm stream;
    returns the eager local tensor of this rank's part in ``dst`` (None outside it)."""
    me = g.global_rank
    if me not in src[0] and me not in dst[0]:
        return None
    if local is not None and local.device.type != "cpu":
        local = local.cpu()  # collectives move host arrays (copy instructions, VM-ordered)
    out_shape = boxing.local_shape(shape, dst, me)
    if local is None:
        def fn() -> Any:
            return boxing.rebox(g, None, shape, src, dst)
        ins = []
    else:
        def fn(a: Any) -> Any:  # type: ignore[misc]
            return boxing.rebox(g, a, shape, src, dst)
        ins = [local._blob]
    vm = get_vm()
    _instr, blob = issue_comm(vm, f"rebox {src[1]}{list(src[0])}->{dst[1]}{list(dst[0])}", fn,
                              ins, out_shape, dtype, caller_where())
    return None if blob is None else _LOCAL[0].tensor_cls._from_blob(blob, vm)


def check_meta(g: ProcessGroup, local: Any, meta: dict[str, Any], check_data: bool,
               what: str) -> list[tuple[int, ...]]:
    """Run the consistency check of ``to_global`` on the comm stream and wait for it:
    every rank must mean the same placement, SBP and dtype (and, for a broadcast tensor
    with ``check_data``, the same values).  Returns every rank's local shape."""
    got: dict[str, Any] = {}

    def fn(a: Any) -> None:
        try:
            check_consistent(g, meta, np.asarray(a) if check_data else None, what)
            got["shapes"] = [tuple(s) for s in g.exchange(list(a.shape))]
        except Exception as e:  # raised on the caller's thread below
            got["error"] = e

    vm = local._vm
    instr, _ = issue_comm(vm, f"consistency check of {what}", fn, [local._blob], None, "uint8",
                          caller_where())
    vm.wait(instr, f"the consistency check of {what} (a collective: does every rank call "
                   "to_global?)")
    vm.raise_failures()
    if "error" in got:
        e = got["error"]
        if isinstance(e, ConsistencyError):
            raise ConsistencyError(str(e)) from e
        raise UsageError(f"to_global(): the consistency check failed: {e}") from e
    return got["shapes"]


__all__ = ["GlobalTensor", "check_meta", "rebox_local"]
