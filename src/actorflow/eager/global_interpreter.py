"""The eager global interpreter: ops on global tensors, and local -> global.

For an op it infers the logical output with the op definition (``infer_checked`` on
logical shapes), picks the SBP signature with the compiler's rules (``kernels/sbp.py``):
the first one the inputs already have, else the one needing the fewest input reboxes
(all-broadcast always fits), reboxes those inputs on the comm stream, and runs the local
kernel on the local parts through the eager local interpreter (attrs that name a shape are
rewritten for the piece, as the compiler does).  Ranks outside the placement run nothing
and get an output carrying the full meta.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from actorflow.collective import boxing, world
from actorflow.eager import global_tensor as gt
from actorflow.eager.comm import issue_comm
from actorflow.eager.env import get_vm
from actorflow.eager.global_tensor import GlobalTensor, check_meta, rebox_local
from actorflow.eager.tensor import caller_where
from actorflow.errors import UsageError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.sbp import physical_attrs, signatures


class EagerGlobalInterpreter:
    name = "eager.global"

    def __init__(self, tensor_cls: Any, local: Any, sbp_of: Callable[[str], Any]) -> None:
        self.tensor_cls = tensor_cls
        self.local = local  # the eager local interpreter: runs kernels on local parts
        self.sbp_of = sbp_of  # SBP code -> the frontend's SBP object
        # device type -> this rank's device ("cuda:<LOCAL_RANK>"); the top level sets it
        self.device_of: Callable[[str], str] = lambda t: "cpu" if t == "cpu" else "cuda:0"
        gt._LOCAL[:] = [local]

    # -- local -> global, global -> global -----------------------------------------------
    def from_local(self, x: Any, placement: Any, sbp: Any, check_data: bool = False) -> Any:
        if placement is None or sbp is None:
            raise UsageError("to_global() of a local tensor needs both placement= and sbp=")
        g = world()
        ranks = tuple(placement.ranks)
        bad = [r for r in ranks if r >= g.size]
        if bad:
            raise UsageError(f"to_global(): placement ranks {bad} do not exist in a world of "
                             f"{g.size} rank(s)")
        code = sbp.code
        axis = boxing.split_axis(code)
        if axis is not None and axis >= x.ndim:
            raise UsageError(f"to_global(): sbp {sbp!r} does not fit a local tensor of shape "
                             f"{x.shape}: Split axis out of range (expected to be in range of "
                             f"[0, {x.ndim}), but got {axis}!)")
        meta = {"placement": [placement.device_type, list(ranks)], "sbp": code,
                "dtype": str(x.dtype), "ndim": x.ndim}
        if axis is None:
            meta["shape"] = list(x.shape)
        check_data = check_data or os.environ.get("ACTORFLOW_CHECK_GLOBAL_DATA", "") == "1"
        shapes = check_meta(g, x.cpu(), meta, check_data and code == "B",
                            f"to_global({placement!r}, {sbp!r})")
        shape = list(x.shape)
        if axis is not None:
            shape[axis] = sum(shapes[g.ranks.index(r)][axis] for r in ranks)
            for r in ranks:
                want = boxing.local_shape(shape, (ranks, code), r)
                have = tuple(shapes[g.ranks.index(r)])
                if have != want:
                    raise UsageError(f"to_global(): rank {r}'s local part has shape {have} "
                                     f"but {sbp!r} of the logical shape {tuple(shape)} over "
                                     f"ranks {list(ranks)} gives it {want}")
        local = None
        if g.global_rank in ranks:
            local = x if code != "B" or len(ranks) == 1 else self._first_ranks(g, x, ranks)
            local = local.to(self.device_for(placement))
        return self.tensor_cls._make(local, tuple(shape), str(x.dtype), placement, sbp)

    def _first_ranks(self, g: Any, x: Any, ranks: tuple[int, ...]) -> Any:
        """A broadcast tensor made from local data holds the placement's first rank's data
        on every rank (OneFlow's rule: the logical tensor is one tensor, whatever the other
        ranks passed); a broadcast within the placement, on the comm stream."""
        sub = g.subgroup(ranks)
        first = g.global_rank == ranks[0]
        src = x.cpu()

        def fn(a: Any) -> Any:
            return sub.broadcast(a if first else None, root=0)

        _instr, blob = issue_comm(get_vm(), f"broadcast of rank {ranks[0]}'s data to "
                                  f"ranks {list(ranks)}", fn, [src._blob], tuple(x.shape),
                                  str(x.dtype), caller_where())
        assert blob is not None
        return self.local.tensor_cls._from_blob(blob, get_vm())

    def my_region(self, shape: list[int], placement: Any, code: str) -> Any:
        """This rank's region of a tensor of ``shape`` laid out by ``code`` on
        ``placement`` (None outside it), and whether this rank is the placement's first."""
        g = world()
        bad = [r for r in placement.ranks if r >= g.size]
        if bad:
            raise UsageError(f"placement ranks {bad} do not exist in a world of {g.size} "
                             "rank(s)")
        layout = (tuple(placement.ranks), code)
        return boxing.region(shape, layout, g.global_rank), g.global_rank == placement.ranks[0]

    def device_for(self, placement: Any) -> str:
        """This rank's device for ``placement``: ``cuda:<LOCAL_RANK>`` for a CUDA one."""
        return self.device_of(placement.device_type)

    def to_global(self, x: Any, placement: Any = None, sbp: Any = None) -> Any:
        """A global tensor in another layout (placement and/or SBP), by ``rebox``."""
        placement = x.placement if placement is None else placement
        sbp = x.sbp if sbp is None else sbp
        if placement.device_type != x.placement.device_type:
            raise UsageError(f"to_global(): moving a global tensor from {x.placement!r} to "
                             f"{placement!r} changes device type, which is not supported")
        axis = boxing.split_axis(sbp.code)
        if axis is not None and axis >= x.ndim:
            raise UsageError(f"to_global(): sbp {sbp!r} does not fit a global tensor of shape "
                             f"{x.shape}: Split axis out of range (expected to be in range of "
                             f"[0, {x.ndim}), but got {axis}!)")
        return self._rebox(x, placement, sbp)

    def _rebox(self, x: GlobalTensor, placement: Any, sbp: Any) -> Any:
        dst = (tuple(placement.ranks), sbp.code)
        if dst == x.layout():
            return x
        local = rebox_local(world(), x._local, x.shape, x.dtype, x.layout(), dst)
        if local is not None and placement.device_type != "cpu":
            local = local.to(self.device_for(placement))
        return self.tensor_cls._make(local, x.shape, x.dtype, placement, sbp)

    # -- ops -----------------------------------------------------------------------------
    def apply(self, expr: Any, inputs: dict[str, Any], attrs: dict[str, Any]) -> Any:
        placements = {t.placement for t in inputs.values()}
        if len(placements) != 1:
            raise UsageError(f"op '{expr.op_type}': Expected all tensors to be on the same "
                             "placement, but found at least two placements: its global inputs "
                             "are on different placements "
                             f"({', '.join(map(repr, placements))}); move them to "
                             "one with .to_global(placement=...) first")
        placement = placements.pop()
        descs = expr.opdef.infer_checked(
            expr.op_type, {k: BlobDesc(t.shape, t.dtype) for k, t in inputs.items()}, attrs)
        if len(descs) != 1:
            raise UsageError(f"op '{expr.op_type}' has {len(descs)} outputs; global tensors "
                             "run ops with one output")
        (out,) = descs.values()
        shapes = {k: tuple(t.shape) for k, t in inputs.items()}
        have = {k: t.sbp.code for k, t in inputs.items()}
        sigs = signatures(expr.op_type, shapes, tuple(out.shape), attrs)
        want, out_code = min(sigs, key=lambda s: sum(have[k] != c for k, c in s[0].items()))
        boxed = {k: self._rebox(t, placement, self.sbp_of(want[k])) for k, t in inputs.items()}
        me = world().global_rank
        local = None
        if me in placement.ranks:
            piece = boxing.local_shape(tuple(out.shape), (tuple(placement.ranks), out_code), me)
            assert piece is not None
            local = self.local.apply(expr, {k: t._local for k, t in boxed.items()},
                                     physical_attrs(expr.op_type, attrs, piece))
        return self.tensor_cls._make(local, tuple(out.shape), out.dtype, placement,
                                     self.sbp_of(out_code))

    def constant_like(self, value: Any, like: list[Any]) -> Any:
        """A numpy value where a global tensor is expected: broadcast on its placement."""
        import numpy as np

        t = like[0]
        arr = np.asarray(value)
        me = world().global_rank
        local = self.local.from_array(arr, dtype=arr.dtype, device=self.device_for(
            t.placement)) if me in t.placement.ranks else None
        return self.tensor_cls._make(local, tuple(arr.shape), arr.dtype.name, t.placement,
                                     self.sbp_of("B"))


__all__ = ["EagerGlobalInterpreter"]
