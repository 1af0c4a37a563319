"""Boxing nodes: turn the geometry of ``boxing`` into physical nodes of the lowering.

Direct boxing (few pieces): ``box_slice`` nodes on the source device cut the fragments,
a ``concat``/``add_n`` node on the destination device combines them.  Tree boxing (a
direct form would give one node more than ``width`` inputs or cut one piece more than
``width`` times): the pieces are first combined into the whole tensor on one root device
through a tree of ``concat`` (S) or ``add_n`` (P) nodes of at most ``width`` inputs --
devices of a machine first, then groups of machines -- and then handed out: a B
destination reads the whole (the emitter relays it to many machines through a tree of
comm_net tasks), an S destination gets it through a tree of slices, each cutting at most
``width`` ranges out of its parent's range.  Every step is linear in the pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actorflow.errors import CompileError
from actorflow.kernels.registry import get_op
from actorflow.plan.compiler.boxing import (
    Box,
    Device,
    fan,
    pick_copies,
    plan_boxing,
    split_axis,
    split_bounds,
    tree_root,
)
from actorflow.plan.compiler.trees import leaves_of, tree_levels
from actorflow.plan.model import BlobDesc

if TYPE_CHECKING:
    from actorflow.plan.compiler.lower import Layout, PNode

NewNode = Callable[..., int]  # Lowering._node


class Boxer:
    """Adds the boxing nodes that hold tensor ``name`` as ``code`` on ``devs``."""

    def __init__(self, job_name: str, nodes: list[PNode], layouts: dict[str, Layout],
                 shapes: dict[str, BlobDesc], new_node: NewNode, width: int) -> None:
        self.job_name = job_name
        self.nodes = nodes
        self.layouts = layouts
        self.shapes = shapes
        self.new_node = new_node
        self.width = width
        self.trees: dict[str, str] = {}  # "tensor code->code" -> what tree was built (plan show)
        self._boxed: dict[tuple, list[int]] = {}
        self._slices: dict[tuple, int] = {}

    def box(self, name: str, devs: tuple[Device, ...], code: str) -> list[int]:
        """PNode ids holding tensor ``name`` as ``code`` on ``devs`` (adds boxing nodes)."""
        src = self.layouts[name]
        if src.devices == devs and src.code == code:
            return src.nodes
        key = (name, devs, code)
        if key in self._boxed:
            return self._boxed[key]
        shape = self.shapes[name].shape
        if code == "P" and not (src.code == "P" and src.devices == devs):
            raise CompileError(f"job '{self.job_name}': tensor '{name}' cannot be boxed from "
                               f"{src.code} to {code}")
        if max(fan(shape, src.code, src.devices, code, devs)) > self.width:
            out = self._tree(name, src, devs, code)
        else:
            out = self._direct(name, src, devs, code)
        self._boxed[key] = out
        return out

    # -- direct ----------------------------------------------------------------------------
    def _direct(self, name: str, src: Layout, devs: tuple[Device, ...], code: str) -> list[int]:
        targets = plan_boxing(self.shapes[name].shape, src.code, src.devices, code, devs)
        assert targets is not None  # only boxing into P is impossible, refused above
        out = []
        for j, t in enumerate(targets):
            ports = [src.nodes[f.src] if f.full else
                     self._slice(name, src.nodes[f.src], src.devices[f.src], f.region,
                                 src.device_type, f"@{f.src}")
                     for f in t.fragments]
            if t.combine == "none":
                out.append(ports[0])
                continue
            op_type = "concat" if t.combine == "concat" else "add_n"
            out.append(self._combine(op_type, f"box_{name}_{src.code}to{code}@{j}", name, ports,
                                     t.axis, devs[j], src.device_type))
        return out

    def _combine(self, op_type: str, label: str, name: str, ports: list[int], axis: int,
                 device: Device, device_type: str) -> int:
        attrs: dict[str, Any] = {"axis": axis} if op_type == "concat" else {}
        ins = {f"in_{k}": pid for k, pid in enumerate(ports)}
        descs = {k: self.nodes[v].out for k, v in ins.items()}
        outd = get_op(op_type).infer_checked(
            f"box_{name}", {k: d for k, d in descs.items() if d is not None}, attrs)["out"]
        return self.new_node("boxing", label, op_type, attrs, device, ins, outd,
                             device_type=device_type)

    def _slice(self, name: str, node_id: int, device: Device, region: Box, device_type: str,
               tag: str) -> int:
        key = (node_id, region)
        if key not in self._slices:
            attrs = {"begin": [b for b, _ in region], "end": [e for _, e in region]}
            node = self.nodes[node_id]
            assert node.out is not None
            out = BlobDesc(tuple(e - b for b, e in region), node.out.dtype)
            self._slices[key] = self.new_node("boxing", f"slice_{name}{tag}.{len(self._slices)}",
                                              "box_slice", attrs, device, {"in": node_id}, out,
                                              device_type=device_type)
        return self._slices[key]

    # -- trees -----------------------------------------------------------------------------
    def _tree(self, name: str, src: Layout, devs: tuple[Device, ...], code: str) -> list[int]:
        root = tree_root(src.code, src.devices, devs)
        whole, notes = self._gather(name, src, root)
        if code == "B":  # every destination reads the whole; the emitter relays it
            out = [whole] * len(devs)
            if len(devs) > 1:
                notes.append(f"read by {len(devs)} devices (comm_net relays across machines)")
        else:
            out, scatter = self._scatter(name, whole, root, code, devs, src.device_type)
            notes.append(scatter)
        self.trees[f"{name} {src.code}->{code}"] = (
            f"tree of width {self.width} through m{root[0]}:d{root[1]}: " + "; ".join(notes))
        return out

    def _gather(self, name: str, src: Layout, root: Device) -> tuple[int, list[str]]:
        """One node holding the whole tensor on (or next to) ``root``."""
        if src.code == "B":
            i = pick_copies(src.devices, [root])[0]
            return src.nodes[i], [f"the B copy on m{root[0]}:d{root[1]}"]
        op_type = "add_n" if src.code == "P" else "concat"
        axis = split_axis(src.code) or 0
        items, where = list(src.nodes), list(src.devices)
        levels = tree_levels([m for m, _ in src.devices], self.width)
        counts = []
        for li, level in enumerate(levels):
            last = li == len(levels) - 1
            nxt, nxt_where, made = [], [], 0
            for gi, g in enumerate(level):
                if len(g) == 1:
                    nxt.append(items[g[0]])
                    nxt_where.append(where[g[0]])
                    continue
                dev = root if last else where[g[0]]
                nxt.append(self._combine(op_type, f"{'reduce' if src.code == 'P' else 'gather'}"
                                         f"_{name}@L{li}.{gi}", name, [items[k] for k in g], axis,
                                         dev, src.device_type))
                nxt_where.append(dev)
                made += 1
            items, where = nxt, nxt_where
            counts.append(made)
        what = "add_n" if src.code == "P" else "concat"
        return items[0], [f"{len(src.nodes)} pieces -> {' + '.join(map(str, counts))} {what} "
                          f"nodes in {len(levels)} levels"]

    def _scatter(self, name: str, whole: int, root: Device, code: str, devs: tuple[Device, ...],
                 device_type: str) -> tuple[list[int], str]:
        """Split pieces of ``whole`` for ``devs``: each level cuts its parent's range."""
        shape = self.shapes[name].shape
        axis = split_axis(code)
        assert axis is not None
        full = tuple((0, n) for n in shape)
        bounds = split_bounds(shape[axis], len(devs))
        levels = tree_levels([m for m, _ in devs], self.width)
        spans = leaves_of(levels)
        # holders of the level above: (node, device whose tasks cut it, begin, end)
        above = [(whole, root, 0, shape[axis])]
        made = []
        for li in range(len(levels) - 1, -1, -1):
            below_spans = spans[li - 1] if li > 0 else [(j, j + 1) for j in range(len(devs))]
            below: list[tuple[int, Device, int, int] | None] = [None] * len(below_spans)
            count = 0
            for gi, g in enumerate(levels[li]):
                node, dev, lo, hi = above[gi]
                for k in g:
                    first, end = below_spans[k]
                    b_lo, b_hi = bounds[first], bounds[end]
                    if (b_lo, b_hi) == (lo, hi):
                        child = node
                    else:
                        region = list(full)
                        region[axis] = (b_lo - lo, b_hi - lo)
                        # a cut for a device of the same machine runs on that device (it
                        # then merges with its reader); across machines, before sending
                        at = devs[first] if devs[first][0] == dev[0] else dev
                        child = self._slice(name, node, at, tuple(region), device_type,
                                            f"@L{li}")
                        count += 1
                    below[k] = (child, devs[first], b_lo, b_hi)
            above = [b for b in below if b is not None]
            made.append(count)
        return [h[0] for h in above], (f"scattered as {' + '.join(map(str, made))} slice nodes "
                                       f"in {len(levels)} levels to {len(devs)} pieces")


__all__ = ["Boxer"]
