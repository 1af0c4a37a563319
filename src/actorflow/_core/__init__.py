"""The compiled core, and the choice between it and the Python reference core.

``actorflow/_core/`` holds the native hot path (Cython over small C headers, built by
``pip install -e .``; see ``setup.py`` and ``docs/architecture.md``, "The compiled core").
The Python implementations stay the reference: ``protocol/`` is the specification and the
Python runtime runs every contract test too.  ``ACTORFLOW_CORE`` chooses:

- unset (the default): the native core when it is built, else the Python core with a
  ``RuntimeWarning`` banner naming the module and why;
- ``native``: the native core, or a ``UsageError`` naming the module and why (a request
  that cannot be met is refused, never quietly downgraded);
- ``python``: the Python reference core, no warning.

"Built" means every module of ``MODULES`` is there, carries the build stamp of the sources
installed beside it (``build_stamp.py``: stale native code from an earlier build never runs
against newer sources), and imports.

This package imports nothing of actorflow but ``errors`` (docs/architecture.md, "Packages
and arrows").
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from pathlib import Path

from actorflow._core import build_stamp
from actorflow.errors import UsageError

ENV = "ACTORFLOW_CORE"
CHOICES = ("native", "python")
# the compiled modules the native core is made of (setup.py's MODULES, every .pyx here):
# all must be built from the installed sources and import for it to count as built
MODULES = ("_records", "unit_core", "_eager", "_rings", "_zq")
REBUILD = "rebuild it (pip install -v -e . shows the compiler's errors)"

_error: list[str | None] = []  # [why the native core does not load] once looked up
_warned: set[str] = set()


def module_error(name: str) -> str | None:
    """Why the compiled module ``name`` must not be loaded (None: it is built from the
    installed sources and imports)."""
    full = f"{__name__}.{name}"
    try:
        spec = importlib.util.find_spec(full)
    except ImportError as e:
        return f"module {name} cannot be found: {e}"
    if spec is None or not spec.origin or not spec.has_location:
        return f"module {name} is not built"
    built = Path(spec.origin)
    try:
        why = (build_stamp.stale_reason(Path(__file__).parent, name, built)
               or build_stamp.runtime_reason(built))
    except OSError as e:
        return f"module {name} cannot be read: {e}"
    if why:
        return f"module {name} is not usable: {why}"
    try:
        importlib.import_module(full)
    except ImportError as e:
        return f"module {name} does not import: {e}"
    return None


def native_error() -> str | None:
    """Why the compiled core cannot be loaded in this process (None: it loads).  A module
    is checked before it is imported, so a stale one never runs."""
    if not _error:
        _error.append(next((why for why in map(module_error, MODULES) if why), None))
    return _error[0]


def requested() -> str:
    """What ``ACTORFLOW_CORE`` asks for: ``native``, ``python`` or ``default`` (unset)."""
    choice = os.environ.get(ENV, "").strip().lower()
    if not choice:
        return "default"
    if choice not in CHOICES:
        raise UsageError(f"{ENV}={os.environ[ENV]!r}; expected one of {list(CHOICES)} "
                         "(or unset: native when built)")
    return choice


def core_name() -> str:
    """The core this process runs: ``native`` or ``python`` (warns when native is the
    default and is not built; raises ``UsageError`` when it was asked for and is not)."""
    choice = requested()
    if choice == "python":
        return "python"
    why = native_error()
    if why is None:
        return "native"
    if choice == "native":
        raise UsageError(f"{ENV}=native, but the compiled core cannot be used: {why}; "
                         f"{REBUILD}, or set {ENV}=python (or unset: Python with a warning)")
    if choice not in _warned:
        _warned.add(choice)
        bar = "*" * 78
        warnings.warn(
            f"\n{bar}\nactorflow: the compiled core is the default ({ENV} unset) but cannot "
            f"be used: {why}.\nRunning on the Python core (slower). To get the native core, "
            f"{REBUILD}; {ENV}=python silences this.\n{bar}",
            RuntimeWarning, stacklevel=2)
    return "python"


def is_native() -> bool:
    return core_name() == "native"


if requested() == "default":  # say it at import, not only when a runtime is first built
    core_name()
