"""The compiled core, and the choice between it and the Python reference core.

``actorflow/_core/`` holds the native hot path (Cython over small C headers, built by
``pip install -e .``; see ``setup.py`` and ``docs/architecture.md``, "The compiled core").
The Python implementations stay the reference: ``protocol/`` is the specification and the
Python runtime runs every contract test too.  ``ACTORFLOW_CORE`` chooses:

- unset (the default): the native core when it is built, else the Python core with a
  ``RuntimeWarning`` saying why;
- ``native``: the same, and the warning says the request could not be met;
- ``python``: the Python reference core, no warning.

This package imports nothing of actorflow but ``errors`` (docs/architecture.md, "Packages
and arrows").
"""

from __future__ import annotations

import importlib
import os
import warnings

from actorflow.errors import UsageError

ENV = "ACTORFLOW_CORE"
CHOICES = ("native", "python")
# the compiled modules the native core is made of: all must import for it to count as built
MODULES = ("_records", "unit_core", "_eager")

_error: list[str | None] = []  # [why the native core does not load] once looked up
_warned: set[str] = set()


def native_error() -> str | None:
    """Why the compiled core cannot be loaded in this process (None: it loads)."""
    if not _error:
        why = None
        for name in MODULES:
            try:
                importlib.import_module(f"{__name__}.{name}")
            except ImportError as e:
                why = f"{name}: {e}"
                break
        _error.append(why)
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
    """The core this process runs: ``native`` or ``python`` (warns when native was asked
    for, or defaulted to, and is not built)."""
    choice = requested()
    if choice == "python":
        return "python"
    why = native_error()
    if why is None:
        return "native"
    if choice not in _warned:
        _warned.add(choice)
        asked = "was requested" if choice == "native" else "is the default"
        warnings.warn(
            f"actorflow: the compiled core {asked} ({ENV}) but is not built ({why}); running "
            f"on the Python core. Reinstall with gcc and the Python headers present "
            f"(pip install -e .) or set {ENV}=python to silence this.",
            RuntimeWarning, stacklevel=2)
    return "python"


def is_native() -> bool:
    return core_name() == "native"


if requested() != "python":  # say it at import, not only when a runtime is first built
    core_name()
