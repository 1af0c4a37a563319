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
from actorflow.errors import UsageError
from actorflow.frontend.dispatch import op_expr
from actorflow.frontend.eager_tensor import EAGER_LOCAL, EagerTensor

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
        return np.dtype(dtype).name
    except TypeError:
        raise UsageError(f"unknown dtype {dtype!r}") from None


def _run(expr: Any, attrs: dict[str, Any], device: Any) -> EagerTensor:
    return EAGER_LOCAL.apply_on(expr, attrs, device)


def tensor(data: Any, dtype: Any = None, device: Any = "cpu") -> EagerTensor:
    """An eager tensor holding a copy of ``data`` (a number, nested lists, an array)."""
    return EAGER_LOCAL.from_array(data, dtype=dtype, device=device)


def _global_creator(name: str) -> Any:
    from actorflow.frontend import global_tensor

    return getattr(global_tensor, name)


def zeros(*shape: Any, dtype: Any = "float32", device: Any = "cpu", placement: Any = None,
          sbp: Any = None) -> EagerTensor:
    """Zeros; with ``placement=`` and ``sbp=`` a global tensor (this rank's region only)."""
    if placement is not None:
        return _global_creator("global_full")(_shape(shape), 0, _dtype(dtype), placement, sbp)
    return _run(_E_CONST, {"shape": _shape(shape), "dtype": _dtype(dtype), "value": 0},
                device)


def ones(*shape: Any, dtype: Any = "float32", device: Any = "cpu", placement: Any = None,
         sbp: Any = None) -> EagerTensor:
    """Ones; with ``placement=`` and ``sbp=`` a global tensor (this rank's region only)."""
    if placement is not None:
        return _global_creator("global_full")(_shape(shape), 1, _dtype(dtype), placement, sbp)
    return _run(_E_CONST, {"shape": _shape(shape), "dtype": _dtype(dtype), "value": 1},
                device)


def full(shape: Any, value: float, dtype: Any = "float32", device: Any = "cpu",
         placement: Any = None, sbp: Any = None) -> EagerTensor:
    """``value`` everywhere; with ``placement=``/``sbp=`` a global tensor (region only)."""
    if placement is not None:
        return _global_creator("global_full")(_shape((shape,)), value, _dtype(dtype),
                                              placement, sbp)
    return _run(_E_CONST, {"shape": _shape((shape,)), "dtype": _dtype(dtype),
                           "value": value}, device)


def arange(start: int, stop: int | None = None, step: int = 1, *, dtype: Any = "int64",
           device: Any = "cpu") -> EagerTensor:
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise UsageError("arange(): step must not be 0")
    return _run(_E_ARANGE, {"start": int(start), "stop": int(stop), "step": int(step),
                            "dtype": _dtype(dtype)}, device)


def randn(*shape: Any, dtype: Any = "float32", seed: int | None = None,
          device: Any = "cpu", placement: Any = None, sbp: Any = None) -> EagerTensor:
    """Standard normal values; a given ``seed`` repeats them, else each call differs.
    With ``placement=``/``sbp=`` a global tensor: each rank draws only its region."""
    if placement is not None:
        return _global_creator("global_randn")(_shape(shape), _dtype(dtype), seed, placement,
                                               sbp)
    if seed is None:
        seed = int(_SEEDS.spawn(1)[0].generate_state(1)[0])
    return _run(_E_RANDN, {"shape": _shape(shape), "dtype": _dtype(dtype), "seed": int(seed),
                           "mean": 0.0, "std": 1.0}, device)


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
