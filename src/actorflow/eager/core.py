"""Which core runs the eager VM's hot path: the compiled one or the Python reference.

``ACTORFLOW_CORE`` (``actorflow._core``) chooses for the process: the compiled core
(``actorflow._core._eager``) when it was built, else the Python reference, said once on
stderr.  A VM can also be made on either (``eager.shutdown(core="python")``), so the tests
and ``bench/eager.py`` run both in one process.  The two give the same results and
counters (``tests/eager`` runs on both).

    piece                          Python reference          compiled core
    blobs, instructions, steps     blob.py, instruction.py,  _eager.Blob, Instruction, Step
                                   chain.py
    dependency linking             deps.py                   _eager.link
    stream FIFO + worker           worker.StreamRt           _eager.StreamRt (synchronous
                                                             streams; device streams keep
                                                             the Python worker)
    issue, fusion, releases        vm.py, chain.py, issue.py _eager.VMState, IssuePlan
    functional fast path           fastcall.py               _eager.FastCall
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from actorflow import _core
from actorflow.eager import fastcall, issue


def _native() -> ModuleType | None:
    if _core.core_name() != "native":  # ACTORFLOW_CORE=python, or not built (it warned)
        return None
    from actorflow._core import _eager
    from actorflow.eager import tensor
    from actorflow.eager.blob import meta_of
    from actorflow.eager.worker import _ActRecord

    _eager.configure(meta_of, tensor.caller_where, _ActRecord, tensor._INSIDE, tensor._PKG_DIR)
    return _eager


NATIVE = _native()
PYTHON: Any = issue
PROCESS = "native" if NATIVE is not None else "python"
_fast: Any = NATIVE if PROCESS == "native" else fastcall
FastCall: Any = _fast.FastCall
FastPlan: Any = _fast.FastPlan


def module(name: str | None = None) -> Any:
    """The core a new VM uses: ``name`` (``native``/``python``) or the process's choice."""
    name = name or PROCESS
    if name == "native":
        if NATIVE is None:
            from actorflow.errors import UsageError

            raise UsageError(f"the compiled eager core is not built ({_core.native_error()})")
        return NATIVE
    if name != "python":
        from actorflow.errors import UsageError

        raise UsageError(f"eager core {name!r}: expected 'native' or 'python'")
    return PYTHON


def set_tensor_type(t: type) -> None:
    fastcall.set_tensor_type(t)
    if NATIVE is not None:
        NATIVE.set_tensor_type(t)


def set_issue_hook(fn: Any) -> None:
    fastcall.set_issue_hook(fn)
    if NATIVE is not None:
        NATIVE.set_issue_hook(fn)


__all__ = ["NATIVE", "PROCESS", "PYTHON", "FastCall", "FastPlan", "module", "set_issue_hook",
           "set_tensor_type"]
