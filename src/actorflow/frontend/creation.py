"""Eager tensor creation and the user's handles on the VM: ``af.tensor``, ``af.zeros``,
``af.ones``, ``af.arange``, ``af.randn``, ``af.sync``, ``af.trace``.

Creation always makes eager tensors (also inside ``with af.Job``, where jobs take
``af.input``/``af.variable`` instead).  ``zeros``/``ones``/``arange``/``randn`` run the
generator kernels of the op registry (``constant``, ``arange``, ``random_normal``) on the
device's compute stream; ``tensor`` copies host data at the call.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from actorflow.eager.env import get_vm
from actorflow.errors import ArgumentTypeError, UsageError
from actorflow.frontend.dispatch import op_expr
from actorflow.frontend.eager_tensor import EAGER_LOCAL, EagerTensor
from actorflow.frontend.size import Size
from actorflow.frontend.tensor import TensorMethods
from actorflow.kernels.dtype import as_dtype, of_value

_E_CONST, _E_ARANGE, _E_RANDN = op_expr("constant", ()), op_expr("arange", ()), op_expr(
    "random_normal", ())
_SEEDS = np.random.SeedSequence()


def _shape(shape: tuple[Any, ...]) -> list[int]:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    try:
        return [int(s) for s in shape]
    except (TypeError, ValueError):
        raise UsageError(f"shape must be integers, got {shape!r}") from None


def _dtype(dtype: Any) -> str:
    try:
        return as_dtype(dtype)
    except TypeError as e:
        raise UsageError(str(e)) from None


def _run(expr: Any, attrs: dict[str, Any], device: Any) -> EagerTensor:
    return EAGER_LOCAL.apply_on(expr, attrs, device or "cpu")


def tensor(data: Any, dtype: Any = None, device: Any = None, placement: Any = None,
           sbp: Any = None, requires_grad: bool = False,
           check_data: bool | None = None) -> EagerTensor:
    """An eager tensor holding a copy of ``data`` (a number, nested lists, an array).

    Python floats give float32, ints int64, bools bool; numpy arrays keep their dtype.
    With ``placement=`` and ``sbp=`` the tensor is global (OneFlow's
    ``MakeGlobalTensorFromData``): every rank passes the whole data, the placement's ranks
    check around a ring that they all passed the same bytes (``check_data=False``, or
    ``ACTORFLOW_CHECK_GLOBAL_DATA=0``, skips it), and each keeps its part."""
    if placement is not None or sbp is not None:
        if device is not None:
            raise UsageError("tensor(): give device= for a local tensor or placement= and sbp= "
                             "for a global one, not both")
        from actorflow.frontend.global_data import global_from_data

        t = global_from_data(data, None if dtype is None else _dtype(dtype), placement, sbp,
                             check_data)
        return _requires_grad(t, requires_grad)
    t = EAGER_LOCAL.from_array(data, dtype=None if dtype is None else _dtype(dtype),
                               device=device or "cpu")
    return _requires_grad(t, requires_grad)


def _requires_grad(t: Any, requires_grad: bool) -> Any:
    if not requires_grad:
        return t
    make = getattr(t, "requires_grad_", None)
    if make is None:
        raise UsageError("requires_grad=True needs autograd, which this actorflow lacks")
    return make(True)


def Tensor_ctor(*args: Any, device: Any = None, placement: Any = None, sbp: Any = None,
                dtype: Any = None) -> Any:
    """``af.Tensor(...)`` as OneFlow's ``flow.Tensor``: ``Tensor(2, 3)`` and
    ``Tensor(af.Size([2, 3]))`` make a float32 tensor of that shape (zeros; OneFlow leaves
    it uninitialised), ``Tensor(data)`` a float32 copy of data, ``Tensor()`` an empty one;
    ``placement=``/``sbp=`` make it global (data: checked and cut as by ``af.tensor``)."""
    dt = _dtype(dtype) if dtype is not None else "float32"
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    elif not args:
        args = (0,)  # Tensor(): an empty float32 tensor of shape (0,)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        if placement is not None or sbp is not None:
            return zeros(*args, dtype=dt, placement=placement, sbp=sbp)
        return zeros(*args, dtype=dt, device=device)
    if len(args) != 1:
        raise ArgumentTypeError(f"Tensor(): expected a shape (ints) or one data argument, got "
                                f"{len(args)} arguments")
    data = args[0]
    if isinstance(data, TensorMethods):
        return data if getattr(data, "dtype", None) == dt else data.cast(dt)
    return tensor(data, dtype=dt, device=device, placement=placement, sbp=sbp)


def _global_creator(name: str) -> Any:
    from actorflow.frontend import global_tensor

    return getattr(global_tensor, name)


def zeros(*shape: Any, dtype: Any = "float32", device: Any = None, placement: Any = None,
          sbp: Any = None, requires_grad: bool = False) -> EagerTensor:
    """Zeros; with ``placement=`` and ``sbp=`` a global tensor (this rank's region only)."""
    return full(_shape(shape), 0, dtype=dtype, device=device, placement=placement, sbp=sbp,
                requires_grad=requires_grad)


def ones(*shape: Any, dtype: Any = "float32", device: Any = None, placement: Any = None,
         sbp: Any = None, requires_grad: bool = False) -> EagerTensor:
    """Ones; with ``placement=`` and ``sbp=`` a global tensor (this rank's region only)."""
    return full(_shape(shape), 1, dtype=dtype, device=device, placement=placement, sbp=sbp,
                requires_grad=requires_grad)


def full(size: Any, fill_value: Any, dtype: Any = None, device: Any = None,
         placement: Any = None, sbp: Any = None, requires_grad: bool = False) -> EagerTensor:
    """``fill_value`` everywhere; the dtype follows the value when not given (int64 for an
    int, float32 for a float, bool for a bool: OneFlow's ``full``).  With ``placement=``/
    ``sbp=`` a global tensor (this rank's region only)."""
    dt = _dtype(dtype) if dtype is not None else of_value(fill_value)
    shape = _shape((size,))
    if placement is not None:
        return _global_creator("global_full")(shape, fill_value, dt, placement, sbp)
    t = _run(_E_CONST, {"shape": shape, "dtype": dt, "value": fill_value}, device)
    return _requires_grad(t, requires_grad)


def arange(start: float = 0, end: float | None = None, step: float = 1, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> EagerTensor:
    """``start, start + step, ...`` before ``end`` (``arange(5)``, ``arange(end=5)``,
    ``arange(2, 7, 1.5)``); int64 when all three are ints, else float32 (OneFlow's)."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ArgumentTypeError(f"arange(): {name} must be a number, not "
                                    f"{type(v).__name__}")
    if step == 0:
        raise UsageError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise UsageError("arange(): upper bound and larger bound inconsistent with step sign "
                         f"(start {start}, end {end}, step {step})")
    attrs = {"start": start, "stop": end, "step": step,
             "dtype": None if dtype is None else _dtype(dtype)}
    return _requires_grad(_run(_E_ARANGE, attrs, device), requires_grad)


def randn(*shape: Any, dtype: Any = "float32", seed: int | None = None,
          device: Any = None, placement: Any = None, sbp: Any = None,
          requires_grad: bool = False) -> EagerTensor:
    """Standard normal values; a given ``seed`` repeats them, else each call differs.
    With ``placement=``/``sbp=`` a global tensor: each rank draws only its region."""
    if placement is not None:
        return _global_creator("global_randn")(_shape(shape), _dtype(dtype), seed, placement,
                                               sbp)
    if seed is None:
        seed = int(_SEEDS.spawn(1)[0].generate_state(1)[0])
    t = _run(_E_RANDN, {"shape": _shape(shape), "dtype": _dtype(dtype), "seed": int(seed),
                        "mean": 0.0, "std": 1.0}, device)
    return _requires_grad(t, requires_grad)


def sync(timeout: float | None = None) -> None:
    """Wait for every eager instruction issued so far; raise a kernel error that happened."""
    get_vm().sync(timeout)


@contextlib.contextmanager
def trace(directory: str | os.PathLike) -> Iterator[None]:
    """Record every eager instruction inside the block into ``directory`` (one track per
    stream), for ``flowlaunch trace export|summary DIRECTORY``."""
    from actorflow.eager.env import get_env
    from actorflow.eager.tracing import Tracer

    env = get_env()
    if env.tracer is not None:
        raise UsageError(f"eager tracing is already on (into {env.tracer.directory}); "
                         "traces do not nest")
    env.tracer = Tracer(env.vm, directory)
    try:
        yield
    finally:
        tracer, env.tracer = env.tracer, None
        tracer.close()


def counters() -> dict[str, int]:
    """The eager VM's counters (live blobs and bytes, instructions issued and done)."""
    vm = get_vm()
    vm.flush_releases()
    return vm.counters()
