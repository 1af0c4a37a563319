"""Which core runs a unit's actors: the compiled one or the Python reference.

``ACTORFLOW_CORE`` (``actorflow._core.core_name``) picks for the whole process; a unit whose
tasks include a kind the compiled core does not know (a kind registered by a plugin, say)
runs on the Python core, as OneFlow runs its general actor where no light one fits.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from actorflow import _core
from actorflow.errors import ProtocolError
from actorflow.protocol.kinds import get_kind
from actorflow.protocol.messages import Act, Exit, Msg
from actorflow.protocol.task import TaskView
from actorflow.protocol.unit_core import CoreRecorder, PyUnitCore, UnitCore

try:  # the compiled core's classes, where it is built (the runtime tells its units by type)
    from actorflow._core.unit_core import NativeRouter, NativeUnitCore
except ImportError:
    class NativeUnitCore:  # type: ignore[no-redef]
        """Stands in for the compiled core where it is not built: nothing is one."""

    class NativeRouter:  # type: ignore[no-redef]
        def __init__(self, cores: object) -> None:
            raise ProtocolError("the compiled core is not built: no native router")

CoreFactory = Callable[[Sequence[TaskView], dict[int, int], str, "CoreRecorder | None"],
                       UnitCore]


def _native(tasks: Sequence[TaskView], producer_of: dict[int, int], name: str,
            recorder: CoreRecorder | None) -> UnitCore:
    from actorflow._core.unit_core import NativeUnitCore

    return NativeUnitCore(tasks, producer_of, name, recorder, (Msg, Act, Exit))


CORES: dict[str, CoreFactory] = {"python": PyUnitCore, "native": _native}


def available_cores() -> list[str]:
    """The cores this process can build (``native`` only where the extension is built)."""
    return ["python"] + (["native"] if _native_loads() else [])


def _native_loads() -> bool:
    if _core.native_error() is not None:
        return False
    try:
        import actorflow._core.unit_core  # noqa: F401
    except ImportError:
        return False
    return True


def make_unit_core(tasks: Sequence[TaskView], producer_of: dict[int, int], name: str,
                   recorder: CoreRecorder | None = None, impl: str | None = None) -> UnitCore:
    """The core of one unit hosting ``tasks`` (``impl``: ``python``/``native``; None: the
    process's choice, ``actorflow._core.core_name()``)."""
    impl = impl or _core.core_name()
    if impl == "native" and not (_native_loads() and native_covers(tasks)):
        why = (f"no state machine (or one for another state class) for task type(s) "
               f"{uncovered(tasks)}" if _native_loads() else "its module did not load")
        warnings.warn(f"actorflow: {name} runs on the Python core: the compiled core has {why}",
                      RuntimeWarning, stacklevel=2)
        impl = "python"
    return CORES[impl](tasks, producer_of, name, recorder)


def uncovered(tasks: Sequence[TaskView]) -> list[str]:
    """Task types of ``tasks`` the compiled core does not run (sorted)."""
    return sorted({t.task_type for t in tasks if not native_covers([t])})


def native_covers(tasks: Sequence[TaskView]) -> bool:
    """True when the compiled core has a state machine for every kind of ``tasks``, and the
    kind registry still names the Python state class that machine is the twin of."""
    from actorflow._core.unit_core import native_kinds, reference_of

    kinds = native_kinds()
    return all(t.task_type in kinds
               and get_kind(t.task_type).state.__name__ == reference_of(t.task_type)
               for t in tasks)
