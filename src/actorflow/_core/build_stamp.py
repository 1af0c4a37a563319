"""Build stamps: which sources a compiled module of the core was built from.

A failed rebuild can leave an earlier build's extension in place (``pip install -q -e .``
hides the compiler's error), and stale native code must never run against newer sources.
So ``setup.py`` compiles every module with ``AF_BUILD_STAMP`` = ``"<module>:<hash of its
sources>"`` (``build_stamp.h``, forced into every translation unit with ``-include``), and
the loader (``actorflow._core.native_error``) reads that string back from the module's file,
before importing it, and compares it with the hash of the sources installed beside it.

A module's sources are its own ``.pyx`` and every ``.h``/``.pxi``/``.pxd`` of ``_core/``:
exactly what ``setup.py`` lists as the module's source and dependencies, so a change that
triggers a rebuild changes the stamp, and nothing else does.

Loaded by path from ``setup.py`` and ``tools/cmutants.py``: imports nothing of actorflow.
"""

from __future__ import annotations

import hashlib
import mmap
import re
from pathlib import Path

MARKER = b"actorflow-build-stamp:"  # build_stamp.h prefixes AF_BUILD_STAMP with it
SANITIZE_MARKER = b"actorflow-build-sanitize:"  # ... and AF_BUILD_SANITIZE (sanitizer builds)
SHARED = ("*.h", "*.pxi", "*.pxd")  # every module depends on all of these
HEADER = "build_stamp.h"
_STAMP = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*):([0-9a-f]{64})")
_SANITIZE = re.compile(rb"[a-z,-]+")


def sources(core: Path, module: str) -> list[Path]:
    """The files ``module`` is built from: its ``.pyx``, then the shared headers (sorted)."""
    shared = sorted({p for pattern in SHARED for p in core.glob(pattern)}, key=lambda p: p.name)
    return [core / f"{module}.pyx", *shared]


def source_stamp(core: Path, module: str) -> str:
    """``"<module>:<sha256>"`` of ``module``'s sources in ``core`` (FileNotFoundError when
    its ``.pyx`` is not there)."""
    h = hashlib.sha256()
    for path in sources(core, module):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{module}:{h.hexdigest()}"


def compile_args(core: Path, module: str, sanitize: str = "") -> list[str]:
    """The compiler arguments that stamp ``module`` (setup.py, tools/cmutants.py);
    ``sanitize``: the ``-fsanitize=`` list it is built with, if any."""
    args = ["-include", str((core / HEADER).resolve()),
            f'-DAF_BUILD_STAMP="{source_stamp(core, module)}"']
    if sanitize:
        args.append(f'-DAF_BUILD_SANITIZE="{sanitize}"')
    return args


def _read(path: Path, marker: bytes, pattern: re.Pattern[bytes]) -> str | None:
    if path.stat().st_size == 0:  # mmap refuses an empty file (a copy cut short)
        return None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        at = m.find(marker)
        if at < 0:
            return None
        found = pattern.match(m, at + len(marker))
        return found.group(0).decode() if found else None


def read_stamp(path: Path) -> str | None:
    """The stamp compiled into the extension file ``path`` (None: it carries none)."""
    return _read(path, MARKER, _STAMP)


def read_sanitize(path: Path) -> str | None:
    """The sanitizers the extension file ``path`` is built with (None: none)."""
    return _read(path, SANITIZE_MARKER, _SANITIZE)


def runtime_reason(built: Path) -> str | None:
    """Why this process cannot load the extension ``built`` (None: it can): a module built
    with AddressSanitizer ends the process at import unless ASan's runtime was preloaded."""
    sanitize = read_sanitize(built)
    if not sanitize or "address" not in sanitize.split(","):
        return None
    import ctypes

    try:
        ctypes.CDLL(None)["__asan_init"]
    except AttributeError:
        return (f"{built.name} is built with -fsanitize={sanitize} (ACTORFLOW_CORE_SANITIZE) "
                "and ASan's runtime is not loaded: run with "
                "LD_PRELOAD=$(gcc -print-file-name=libasan.so), or rebuild without it")
    return None


def stale_reason(core: Path, module: str, built: Path) -> str | None:
    """Why the extension ``built`` must not be loaded for ``module`` (None: it was built
    from exactly the sources in ``core``)."""
    try:
        want = source_stamp(core, module)
    except FileNotFoundError:
        return (f"its source {module}.pyx is not installed in {core}, so the build cannot "
                "be checked against it")
    have = read_stamp(built)
    if have is None:
        return f"{built.name} carries no build stamp (not built by setup.py)"
    if have != want:
        return (f"{built.name} is stale: built from other sources than those installed "
                f"(stamp {have.partition(':')[2][:12]}, sources {want.partition(':')[2][:12]}); "
                "its last rebuild failed or did not run")
    return None
