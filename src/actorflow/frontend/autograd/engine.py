"""``backward()``: walk the tape from the roots and issue every gradient op.

Nodes are visited in decreasing issue order (a node is issued after every node that feeds
it, so that is a topological order of the reverse graph).  Each node's rule is called once
with the sum of the gradients its output received; every gradient is an op like any other,
so in eager mode ``backward()`` returns as soon as the gradient kernels are issued on the VM
(``.grad.numpy()`` waits), and inside a job the gradient ops join the job.  Gradients of
leaves are added to their ``.grad``; unless ``retain_graph=True``, the nodes drop the
tensors they kept and a second backward through them is an error.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

from actorflow.errors import AutogradError
from actorflow.frontend import functional_nn as F
from actorflow.frontend.autograd.mode import no_grad
from actorflow.frontend.autograd.tape import Node, is_float, meta_of
from actorflow.kernels.grad import GradContext


def _seed(root: Any, grad: Any) -> Any:
    if grad is not None:
        if tuple(grad.shape) != tuple(root.shape):
            raise AutogradError(f"backward(): gradient of shape {tuple(grad.shape)} given for a "
                                f"tensor of shape {tuple(root.shape)}")
        return grad
    n = 1
    for s in root.shape:
        n *= s
    if n != 1:
        raise AutogradError(f"backward(): grad can be implicitly created only for scalar "
                            f"outputs; this tensor has shape {tuple(root.shape)} (pass "
                            "gradient=)")
    return F.fill_like(root, 1.0)


def _add(a: Any, b: Any) -> Any:
    return b if a is None else F.add(a, b)


def run_backward(roots: Sequence[Any], grads: Sequence[Any], retain_graph: bool = False,
                 capture: Sequence[Any] | None = None, scale: float | None = None,
                 leaf_hook: Callable[[Any, Any], Any] | None = None) -> list[Any] | None:
    """Propagate ``grads`` from ``roots``.  With ``capture`` (tensors), return their
    gradients instead of touching any ``.grad`` (``autograd.grad``).  ``scale`` multiplies
    the seeds (micro-batch jobs: the accumulated gradient is the mean over micro-batches);
    ``leaf_hook(leaf, grad)`` may replace a leaf's gradient before it is kept (a micro-batch
    job accumulates it over the micro-batches there)."""
    want = {id(t): i for i, t in enumerate(capture)} if capture is not None else None
    got: list[Any] = [None] * len(capture) if capture is not None else []
    pending: dict[Node, Any] = {}
    out_of: dict[Node, Any] = {}
    heap: list[tuple[int, int, Node]] = []
    leaves: dict[int, tuple[Any, Any]] = {}
    with no_grad():
        for root, g in zip(roots, grads):
            m = meta_of(root)
            if m is None or not m.requires_grad:
                raise AutogradError("element 0 of tensors does not require grad and does not "
                                    "have a grad_fn (backward() of a tensor no op with "
                                    "requires_grad=True inputs made)")
            g = _seed(root, g)
            if scale is not None:
                g = F.mul(g, scale)
            _route(root, m, g, pending, out_of, heap, leaves)
        visited: list[Node] = []
        while heap:
            _, _, node = heapq.heappop(heap)
            dout = pending.pop(node)
            out = out_of[node]
            om = meta_of(out)
            dout = _hooked(om, dout)
            if om is not None and om.retains_grad and want is None:
                om.grad = _add(om.grad, dout)
            if want is not None and id(out) in want:
                got[want[id(out)]] = _add(got[want[id(out)]], dout)
            visited.append(node)
            for _name, t, g in _apply(node, out, dout):
                _route(t, meta_of(t), g, pending, out_of, heap, leaves)
        for t, g in leaves.values():
            g = _hooked(meta_of(t), g)
            if want is not None:
                if id(t) in want:
                    got[want[id(t)]] = _add(got[want[id(t)]], g)
                continue
            m = meta_of(t)
            assert m is not None
            if leaf_hook is not None:
                g = leaf_hook(t, g)
            m.grad = g if m.grad is None else F.add(m.grad, g)
    if not retain_graph:
        for node in visited:
            node.inputs = None
            node.released = True
    return got if capture is not None else None


def _hooked(m: Any, g: Any) -> Any:
    """The gradient after the tensor's ``register_hook`` functions (in order; one returning
    None leaves it as it is)."""
    for hook in (m.hooks or ()) if m is not None else ():
        new = hook(g)
        if new is not None:
            if tuple(new.shape) != tuple(g.shape):
                raise AutogradError(f"a gradient hook returned shape {tuple(new.shape)} for a "
                                    f"gradient of shape {tuple(g.shape)}")
            g = new
    return g


def _route(t: Any, m: Any, g: Any, pending: dict, out_of: dict, heap: list,
           leaves: dict) -> None:
    if m.grad_fn is None:
        prev = leaves.get(id(t))
        leaves[id(t)] = (t, g if prev is None else F.add(prev[1], g))
        return
    node = m.grad_fn
    if node in pending:
        pending[node] = F.add(pending[node], g)
        return
    pending[node] = g
    out_of[node] = t
    heapq.heappush(heap, (-node.seq, id(node), node))


def _apply(node: Node, out: Any, dout: Any) -> list[tuple[str, Any, Any]]:
    """The gradients ``node``'s rule sends to the inputs that want one, checked."""
    if node.released or node.inputs is None:
        raise AutogradError(f"trying to backward through the graph a second time (op "
                            f"'{node.op_type}'): its saved tensors were freed by the first "
                            "backward; pass retain_graph=True to the first one")
    if node.rule is None:
        wanting = ", ".join(sorted(node.needs))
        raise AutogradError(f"cannot backward through op '{node.op_type}': it has no gradient "
                            f"rule (its inputs {wanting} require grad); detach() them or use "
                            "an op that has one")
    ctx = GradContext(node.op_type, node.inputs, out, node.attrs, node.needs)
    try:
        grads = node.rule(F, ctx, dout)
    except AutogradError:
        raise
    except Exception as e:
        raise AutogradError(f"the gradient rule of op '{node.op_type}' failed: "
                            f"{type(e).__name__}: {e}") from e
    res = []
    for name in sorted(node.needs):
        g = grads.get(name)
        if g is None:
            continue
        t = node.inputs[name]
        if tuple(g.shape) != tuple(t.shape):
            raise AutogradError(f"op '{node.op_type}': the gradient of input '{name}' has shape "
                                f"{tuple(g.shape)}, the input has {tuple(t.shape)} (a bad "
                                "gradient rule)")
        if g.dtype != t.dtype and is_float(t.dtype):
            g = F.cast(g, t.dtype)
        res.append((name, t, g))
    return res


__all__ = ["run_backward"]
